// Outer kernels: the reduced index is strided. reduction_analysis.cpp gives the canonical
// items and their passes (its steps 1 and 2); then:
//  3. Columns: block / group threads along the rows, each owning `vec` consecutive rows (the
//     contiguous index), and `group` threads along the reduced index, each with `items` steps
//     in flight (outer_chunks). A thread whose columns all exist walks whole chunks unmasked
//     (no clamps, no selects: fewer registers, so more blocks and more loads in flight per
//     SM), then the rest one step at a time, masked. Vectors of `vec` columns load as one
//     access; where the rows are not a multiple of vec, each column loads on its own, with
//     items / vec steps in flight, so that this path sets no more registers than the vector one.
//     There the thread with only some of its columns (the last of the rows) walks the whole
//     chunks like the others, its other columns loading the last row's (clamped) into partials
//     that are never stored (masked only where the kernel stores elements): one step at a time
//     it took R / group dependent loads, and its block (a split's last phase: the grid) waited.
//  4. Combining (combine_outer): a column's `group` partials are folded in order by one
//     thread through shared memory, so the result does not depend on timing. Row-level
//     outputs and the reductions' outputs are stored by the threads of the first row of
//     the reduced index. The block loops over its column groups (block_loop).
// Split outer kernels (few columns) are in reduction_split.cpp.
#include <algorithm>
#include <functional>
#include <set>

#include "compiler/lower/reduction_lowering.h"

