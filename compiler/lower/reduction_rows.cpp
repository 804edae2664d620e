// Row kernels: the reduced index is the contiguous one. reduction_analysis.cpp gives the
// canonical items, their passes and the fusions of looped rows (its steps 1 to 3); then:
//  4. Rows: `group` threads own one row, thread l
//     the elements (c * group + l) * vec + v. When R <= group * vec * items (checked at run
//     time) the row is persistent: the `items` vectors are loaded once and every pass reuses
//     them from registers. Otherwise each pass (of step 3's looped passes) loops over the
//     row in chunks of that size, re-reading it; its f32 sums (fused states' included) are
//     compensated (Kahan) across chunks. When R % vec == 0 the vectors are 16-byte
//     loads and stores; other rows take scalar accesses, `group` apart, 4 per iteration,
//     except in a shifting variant (cfg.shift, branch_rows), whose rows of at least 2 x vec
//     elements are all shifted (an aligned row's shift is 0): row i starts at
//     flat element i x R, so its vectors start `shift` = (-i x R) mod vec elements in, where
//     the flat index is a multiple of vec, and its body (whole vectors up to body_end) is
//     walked as above; its edges (the head before `shift`, the tail from body_end, fewer
//     than 2 x vec elements) are scalar points of the first chunk (persistent rows: of
//     every pass, re-read), edge e on lane e % group (row_edges). Only tensors laid out like the
//     row (x[i, r], y[i, r]) are vectors there; a weight w[r] is misaligned by the shift and loads
//     a lane at a time. Its shorter rows take scalar accesses as above. No
//     access reads past its tensor: a vector out of range is clamped to the last whole vector of
//     the row's body. Out-of-range elements load a clamped (valid) address and contribute the
//     reduction's identity. The grid covers the rows (no loop over rows). In a persistent row only
//     the packed loads stay live between passes: each pass widens and recomputes from them
//     (rematerialize), since registers, not instructions, bound the rows in flight per SM.
//  4b. Staging (cfg.stage, looped rows whose R is a multiple of vec): the packed vectors of
//     each row-varying input that more than one looped pass reads (plan_stage) are kept in
//     dynamic shared memory. The first pass that reads an input stores each vector it loads
//     from global memory; later passes load it from shared memory. A thread reads back only
//     the vectors it stored itself (every pass walks the row with the same element -> thread
//     mapping), so no barrier is needed. The kernel runs this path only when the launch gave
//     it enough dynamic shared memory (%dynamic_smem_size): otherwise it loops unstaged.
//  4c. Tiles (cfg.strided && cfg.stage: a strided variant; plan_tile): the strided inputs read
//     at an element of the row, whatever their strides, are copied by the block into dynamic
//     shared memory before its passes, its rows_per_block rows one area each (kTileRowAlign
//     bytes aligned), then every pass reads them from there. The copy walks the block's rows
//     with neighbouring threads on neighbouring elements of memory: along the rows when the
//     input's last row index has the smaller stride (a transposed view: thread t takes row
//     t % rows_per_block, so a warp reads rows_per_block consecutive elements of each of
//     32 / rows_per_block columns), else along the row (`group` threads a row, as the passes
//     walk it). Its 16-byte chunks are XOR-swizzled within each 128-byte line by the row
//     (tile_address), so that the copy's stores of several rows and the passes' reads of one
//     row hit distinct banks. The passes take vectors of the tile, of the other inputs and
//     of the outputs when R % vec == 0 and those pointers are aligned (checked here: the
//     strided variant's alignment is 1), else scalars. When the launch gives too little
//     shared memory the rows loop over global memory through the strides.
//  5. Combining (combine_rows): a row's threads reduce with warp butterflies (every lane ends
//     with the same value), then across warps through shared memory (each pass has its own
//     slots: one barrier per pass), where every thread folds the warps' partials in warp
//     order: the result does not depend on timing. A fused state (step 3) merges lower lane
//     first in the butterflies, since its merge is not symmetric (fma contraction alone
//     breaks symmetry), and its warps fold in a loop (fold_warps).
// Split rows (few, very long ones) spread each row over many blocks: reduction_split.cpp.
#include <fmt/format.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include <algorithm>
#include <bit>
#include <functional>
#include <set>
#include <tuple>
#include <unordered_map>

#include "compiler/lower/reduction_lowering.h"
#include "compiler/reduction_math.h"

