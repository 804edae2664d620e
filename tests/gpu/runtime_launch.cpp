// GPU tests of libkiln_runtime's launch path on a real bundle (examples/add.kiln, compiled by
// the bundle/add test): results, the scalar fallback for unaligned pointers, and every
// argument check; with a second bundle (examples/rowsum.kiln), split reductions: their
// workspaces under several threads and inside graph capture; with a third
// (examples/global_max_norm.kiln), the buffers a kernel of several steps passes between them,
// the same ways. Links only the runtime, never LLVM.
//
//   kiln_gpu_runtime_tests ADD_BUNDLE_DIR ROWSUM_BUNDLE_DIR MAX_NORM_BUNDLE_DIR [catch options]
//
// Without a CUDA driver library it says it skipped and exits 77 (reported as skipped);
// any other failure to open the GPU, or KILN_REQUIRE_GPU=1, fails (autotune/open_gpu.h).
#define CATCH_CONFIG_RUNNER
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "autotune/open_gpu.h"
#include "runtime/driver.h"
#include "runtime/runtime.h"

using namespace kiln;

namespace {

Runtime* g_rt = nullptr;
std::string g_bundle, g_rowsum_bundle, g_max_norm_bundle;

struct Buffers {
  static constexpr int64_t kSlack = 64;  // room to offset pointers
  CUdeviceptr x = 0, y = 0, z = 0;
  int64_t n;
  explicit Buffers(int64_t n) : n(n) {
    const DriverApi& api = g_rt->driver();
    size_t bytes = (n + kSlack) * sizeof(float);
    REQUIRE(api.cuMemAlloc(&x, bytes) == CUDA_SUCCESS);
    REQUIRE(api.cuMemAlloc(&y, bytes) == CUDA_SUCCESS);
    REQUIRE(api.cuMemAlloc(&z, bytes) == CUDA_SUCCESS);
  }
  ~Buffers() {
    const DriverApi& api = g_rt->driver();
    api.cuMemFree(x);
    api.cuMemFree(y);
    api.cuMemFree(z);
  }
};

// Runs add with x and y at byte offsets ox, oy (multiples of 4) and checks z on the host.
void run_and_check(Kernel& k, int64_t n, int64_t ox, int64_t oy, int64_t oz) {
  const DriverApi& api = g_rt->driver();
  Buffers b(n);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> d(-2, 2);
  std::vector<float> hx(n), hy(n), hz(n, 0.0f);
  for (auto& v : hx) v = d(rng);
  for (auto& v : hy) v = d(rng);
  REQUIRE(api.cuMemcpyHtoD(b.x + ox, hx.data(), n * 4) == CUDA_SUCCESS);
  REQUIRE(api.cuMemcpyHtoD(b.y + oy, hy.data(), n * 4) == CUDA_SUCCESS);
  REQUIRE(api.cuMemsetD8(b.z, 0xFF, (n + Buffers::kSlack) * 4) == CUDA_SUCCESS);
  CUdeviceptr ptrs[] = {b.x + ox, b.y + oy, b.z + oz};
  int64_t syms[] = {n};
  Status s = k.launch(nullptr, ptrs, syms);
  REQUIRE(s.ok());
  REQUIRE(api.cuCtxSynchronize() == CUDA_SUCCESS);
  REQUIRE(api.cuMemcpyDtoH(hz.data(), b.z + oz, n * 4) == CUDA_SUCCESS);
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) bad += hz[i] != hx[i] + hy[i];
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("launch computes the right result at awkward sizes", "[gpu]") {
  auto b = Bundle::load(*g_rt, g_bundle);
  REQUIRE(b.ok());
  Kernel* k = (*b)->find("add");
  REQUIRE(k);
  for (int64_t n : {1, 3, 1000, 4097, 1000003}) run_and_check(*k, n, 0, 0, 0);
}

TEST_CASE("unaligned pointers fall back to a scalar variant", "[gpu]") {
  auto b = Bundle::load(*g_rt, g_bundle);
  REQUIRE(b.ok());
  Kernel* k = (*b)->find("add");
  REQUIRE(k);
  REQUIRE(k->info().steps[0].variants[k->chosen_variant(0)].align_bytes == 16);
  run_and_check(*k, 100003, 4, 0, 0);
  run_and_check(*k, 100003, 0, 8, 12);
}

TEST_CASE("every variant computes the same result", "[gpu]") {
  auto b = Bundle::load(*g_rt, g_bundle);
  REQUIRE(b.ok());
  Kernel* k = (*b)->find("add");
  REQUIRE(k);
  for (size_t v = 0; v < k->info().steps[0].variants.size(); ++v) {
    INFO("variant " << v);
    REQUIRE(k->set_choice(0, static_cast<int>(v)).ok());
    run_and_check(*k, 77777, 0, 0, 0);
  }
  CHECK_FALSE(k->set_choice(0, 1000).ok());
}

TEST_CASE("bad arguments are refused before anything is launched", "[gpu]") {
  auto b = Bundle::load(*g_rt, g_bundle);
  REQUIRE(b.ok());
  Kernel* k = (*b)->find("add");
  REQUIRE(k);
  Buffers buf(1024);
  int64_t n[] = {1024};
  auto fails = [&](std::vector<CUdeviceptr> ptrs, std::vector<int64_t> syms) {
    Status s = k->launch(nullptr, ptrs, syms);
    CHECK_FALSE(s.ok());
    return s.message();
  };
  CHECK_THAT(fails({buf.x, buf.y}, {1024}), Catch::Contains("expected 3 pointers"));
  CHECK_THAT(fails({buf.x, buf.y, buf.z}, {}), Catch::Contains("expected 1 symbol value"));
  CHECK_THAT(fails({buf.x, 0, buf.z}, {1024}), Catch::Contains("argument 2 (y): null pointer"));
  CHECK_THAT(fails({buf.x, buf.y, buf.z}, {0}), Catch::Contains("symbol N = 0 must be > 0"));
  CHECK_THAT(fails({buf.x, buf.y, buf.z}, {INT64_MAX / 2}), Catch::Contains("too large"));
  CHECK_THAT(fails({buf.x + 2, buf.y, buf.z}, {1024}),
             Catch::Contains("argument 1 (x): pointer is not aligned to its 4-byte elements"));
  CHECK_THAT(fails({buf.x, buf.y, buf.x + 64}, {1024}),
             Catch::Contains("argument 3 (z) overlaps argument 1 (x)"));
  // An explicit vector variant with an unaligned pointer is an error, not a silent fallback.
  int vec_variant = k->chosen_variant(0);
  int choice[] = {vec_variant};
  CUdeviceptr ptrs[] = {buf.x + 4, buf.y, buf.z};
  Status s = k->launch_variants(nullptr, ptrs, n, choice);
  CHECK_THAT(s.message(), Catch::Contains("needs 16-byte aligned pointers"));
}

TEST_CASE("several threads launch through one runtime at once", "[gpu]") {
  auto b = Bundle::load(*g_rt, g_bundle);
  REQUIRE(b.ok());
  const Kernel* k = (*b)->find("add");
  REQUIRE(k);
  const DriverApi& api = g_rt->driver();
  constexpr int kThreads = 4, kLaunches = 200;
  constexpr int64_t n = 100003;
  std::vector<int64_t> bad(kThreads, -1);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // A fresh thread: no current context until the runtime's launch (or this) sets it.
      CUstream stream;
      CUdeviceptr x, y, z;
      if (!g_rt->make_current().ok() || api.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) ||
          api.cuMemAlloc(&x, n * 4) || api.cuMemAlloc(&y, n * 4) || api.cuMemAlloc(&z, n * 4)) {
        errors[t] = "setup failed";
        return;
      }
      std::vector<float> hx(n, 1.0f + t), hy(n, 2.0f), hz(n);
      api.cuMemcpyHtoD(x, hx.data(), n * 4);
      api.cuMemcpyHtoD(y, hy.data(), n * 4);
      api.cuCtxSynchronize();  // `stream` is non-blocking: it would not wait for the copies' DMA
      CUdeviceptr ptrs[] = {x, y, z};
      int64_t syms[] = {n};
      for (int i = 0; i < kLaunches; ++i) {
        if (Status s = k->launch(stream, ptrs, syms); !s.ok()) errors[t] = s.message();
      }
      api.cuStreamSynchronize(stream);
      api.cuMemcpyDtoH(hz.data(), z, n * 4);
      bad[t] = 0;
      for (float v : hz) bad[t] += v != 3.0f + t;
      api.cuMemFree(x);
      api.cuMemFree(y);
      api.cuMemFree(z);
      api.cuStreamDestroy(stream);
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    INFO("thread " << t << ": " << errors[t]);
    CHECK(errors[t].empty());
    CHECK(bad[t] == 0);
  }
}