namespace kiln::reduction {

// The block-uniform loop of an outer kernel over its row groups: calls body(first row of
// the block) and ends in exit_. (Row kernels do not loop: the grid covers their rows.)
void ReductionLowering::block_loop(int64_t per_block, llvm::function_ref<void(Value*)> body) {
  Value* start = b_.CreateMul(bid_, ix(per_block));
  counted_loop(
      {"rows", "row", nullptr, "first"}, start, rows_,
      [&] { return b_.CreateMul(nblocks_, ix(per_block)); }, {},
      [&](Value* first, const std::vector<Value*>&) {
        body(first);
        return std::vector<Value*>{};
      },
      Test::top, exit_);
}

ReductionLowering::OuterColumns ReductionLowering::outer_columns(Value* first, Value* tx,
                                                                 bool vector) {
  const int V = cfg_.vec;
  OuterColumns c;
  c.valid.resize(V);
  c.o.resize(V);
  Value* col0 = b_.CreateAdd(first, b_.CreateMul(tx, ix(V)), "col0");
  Value* last = b_.CreateSub(rows_, ix(1));
  if (vector && V > 1) {
    Value* c0 = b_.CreateSelect(b_.CreateICmpULT(col0, rows_), col0, b_.CreateSub(rows_, ix(V)));
    std::vector<Value*> base = coords_of(c0);
    for (int v = 0; v < V; ++v) {
      c.valid[v] = b_.CreateICmpULT(b_.CreateAdd(col0, ix(v)), rows_);
      c.o[v] = base;
      c.o[v][rank_ - 1] = b_.CreateAdd(base[rank_ - 1], ix(v));
    }
  } else {
    for (int v = 0; v < V; ++v) {
      Value* col = b_.CreateAdd(col0, ix(v));
      c.valid[v] = b_.CreateICmpULT(col, rows_);
      c.o[v] = coords_of(b_.CreateSelect(c.valid[v], col, last));
    }
  }
  c.points.resize(V);
  for (int v = 0; v < V; ++v) {
    c.points[v].o = c.o[v];
    c.points[v].ok = c.valid[v];
    c.points[v].slot = v;
  }
  return c;
}

// The `items` groups of an outer thread's chunk from reduced index `base`: steps base + u *
// group + ty. Masked, a step at or past `end` (and a column that does not exist) loads a
// clamped address and folds nothing; unmasked, every step exists, and every column but on the
// scalar path (step 3), where one that does not folds into its partial, never stored.
std::vector<Group> ReductionLowering::outer_groups(const OuterColumns& c, Value* base, Value* ty,
                                                   Value* end, bool vector, int items,
                                                   bool masked) {
  const int Y = cfg_.group, V = cfg_.vec;
  const bool mask_columns = !vector && V > 1 && stores_elements(prog_);
  std::vector<Group> gs(items);
  // Unmasked steps over several reduced indices take their coordinates from the chunk's first
  // step's, stepped `group` at a time (step_axes), and so do the inputs' offsets
  // (axis_steps), where dividing each step's flat index and multiplying its coordinates
  // made the kernel bound by its index arithmetic (bench/results/2026-12-01-h200-outer-scalar,
  // call 6: about 44 instructions a load).
  const bool stepping = !masked && !group_steps_.axes.empty();
  Stepped st;
  std::vector<std::map<std::string, Value*>> offsets(V);  // per column, the last step's
  for (int u = 0; u < items; ++u) {
    Group& g = gs[u];
    g.shared = vector || V == 1;
    g.vector = vector && V > 1;
    Value* r = b_.CreateAdd(base, b_.CreateAdd(ix(int64_t{u} * Y), ty), "r");
    Value* in = masked ? b_.CreateICmpULT(r, end) : b_.getTrue();
    Value* rc = masked ? b_.CreateSelect(in, r, b_.CreateSub(R_, ix(1))) : r;
    std::map<std::string, Value*> moved;  // each input's offset change from the last step
    if (stepping && u == 0) st = Stepped{axes_of(r), {}};
    if (stepping && u > 0) {
      st = step_axes(st.axes, group_steps_.axes);
      for (const auto& [key, os] : group_steps_.offsets) {
        Value* d = os.step;
        for (size_t a = 1; a < os.wrap.size(); ++a) {
          d = b_.CreateAdd(d, b_.CreateSelect(st.wraps[a], os.wrap[a], ix(0)));
        }
        moved[key] = d;
      }
    }
    for (int v = 0; v < V; ++v) {
      Point p;
      p.o = c.o[v];
      p.r = rc;
      if (!joined_axes()) p.axes = st.axes;
      if (stepping) {
        for (const auto& [key, os] : group_steps_.offsets) {
          Value*& off = offsets[v][key];
          off = u == 0 ? offset_of(os.param, os.indices, p) : b_.CreateAdd(off, moved[key], "off");
          p.offsets[key] = off;
        }
      }
      p.ok = masked ? b_.CreateAnd(c.valid[v], in) : mask_columns ? c.valid[v] : b_.getTrue();
      p.slot = v;
      g.pts.push_back(std::move(p));
    }
  }
  return gs;
}

// The accumulators of `pass` over steps [begin, end) of the reduced index for the thread's
// columns (step 3): whole chunks unmasked while its columns all exist, then single steps,
// masked.
std::vector<Value*> ReductionLowering::outer_chunks(const std::vector<int>& pass,
                                                    const std::vector<std::vector<Value*>>& results,
                                                    const OuterColumns& c, Value* ty, Value* begin,
                                                    Value* end, bool vector) {
  const int Y = cfg_.group;
  const int U = vector || cfg_.vec == 1 ? cfg_.items : std::max(1, cfg_.items / cfg_.vec);
  const int64_t chunk = int64_t{Y} * U;
  // Whole chunks for a thread whose columns all exist (vectors), or any of them (scalars).
  Value* unmasked_end =
      whole_chunks_end(begin, end, chunk, vector ? c.valid[cfg_.vec - 1] : c.valid[0]);
  // A prefetching config loads each whole chunk an iteration ahead (chunk_loop): ptxas then
  // cannot let a chunk's loads wait on its sums (compiler/config.cpp prefetching_outer_configs).
  // Not where the pass stores elements (its stores would need the chunk's masks).
  const bool prefetch = cfg_.prefetch && std::all_of(pass.begin(), pass.end(), [&](int i) {
                          return prog_.items[i].kind == Item::reduction;
                        });
  std::vector<Value*> acc = chunk_loop(
      pass, results, begin, ix(chunk), unmasked_end,
      [&](Value* base) { return outer_groups(c, base, ty, end, vector, U, false); }, {}, prefetch);
  // A thread none of whose columns exists folds nothing (its partials are never stored).
  Value* masked_end = b_.CreateSelect(c.valid[0], end, unmasked_end, "masked.end");
  return chunk_loop(
      pass, results, unmasked_end, ix(Y), masked_end,
      [&](Value* base) { return outer_groups(c, base, ty, end, vector, 1, true); }, acc);
}

void ReductionLowering::emit_outer(bool vector) {
  const int Y = cfg_.group, V = cfg_.vec;
  const int X = cfg_.block / Y;
  Value* tx = b_.CreateURem(tid_, ix(X), "tx");
  Value* ty = b_.CreateUDiv(tid_, ix(X), "ty");
  block_loop(int64_t{X} * V, [&](Value* first) {
    OuterColumns c = outer_columns(first, tx, vector);
    std::vector<std::vector<Value*>> results(prog_.items.size());
    for (const std::vector<int>& pass : prog_.passes) {
      if (prog_.items[pass[0]].kind == Item::row_store) {
        for (int v = 0; v < V; ++v) {
          store_row_item(prog_.items[pass[0]], c.points[v], results,
                         b_.CreateAnd(c.valid[v], b_.CreateICmpEQ(ty, ix(0))));
        }
        continue;
      }
      std::vector<Value*> partial = outer_chunks(pass, results, c, ty, ix(0), R_, vector);
      combine_outer(reductions_of(pass), partial, tx, ty, results, true);
      for (int v = 0; v < V; ++v) {
        store_reductions(pass, c.points[v], results,
                         b_.CreateAnd(c.valid[v], b_.CreateICmpEQ(ty, ix(0))));
      }
    }
  });
}

// partial holds, per reduction of `reds`, `vec` values (one per slot) in order. The
// `group` partials of a row are folded in order by one thread, and the result shared
// (finished, or as a partial for a split kernel's record).
void ReductionLowering::combine_outer(const std::vector<int>& reds,
                                      const std::vector<Value*>& partial, Value* tx, Value* ty,
                                      std::vector<std::vector<Value*>>& results, bool finished) {
  const int Y = cfg_.group, V = cfg_.vec;
  internal_check(Y >= 2, "lower_reduction: an outer reduction needs 2+ threads per row");
  const int64_t X = cfg_.block / Y;
  const int64_t folded = int64_t{cfg_.block} * V;  // where the folded results go
  for (size_t k = 0; k < reds.size(); ++k) {
    const Item& it = prog_.items[reds[k]];
    Type* t = partial[k * V]->getType();
    // partials: [Y][X * V]. Without wrapping (a slot is below block x vec), so that LLVM sees
    // a thread's V words as consecutive and stores them as one vector, in 32-bit indices too.
    Value* own = b_.CreateAdd(b_.CreateMul(ty, ix(X * V), "", true, true),
                              b_.CreateMul(tx, ix(V), "", true, true), "", true, true);
    for (int v = 0; v < V; ++v) {
      store_shared(b_.CreateAdd(own, ix(v), "", true, true), partial[k * V + v]);
    }
    barrier();
    for (int v = 0; v < V; ++v) {
      BasicBlock* fold = BasicBlock::Create(ctx_, "fold", fn_);
      BasicBlock* next = BasicBlock::Create(ctx_, "folded", fn_);
      b_.CreateCondBr(b_.CreateICmpEQ(ty, ix(v % Y)), fold, next);
      b_.SetInsertPoint(fold);
      Value* column = b_.CreateAdd(b_.CreateMul(tx, ix(V)), ix(v));
      // A loop, not unrolled: unrolled, LLVM hoists every fold's loads out of its branch.
      Value* first = load_shared(column, t);
      Value* last = counted_loop(
          {"fold.y", nullptr, "fold.done", "y"}, ix(1), ix(Y), [&] { return ix(1); },
          {{first, "fold"}},
          [&](Value* y, const std::vector<Value*>& acc) {
            Value* x = load_shared(b_.CreateAdd(b_.CreateMul(y, ix(X * V)), column), t);
            return std::vector<Value*>{em_.combine(it.op, acc[0], x)};
          },
          Test::bottom)[0];
      llvm::PHINode* total = b_.CreatePHI(t, 1, "folded");
      total->addIncoming(last, b_.GetInsertBlock()->getSinglePredecessor());
      store_shared(b_.CreateAdd(ix(folded), column), finished ? finish(reds[k], total) : total);
      b_.CreateBr(next);
      b_.SetInsertPoint(next);
    }
    barrier();
    std::vector<Value*> out;
    for (int v = 0; v < V; ++v) {
      Value* column = b_.CreateAdd(b_.CreateMul(tx, ix(V)), ix(v));
      out.push_back(load_shared(b_.CreateAdd(ix(folded), column), t));
    }
    results[reds[k]] = out;
  }
}

}  // namespace kiln::reduction