namespace kiln::reduction {

// The paths of a row kernel, chosen from R at run time. With vec > 1, a plain variant takes
// aligned vectors for rows whose length is a multiple of vec and scalars for the others; a
// shifting variant (cfg.shift: the twin the rule runs for rows whose length is not a multiple
// of vec, bundle/rule.h) takes shifted vectors (step 4) for every row of at least 2 x vec
// elements (each then has a whole aligned vector, wherever it starts; an aligned row's shift
// is 0) and scalars for shorter ones. They are separate variants because a kernel's registers
// are those of its hungriest path: the shifted persistent path raised a bf16 softmax's from 64
// to 76 and cost aligned rows 5-12% on an H200 (bench/results/2026-11-25-h200-memory-bound).
void ReductionLowering::branch_rows(Value* fits, Value* vec_ok) {
  if (cfg_.strided && cfg_.stage) {
    branch_tiled(vec_ok);
    return;
  }
  prefetch_weights();
  BasicBlock* persistent = BasicBlock::Create(ctx_, "persistent", fn_);
  BasicBlock* looped = BasicBlock::Create(ctx_, "looped", fn_);
  if (cfg_.shift) {
    Value* shift_ok = b_.CreateICmpUGE(R_, i64(2 * cfg_.vec), "shift.ok");
    b_.CreateCondBr(b_.CreateAnd(fits, shift_ok), persistent, looped);
    b_.SetInsertPoint(persistent);
    emit_rows(true, true, false, true);
    b_.SetInsertPoint(looped);
    BasicBlock* shifted = BasicBlock::Create(ctx_, "shifted", fn_);
    BasicBlock* scalar = BasicBlock::Create(ctx_, "scalar", fn_);
    b_.CreateCondBr(shift_ok, shifted, scalar);
    b_.SetInsertPoint(shifted);
    emit_rows(false, true, false, true);
    b_.SetInsertPoint(scalar);
    emit_rows(false, false);
    return;
  }
  b_.CreateCondBr(cfg_.vec > 1 ? b_.CreateAnd(fits, vec_ok) : fits, persistent, looped);
  b_.SetInsertPoint(persistent);
  emit_rows(true, cfg_.vec > 1);
  b_.SetInsertPoint(looped);
  if (cfg_.vec == 1) {
    emit_rows(false, false);
    return;
  }
  branch2(vec_ok, [&](bool vector) {
    if (vector && cfg_.stage && !stage_plan_.regions.empty()) {
      branch_staged();
    } else {
      emit_rows(false, vector);
    }
  });
}

// The inputs a row's element stores read along the row but the same for every row (a norm's
// weight and bias, w[j]) are read only in the store pass, which evaluates and stores one
// vector at a time: ptxas keeps each vector's loads after the previous vector's (conditional)
// store, so on a block's first row every vector waits a round trip to L2 or DRAM in turn.
// Measured on an H200 (bench/results/2026-11-28-h200-row-split-bytes, calls 5 and 6): the f32
// layernorm's 128-thread tier at 8 rows of 4096 waited 9.4 of its 13.4 cycles an instruction
// on those loads; issuing every vector's loads before the first store took it from 8.0 to
// 5.0 us but held them in registers (95 -> 126), fewer rows in flight on long launches. Here
// the block asks L1 for those lines before its first pass (PTX prefetch, no register holds
// them): the first kPrefetchWeightBytes of each such input, a line per thread at a time.
// Only where the grid is at most one block per SM (%nsmid: the SMs' ids run below it): the
// prefetch costs each block time (our reading: it holds its warp until the line is on chip),
// which pays only where that block's rows are the SM's only work. Measured
// (bench/results/2026-11-28-h200-weight-prefetch): with every block prefetching, 1 and 8 rows of
// norms took 0.79-0.99 of the time but 4096 rows up to 1.6x; with only the first %nsmid blocks,
// 4096 rows of 1000 still 1.06x; as here, 1 and 8 rows 0.80-0.97, 132 rows 0.90-1.02, 4096 rows
// unchanged.
void ReductionLowering::prefetch_weights() {
  const std::vector<std::pair<int, const Load*>> weights =
      reduction::row_invariant_loads(prog_, params_);
  if (weights.empty()) return;
  BasicBlock* yes = BasicBlock::Create(ctx_, "prefetch.weights", fn_);
  BasicBlock* done = BasicBlock::Create(ctx_, "prefetched.weights", fn_);
  Value* sms = em_.sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_nsmid);
  b_.CreateCondBr(b_.CreateICmpULE(nblocks_, sms, "one.wave"), yes, done);
  b_.SetInsertPoint(yes);
  Point at;
  at.o = coords_of(i64(0));
  for (const auto& [param, ld] : weights) {
    const int64_t size = size_of(ld->stored);
    const int64_t line = 128 / size;  // elements a line
    Value* end = b_.CreateSelect(b_.CreateICmpULT(R_, i64(kPrefetchWeightBytes / size)), R_,
                                 i64(kPrefetchWeightBytes / size), "prefetch.end");
    BasicBlock* pre = b_.GetInsertBlock();
    BasicBlock* body = BasicBlock::Create(ctx_, "prefetch", fn_);
    BasicBlock* walked = BasicBlock::Create(ctx_, "prefetched", fn_);
    Value* start = b_.CreateMul(tid_, i64(line));
    b_.CreateCondBr(b_.CreateICmpULT(start, end), body, walked);
    b_.SetInsertPoint(body);
    llvm::PHINode* r = b_.CreatePHI(b_.getInt64Ty(), 2, "prefetch.r");
    r->addIncoming(start, pre);
    at.r = r;
    em_.prefetch_l1(ptrs_[param], ld->stored, offset_of(param, ld->indices, at));
    Value* next = b_.CreateAdd(r, i64(int64_t{cfg_.block} * line));
    r->addIncoming(next, b_.GetInsertBlock());
    b_.CreateCondBr(b_.CreateICmpULT(next, end), body, walked);
    b_.SetInsertPoint(walked);
  }
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
}

// Looped vector rows of a staging config: staged when the rows of the block fit in the
// dynamic shared memory of the launch (bundle/manifest.h: the runtime gives R x
// bytes_per_element x rows per block when the device has it), else unstaged. The check
// divides, so a huge R cannot overflow it.
void ReductionLowering::branch_staged() {
  const int64_t per_row = stage_plan_.bytes_per_element * (cfg_.block / cfg_.group);
  Value* avail = b_.CreateZExt(dynamic_smem_size(), b_.getInt64Ty(), "smem.dynamic");
  Value* fits = b_.CreateICmpULE(R_, b_.CreateUDiv(avail, i64(per_row)), "stage.fits");
  BasicBlock* staged = BasicBlock::Create(ctx_, "staged", fn_);
  BasicBlock* plain = BasicBlock::Create(ctx_, "unstaged", fn_);
  b_.CreateCondBr(fits, staged, plain);
  b_.SetInsertPoint(staged);
  emit_rows(false, true, true);
  b_.SetInsertPoint(plain);
  emit_rows(false, true);
}