TEST_CASE("launches can be captured into a CUDA graph and replayed", "[gpu]") {
  auto b = Bundle::load(*g_rt, g_bundle);
  REQUIRE(b.ok());
  const Kernel* k = (*b)->find("add");
  REQUIRE(k);
  const DriverApi& api = g_rt->driver();
  constexpr int64_t n = 4097;
  Buffers buf(n);
  std::vector<float> hx(n), hy(n), hz(n);
  for (int64_t i = 0; i < n; ++i) {
    hx[i] = 0.5f * i;
    hy[i] = 1.0f - i;
  }
  REQUIRE(api.cuMemcpyHtoD(buf.x, hx.data(), n * 4) == CUDA_SUCCESS);
  REQUIRE(api.cuMemcpyHtoD(buf.y, hy.data(), n * 4) == CUDA_SUCCESS);
  REQUIRE(api.cuMemsetD8(buf.z, 0xFF, n * 4) == CUDA_SUCCESS);
  CUstream stream;
  REQUIRE(api.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
  CUdeviceptr ptrs[] = {buf.x, buf.y, buf.z};
  int64_t syms[] = {n};
  REQUIRE(api.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS);
  Status s = k->launch(stream, ptrs, syms);
  CUgraph graph = nullptr;
  REQUIRE(api.cuStreamEndCapture(stream, &graph) == CUDA_SUCCESS);
  REQUIRE(s.ok());
  CUgraphExec exec = nullptr;
  REQUIRE(api.cuGraphInstantiate(&exec, graph, 0) == CUDA_SUCCESS);
  REQUIRE(api.cuGraphLaunch(exec, stream) == CUDA_SUCCESS);
  REQUIRE(api.cuStreamSynchronize(stream) == CUDA_SUCCESS);
  REQUIRE(api.cuMemcpyDtoH(hz.data(), buf.z, n * 4) == CUDA_SUCCESS);
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) bad += hz[i] != hx[i] + hy[i];
  CHECK(bad == 0);
  api.cuGraphExecDestroy(exec);
  api.cuGraphDestroy(graph);
  api.cuStreamDestroy(stream);
}

