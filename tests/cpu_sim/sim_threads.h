// The GPU's threads for the CPU simulation (tests/cpu_sim/*_driver.cpp): a block's threads are
// fibers (glibc's ucontext) on the one host thread, blocks run one after another. Each driver
// includes this header once; it defines the functions the lowered kernels call (to_host.py):
// sim_tid, sim_ctaid, sim_nctaid, sim_barrier (bar.sync), the warp shuffles and sim_nanosleep;
// and guarded(n), the drivers' buffers between pages that fault, and bf16 conversions.
//
// 1. launch(grid, block, f) runs f on `block` fibers for each block of the grid.
// 2. A fiber runs until it waits: at the block's barrier, at its warp's (each shuffle waits
//    twice: every lane has written its value, then every lane has read its source's), or in
//    nanosleep (a spin loop: a look-back waiting for a record). It then switches straight to
//    the next fiber in thread order whose wait is over; the last to arrive at a barrier goes on.
// 3. A fiber that returns leaves its barriers, as an exited GPU thread does; a wait with no
//    fiber left to run is a deadlock (a barrier some thread never reaches): the run stops with
//    a message instead of hanging.
//
// Why not a host thread per GPU thread: on CI's two cores a barrier of 1024 host threads is
// 1024 trips through the kernel's scheduler; the scans' check took 333 s that way, most of it
// system time. A fiber switch stays in user space but for ucontext's signal mask (one system
// call a switch).
#pragma once

#include <sys/mman.h>
#include <ucontext.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

