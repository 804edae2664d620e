// Split kernels: few rows (or columns) over a long reduced extent, each spread over many
// blocks. The grid has S blocks per row (or per tile of columns), and the kernel runs once per
// phase (plan_split in reduction_analysis.cpp): a pass's reductions complete, through the
// workspace, at the start of the next phase. A phase
//  1. folds, in every block of the row and in the same order, the workspace records of the
//     reductions of earlier phases (fold_loop: a loop over records, not unrolled), so every
//     block gets the same values and the result does not depend on timing (a phase that only
//     stores, in block 0 of the row alone: the others leave);
//  2. in block 0 of the row, stores the outputs that became complete;
//  3. runs the phase's passes over the block's slice of the reduced extent (whole chunks: a
//     vector never straddles two blocks) and writes its reductions' partials to its record.
// Split rows (emit_split) combine a block's threads as row kernels do (combine_rows); split
// outer kernels (emit_outer_split) as outer kernels do (combine_outer). Split rows whose length
// is not a multiple of vec (and of 2 x vec elements or more) walk shifted vectors as a shifting
// row variant does (reduction_rows.cpp step 4): the slices share the row's body of whole
// vectors, and the first chunk of the row's first block also takes its edges. Measured on an
// H200 against scalars (bench/results/2026-11-28-h200-split-shift): a bf16 softmax of
// 2 x 70001 17.3 us against 26.8 (aligned 2 x 70000: 16.6), an RMSNorm of 3 x 100003 14.4
// against 28.7, one f32 row sum of 2^26 - 1 elements 78.2 against 89.5; aligned rows as
// before (within 1%, same call). Unlike the row tiers, which keep the shifted path in a twin
// variant of its own (it raised their registers), the split variant holds all three paths.
#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "compiler/lower/reduction_lowering.h"