namespace {

// Launches `k` on input `x` into an output of its own from each of 4 threads, each on its own
// stream, `launches` times, and checks every element of the output against `want` each time.
void check_from_threads(const Kernel& k, CUdeviceptr x, std::span<const int64_t> syms,
                        const std::vector<float>& want, int launches) {
  constexpr int kThreads = 4;
  const DriverApi& api = g_rt->driver();
  const auto n = static_cast<int64_t>(want.size());
  std::vector<int64_t> bad(kThreads, -1);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      CUstream st;
      CUdeviceptr out;
      if (!g_rt->make_current().ok() || api.cuStreamCreate(&st, CU_STREAM_NON_BLOCKING) ||
          api.cuMemAlloc(&out, n * 4)) {
        errors[t] = "setup failed";
        return;
      }
      CUdeviceptr p[] = {x, out};
      std::vector<float> got(n);
      bad[t] = 0;
      for (int i = 0; i < launches; ++i) {
        api.cuMemsetD8Async(out, 0xFF, n * 4, st);
        if (Status s = k.launch(st, p, syms); !s.ok()) errors[t] = s.message();
        api.cuMemcpyDtoHAsync(got.data(), out, n * 4, st);
        api.cuStreamSynchronize(st);
        for (int64_t e = 0; e < n; ++e) bad[t] += got[e] != want[e];
      }
      api.cuMemFree(out);
      api.cuStreamDestroy(st);
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    INFO("thread " << t << ": " << errors[t]);
    CHECK(errors[t].empty());
    CHECK(bad[t] == 0);
  }
}

// Captures one launch of `k` on `stream` into a graph and replays it twice; `wrong(launch)`
// poisons the output, runs `launch` and returns the elements that are wrong.
template <class Wrong>
void check_in_graph(const Kernel& k, CUstream stream, std::span<const CUdeviceptr> ptrs,
                    std::span<const int64_t> syms, Wrong&& wrong) {
  const DriverApi& api = g_rt->driver();
  REQUIRE(api.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS);
  Status s = k.launch(stream, ptrs, syms);
  CUgraph graph = nullptr;
  REQUIRE(api.cuStreamEndCapture(stream, &graph) == CUDA_SUCCESS);
  REQUIRE(s.ok());
  CUgraphExec exec = nullptr;
  REQUIRE(api.cuGraphInstantiate(&exec, graph, 0) == CUDA_SUCCESS);
  for (int replay = 0; replay < 2; ++replay) {
    CHECK(wrong([&] { REQUIRE(api.cuGraphLaunch(exec, stream) == 0); }) == 0);
  }
  api.cuGraphExecDestroy(exec);
  api.cuGraphDestroy(graph);
}