void ReductionLowering::emit_rows(bool persistent, bool vector, bool staged, bool shifted) {
  // Scalar accesses of a vectorized variant (rows not a multiple of vec; in a shifting variant,
  // rows shorter than 2 x vec) take kUnalignedItems elements, `group` apart, per iteration: each
  // scalar access needs an address register of its own, and a kernel's register count is that of
  // its hungriest path.
  const bool unaligned = !vector && cfg_.vec > 1;
  const int T = cfg_.group, V = unaligned ? 1 : cfg_.vec;
  const int64_t rpb = cfg_.block / T;
  const int G = unaligned ? scalar_items(persistent) : cfg_.items;
  Value* lane = b_.CreateAnd(tid_, i64(T - 1), "lane");
  Value* grp = b_.CreateUDiv(tid_, i64(T), "grp");
  // The grid covers the rows (see the manifest's contract): no loop over rows, so no
  // loop-invariant value (a weight's elements) is hoisted into a register for the whole
  // kernel, and the shared-memory slots of a pass are never reused.
  Value* first = b_.CreateMul(bid_, i64(rpb), "first");
  Value* row = b_.CreateAdd(first, grp, "row");
  Value* valid = b_.CreateICmpULT(row, rows_, "valid");
  Value* rowc = b_.CreateSelect(valid, row, b_.CreateSub(rows_, i64(1)));
  std::vector<Value*> o = coords_of(rowc);
  if (staged) {
    stage_row_ = b_.CreateMul(grp, b_.CreateMul(R_, i64(stage_plan_.bytes_per_element)));
  }
  tile_kr_ = tile_pitch_ ? grp : nullptr;
  // A shifted row (step 4): its body of whole vectors, then its edges.
  const ShiftedRow body = shifted ? shifted_row(rowc) : ShiftedRow{nullptr, R_, R_};
  Value *shift = body.shift, *body_end = body.body_end, *walked_to = body.walked;
  const RowSteps steps = row_steps(int64_t{T} * V, persistent);
  // A whole chunk (walk_chunks) is walked only where the row exists: its points' `valid` is
  // true.
  auto make_groups = [&](Value* base, bool whole = false) {
    Value* exists = whole ? b_.getTrue() : valid;
    std::vector<Group> gs = row_groups(
        base, body_end, {G, T, V, vector && V > 1, shift, &steps, whole}, lane, exists, o);
    if (staged) stage_groups(gs);
    if (shifted && !persistent) {  // the edges, with the first chunk
      gs.push_back(
          row_edges(shift, body_end, b_.CreateICmpEQ(base, i64(0), "edges"), lane, exists, o));
    }
    return gs;
  };
  // The row's own inputs load with evict_last priorities in L1 and L2 (Emitter::
  // load_vector_kept), as Triton's norm kernels do, when the kernel writes the row back or
  // this path walks it more than once. Measured on an H200 (bench/results/2026-11-21-h200-
  // reductions.md, eighth run): a hand-written bf16 rmsnorm of 32768x4096 took 128.74 us
  // with the hints and 134.72 without (torch.compile 129.06 in the same process; evict_first
  // loads 141.31); in Kiln, rmsnorm 134.91 -> 129.06 us, layernorm 135.42 -> 128.99, softmax
  // of 1024 x 65536 (looped: three walks) 101.44 -> 97.76. A row sum, which only reads,
  // went from 127.39 to 128.96 us with them, so it loads plainly. Why the hints help (our
  // reading, not measured): the output's dirty lines leave L2 before the input's, and a
  // looped row is still in L2 for its next walk.
  const std::vector<std::vector<int>>& walked = persistent ? prog_.passes : prog_.looped;
  const auto walks = std::count_if(walked.begin(), walked.end(), [&](const auto& pass) {
    return prog_.items[pass[0]].kind != Item::row_store;
  });
  const bool writes_row = stores_elements(prog_);  // (an element store's param is >= 0)
  // A staged path loads plainly: its later walks read shared memory, and its first walk's
  // loads are to be issued together before their stores to shared memory, an order LLVM
  // keeps for loads but not for the hinted loads' inline assembly.
  if (!staged && (writes_row || (!persistent && walks > 1))) {
    keep_policy_ = em_.l2_evict_last_policy();
  }
  Point row_point;
  row_point.o = o;
  row_point.ok = valid;
  std::vector<std::vector<Value*>> results(prog_.items.size());
  std::vector<Group> held;
  if (persistent) {
    held = make_groups(i64(0));
    prefetch(held);
  }
  const std::vector<std::vector<int>>& passes = persistent ? prog_.passes : prog_.looped;
  for (size_t pi = 0; pi < passes.size(); ++pi) {
    const std::vector<int>& pass = passes[pi];
    pass_ = static_cast<int>(pi);
    if (prog_.items[pass[0]].kind == Item::row_store) {
      store_row_item(prog_.items[pass[0]], row_point, results,
                     b_.CreateAnd(valid, b_.CreateICmpEQ(lane, i64(0))));
      continue;
    }
    std::vector<Value*> partial;
    if (persistent) {
      if (pi > 0) rematerialize(held, static_cast<int>(pi));
      // A shifted row's edges are read again by each pass (from L1; the copied shift keeps
      // LLVM from merging the loads), not held: held, a bf16 layernorm of 256 threads x 16
      // took 64 registers under nvJitLink's ptxas instead of 40 (76 either way at 256 x 32).
      if (shifted) {
        Value* s = pi > 0 ? opaque_copy(shift, static_cast<int>(pi)) : shift;
        held.push_back(row_edges(s, body_end, nullptr, lane, valid, o));
      }
      partial = run_pass(pass, held, results, initial(pass));
      if (shifted) held.pop_back();
    } else {
      partial =
          walk_chunks(pass, results, i64(0), int64_t{T} * V * G, walked_to, valid, make_groups);
    }
    partial =
        combine_rows(states_of(pass), partial, lane, grp, slot_base(passes, static_cast<int>(pi)));
    for (int r : reductions_of(pass)) results[r] = {finish(r, accumulated(r, pass, partial))};
    store_reductions(pass, row_point, results, b_.CreateAnd(valid, b_.CreateICmpEQ(lane, i64(0))));
  }
  b_.CreateBr(exit_);
  stage_row_ = nullptr;
  tile_kr_ = nullptr;
  keep_policy_ = nullptr;
}

std::vector<Group> ReductionLowering::row_groups(Value* base, Value* limit, Walk w, Value* lane,
                                                 Value* valid, const std::vector<Value*>& o) {
  std::vector<Group> gs(w.items);
  Value* from = w.shift ? b_.CreateAdd(w.shift, base) : base;
  // A vector ends at or before limit: the row's end, or a shifted row's body_end.
  Value* last_vector = w.vector ? b_.CreateSub(w.shift ? limit : R_, i64(w.vec)) : nullptr;
  // Over several reduced indices the first point divides its flat index into coordinates and
  // every other point's are stepped from the point before (step_axes: a group's first from the
  // group before, the others from their neighbour), and so are the inputs' offsets, where
  // dividing at every vector made the kernel bound by its index arithmetic (per-channel sums of
  // [64, 256, 56, 56] f32: about 68 instructions a warp's vectors, 1 block of 512 threads an
  // SM; bench/results/2026-11-25-h200-multiaxis and 2026-12-01-h200-row-steps). A point out
  // of range reads the first point's (valid) element, as its clamped self would read a valid
  // one. Coordinates and offsets nothing reads are not emitted (LLVM drops them).
  const bool stepping = w.steps && !w.steps->group.axes.empty();
  Stepped head, at;  // the coordinates of the last group's first point, of the last point
  std::map<std::string, Value*> head_off, at_off, first;  // their offsets; the first point's
  for (int c = 0; c < w.items; ++c) {
    Group& g = gs[c];
    g.shared = true;
    g.vector = w.vector;
    g.shifted = w.shift != nullptr;
    Value* start = b_.CreateAdd(
        from, b_.CreateMul(b_.CreateAdd(i64(int64_t{c} * w.threads), lane), i64(w.vec)), "r0");
    // A vector (limit - start a multiple of vec) is in range as a whole or not at all.
    const bool check = g.vector && !w.whole;
    Value* start_in = check ? b_.CreateICmpULT(start, limit) : nullptr;
    Value* vec_ok = check ? b_.CreateAnd(valid, start_in) : valid;
    Value* start_c = check ? b_.CreateSelect(start_in, start, last_vector) : start;
    for (int v = 0; v < w.vec; ++v) {
      Point p;
      p.o = o;
      Value* r = b_.CreateAdd(start, i64(v));
      // `inside`: the point is an element of the row (else it reads the row's last, or with
      // steps the chunk's first point's); null in a whole chunk, where every point is.
      Value* inside = nullptr;
      if (w.whole) {
        p.ok = valid;
        p.r = c == 0 && v == 0 && stepping ? opaque_index(r) : r;
      } else if (g.vector) {
        p.ok = vec_ok;
        inside = start_in;
        p.r = b_.CreateAdd(start_c, i64(v));
      } else {
        p.ok = b_.CreateAnd(valid, b_.CreateICmpULT(r, limit));
        inside = b_.CreateICmpULT(r, R_);
        p.r = b_.CreateSelect(inside, r, b_.CreateSub(R_, i64(1)));
      }
      if (stepping) {
        const bool origin = c == 0 && v == 0;
        const AxisSteps& by = v == 0 ? w.steps->group : w.steps->point;
        std::map<std::string, Value*>& from_off = v == 0 ? head_off : at_off;
        at = origin ? Stepped{axes_of(p.r), {}} : step_axes((v == 0 ? head : at).axes, by.axes);
        if (!joined_axes()) p.axes = at.axes;
        for (const auto& [key, os] : by.offsets) {
          Value* off;
          if (origin) {
            off = first[key] = offset_of(os.param, os.indices, p);
          } else {
            off = from_off.at(key);
            for (size_t a = 1; a < os.wrap.size(); ++a) {
              off = b_.CreateAdd(off, b_.CreateSelect(at.wraps[a], os.wrap[a], i64(0)));
            }
            off = b_.CreateAdd(off, os.step, "off");
            if (w.whole) off = opaque_index(off);
          }
          at_off[key] = off;
          if (v == 0) head_off[key] = off;
          p.offsets[key] = origin || !inside ? off : b_.CreateSelect(inside, off, first.at(key));
        }
        if (v == 0) head = at;
      }
      g.pts.push_back(std::move(p));
    }
  }
  return gs;
}