namespace kiln::reduction {

// Split rows: block b walks slice b % S of row b / S (S = blocks / rows); a record per
// (row, block) holds a word per reduction.
void ReductionLowering::emit_split(Value* vec_ok) {
  const SplitPlan plan = plan_split(prog_);
  const int T = cfg_.block;
  const int64_t W = std::max(1, T / 32);
  Value* S = b_.CreateUDiv(nblocks_, rows_, "S");
  Value* row = b_.CreateUDiv(bid_, S, "row");
  Value* slice = b_.CreateURem(bid_, S, "slice");
  Value* valid = b_.CreateICmpULT(row, rows_, "valid");
  Value* rowc = b_.CreateSelect(valid, row, b_.CreateSub(rows_, ix(1)));
  std::vector<Value*> o = coords_of(rowc);
  // The row's records: S of them, but where the runtime launches the store-only last phase
  // one block per row (manifest.h, split.lead_last) it passes the S of the phases before in
  // the phase argument's high word; 0 there: S is the grid's.
  Value* phase = phase_;
  Value* records = S;
  if (plan.last_only_stores) {
    Value* passed = b_.CreateLShr(phase_, i64(32), "passed.S");
    phase = b_.CreateAnd(phase_, i64(0xffffffff), "phase");
    records = b_.CreateSelect(b_.CreateICmpEQ(passed, i64(0)), S, passed, "records");
  }
  Value* record0 = b_.CreateMul(rowc, records, "record0");  // the row's first record
  Value* leader = b_.CreateAnd(valid, b_.CreateICmpEQ(tid_, ix(0)));
  Value* first_slice = b_.CreateICmpEQ(slice, ix(0), "first.slice");
  Value* row_leader = b_.CreateAnd(leader, first_slice, "row.leader");
  Point row_point;
  row_point.o = o;
  row_point.ok = valid;
  // Rows whose length is not a multiple of vec walk shifted vectors (emit_rows' step 4) where
  // every vector stays within one row: not over a trailing run of the reduced indices.
  const bool shiftable = cfg_.vec > 1 && suffix_runs(prog_).empty();
  for (int k = 0; k < plan.phases; ++k) {
    BasicBlock* body = BasicBlock::Create(ctx_, fmt::format("phase{}", k), fn_);
    BasicBlock* next = BasicBlock::Create(ctx_, "phase.next", fn_);
    b_.CreateCondBr(b_.CreateICmpEQ(phase, i64(k)), body, next);
    b_.SetInsertPoint(body);
    // A phase that only stores (the last, after a plain sum: SplitPlan::last_only_stores) is
    // the row leader's alone; the row's other blocks leave at once rather than each fold the
    // row's S records (and a runtime that reads split.lead_last launches none of them).
    // Measured on an H200 (bench/results/2026-11-29-h200-uniform-warp, call 2):
    // the last phase of one f32 row of 2^26 elements, 396 blocks, 4.03 -> 3.68 us under Nsight
    // Compute (torch.compile's one-block kernel: 2.59 in call 1); end to end within noise.
    if (k == plan.phases - 1 && plan.last_only_stores) {
      BasicBlock* lead = BasicBlock::Create(ctx_, "phase.lead", fn_);
      b_.CreateCondBr(b_.CreateAnd(valid, first_slice), lead, exit_);
      b_.SetInsertPoint(lead);
    }
    std::vector<std::vector<Value*>> results(prog_.items.size());
    std::vector<int> done;
    for (size_t pi = 0; pi < prog_.passes.size(); ++pi) {
      if (plan.phase_of[pi] >= k) continue;
      for (int r : reductions_of(prog_.passes[pi])) done.push_back(r);
    }
    fold_records(done, plan, record0, records, results);
    for (size_t pi = 0; pi < prog_.passes.size(); ++pi) {
      const std::vector<int>& pass = prog_.passes[pi];
      if (plan.phase_of[pi] == k - 1) store_reductions(pass, row_point, results, row_leader);
      if (plan.phase_of[pi] == k && prog_.items[pass[0]].kind == Item::row_store) {
        store_row_item(prog_.items[pass[0]], row_point, results, row_leader);
      }
    }
    // `shifted`: the row's body of whole vectors from its first element at a multiple of
    // vec (emit_rows' step 4) is what the slices share; slice 0's first chunk takes the edges.
    auto walk = [&](bool vector, bool shifted = false) {
      const bool unaligned = !vector && cfg_.vec > 1;
      const int V = unaligned ? 1 : cfg_.vec, G = unaligned ? scalar_items(false) : cfg_.items;
      const int64_t chunk = int64_t{T} * V * G;
      const ShiftedRow body = shifted ? shifted_row(rowc) : ShiftedRow{nullptr, R_, R_};
      Value *shift = body.shift, *walked = body.walked, *body_end = body.body_end;
      // ceil(ceil(walked / S) / chunk) chunks per slice
      Value* per_block = b_.CreateUDiv(b_.CreateAdd(walked, b_.CreateSub(S, ix(1))), S);
      Value* chunks = b_.CreateUDiv(b_.CreateAdd(per_block, ix(chunk - 1)), ix(chunk));
      Value* begin = b_.CreateMul(b_.CreateMul(slice, chunks), ix(chunk), "begin");
      Value* end = b_.CreateAdd(begin, b_.CreateMul(chunks, ix(chunk)));
      end = b_.CreateSelect(b_.CreateICmpULT(end, walked), end, walked, "end");
      const RowSteps steps = row_steps(int64_t{T} * V, false);
      // A whole chunk (walk_chunks) is walked only where the row exists.
      auto make_groups = [&](Value* base, bool whole) {
        Value* exists = whole ? b_.getTrue() : valid;
        if (!shifted) {
          return row_groups(base, end, {G, T, V, vector && V > 1, nullptr, &steps, whole}, tid_,
                            exists, o);
        }
        std::vector<Group> gs = row_groups(base, b_.CreateAdd(shift, end),
                                           {G, T, V, true, shift, &steps, whole}, tid_, exists, o);
        gs.push_back(row_edges(shift, body_end,
                               b_.CreateAnd(first_slice, b_.CreateICmpEQ(base, begin)), tid_,
                               exists, o));
        return gs;
      };
      for (size_t pi = 0; pi < prog_.passes.size(); ++pi) {
        const std::vector<int>& pass = prog_.passes[pi];
        if (plan.phase_of[pi] != k || prog_.items[pass[0]].kind == Item::row_store) continue;
        std::vector<Value*> partial =
            walk_chunks(pass, results, begin, chunk, end, valid, make_groups);
        std::vector<int> reds = reductions_of(pass);
        if (reds.empty()) continue;
        // prog_.passes never fuse (step 3): one accumulator per reduction, as a record has.
        partial = combine_rows(states_of(pass), partial, tid_, ix(0), plan.slots * W);
        Value* record = b_.CreateAdd(record0, slice);
        for (size_t j = 0; j < reds.size(); ++j) {
          store_record(leader, record, plan, reds[j], partial[j]);
        }
      }
    };
    if (shiftable) {
      // Aligned rows take vectors, other rows of 2 x vec or more elements shifted vectors,
      // shorter ones scalars.
      branch2(vec_ok, [&](bool vector) {
        if (vector) {
          walk(true);
          b_.CreateBr(exit_);
          return;
        }
        branch2(b_.CreateICmpUGE(R_, ix(2 * cfg_.vec), "shift.ok"), [&](bool shift) {
          walk(shift, shift);
          b_.CreateBr(exit_);
        });
      });
    } else {
      walk_to_exit(vec_ok, walk);
    }
    b_.SetInsertPoint(next);
  }
  b_.CreateBr(exit_);
}

// A split phase's walk(vector): on the vector and the scalar path (or the scalar one alone
// when vec is 1), each ending in exit_.
void ReductionLowering::walk_to_exit(Value* vec_ok, llvm::function_ref<void(bool)> walk) {
  if (cfg_.vec == 1) {
    walk(false);
    b_.CreateBr(exit_);
    return;
  }
  branch2(vec_ok, [&](bool vector) {
    walk(vector);
    b_.CreateBr(exit_);
  });
}

// The workspace word of reduction `item` in record `record` (ix_).
Value* ReductionLowering::record_word(Value* record, const SplitPlan& plan, int item) {
  Value* word = b_.CreateAdd(b_.CreateMul(record, ix(plan.slots)), ix(plan.slot_of.at(item)));
  return em_.element_ptr(workspace_, DType::i32, word);
}

void ReductionLowering::store_record(Value* cond, Value* record, const SplitPlan& plan, int item,
                                     Value* v) {
  when(cond, "record", "recorded", [&] {
    b_.CreateAlignedStore(b_.CreateBitCast(v, b_.getInt32Ty()), record_word(record, plan, item),
                          llvm::Align(4));
  });
}

// Folds records j = first, first + stride, ... below `end`, in order, into `per` accumulators
// per reduction of `done` (accumulator i * per + k is reduction done[i]), each starting at
// its identity: `word(j, i * per + k)` is the 32-bit word it takes from record j. A loop,
// not unrolled, whose iterations load `ahead` records before folding them (in order: the
// result does not depend on `ahead`), so that as many loads are in flight.
std::vector<Value*> ReductionLowering::fold_loop(const std::vector<int>& done, int per,
                                                 Value* first, int64_t stride, Value* end,
                                                 llvm::function_ref<Value*(Value*, size_t)> word,
                                                 int ahead) {
  std::vector<Carried> folded;
  for (int r : done) {
    for (int k = 0; k < per; ++k) {
      folded.push_back({em_.identity(prog_.items[r].op, prog_.items[r].type), "folded"});
    }
  }
  return counted_loop(
      {"fold", "fold.body", "fold.done", "j"}, first, end, [&] { return ix(stride * ahead); },
      folded,
      [&](Value* j, const std::vector<Value*>& accs) {
        // Records past `end` load the iteration's first (which exists) and fold nothing.
        std::vector<Value*> in(ahead), at(ahead);
        for (int u = 0; u < ahead; ++u) {
          Value* ju = b_.CreateAdd(j, ix(stride * u));
          in[u] = u == 0 ? b_.getTrue() : b_.CreateICmpULT(ju, end);
          at[u] = u == 0 ? j : b_.CreateSelect(in[u], ju, j);
        }
        std::vector<std::vector<Value*>> words(ahead);
        for (int u = 0; u < ahead; ++u) {
          for (size_t a = 0; a < accs.size(); ++a) {
            words[u].push_back(
                b_.CreateAlignedLoad(b_.getInt32Ty(), word(at[u], a), llvm::Align(4)));
          }
        }
        std::vector<Value*> next = accs;
        for (int u = 0; u < ahead; ++u) {
          for (size_t a = 0; a < accs.size(); ++a) {
            const Item& it = prog_.items[done[a / per]];
            Value* x = b_.CreateBitCast(words[u][a], accs[a]->getType());
            if (u > 0) x = b_.CreateSelect(in[u], x, em_.identity(it.op, it.type));
            next[a] = em_.combine(it.op, next[a], x);
          }
        }
        return next;
      });
}

// Sets results[r] for each reduction r of `done` from the S records of the row: thread t
// folds records t, t + T, ... in order, then the block combines the threads in order.
void ReductionLowering::fold_records(const std::vector<int>& done, const SplitPlan& plan,
                                     Value* record0, Value* S,
                                     std::vector<std::vector<Value*>>& results) {
  if (done.empty()) return;
  std::vector<Value*> accs = fold_loop(done, 1, tid_, cfg_.block, S, [&](Value* j, size_t i) {
    return record_word(b_.CreateAdd(record0, j), plan, done[i]);
  });
  std::vector<std::vector<int>> alone;  // records hold plain reductions, never a state
  for (int r : done) alone.push_back({r});
  std::vector<Value*> partial = combine_rows(alone, accs, tid_, ix(0), 0);
  for (size_t i = 0; i < done.size(); ++i) results[done[i]] = {finish(done[i], partial[i])};
}

// The phase of a split outer kernel that only stores (no pass of it walks the reduced
// extent: the last, after the sums). Were every block of a tile to fold all S records of all
// its columns, as a phase that walks must (every block needs every result), 64 columns over
// 528 blocks would read 140 MB of records: 45 us on an H200. Here the tile's S blocks share its
// columns, a warp per column: warp w of the tile's S x block / 32 takes columns w,
// w + S x block / 32, ...; lane l folds records l, l + 32, ... in order, kFoldAhead loaded at
// a time; a butterfly combines the lanes (every lane gets the same value); lane 0 stores.
void ReductionLowering::fold_columns(const std::vector<int>& done, int phase, const SplitPlan& plan,
                                     Value* first, Value* record0, Value* S, Value* slice,
                                     Value* tile_ok) {
  const int64_t XV = int64_t{cfg_.block / cfg_.group} * cfg_.vec;
  const int64_t warps = cfg_.block / 32;
  Value* lane = b_.CreateAnd(tid_, ix(31), "lane");
  Value* warp = b_.CreateAdd(b_.CreateMul(slice, ix(warps)), b_.CreateLShr(tid_, ix(5)), "warp");
  // The tile's columns that exist (records hold words for them only).
  Value* left = b_.CreateSub(rows_, first);
  Value* end = b_.CreateSelect(
      tile_ok, b_.CreateSelect(b_.CreateICmpULT(left, ix(XV)), left, ix(XV)), ix(0), "end");
  counted_loop(
      {"column", "column.body", "columns.done", "c"}, warp, end,
      [&] { return b_.CreateMul(S, ix(warps)); }, {},
      [&](Value* c, const std::vector<Value*>&) {
        std::vector<Value*> accs = fold_loop(
            done, 1, lane, 32, S,
            [&](Value* j, size_t a) {
              Value* record = b_.CreateAdd(record0, j);
              Value* w = b_.CreateAdd(
                  b_.CreateMul(b_.CreateAdd(b_.CreateMul(record, ix(XV)), c), ix(plan.slots)),
                  ix(plan.slot_of.at(done[a])));
              return em_.element_ptr(workspace_, DType::i32, w);
            },
            kFoldAhead);
        std::vector<std::vector<Value*>> results(prog_.items.size());
        for (size_t a = 0; a < done.size(); ++a) {
          Value* v = accs[a];
          for (int off = 16; off >= 1; off /= 2) {
            v = em_.combine(prog_.items[done[a]].op, v, shuffle_xor(v, off));
          }
          results[done[a]] = {finish(done[a], v)};
        }
        Point p;
        p.o = coords_of(b_.CreateAdd(first, c));
        p.ok = b_.getTrue();
        Value* lead = b_.CreateICmpEQ(lane, ix(0));
        for (size_t pi = 0; pi < prog_.passes.size(); ++pi) {
          const std::vector<int>& pass = prog_.passes[pi];
          if (plan.phase_of[pi] == phase - 1) store_reductions(pass, p, results, lead);
          if (plan.phase_of[pi] == phase && prog_.items[pass[0]].kind == Item::row_store) {
            store_row_item(prog_.items[pass[0]], p, results, lead);
          }
        }
        return std::vector<Value*>{};
      });
  b_.CreateBr(exit_);
}

// Split outer kernels, for few columns over a long reduced extent (e.g. 8192 columns: 128
// blocks of 64 would leave an SM one block): block b walks slice b % S of the reduced extent
// for the columns of tile b / S (S = blocks / tiles). A record per (tile, slice) holds one word
// per column and reduction; thread row ty folds records ty, ty + group, ..., then the rows
// fold in order through shared memory (combine_outer).
void ReductionLowering::emit_outer_split(Value* vec_ok) {
  const SplitPlan plan = plan_split(prog_);
  const int Y = cfg_.group, V = cfg_.vec, U = cfg_.items;
  const int X = cfg_.block / Y;
  const int64_t XV = int64_t{X} * V;  // columns per tile
  const int64_t chunk = int64_t{Y} * U;
  Value* tx = b_.CreateURem(tid_, ix(X), "tx");
  Value* ty = b_.CreateUDiv(tid_, ix(X), "ty");
  Value* tiles = b_.CreateUDiv(b_.CreateAdd(rows_, ix(XV - 1)), ix(XV), "tiles");
  Value* S = b_.CreateUDiv(nblocks_, tiles, "S");
  Value* tile = b_.CreateUDiv(bid_, S, "tile");
  Value* slice = b_.CreateURem(bid_, S, "slice");
  Value* tile_ok = b_.CreateICmpULT(tile, tiles, "tile.ok");
  Value* tilec = b_.CreateSelect(tile_ok, tile, ix(0));
  Value* first = b_.CreateMul(tilec, ix(XV), "first");
  Value* record0 = b_.CreateMul(tilec, S, "record0");  // the tile's first record
  Value* lead = b_.CreateAnd(tile_ok, b_.CreateICmpEQ(ty, ix(0)));
  Value* tile_lead = b_.CreateAnd(lead, b_.CreateICmpEQ(slice, ix(0)), "tile.leader");
  // The word of reduction `item` for column `v` of this thread in record `record`, or for
  // the record's first column unless `exists`.
  auto word = [&](Value* record, int v, int item, Value* exists) {
    Value* column = b_.CreateSelect(exists, b_.CreateAdd(b_.CreateMul(tx, ix(V)), ix(v)), ix(0));
    Value* w = b_.CreateAdd(
        b_.CreateMul(b_.CreateAdd(b_.CreateMul(record, ix(XV)), column), ix(plan.slots)),
        ix(plan.slot_of.at(item)));
    return em_.element_ptr(workspace_, DType::i32, w);
  };
  for (int k = 0; k < plan.phases; ++k) {
    BasicBlock* body = BasicBlock::Create(ctx_, fmt::format("phase{}", k), fn_);
    BasicBlock* next = BasicBlock::Create(ctx_, "phase.next", fn_);
    b_.CreateCondBr(b_.CreateICmpEQ(phase_, i64(k)), body, next);
    b_.SetInsertPoint(body);
    std::vector<int> done;
    bool walks = false;  // whether a pass of this phase walks the reduced extent
    for (size_t pi = 0; pi < prog_.passes.size(); ++pi) {
      walks = walks ||
              (plan.phase_of[pi] == k && prog_.items[prog_.passes[pi][0]].kind != Item::row_store);
      if (plan.phase_of[pi] >= k) continue;
      for (int r : reductions_of(prog_.passes[pi])) done.push_back(r);
    }
    if (!walks && !done.empty()) {
      fold_columns(done, k, plan, first, record0, S, slice, tile_ok);
      b_.SetInsertPoint(next);
      continue;
    }
    auto walk = [&](bool vector) {
      OuterColumns c = outer_columns(first, tx, vector);
      std::vector<std::vector<Value*>> results(prog_.items.size());
      if (!done.empty()) {
        // Thread row ty folds records ty, ty + Y, ... of the tile, for each column and
        // reduction; the rows are then folded in order (combine_outer). A column past the
        // last has no record word written: it reads the tile's first column's instead (its
        // result is never stored), so nothing reads memory that no launch wrote.
        std::vector<Value*> partial = fold_loop(done, V, ty, Y, S, [&](Value* j, size_t a) {
          const int v = static_cast<int>(a % V);
          return word(b_.CreateAdd(record0, j), v, done[a / V], c.valid[v]);
        });
        combine_outer(done, partial, tx, ty, results, true);
      }
      for (size_t pi = 0; pi < prog_.passes.size(); ++pi) {
        const std::vector<int>& pass = prog_.passes[pi];
        const bool row_store = prog_.items[pass[0]].kind == Item::row_store;
        if (plan.phase_of[pi] == k - 1) {
          for (int v = 0; v < V; ++v) {
            store_reductions(pass, c.points[v], results, b_.CreateAnd(tile_lead, c.valid[v]));
          }
        }
        if (plan.phase_of[pi] == k && row_store) {
          for (int v = 0; v < V; ++v) {
            store_row_item(prog_.items[pass[0]], c.points[v], results,
                           b_.CreateAnd(tile_lead, c.valid[v]));
          }
        }
      }
      // ceil(ceil(R / S) / chunk) chunks per slice
      Value* per_block = b_.CreateUDiv(b_.CreateAdd(R_, b_.CreateSub(S, ix(1))), S);
      Value* chunks = b_.CreateUDiv(b_.CreateAdd(per_block, ix(chunk - 1)), ix(chunk));
      Value* begin = b_.CreateMul(b_.CreateMul(slice, chunks), ix(chunk), "begin");
      Value* end = b_.CreateAdd(begin, b_.CreateMul(chunks, ix(chunk)));
      end = b_.CreateSelect(b_.CreateICmpULT(end, R_), end, R_, "end");
      for (size_t pi = 0; pi < prog_.passes.size(); ++pi) {
        const std::vector<int>& pass = prog_.passes[pi];
        if (plan.phase_of[pi] != k || prog_.items[pass[0]].kind == Item::row_store) continue;
        std::vector<Value*> partial = outer_chunks(pass, results, c, ty, begin, end, vector);
        std::vector<int> reds = reductions_of(pass);
        if (reds.empty()) continue;
        std::vector<std::vector<Value*>> slice_results(prog_.items.size());
        combine_outer(reds, partial, tx, ty, slice_results, false);
        Value* record = b_.CreateAdd(record0, slice);
        for (int r : reds) {
          for (int v = 0; v < V; ++v) {
            when(b_.CreateAnd(lead, c.valid[v]), "record", "recorded", [&] {
              b_.CreateAlignedStore(b_.CreateBitCast(slice_results[r][v], b_.getInt32Ty()),
                                    word(record, v, r, b_.getTrue()), llvm::Align(4));
            });
          }
        }
      }
    };
    walk_to_exit(vec_ok, walk);
    b_.SetInsertPoint(next);
  }
  b_.CreateBr(exit_);
}

}  // namespace kiln::reduction