// Few, very long rows of rowsum: M rows of N, each row's sum known exactly (small integers).
struct RowSums {
  static constexpr int64_t M = 3, N = 1000003;
  CUdeviceptr x = 0, s = 0;
  std::vector<float> want;
  // Every element times `scale` (a small integer: the sums stay exact).
  explicit RowSums(int scale = 1) : want(M) {
    const DriverApi& api = g_rt->driver();
    std::vector<float> hx(M * N);
    for (int64_t i = 0; i < M; ++i) {
      double sum = 0;
      for (int64_t j = 0; j < N; ++j) {
        sum += hx[i * N + j] = static_cast<float>(scale * ((i + j) % 7 - 3));
      }
      want[i] = static_cast<float>(sum);
    }
    REQUIRE(api.cuMemAlloc(&x, hx.size() * 4) == CUDA_SUCCESS);
    REQUIRE(api.cuMemAlloc(&s, M * 4) == CUDA_SUCCESS);
    REQUIRE(api.cuMemcpyHtoD(x, hx.data(), hx.size() * 4) == CUDA_SUCCESS);
    // Launches on non-blocking streams do not wait for this copy's DMA.
    REQUIRE(api.cuCtxSynchronize() == CUDA_SUCCESS);
  }
  ~RowSums() {
    g_rt->driver().cuMemFree(x);
    g_rt->driver().cuMemFree(s);
  }
  // Poisons s, runs `launch` (which must leave its work on `stream`) and returns the rows
  // that are not their exact sum.
  template <class F>
  int64_t wrong_rows(CUstream stream, F&& launch) {
    const DriverApi& api = g_rt->driver();
    std::vector<float> got(M);
    REQUIRE(api.cuMemsetD8(s, 0xFF, M * 4) == CUDA_SUCCESS);
    launch();
    REQUIRE(api.cuStreamSynchronize(stream) == CUDA_SUCCESS);
    REQUIRE(api.cuMemcpyDtoH(got.data(), s, M * 4) == CUDA_SUCCESS);
    int64_t bad = 0;
    for (int64_t i = 0; i < M; ++i) bad += got[i] != want[i];
    return bad;
  }
};

}  // namespace