// A tile's fallback (rows through the strides) keeps 8 in flight, as the scalar strided
// variant did (block=128 group=32 items=8: 811 us where 4 took 990 on an H200 for rows of
// 16384 bf16, bench/results/2026-11-26-h200-strided-tile). So does a looped or split row whose
// offsets row_groups steps (a trailing run of the reduced indices not a multiple of the vector:
// 7 x 7, 17 x 17, 49): on an H200 per-channel sums of [128, 128, 17, 17] f32 20.8 -> 19.5 us,
// [16, 64, 35, 35] 13.3 -> 12.0, bf16 means over [32, 768, 49] 8.9 -> 8.1, [8, 256, 1001]
// 10.0 -> 9.0, the others level (bench/results/2026-12-01-h200-row-steps, call 5).
int ReductionLowering::scalar_items(bool held) const {
  if (cfg_.strided && !tile_pitch_) return kStridedItems;
  return held ? kUnalignedItems : looped_scalar_items(divides_);
}

ReductionLowering::RowSteps ReductionLowering::row_steps(int64_t threads_by_vec, bool held) {
  if (held) return {};
  return {axis_steps(threads_by_vec), axis_steps(1)};
}

// Whole chunks as the outer kernels walk them (outer_chunks), where a row steps its points'
// offsets (several reduced indices apart: divides_): a looped row of 64 x 7 x 7 f32 elements
// (batchnorm's sums over N, H, W) spent about a third of a point's instructions on its range
// test, its clamps and its masks (v5's loop: 175 -> 129 PTX instructions for 8 points). On an
// H200 (bench/results/2026-12-02-h200-whole-chunks, call 3) such kernels took 0.76-0.98 of
// their time: per-channel sums of [64, 512, 7, 7] 8.9 -> 8.4 us (Nsight Compute: 2.40M ->
// 1.87M warp instructions), of [128, 128, 17, 17] 16.0 -> 13.7, bf16 means over
// [16, 512, 3001] 42.7 -> 32.5. Elsewhere a chunk's masks cost little and taking them away
// cost more: unmasked, nvJitLink gave the kernels of the other rows more registers (call 2:
// a bf16 softmax's 64-thread tier 40 -> 47, its held rows of 1024 33.3 -> 35.0 us; the split
// row sum of 2^26 f32 40 -> 51, 65.0 -> 66.7 us; call 3, scalar walks only: a looped f32 row
// sum of 1024 x 65536 62.9 -> 63.7). Nor a pass that stores elements: unconditional, its
// stores let ptxas load a whole chunk's inputs ahead of them, and a kernel's registers are
// those of its hungriest path, the held row's too (call 1: an f32 layernorm's shifted 64-thread
// tier, held at rows of 1023, 77 -> 120 registers, 39.1 -> 44.5 us).
std::vector<Value*> ReductionLowering::walk_chunks(
    const std::vector<int>& pass, const std::vector<std::vector<Value*>>& results, Value* begin,
    int64_t chunk, Value* end, Value* valid,
    llvm::function_ref<std::vector<Group>(Value*, bool)> make_groups) {
  auto masked = [&](Value* base) { return make_groups(base, false); };
  if (!divides_ || std::any_of(pass.begin(), pass.end(),
                               [&](int i) { return prog_.items[i].kind == Item::element_store; })) {
    return chunk_loop(pass, results, begin, i64(chunk), end, masked);
  }
  Value* whole_end = whole_chunks_end(begin, end, chunk, valid);
  std::vector<Value*> acc = chunk_loop(pass, results, begin, i64(chunk), whole_end,
                                       [&](Value* base) { return make_groups(base, true); });
  return chunk_loop(pass, results, whole_end, i64(chunk), end, masked, acc);
}

ReductionLowering::ShiftedRow ReductionLowering::shifted_row(Value* row) {
  const int V = cfg_.vec;
  Value* flat = b_.CreateMul(row, R_, "row.start");
  Value* shift = b_.CreateAnd(b_.CreateNeg(flat), i64(V - 1), "shift");
  Value* walked = b_.CreateAnd(b_.CreateSub(R_, shift), i64(-V), "body");
  return {shift, walked, b_.CreateAdd(shift, walked, "body.end")};
}

// The edges of a shifted row as scalar points, edge e (of fewer than 2 x vec) on lane
// e % group: the head's elements 0 .. shift - 1, then the tail's from body_end on. Only when
// `live` (null: always); points past the edges read element 0 and contribute nothing.
Group ReductionLowering::row_edges(Value* shift, Value* body_end, Value* live, Value* lane,
                                   Value* valid, const std::vector<Value*>& o) {
  const int T = cfg_.group;
  Value* edges = b_.CreateAdd(shift, b_.CreateSub(R_, body_end), "edges.n");
  Group g;
  g.shared = true;
  for (int j = 0; j < (2 * cfg_.vec - 2) / T + 1; ++j) {
    Value* e = b_.CreateAdd(lane, i64(int64_t{j} * T), "edge");
    Value* in = b_.CreateICmpULT(e, edges);
    Value* r = b_.CreateSelect(b_.CreateICmpULT(e, shift), e,
                               b_.CreateAdd(body_end, b_.CreateSub(e, shift)));
    Point p;
    p.o = o;
    p.ok = b_.CreateAnd(valid, live ? b_.CreateAnd(in, live) : in);
    p.r = b_.CreateSelect(in, r, i64(0));
    g.pts.push_back(std::move(p));
  }
  return g;
}