namespace sim {

// A barrier of `expected` fibers; a wait is over once its generation has moved on.
struct Barrier {
  int expected = 0, arrived = 0;
  unsigned generation = 0;
};

struct Fiber {
  ucontext_t context;
  const Barrier* waiting_on = nullptr;  // nullptr: runnable
  unsigned generation = 0;              // of waiting_on when the wait began
  bool done = false;
};

inline int g_tid, g_ctaid, g_nctaid;
inline std::vector<Fiber> g_fibers;
inline std::vector<Barrier> g_warp_bars;  // one per warp of the block
inline std::vector<uint32_t> g_warp_slots;
inline Barrier g_block_bar;
inline ucontext_t g_scheduler;  // launch's, while a block runs
inline const std::function<void()>* g_body = nullptr;

inline bool runnable(const Fiber& f) {
  return !f.done && (!f.waiting_on || f.waiting_on->generation != f.generation);
}

// Switches from the running fiber to the next runnable one after it in thread order (itself,
// when it is the only one), or back to launch once every fiber is done. A fiber that is done
// is left for good (setcontext: nothing of it to save).
inline void switch_away() {
  const int block = static_cast<int>(g_fibers.size()), from = g_tid;
  Fiber& me = g_fibers[from];
  int next = -1;
  for (int i = 1; i <= block && next < 0; ++i)
    if (runnable(g_fibers[(from + i) % block])) next = (from + i) % block;
  if (next < 0) {
    bool live = false;
    for (const Fiber& f : g_fibers) live |= !f.done;
    if (live) {
      fprintf(stderr, "sim: deadlock in block %d: every live thread waits at a barrier\n", g_ctaid);
      exit(3);
    }
    setcontext(&g_scheduler);  // only a fiber that is done finds no fiber live
  }
  g_fibers[next].waiting_on = nullptr;
  if (next == from) return;
  g_tid = next;
  if (me.done)
    setcontext(&g_fibers[next].context);
  else
    swapcontext(&me.context, &g_fibers[next].context);
  g_tid = from;  // resumed: some fiber switched back to this one
}

inline void arrive(Barrier& b) {
  if (++b.arrived == b.expected) {
    b.arrived = 0;
    ++b.generation;
  }
}

inline void wait(Barrier& b) {
  Fiber& me = g_fibers[g_tid];
  const unsigned generation = b.generation;
  arrive(b);
  if (b.generation != generation) return;  // the last to arrive goes on
  me.waiting_on = &b;
  me.generation = generation;
  switch_away();
}

// An exited thread no longer counts at its barriers; a wait it was the last one of is over.
inline void leave(Barrier& b) {
  --b.expected;
  if (b.arrived > 0 && b.arrived == b.expected) {
    b.arrived = 0;
    ++b.generation;
  }
}

inline void fiber_main() {
  (*g_body)();
  g_fibers[g_tid].done = true;
  leave(g_block_bar);
  leave(g_warp_bars[g_tid / 32]);
  switch_away();  // does not come back
}

constexpr size_t kStackBytes = size_t{1} << 20, kGuardBytes = 4096;

// Runs f on `block` fibers for each of `grid` blocks; sim_tid() and sim_ctaid() say which.
inline void launch(long grid, int block, const std::function<void()>& f) {
  const size_t bytes = (kStackBytes + kGuardBytes) * static_cast<size_t>(block);
  // Stacks untouched cost nothing; a guard page below each faults instead of overflowing.
  char* stacks = static_cast<char*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
  if (stacks == MAP_FAILED) {
    perror("sim: mmap of the fiber stacks");
    exit(3);
  }
  for (int t = 0; t < block; ++t)
    mprotect(stacks + t * (kStackBytes + kGuardBytes), kGuardBytes, PROT_NONE);
  g_nctaid = static_cast<int>(grid);
  g_body = &f;
  const int warps = (block + 31) / 32;
  for (long b = 0; b < grid; ++b) {
    g_ctaid = static_cast<int>(b);
    g_fibers.assign(block, Fiber{});
    g_block_bar = Barrier{block};
    g_warp_bars.assign(warps, Barrier{32});
    g_warp_bars.back().expected = block - 32 * (warps - 1);
    g_warp_slots.assign(static_cast<size_t>(warps) * 32, 0);
    for (int t = 0; t < block; ++t) {
      ucontext_t& c = g_fibers[t].context;
      getcontext(&c);
      c.uc_stack.ss_sp = stacks + t * (kStackBytes + kGuardBytes) + kGuardBytes;
      c.uc_stack.ss_size = kStackBytes;
      c.uc_link = nullptr;  // fiber_main never returns
      makecontext(&c, fiber_main, 0);
    }
    g_tid = 0;
    swapcontext(&g_scheduler, &g_fibers[0].context);  // back when every fiber is done
  }
  munmap(stacks, bytes);
}

// A shuffle: every lane publishes its value, then reads its source lane's (its own if keep).
inline uint32_t shuffle(uint32_t v, int src_lane, bool keep) {
  const int lane = g_tid % 32;
  uint32_t* slots = &g_warp_slots[static_cast<size_t>(g_tid / 32) * 32];
  Barrier& bar = g_warp_bars[g_tid / 32];
  slots[lane] = v;
  wait(bar);
  const uint32_t r = keep ? v : slots[src_lane & 31];
  wait(bar);
  return r;
}

// n elements of type E between two pages that fault, the last 16 bytes before the second: a
// whole vector read past the end or an access before the start faults.
template <class E>
E* guarded(long n) {
  const long page = 4096, bytes = (n * long(sizeof(E)) + 15) / 16 * 16;
  const long pages = (bytes + page - 1) / page + 2;
  char* base = static_cast<char*>(
      mmap(nullptr, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (base == MAP_FAILED) abort();
  mprotect(base, page, PROT_NONE);
  mprotect(base + (pages - 1) * page, page, PROT_NONE);
  return reinterpret_cast<E*>(base + (pages - 1) * page - bytes);
}

inline uint32_t bits(float f) {
  uint32_t b;
  memcpy(&b, &f, 4);
  return b;
}
inline float from_bits(uint32_t b) {
  float f;
  memcpy(&f, &b, 4);
  return f;
}

// f32 to bf16, rounded to nearest even (a NaN stays a NaN), and back.
inline uint16_t to_bf16(float f) {
  if (f != f) return 0x7fc0;
  const uint32_t b = bits(f);
  return static_cast<uint16_t>((b + 0x7fff + ((b >> 16) & 1)) >> 16);
}
inline float of_bf16(uint16_t h) {
  return from_bits(uint32_t{h} << 16);
}

}  // namespace sim

using sim::launch;

extern "C" int sim_tid() {
  return sim::g_tid;
}
extern "C" int sim_ctaid() {
  return sim::g_ctaid;
}
extern "C" int sim_nctaid() {
  return sim::g_nctaid;
}
extern "C" void sim_barrier() {
  sim::wait(sim::g_block_bar);
}
// A spin loop's sleep lets the other threads run (a thread that never waits would hold the host).
extern "C" void sim_nanosleep(int) {
  sim::switch_away();
}
extern "C" float sim_shfl_up_f32(int, float v, int d, int) {
  const int lane = sim::g_tid % 32;
  return sim::from_bits(sim::shuffle(sim::bits(v), lane - d, lane < d));
}
extern "C" int sim_shfl_up_i32(int, int v, int d, int) {
  const int lane = sim::g_tid % 32;
  return static_cast<int>(sim::shuffle(static_cast<uint32_t>(v), lane - d, lane < d));
}
extern "C" float sim_shfl_idx_f32(int, float v, int src, int) {
  return sim::from_bits(sim::shuffle(sim::bits(v), src, false));
}
extern "C" int sim_shfl_idx_i32(int, int v, int src, int) {
  return static_cast<int>(sim::shuffle(static_cast<uint32_t>(v), src, false));
}
extern "C" float sim_shfl_bfly_f32(int, float v, int m, int) {
  return sim::from_bits(sim::shuffle(sim::bits(v), (sim::g_tid % 32) ^ m, false));
}
extern "C" int sim_shfl_bfly_i32(int, int v, int m, int) {
  return static_cast<int>(sim::shuffle(static_cast<uint32_t>(v), (sim::g_tid % 32) ^ m, false));
}