TEST_CASE("few long rows run split, through a workspace, in graphs and threads", "[gpu]") {
  auto b = Bundle::load(*g_rt, g_rowsum_bundle);
  REQUIRE(b.ok());
  const Kernel* k = (*b)->find("rowsum");
  REQUIRE(k);
  RowSums rs;
  CUdeviceptr ptrs[] = {rs.x, rs.s};
  int64_t syms[] = {RowSums::M, RowSums::N};
  int chosen = -1;
  k->choose(syms, std::span<int>(&chosen, 1));
  const DriverApi& api = g_rt->driver();
  CUstream stream;
  REQUIRE(api.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
  if (!g_rt->has_memory_pool()) {
    // No workspace can be allocated: the heuristic must not split, and the rows still sum.
    CHECK(k->info().steps[0].variants[chosen].split.phases == 0);
    CHECK(rs.wrong_rows(stream, [&] { REQUIRE(k->launch(stream, ptrs, syms).ok()); }) == 0);
    api.cuStreamDestroy(stream);
    return;
  }
  CHECK(k->info().steps[0].variants[chosen].split.phases == 2);  // the heuristic splits
  int64_t many[] = {4096, 1000};
  int plain = -1;
  k->choose(many, std::span<int>(&plain, 1));
  CHECK(k->info().steps[0].variants[plain].split.phases == 0);  // enough rows: one block each

  CHECK(rs.wrong_rows(stream, [&] { REQUIRE(k->launch(stream, ptrs, syms).ok()); }) == 0);

  SECTION("captured into a graph: the workspace becomes memory nodes, replayed twice") {
    check_in_graph(*k, stream, ptrs, syms,
                   [&](auto launch) { return rs.wrong_rows(stream, launch); });
  }
  SECTION("4 threads, each on its own stream, 50 launches each into its own output") {
    check_from_threads(*k, rs.x, syms, rs.want, 50);
  }
  api.cuStreamDestroy(stream);
}

TEST_CASE("threads launching split sums on one shared stream never share a workspace", "[gpu]") {
  // A stream keeps its scratch between launches (Runtime::scratch); a launch that finds it
  // held by another thread's launch on the same stream, whose phases may interleave with its
  // own in that stream, takes memory of its own instead. Each thread sums rows of its own
  // scale, so a record read from another thread's launch shows in the sums.
  auto b = Bundle::load(*g_rt, g_rowsum_bundle);
  REQUIRE(b.ok());
  const Kernel* k = (*b)->find("rowsum");
  REQUIRE(k);
  REQUIRE(g_rt->has_memory_pool());
  int64_t syms[] = {RowSums::M, RowSums::N};
  int chosen = -1;
  k->choose(syms, std::span<int>(&chosen, 1));
  REQUIRE(k->info().steps[0].variants[chosen].split.phases == 2);
  const DriverApi& api = g_rt->driver();
  CUstream shared;
  REQUIRE(api.cuStreamCreate(&shared, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
  constexpr int kThreads = 4, kLaunches = 60;
  std::vector<std::unique_ptr<RowSums>> sums;
  for (int t = 0; t < kThreads; ++t) sums.push_back(std::make_unique<RowSums>(t + 1));
  std::vector<int64_t> bad(kThreads, 0);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      RowSums& rs = *sums[static_cast<size_t>(t)];
      CUdeviceptr p[] = {rs.x, rs.s};
      std::vector<float> got(RowSums::M);
      if (!g_rt->make_current().ok()) {
        errors[t] = "make_current failed";
        return;
      }
      for (int i = 0; i < kLaunches; ++i) {
        api.cuMemsetD8Async(rs.s, 0xFF, RowSums::M * 4, shared);
        if (Status s = k->launch(shared, p, syms); !s.ok()) errors[t] = s.message();
        api.cuMemcpyDtoHAsync(got.data(), rs.s, RowSums::M * 4, shared);
        api.cuStreamSynchronize(shared);
        for (int64_t r = 0; r < RowSums::M; ++r) bad[t] += got[r] != rs.want[r];
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    INFO("thread " << t << ": " << errors[t]);
    CHECK(errors[t].empty());
    CHECK(bad[t] == 0);
  }
  api.cuStreamDestroy(shared);
}

TEST_CASE("kept scratch trimmed between launches, and keeping off: sums stay exact", "[gpu]") {
  auto b = Bundle::load(*g_rt, g_rowsum_bundle);
  REQUIRE(b.ok());
  const Kernel* k = (*b)->find("rowsum");
  REQUIRE(k);
  REQUIRE(g_rt->has_memory_pool());
  RowSums rs(3);
  CUdeviceptr ptrs[] = {rs.x, rs.s};
  int64_t syms[] = {RowSums::M, RowSums::N};
  const DriverApi& api = g_rt->driver();
  CUstream stream;
  REQUIRE(api.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
  // Launches enqueued back to back, the trim between them while they may still run: the
  // memory goes back only after the last launch that used it.
  for (int round = 0; round < 3; ++round) {
    CHECK(rs.wrong_rows(stream, [&] {
      for (int i = 0; i < 20; ++i) REQUIRE(k->launch(stream, ptrs, syms).ok());
      CHECK(g_rt->trim_scratch() > 0);
      for (int i = 0; i < 20; ++i) REQUIRE(k->launch(stream, ptrs, syms).ok());
    }) == 0);
  }
  g_rt->set_keep_scratch(false);
  CHECK(rs.wrong_rows(stream, [&] {
    for (int i = 0; i < 20; ++i) REQUIRE(k->launch(stream, ptrs, syms).ok());
  }) == 0);
  g_rt->set_keep_scratch(true);
  api.cuStreamDestroy(stream);
}

namespace {

// y = x / max(x) of global_max_norm, on M x N small integers whose largest is known: the
// division is exact in IEEE f32 on both sides, so every element must match bitwise.
struct MaxNorm {
  int64_t M, N;
  CUdeviceptr x = 0;
  std::vector<float> want;
  MaxNorm(int64_t m, int64_t n) : M(m), N(n), want(m * n) {
    const DriverApi& api = g_rt->driver();
    std::vector<float> hx(M * N);
    float mx = -1e30f;
    for (int64_t i = 0; i < M * N; ++i) mx = std::max(mx, hx[i] = float((i * 7919) % 2001 - 1000));
    for (int64_t i = 0; i < M * N; ++i) want[i] = hx[i] / mx;
    REQUIRE(api.cuMemAlloc(&x, hx.size() * 4) == CUDA_SUCCESS);
    REQUIRE(api.cuMemcpyHtoD(x, hx.data(), hx.size() * 4) == CUDA_SUCCESS);
    REQUIRE(api.cuCtxSynchronize() == CUDA_SUCCESS);
  }
  ~MaxNorm() { g_rt->driver().cuMemFree(x); }
  // Poisons y, runs `launch` (which leaves its work on `stream`) and counts wrong elements.
  template <class F>
  int64_t wrong(CUstream stream, CUdeviceptr y, F&& launch) {
    const DriverApi& api = g_rt->driver();
    std::vector<float> got(M * N);
    REQUIRE(api.cuMemsetD8Async(y, 0xFF, M * N * 4, stream) == CUDA_SUCCESS);
    launch();
    REQUIRE(api.cuMemcpyDtoHAsync(got.data(), y, M * N * 4, stream) == CUDA_SUCCESS);
    REQUIRE(api.cuStreamSynchronize(stream) == CUDA_SUCCESS);
    int64_t bad = 0;
    for (int64_t i = 0; i < M * N; ++i) bad += got[i] != want[i];
    return bad;
  }
};

}  // namespace

TEST_CASE("buffers between steps, in graphs and threads", "[gpu]") {
  auto b = Bundle::load(*g_rt, g_max_norm_bundle);
  REQUIRE(b.ok());
  const Kernel* k = (*b)->find("global_max_norm");
  REQUIRE(k);
  REQUIRE(k->info().buffers.size() == 2);
  REQUIRE(k->info().steps.size() == 3);
  if (!g_rt->has_memory_pool()) {
    MaxNorm mn(3, 5);
    CUdeviceptr y;
    REQUIRE(g_rt->driver().cuMemAlloc(&y, 15 * 4) == CUDA_SUCCESS);
    CUdeviceptr ptrs[] = {mn.x, y};
    int64_t syms[] = {3, 5};
    Status s = k->launch(nullptr, ptrs, syms);
    CHECK_THAT(s.message(), Catch::Contains("buffers") && Catch::Contains("memory pools"));
    g_rt->driver().cuMemFree(y);
    return;
  }
  const DriverApi& api = g_rt->driver();
  CUstream stream;
  REQUIRE(api.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
  // A block per row maximum, then one row of M: plain, then split (the max of a million).
  for (auto [m, n] : {std::pair<int64_t, int64_t>{1, 1}, {1000, 33}, {4097, 1001}, {1000003, 3}}) {
    INFO("M=" << m << " N=" << n);
    MaxNorm mn(m, n);
    CUdeviceptr y;
    REQUIRE(api.cuMemAlloc(&y, m * n * 4) == CUDA_SUCCESS);
    CUdeviceptr ptrs[] = {mn.x, y};
    int64_t syms[] = {m, n};
    int chosen[3];
    k->choose(syms, chosen);
    CHECK((k->info().steps[1].variants[chosen[1]].split.phases > 0) == (m == 1000003));
    CHECK(mn.wrong(stream, y, [&] { REQUIRE(k->launch(stream, ptrs, syms).ok()); }) == 0);

    // Captured: the buffers (and a split step's workspace) become memory nodes.
    check_in_graph(*k, stream, ptrs, syms,
                   [&](auto launch) { return mn.wrong(stream, y, launch); });
    api.cuMemFree(y);
  }

  // 4 threads, each on its own stream into its own output, 30 launches each: a launch's
  // buffers are never another stream's (a thread never sees another's row maxima).
  MaxNorm mn(2001, 777);
  int64_t syms[] = {mn.M, mn.N};
  check_from_threads(*k, mn.x, syms, mn.want, 30);
  api.cuStreamDestroy(stream);
}

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr,
                 "usage: %s ADD_BUNDLE_DIR ROWSUM_BUNDLE_DIR MAX_NORM_BUNDLE_DIR [catch options]\n",
                 argv[0]);
    return 2;
  }
  std::unique_ptr<Runtime> rt;
  if (int rc = open_gpu("kiln_gpu_runtime_tests", rt); rc >= 0) return rc;
  g_rt = rt.get();
  g_bundle = argv[1];
  g_rowsum_bundle = argv[2];
  g_max_norm_bundle = argv[3];
  argv[3] = argv[0];
  return Catch::Session().run(argc - 3, argv + 3);
}