// Folds the per-thread accumulators `partial` of `states` (merge states, as states_of
// gives them: their accumulators one after another) across the `group` threads of their row
// and returns them combined, unfinished (every thread gets them). Shared-memory slots from
// `base` on, one per accumulator and warp: the caller gives each combine of a kernel its own
// (slot_base), so one barrier suffices: no later combine overwrites a slot that a slow warp
// may still read. A lead and the reductions fused into it merge as one state in a fixed
// order: across lanes the lower lane's first, across warps in warp order, so that every
// lane ends with the same bits (plain reductions are commutative as they are).
std::vector<Value*> ReductionLowering::combine_rows(const std::vector<std::vector<int>>& states,
                                                    std::vector<Value*> partial, Value* lane,
                                                    Value* grp, int64_t base) {
  const int T = cfg_.group;
  if (states.empty()) return partial;
  std::vector<std::pair<int, int>> spans;  // per state: its first accumulator, how many
  for (const std::vector<int>& st : states) {
    const int at = spans.empty() ? 0 : spans.back().first + spans.back().second;
    spans.emplace_back(at, state_width(st));
  }
  for (size_t i = 0; i < states.size(); ++i) {
    const std::vector<int>& st = states[i];
    auto [at, n] = spans[i];
    for (int off = std::min(T, 32) / 2; off >= 1; off /= 2) {
      std::vector<Value*> mine(partial.begin() + at, partial.begin() + at + n), other;
      for (Value* v : mine) other.push_back(shuffle_xor(v, off));
      if (st.size() > 1) {
        Value* upper = b_.CreateICmpNE(b_.CreateAnd(lane, i64(off)), i64(0));
        for (int j = 0; j < n; ++j) {
          Value* first = b_.CreateSelect(upper, other[j], mine[j]);
          other[j] = b_.CreateSelect(upper, mine[j], other[j]);
          mine[j] = first;
        }
      }
      mine = merge_state(st, mine, other);
      std::copy(mine.begin(), mine.end(), partial.begin() + at);
    }
  }
  if (T > 32) {
    const int W = T / 32;
    const int64_t rpb = cfg_.block / T;
    Value* warp = b_.CreateLShr(lane, i64(5));
    BasicBlock* write = BasicBlock::Create(ctx_, "smem.write", fn_);
    BasicBlock* joined = BasicBlock::Create(ctx_, "smem.joined", fn_);
    b_.CreateCondBr(b_.CreateICmpEQ(b_.CreateAnd(lane, i64(31)), i64(0)), write, joined);
    b_.SetInsertPoint(write);
    for (size_t k = 0; k < partial.size(); ++k) {
      Value* slot = b_.CreateAdd(i64(base + int64_t(k) * rpb * W),
                                 b_.CreateAdd(b_.CreateMul(grp, i64(W)), warp));
      store_shared(slot, partial[k]);
    }
    b_.CreateBr(joined);
    b_.SetInsertPoint(joined);
    barrier();
    for (size_t i = 0; i < states.size(); ++i) {
      const std::vector<int>& st = states[i];
      auto [at, n] = spans[i];
      std::vector<Value*> acc;
      if (st.size() > 1) {
        acc = fold_warps(st, base, at, n, grp, partial);
      } else {
        for (int w = 0; w < W; ++w) {
          Value* slot =
              b_.CreateAdd(i64(base + int64_t(at) * rpb * W + w), b_.CreateMul(grp, i64(W)));
          Value* v = load_shared(slot, partial[at]->getType());
          acc = acc.empty() ? std::vector<Value*>{v} : merge_state(st, acc, {v});
        }
      }
      std::copy(acc.begin(), acc.end(), partial.begin() + at);
    }
  }
  return partial;
}

// The warps' states of fused state `st` (accumulators at..at+n of `partial`) merged in warp
// order, by a loop: unrolled, LLVM loads every warp's state at once, which spills at 32
// warps.
std::vector<Value*> ReductionLowering::fold_warps(const std::vector<int>& st, int64_t base, int at,
                                                  int n, Value* grp,
                                                  const std::vector<Value*>& partial) {
  const int W = cfg_.group / 32;
  const int64_t rpb = cfg_.block / cfg_.group;
  auto state_of = [&](Value* w) {
    std::vector<Value*> vals;
    for (int k = at; k < at + n; ++k) {
      Value* slot = b_.CreateAdd(b_.CreateAdd(i64(base + int64_t(k) * rpb * W), w),
                                 b_.CreateMul(grp, i64(W)));
      vals.push_back(load_shared(slot, partial[k]->getType()));
    }
    return vals;
  };
  std::vector<Carried> first;
  for (Value* v : state_of(i64(0))) first.push_back({v, "state"});
  return counted_loop(
      {"warps", nullptr, "warps.done", "w"}, i64(1), i64(W), [&] { return i64(1); }, first,
      [&](Value* w, const std::vector<Value*>& acc) { return merge_state(st, acc, state_of(w)); },
      Test::bottom);
}

// Before a later pass over held groups: forget every value computed from the held loads
// and pass the loads themselves through a copy that the compilers cannot merge with the
// previous pass's. Each pass then widens and recomputes what it needs (x - mean, an exp)
// from the packed loads, so only those stay live between passes: registers, not
// instructions, are what limits the rows in flight per SM.
// A point's memo is keyed by node address: its loads are copied in the order they were
// emitted, so that the code (and the PTX) does not depend on where the nodes were allocated.
void ReductionLowering::rematerialize(std::vector<Group>& groups, int pass) {
  std::unordered_map<const Value*, size_t> emitted;
  for (const llvm::BasicBlock& bb : *fn_) {
    for (const llvm::Instruction& i : bb) emitted.emplace(&i, emitted.size());
  }
  auto position = [&](const Value* v) {
    auto it = emitted.find(v);
    return it == emitted.end() ? SIZE_MAX : it->second;
  };
  for (Group& g : groups) {
    for (auto& [key, vals] : g.loads) {
      for (Value*& v : vals) v = opaque_copy(v, pass);
    }
    for (Point& p : g.pts) {
      std::vector<std::tuple<size_t, std::string, const ExprNode*, Value*>> loads;
      for (const auto& [node, v] : p.memo) {
        const Load* ld = std::get_if<Load>(&node->v);
        if (!ld) continue;
        const int param = param_of(ld->tensor);  // < 0: a reduction's result, in `results`
        if (param < 0 || vector_access(g, param, ld->indices)) continue;  // from g.loads
        loads.emplace_back(position(v), load_key(*ld), node, v);
      }
      std::sort(loads.begin(), loads.end(), [](const auto& a, const auto& b) {
        return std::tie(std::get<0>(a), std::get<1>(a)) < std::tie(std::get<0>(b), std::get<1>(b));
      });
      ValueMemo kept;
      for (const auto& [at, key, node, v] : loads) kept.emplace(node, opaque_copy(v, pass));
      p.memo = std::move(kept);
    }
  }
}

// v through a PTX mov tagged with `tag`: equal to v, but opaque to LLVM's value numbering
// (inline assembly with different text), so a recomputation from it is not merged with one
// from v.
Value* ReductionLowering::opaque_copy(Value* v, int tag) {
  Type* t = v->getType();
  const unsigned bits = t->getPrimitiveSizeInBits().getFixedValue();
  const unsigned lane = bits % 32 == 0 ? 32 : 16;
  Type* lane_t = b_.getIntNTy(lane);
  Type* as = bits == lane ? lane_t : llvm::FixedVectorType::get(lane_t, bits / lane);
  auto* fty = llvm::FunctionType::get(lane_t, {lane_t}, false);
  auto* asm_fn = llvm::InlineAsm::get(fty, fmt::format("mov.b{} $0, $1; // pass {}", lane, tag),
                                      lane == 32 ? "=r,r" : "=h,h", /*hasSideEffects=*/false);
  Value* x = b_.CreateBitCast(v, as);
  if (bits == lane) return b_.CreateBitCast(b_.CreateCall(asm_fn, {x}), t);
  Value* out = llvm::UndefValue::get(as);
  for (unsigned i = 0; i < bits / lane; ++i) {
    out = b_.CreateInsertElement(out, b_.CreateCall(asm_fn, {b_.CreateExtractElement(x, i)}), i);
  }
  return b_.CreateBitCast(out, t);
}

// v (i64) through a PTX mov: equal to v, but opaque to LLVM, which then cannot rewrite a
// whole chunk's stepped offsets and coordinates from the chunk's first (without the masks'
// selects between them, it did: each point's offset recomputed from the division, 64-bit
// multiplies and sums growing with the point's place, 187 PTX instructions a loop of 8 points
// where the masked loop took 175 and the stepped one takes 129).
Value* ReductionLowering::opaque_index(Value* v) {
  auto* fty = llvm::FunctionType::get(b_.getInt64Ty(), {b_.getInt64Ty()}, false);
  auto* asm_fn = llvm::InlineAsm::get(fty, "mov.b64 $0, $1; // stepped", "=l,l",
                                      /*hasSideEffects=*/false);
  return b_.CreateCall(asm_fn, {v});
}

// Issues every load of the row's own elements for `groups` now (persistent rows): the loads
// of later passes (the residual of an add+rmsnorm) are in flight with the first pass's.
// Loads that are the same for every row (a weight, a bias) wait for their use: they come
// from L2, and held from the start they cost registers for the whole row (measured on an
// H200: a bf16 layernorm of 4096 went from 56 to 42 registers per thread and from 157.8 to
// 148.5 us at 256 threads per row).
void ReductionLowering::prefetch(std::vector<Group>& groups) {
  std::vector<std::vector<Value*>> none(prog_.items.size());
  std::unordered_map<const ExprNode*, bool> seen;
  std::function<void(const Expr&)> walk = [&](const Expr& e) {
    if (!seen.emplace(e.ptr().get(), true).second) return;
    if (const Load* ld = e.as<Load>()) {
      int param = param_of(ld->tensor);
      if (param >= 0 && params_[param]->role == TensorRole::input && uses_reduced(ld->indices) &&
          uses_row(ld->indices)) {
        for (Group& g : groups) {
          if (vector_access(g, param, ld->indices)) {
            (void)load(*ld, g.pts[0], g, none);  // fills g.loads; lanes widen at use
            continue;
          }
          for (Point& p : g.pts) p.memo[e.ptr().get()] = load(*ld, p, g, none);
        }
      }
      return;
    }
    for_each_child(e, walk);
  };
  for (const Item& it : prog_.items) {
    if (it.kind != Item::row_store) walk(it.value);
  }
}

// A chunk's groups on a staged path (step 4b): the staged inputs this pass reads, as their
// vectors (g.loads, where load() finds them). In an input's first pass they come from
// global memory, every group's load issued before any is stored to the row's area (the
// chunk's loads in flight together); in later passes from the row's area. Only vectors in
// range are stored and loaded (an out-of-range one has a clamped address, another thread's
// vector): the others are zero, and masked by their users like any out-of-range element.
void ReductionLowering::stage_groups(std::vector<Group>& groups) {
  const int narrowest = std::min(4, stage_plan_.narrowest);  // regions: not empty here
  // Every region and vector starts at a multiple of vec x its element size (R % vec == 0),
  // so at a multiple of vec x the narrowest staged element.
  const llvm::Align align(std::min(16, cfg_.vec * narrowest));
  auto area = [&](const StagePlan::Region& reg, const Point& first) {
    const auto size = static_cast<int64_t>(size_of(reg.load.stored));
    Value* byte = b_.CreateAdd(stage_row_, b_.CreateAdd(b_.CreateMul(R_, i64(reg.offset)),
                                                        b_.CreateMul(first.r, i64(size))));
    return b_.CreateInBoundsGEP(b_.getInt8Ty(), stage_smem(), byte, "staged.ptr");
  };
  std::vector<std::pair<const StagePlan::Region*, Group*>> to_store;
  for (const auto& [key, reg] : stage_plan_.regions) {
    if (reg.passes.count(pass_) == 0) continue;
    const bool first_pass = *reg.passes.begin() == pass_;
    for (Group& g : groups) {
      Value* v = nullptr;
      if (first_pass) {
        v = load_vector(param_of(reg.load.tensor), reg.load, g.pts[0]);
        to_store.emplace_back(&reg, &g);
      } else {
        auto* vt = llvm::FixedVectorType::get(em_.storage_type(reg.load.stored), cfg_.vec);
        Value* ptr = area(reg, g.pts[0]);
        BasicBlock* pre = b_.GetInsertBlock();
        BasicBlock* in = BasicBlock::Create(ctx_, "unstage", fn_);
        BasicBlock* next = BasicBlock::Create(ctx_, "unstaged.vec", fn_);
        b_.CreateCondBr(g.pts[0].ok, in, next);
        b_.SetInsertPoint(in);
        Value* x = b_.CreateAlignedLoad(vt, ptr, align);
        b_.CreateBr(next);
        b_.SetInsertPoint(next);
        llvm::PHINode* phi = b_.CreatePHI(vt, 2, "staged.vec");
        phi->addIncoming(x, in);
        phi->addIncoming(llvm::Constant::getNullValue(vt), pre);
        v = phi;
      }
      g.loads[key] = {v};
    }
  }
  for (const auto& [reg, g] : to_store) {
    Value* v = g->loads.at(load_key(reg->load))[0];
    Value* ptr = area(*reg, g->pts[0]);
    when(g->pts[0].ok, "stage", "staged", [&] { b_.CreateAlignedStore(v, ptr, align); });
  }
}

// The dynamic shared memory of the launch, in bytes (i32).
Value* ReductionLowering::dynamic_smem_size() {
  auto* fty = llvm::FunctionType::get(b_.getInt32Ty(), false);
  auto* mov = llvm::InlineAsm::get(fty, "mov.u32 $0, %dynamic_smem_size;", "=r",
                                   /*hasSideEffects=*/false);
  return b_.CreateCall(mov, {});
}

// The staged rows' area: the launch's dynamic shared memory (an external, unsized array in
// the shared address space; PTX `.extern .shared`), apart from the combines' static one.
llvm::GlobalVariable* ReductionLowering::stage_smem() {
  if (stage_smem_) return stage_smem_;
  auto* ty = llvm::ArrayType::get(b_.getInt8Ty(), 0);
  stage_smem_ = new llvm::GlobalVariable(m_, ty, false, llvm::GlobalValue::ExternalLinkage, nullptr,
                                         fn_->getName() + "_stage", nullptr,
                                         llvm::GlobalValue::NotThreadLocal, 3);
  stage_smem_->setAlignment(llvm::Align(16));
  return stage_smem_;
}

// Step 4c. The tile when the launch gave the shared memory for it (bundle/manifest.h:
// stage_bytes with row_align), else looped scalar rows through the strides. The check
// divides, so a huge R cannot overflow it.
void ReductionLowering::branch_tiled(Value* vec_ok) {
  const int64_t rpb = cfg_.block / cfg_.group;
  Value* row_bytes = b_.CreateMul(R_, i64(tile_plan_.bytes_per_element));
  Value* pitch = b_.CreateAnd(b_.CreateAdd(row_bytes, i64(kTileRowAlign - 1)), i64(-kTileRowAlign),
                              "tile.pitch");
  Value* avail = b_.CreateZExt(dynamic_smem_size(), b_.getInt64Ty(), "smem.dynamic");
  Value* fits = b_.CreateICmpULE(R_, b_.CreateUDiv(avail, i64(rpb * tile_plan_.bytes_per_element)));
  fits = b_.CreateAnd(fits, b_.CreateICmpULE(pitch, b_.CreateUDiv(avail, i64(rpb))), "tile.fits");
  BasicBlock* tiled = BasicBlock::Create(ctx_, "tiled", fn_);
  BasicBlock* plain = BasicBlock::Create(ctx_, "untiled", fn_);
  b_.CreateCondBr(fits, tiled, plain);
  b_.SetInsertPoint(tiled);
  tile_pitch_ = pitch;
  load_tile();
  barrier();
  // Vectors need every pointer they touch aligned: the other tensors' (the tile's are).
  Value* aligned = vec_ok;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (params_[i]->strided || !ptrs_[i]->getType()->isPointerTy()) continue;
    const int64_t bytes = std::min<int64_t>(16, int64_t{cfg_.vec} * size_of(params_[i]->dtype));
    Value* at = b_.CreatePtrToInt(ptrs_[i], b_.getInt64Ty());
    aligned = b_.CreateAnd(aligned, b_.CreateICmpEQ(b_.CreateAnd(at, i64(bytes - 1)), i64(0)));
  }
  branch2(aligned, [&](bool vector) { emit_rows(false, vector); });
  tile_pitch_ = nullptr;
  b_.SetInsertPoint(plain);
  emit_rows(false, false);
}

// The stride argument of dimension d of strided tensor `tensor` (Emitter::declare_kernel).
Value* ReductionLowering::stride_arg(const std::string& tensor, size_t d) {
  const std::string name = fmt::format("{}.stride{}", tensor, d);
  for (llvm::Argument& a : fn_->args()) {
    if (a.getName() == name) return &a;
  }
  throw InternalError("lower_reduction: no stride argument " + name);
}

// Copies the block's rows of every tiled input into its areas (step 4c): each thread loads
// `loads` elements (32 bytes) `group` apart along the row, then stores them; whole
// iterations without masks (with one reduced index, the addresses step by group x its
// stride), the last, partial one masked.
void ReductionLowering::load_tile() {
  const int64_t rpb = cfg_.block / cfg_.group;
  const int T = cfg_.group;
  Value* first = b_.CreateMul(bid_, i64(rpb), "tile.first");
  for (const auto& [key, reg] : tile_plan_.regions) {
    const int param = param_of(reg.load.tensor);
    const DType t = reg.load.stored;
    // The strides of the input's last row index and of its reduced one, decide the walk.
    const std::vector<std::string> dims = unfolded(reg.load.indices);
    size_t last_row = 0;
    for (size_t d = 0; d < dims.size(); ++d) {
      if (is_row_var(dims[d])) last_row = d;
    }
    Value* along_r = stride_arg(reg.load.tensor, dims.size() - 1);
    Value* across = b_.CreateICmpULT(stride_arg(reg.load.tensor, last_row), along_r, "tile.across");
    const int log_rpb = std::countr_zero(static_cast<uint64_t>(rpb));
    const int log_t = std::countr_zero(static_cast<uint64_t>(T));
    Value* kr = b_.CreateSelect(across, b_.CreateAnd(tid_, i64(rpb - 1)),
                                b_.CreateLShr(tid_, i64(log_t)), "tile.row");
    Value* c0 = b_.CreateSelect(across, b_.CreateLShr(tid_, i64(log_rpb)),
                                b_.CreateAnd(tid_, i64(T - 1)), "tile.col");
    Value* row = b_.CreateAdd(first, kr);
    Value* rowc = b_.CreateSelect(b_.CreateICmpULT(row, rows_), row, b_.CreateSub(rows_, i64(1)));
    const std::vector<Value*> o = coords_of(rowc);
    const int loads = std::max<int>(1, 32 / size_of(t));
    const int64_t step = int64_t{T} * loads;
    internal_check(step * size_of(t) % kTileRowAlign == 0, "lower_reduction: a tile's copy step");
    auto copy_elements = [&] {
      copy_walk(reg, o, c0, T, loads, em_.storage_type(t), "tile",
                [&](int u, Value* v, Value* at_bytes) {
                  // Element at + c0 + u x group: `at` is whole lines (group x loads x size).
                  Value* ptr = tile_address(reg, kr, c0, int64_t{u} * T);
                  b_.CreateAlignedStore(v, b_.CreateInBoundsGEP(b_.getInt8Ty(), ptr, at_bytes),
                                        llvm::Align(size_of(t)));
                });
    };
    // Columns as vectors: the block's rows of one column are one aligned 16-byte vector when
    // the last row index is contiguous (stride 1), every other stride and the pointer are
    // multiples of 16 bytes, and the block's rows are whole and do not wrap that index (a
    // transposed view of a tensor whose rows are multiples of 16 bytes: x.t()).
    if (rpb * size_of(t) != 16) {
      copy_elements();
      continue;
    }
    Value* columns =
        b_.CreateAnd(across, b_.CreateICmpEQ(stride_arg(reg.load.tensor, last_row), i64(1)));
    for (size_t d = 0; d < dims.size(); ++d) {
      if (d == last_row) continue;
      Value* bytes = b_.CreateMul(stride_arg(reg.load.tensor, d), i64(size_of(t)));
      columns = b_.CreateAnd(columns, b_.CreateICmpEQ(b_.CreateAnd(bytes, i64(15)), i64(0)));
    }
    Value* at_ptr = b_.CreatePtrToInt(ptrs_[param], b_.getInt64Ty());
    columns = b_.CreateAnd(columns, b_.CreateICmpEQ(b_.CreateAnd(at_ptr, i64(15)), i64(0)));
    columns = b_.CreateAnd(
        columns, b_.CreateICmpEQ(b_.CreateAnd(row_extents_.back(), i64(rpb - 1)), i64(0)));
    columns = b_.CreateAnd(columns, b_.CreateICmpULE(b_.CreateAdd(first, i64(rpb)), rows_),
                           "tile.columns");
    BasicBlock* vectors = BasicBlock::Create(ctx_, "tile.vectors", fn_);
    BasicBlock* elements = BasicBlock::Create(ctx_, "tile.elements", fn_);
    BasicBlock* copied = BasicBlock::Create(ctx_, "tile.region", fn_);
    b_.CreateCondBr(columns, vectors, elements);
    b_.SetInsertPoint(vectors);
    copy_columns(reg, first);
    b_.CreateBr(copied);
    b_.SetInsertPoint(elements);
    copy_elements();
    b_.CreateBr(copied);
    b_.SetInsertPoint(copied);
  }
}

// The copy of region `reg` when the block's rows of a column are one aligned 16-byte vector
// (load_tile): thread t loads columns t + u x block, kTileVectors at a time, and stores each
// vector's lanes to the rows' areas (a warp's stores: 32 consecutive elements of one row).
void ReductionLowering::copy_columns(const StagePlan::Region& reg, Value* first) {
  const int64_t rpb = cfg_.block / cfg_.group, B = cfg_.block;
  const int64_t size = size_of(reg.load.stored);
  internal_check(B * size % kTileRowAlign == 0, "lower_reduction: a tile's column step");
  auto* vt =
      llvm::FixedVectorType::get(em_.storage_type(reg.load.stored), static_cast<unsigned>(rpb));
  copy_walk(reg, coords_of(first), tid_, B, kTileVectors, vt, "tile.columns",
            [&](int u, Value* v, Value* at_bytes) {
              for (int64_t k = 0; k < rpb; ++k) {
                Value* ptr = tile_address(reg, i64(k), tid_, u * B);
                b_.CreateAlignedStore(b_.CreateExtractElement(v, static_cast<uint64_t>(k)),
                                      b_.CreateInBoundsGEP(b_.getInt8Ty(), ptr, at_bytes),
                                      llvm::Align(size));
              }
            });
}

// The walk of a tile's copy of region `reg` along rows `o`: iterations of `count` loads of
// `vt` a thread, at elements at + c0 + u x spacing (u < count), then put(u, value, at x size
// in bytes) for each; whole iterations (at < R rounded down to a multiple of count x spacing)
// unmasked, their addresses, with one reduced index, stepping by spacing x its stride; then
// the last, partial one with its loads clamped into the row and its puts masked.
void ReductionLowering::copy_walk(const StagePlan::Region& reg, const std::vector<Value*>& o,
                                  Value* c0, int64_t spacing, int count, Type* vt,
                                  const std::string& name,
                                  llvm::function_ref<void(int, Value*, Value*)> put) {
  const int param = param_of(reg.load.tensor);
  const DType t = reg.load.stored;
  Value* along_r = stride_arg(reg.load.tensor, unfolded(reg.load.indices).size() - 1);
  const llvm::Align align(std::min<int64_t>(16, vt->getPrimitiveSizeInBits() / 8));
  auto address = [&](Value* r) {
    Point p;
    p.o = o;
    p.r = r;
    return em_.element_ptr(ptrs_[param], t, offset_of(param, reg.load.indices, p));
  };
  auto iteration = [&](Value* at, bool masked) {
    std::vector<Value*> in, vals;
    Value* ptr = nullptr;
    for (int u = 0; u < count; ++u) {
      Value* r = b_.CreateAdd(at, b_.CreateAdd(c0, i64(u * spacing)), "tile.r");
      if (masked) {
        in.push_back(b_.CreateICmpULT(r, R_));
        ptr = address(b_.CreateSelect(in.back(), r, b_.CreateSub(R_, i64(1))));
      } else if (ptr && reduced_extents_.size() == 1) {
        ptr = em_.element_ptr(ptr, t, b_.CreateMul(along_r, i64(spacing)));
      } else {
        ptr = address(r);
      }
      vals.push_back(b_.CreateAlignedLoad(vt, ptr, align));
    }
    Value* at_bytes = b_.CreateMul(at, i64(size_of(t)));
    for (int u = 0; u < count; ++u) {
      if (masked) {
        when(in[static_cast<size_t>(u)], "tile.store", "tile.stored",
             [&] { put(u, vals[static_cast<size_t>(u)], at_bytes); });
      } else {
        put(u, vals[static_cast<size_t>(u)], at_bytes);
      }
    }
  };
  const int64_t step = spacing * count;
  Value* whole = b_.CreateMul(b_.CreateUDiv(R_, i64(step)), i64(step), "tile.whole");
  const std::string body = name + ".body", done = name + ".done", tail = name + ".tail",
                    copied = name + ".copied";
  counted_loop(
      {name.c_str(), body.c_str(), done.c_str(), "tile.at"}, i64(0), whole,
      [&] { return i64(step); }, {},
      [&](Value* at, const std::vector<Value*>&) {
        iteration(at, false);
        return std::vector<Value*>{};
      });
  when(b_.CreateICmpULT(whole, R_), tail.c_str(), copied.c_str(), [&] { iteration(whole, true); });
}

// The address in the tile of element r + k (k a constant) of row kr of region `reg`: byte
// reg.offset x R + (r + k) x size of the row's area, its 16-byte chunk XOR-swizzled within its
// 128-byte line by (kr x S) mod 8, where S chunks hold what a warp's copy across the rows
// stores per row (2 x narrowest x size bytes: 32 / rows_per_block elements): rows 0 ..
// rows_per_block - 1 of one copy store then land in distinct chunks of the line, as do the
// elements a pass reads of one row. The whole lines of k x size are added after the swizzle
// (it does not change them), so that the copy's addresses differ by constants.
Value* ReductionLowering::tile_address(const StagePlan::Region& reg, Value* kr, Value* r,
                                       int64_t k) {
  const auto size = static_cast<int64_t>(size_of(reg.load.stored));
  const int64_t chunks = std::max<int64_t>(1, 2 * tile_plan_.narrowest * size / 16);
  const int64_t kb = k * size, low = kb % kTileRowAlign;
  Value* byte = b_.CreateAdd(b_.CreateMul(R_, i64(reg.offset)), b_.CreateMul(r, i64(size)));
  if (low != 0) byte = b_.CreateAdd(byte, i64(low));
  Value* swizzle = b_.CreateShl(b_.CreateAnd(b_.CreateMul(kr, i64(chunks)), i64(7)), i64(4));
  byte = b_.CreateAdd(b_.CreateMul(kr, tile_pitch_), b_.CreateXor(byte, swizzle), "tile.byte");
  Value* ptr = b_.CreateInBoundsGEP(b_.getInt8Ty(), stage_smem(), byte, "tile.ptr");
  return kb == low ? ptr : b_.CreateInBoundsGEP(b_.getInt8Ty(), ptr, i64(kb - low));
}

// A tiled input's value at p (a point of the passes, tile_kr_ its row): from a vector group,
// its 16-byte chunks (each swizzled on its own) as one vector, lanes widened at use.
Value* ReductionLowering::load_tiled(const StagePlan::Region& reg, Point& p, Group& g) {
  const DType t = reg.load.stored;
  const llvm::Align align(size_of(t));
  if (!g.vector) {
    Value* ptr = tile_address(reg, tile_kr_, p.r);
    return em_.widen(b_.CreateAlignedLoad(em_.storage_type(t), ptr, align), t);
  }
  std::vector<Value*>& raw = g.loads[load_key(reg.load)];
  if (raw.empty()) {
    const int per = 16 / size_of(t);  // elements of a chunk; vec x size is a multiple of 16
    auto* ct = llvm::FixedVectorType::get(em_.storage_type(t), per);
    std::vector<Value*> parts;
    for (int c = 0; c < cfg_.vec / per; ++c) {
      Value* r = b_.CreateAdd(g.pts[0].r, i64(int64_t{c} * per));
      parts.push_back(b_.CreateAlignedLoad(ct, tile_address(reg, tile_kr_, r), llvm::Align(16)));
    }
    while (parts.size() > 1) {  // a power of two of chunks, joined in pairs
      std::vector<Value*> joined;
      for (size_t k = 0; k < parts.size(); k += 2) {
        const auto n = static_cast<int>(
            llvm::cast<llvm::FixedVectorType>(parts[k]->getType())->getNumElements());
        std::vector<int> mask(static_cast<size_t>(2 * n));
        for (int l = 0; l < 2 * n; ++l) mask[static_cast<size_t>(l)] = l;
        joined.push_back(b_.CreateShuffleVector(parts[k], parts[k + 1], mask));
      }
      parts = std::move(joined);
    }
    raw = {parts[0]};
  }
  return em_.widen_lane(raw[0], static_cast<int>(&p - &g.pts.front()), t);
}

}  // namespace kiln::reduction
