// What every reduction kernel shares: the structure of its control flow (branches, the
// counted loop), its passes (accumulators, the chunk loop, the fused states' folds and merges),
// its stores, the evaluation of expressions and their loads (scalar, vector, from groups of
// points), and the GPU's pieces (shuffles, shared memory, barriers).
// Accumulators are f32 (i32 for integer bodies); half types widen on load. Out-of-range
// elements load a clamped (valid) address and contribute the reduction's identity.
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include <algorithm>
#include <functional>
#include <set>

#include "compiler/lower/reduction_lowering.h"
#include "compiler/reduction_math.h"

namespace kiln::reduction {

void ReductionLowering::branch2(Value* cond, llvm::function_ref<void(bool)> body) {
  BasicBlock* yes = BasicBlock::Create(ctx_, "vec", fn_);
  BasicBlock* no = BasicBlock::Create(ctx_, "scalar", fn_);
  b_.CreateCondBr(cond, yes, no);
  b_.SetInsertPoint(yes);
  body(true);
  b_.SetInsertPoint(no);
  body(false);
}

// The loop of every kernel: for (i = begin; i < end; i += step()), step() emitted at the
// latch, with values carried around it: body(i, their values) emits an iteration and returns
// their next values. Not unrolled (no_unroll). Returns the carried values after the loop (at
// the top test: the phis; at the bottom test: the last iteration's), with the insert point
// in the block after it: `exit` when given, else a new one.
std::vector<Value*> ReductionLowering::counted_loop(
    const LoopNames& names, Value* begin, Value* end, llvm::function_ref<Value*()> step,
    const std::vector<Carried>& carried,
    llvm::function_ref<std::vector<Value*>(Value*, const std::vector<Value*>&)> body, Test test,
    BasicBlock* exit) {
  BasicBlock* pre = b_.GetInsertBlock();
  BasicBlock* header = BasicBlock::Create(ctx_, names.header, fn_);
  BasicBlock* work = test == Test::top ? BasicBlock::Create(ctx_, names.body, fn_) : header;
  BasicBlock* done = exit ? exit : BasicBlock::Create(ctx_, names.done, fn_);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  llvm::PHINode* index = b_.CreatePHI(begin->getType(), 2, names.index);
  index->addIncoming(begin, pre);
  std::vector<llvm::PHINode*> phis;
  for (const Carried& c : carried) {
    phis.push_back(b_.CreatePHI(c.init->getType(), 2, c.name));
    phis.back()->addIncoming(c.init, pre);
  }
  if (test == Test::top) {
    b_.CreateCondBr(b_.CreateICmpULT(index, end), work, done);
    b_.SetInsertPoint(work);
  }
  std::vector<Value*> next = body(index, std::vector<Value*>(phis.begin(), phis.end()));
  BasicBlock* latch = b_.GetInsertBlock();
  Value* next_index = b_.CreateAdd(index, step());
  index->addIncoming(next_index, latch);
  for (size_t k = 0; k < phis.size(); ++k) phis[k]->addIncoming(next[k], latch);
  if (test == Test::top) {
    no_unroll(b_.CreateBr(header));
  } else {
    no_unroll(b_.CreateCondBr(b_.CreateICmpULT(next_index, end), header, done));
  }
  b_.SetInsertPoint(done);
  return test == Test::top ? std::vector<Value*>(phis.begin(), phis.end()) : next;
}

Value* ReductionLowering::whole_chunks_end(Value* begin, Value* end, int64_t chunk, Value* walks) {
  Value* len = b_.CreateSelect(b_.CreateICmpULT(begin, end), b_.CreateSub(end, begin), ix(0));
  Value* whole = b_.CreateAdd(begin, b_.CreateMul(b_.CreateUDiv(len, ix(chunk)), ix(chunk)));
  return b_.CreateSelect(walks, whole, begin, "unmasked.end");
}

// Row coordinates of flat row `row` (ix_), outermost first.
std::vector<Value*> ReductionLowering::coords_of(Value* row) {
  std::vector<Value*> o(rank_);
  Value* q = row;
  for (int d = rank_ - 1; d >= 0; --d) {
    o[d] = d == 0 ? q : b_.CreateURem(q, row_extents_[d]);
    if (d > 0) q = b_.CreateUDiv(q, row_extents_[d]);
  }
  return o;
}

// The reductions of `pass` as merge states: each on its own, or a lead followed by the
// reductions fused into it.
std::vector<std::vector<int>> ReductionLowering::states_of(const std::vector<int>& pass) const {
  std::vector<std::vector<int>> states;
  for (int r : reductions_of(pass)) {
    if (fusion_in(r, pass) == Fusion::none) {
      states.push_back({r});
      continue;
    }
    internal_check(!states.empty() && states.back()[0] == prog_.items[r].lead,
                   "lower_reduction: a fused reduction apart from its lead");
    states.back().push_back(r);
  }
  return states;
}

// Whether merge state `st` (states_of) is a Welford lead's (n, mean, M2) with its followers.
bool ReductionLowering::welford_state(const std::vector<int>& st) const {
  return st.size() > 1 && prog_.items[st[1]].fusion == Fusion::welford;
}

// Accumulators of merge state `st` of a row kernel: a Welford state's three, else one per
// reduction (a lead's followers are all of one kind).
int ReductionLowering::state_width(const std::vector<int>& st) const {
  return welford_state(st) ? 3 : static_cast<int>(st.size());
}

// The accumulators of state `st` (states_of) for x then y, merged.
std::vector<Value*> ReductionLowering::merge_state(const std::vector<int>& st,
                                                   const std::vector<Value*>& x,
                                                   const std::vector<Value*>& y) {
  using reduction_math::merge;
  if (welford_state(st)) {
    auto w = merge(math_, reduction_math::Welford<Value*>{x[0], x[1], x[2]},
                   reduction_math::Welford<Value*>{y[0], y[1], y[2]});
    return {w.n, w.mean, w.m2};
  }
  std::vector<Value*> out(x.size());
  out[0] = em_.combine(prog_.items[st[0]].op, x[0], y[0]);
  for (size_t k = 1; k < st.size(); ++k) {  // online followers
    out[k] = merge(math_, reduction_math::Online<Value*>{x[0], x[k]},
                   reduction_math::Online<Value*>{y[0], y[k]})
                 .s;
  }
  return out;
}

std::vector<int> ReductionLowering::reductions_of(const std::vector<int>& pass) const {
  std::vector<int> out;
  for (int i : pass) {
    if (prog_.items[i].kind == Item::reduction) out.push_back(i);
  }
  return out;
}

// How reduction i is computed in `pass`: fused only where its lead shares the pass (the
// looped passes of a row kernel).
Fusion ReductionLowering::fusion_in(int i, const std::vector<int>& pass) const {
  const Item& it = prog_.items[i];
  if (it.lead < 0 || std::find(pass.begin(), pass.end(), it.lead) == pass.end()) {
    return Fusion::none;
  }
  return it.fusion;
}

// Whether reduction i of `pass` keeps a Welford state for a reduction fused into it.
bool ReductionLowering::welford_lead(int i, const std::vector<int>& pass) const {
  return std::any_of(pass.begin(), pass.end(), [&](int j) {
    return prog_.items[j].lead == i && fusion_in(j, pass) == Fusion::welford;
  });
}

// Accumulators of reduction i in `pass`: one per slot; a Welford lead's state (n, mean,
// M2), which also holds its followers' results (they have none of their own).
int ReductionLowering::width(int i, const std::vector<int>& pass) const {
  if (welford_lead(i, pass)) return 3;
  return fusion_in(i, pass) == Fusion::welford ? 0 : accumulators_per_reduction();
}

// Where reduction i's accumulators start among those of `pass`.
int ReductionLowering::offset(int i, const std::vector<int>& pass) const {
  int k = 0;
  for (int r : reductions_of(pass)) {
    if (r == i) return k;
    k += width(r, pass);
  }
  throw InternalError("lower_reduction: a reduction outside its pass");
}

// Reduction i's value from the combined accumulators of `pass`: a Welford lead's is
// n * mean (its sum), a Welford follower's the lead's M2.
Value* ReductionLowering::accumulated(int i, const std::vector<int>& pass,
                                      const std::vector<Value*>& acc) {
  if (welford_lead(i, pass)) {
    const int at = offset(i, pass);
    return math_.mul(acc[at], acc[at + 1]);
  }
  if (fusion_in(i, pass) == Fusion::welford) return acc[offset(prog_.items[i].lead, pass) + 2];
  return acc[offset(i, pass)];
}

std::vector<Value*> ReductionLowering::initial(const std::vector<int>& pass) {
  std::vector<Value*> acc;
  for (int i : reductions_of(pass)) {
    const Item& it = prog_.items[i];
    Value* v = welford_lead(i, pass) ? math_.num(0) : em_.identity(it.op, it.type);
    acc.insert(acc.end(), width(i, pass), v);
  }
  return acc;
}

// Folds value(p, g) of every in-range point of `groups`, in order, into acc[slot] with op;
// compensated (Kahan) where comp[slot] is given and not null (run_pass, a chunk of a loop).
// Where comp is given, a chunk's points are combined plainly, in order, per slot, and the
// chunk's result enters the accumulator once, a sum's compensated: compensating every point
// cost 6 instructions an element where this costs about 1. In outer kernels that made bf16
// column sums issue-bound (on an H200, 1048576 x 64 read DRAM at 69% of its peak with the SMs
// 55% busy, bench/results/2026-11-27-h200-few-columns, call 1); in looped rows whose reduced
// indices lie apart each of a chunk's 8 scalars went through two compensated sums
// (batchnorm's statistics over runs of 7 x 7: about 75 instructions an element, issue-bound,
// bench/results/2026-12-01-h200-row-steps, call 7). The plain sum's rounding is that of
// `items x vec` additions of the chunk's own terms, within a level of the tolerance's tree
// (docs/testing.md); the compensation still spans the chunks. (A pairwise tree per column
// raised the registers of the default outer variants more.)
void ReductionLowering::fold(ReduceOp op, DType t, std::vector<Group>& groups, Value** acc,
                             llvm::function_ref<Value*(Point&, Group&)> value, Value** comp) {
  const int S = accumulators_per_reduction();
  std::vector<Value*> part(S, nullptr);  // a chunk's slot so far
  auto into = [&](int slot, Value* v) {
    if (comp) {
      part[slot] = part[slot] ? em_.combine(op, part[slot], v) : v;
    } else {
      acc[slot] = em_.combine(op, acc[slot], v);
    }
  };
  for (Group& g : groups) {
    const bool one_mask = S == 1 && std::all_of(g.pts.begin(), g.pts.end(), [&](const Point& p) {
                            return p.ok == g.pts[0].ok;
                          });
    if (one_mask) {  // a vector in range as a whole: fold it, then mask once
      Value* whole = nullptr;
      for (Point& p : g.pts) {
        Value* v = value(p, g);
        whole = whole ? em_.combine(op, whole, v) : v;
      }
      into(0, b_.CreateSelect(g.pts[0].ok, whole, em_.identity(op, t)));
      continue;
    }
    for (Point& p : g.pts) {
      into(S > 1 ? p.slot : 0, b_.CreateSelect(p.ok, value(p, g), em_.identity(op, t)));
    }
  }
  for (int slot = 0; slot < S; ++slot) {
    if (!part[slot]) continue;
    if (comp[slot]) {
      reduction_math::kahan_add(math_, acc[slot], comp[slot], part[slot]);
    } else {
      acc[slot] = em_.combine(op, acc[slot], part[slot]);
    }
  }
}

// Evaluates a pass over `groups`: folds each reduction's in-range values into `acc` (per
// reduction, per slot) and stores element-level outputs. Returns the new accumulators.
// A fused reduction comes after its lead, so it sees the lead's accumulator both before
// (`before`) and after this chunk. With `comp` (loops over chunks), the f32 running sums are
// compensated (Kahan): comp[i] holds what acc[i] gained by rounding, or is null for an
// accumulator that is not such a sum (chunk_loop says which).
std::vector<Value*> ReductionLowering::run_pass(const std::vector<int>& pass,
                                                std::vector<Group>& groups,
                                                const std::vector<std::vector<Value*>>& results,
                                                std::vector<Value*> acc,
                                                std::vector<Value*>* comp) {
  const std::vector<Value*> before = acc;
  for (int i : pass) {
    const Item& it = prog_.items[i];
    if (it.kind == Item::element_store) {
      store_element_item(it, groups, results);
      continue;
    }
    Value** a = &acc[offset(i, pass)];
    Value** c = comp ? &(*comp)[offset(i, pass)] : nullptr;
    if (welford_lead(i, pass)) {
      // The chunk's sums of x - k, k the running mean (before any element, the chunk's
      // first value, clamped and so always an element of the row), added to the state
      // with one division per chunk, where a Welford update per element would divide per
      // element; the mean and M2 compensated when c[1] and c[2] are given.
      auto x = [&](Point& p, Group& g) { return eval(it.value, p, g, results); };
      reduction_math::Welford<Value*> st{a[0], a[1], a[2]};
      Value* k = reduction_math::shift(math_, st, x(groups[0].pts[0], groups[0]));
      Value *n = math_.num(0), *s1 = math_.num(0), *s2 = math_.num(0);
      fold(ReduceOp::sum, DType::f32, groups, &n, [&](Point&, Group&) { return math_.num(1); });
      fold(ReduceOp::sum, DType::f32, groups, &s1,
           [&](Point& p, Group& g) { return math_.sub(x(p, g), k); });
      fold(ReduceOp::sum, DType::f32, groups, &s2, [&](Point& p, Group& g) {
        Value* d = math_.sub(x(p, g), k);
        return math_.mul(d, d);
      });
      Value *mean_c = c ? c[1] : math_.num(0), *m2_c = c ? c[2] : math_.num(0);
      reduction_math::add_shifted_sums(math_, st, mean_c, m2_c, n, k, s1, s2);
      a[0] = st.n;
      a[1] = st.mean;
      a[2] = st.m2;
      if (c) {
        c[1] = mean_c;
        c[2] = m2_c;
      }
      continue;
    }
    switch (fusion_in(i, pass)) {
      case Fusion::none:
        fold(
            it.op, it.type, groups, a,
            [&](Point& p, Group& g) { return eval(it.value, p, g, results); }, c);
        break;
      case Fusion::online: {
        // The chunk's terms are taken against the running max after it, which bounds them
        // by 1; the sum so far, and its compensation, are re-measured against that max.
        const int m = offset(it.lead, pass);
        std::vector<std::vector<Value*>> running = results;
        running[it.lead] = {acc[m]};
        a[0] = reduction_math::rescale(math_, a[0], before[m], acc[m]);
        if (c && c[0]) c[0] = reduction_math::rescale(math_, c[0], before[m], acc[m]);
        fold(
            it.op, it.type, groups, a,
            [&](Point& p, Group& g) { return eval(it.value, p, g, running); }, c);
        break;
      }
      case Fusion::welford:  // its lead's M2
        break;
    }
  }
  return acc;
}

// A loop over the reduced index from `begin` while base < end, `step` per iteration,
// running the pass on make_groups(base); returns the accumulators after the loop. They start
// at `start` when given (another chunk_loop's result), else at initial(pass).
std::vector<Value*> ReductionLowering::chunk_loop(
    const std::vector<int>& pass, const std::vector<std::vector<Value*>>& results, Value* begin,
    Value* step, Value* end, llvm::function_ref<std::vector<Group>(Value*)> make_groups,
    std::vector<Value*> start, bool prefetch) {
  std::vector<Value*> init = start.empty() ? initial(pass) : std::move(start);
  std::vector<Carried> carried;
  for (Value* v : init) carried.push_back({v, "acc"});
  // f32 sums over a loop are compensated (Kahan): a thread may add up millions of values
  // (a row of 64M over 8 threads), and plain f32 accumulation then drifts past the
  // output's tolerance (measured on an H200: relative errors up to 2.9e-5 on rows of 64M).
  // So are the running sums of the fused states: an online sum, and a Welford state's mean
  // and M2 (its count is exact); the fused states' drift measured 1.7e-5 to 2.5e-5 there.
  std::vector<int> compensated;  // accumulators carried with a compensation, in order
  auto compensate = [&](int i) {
    compensated.push_back(i);
    carried.push_back({llvm::ConstantFP::get(b_.getFloatTy(), 0.0), "lost"});
  };
  for (int r : reductions_of(pass)) {
    const Item& it = prog_.items[r];
    const int at = offset(r, pass);
    if (welford_lead(r, pass)) {
      compensate(at + 1);
      compensate(at + 2);
      continue;
    }
    if ((it.op != ReduceOp::sum && it.op != ReduceOp::mean) ||
        fusion_in(r, pass) == Fusion::welford || !init[at]->getType()->isFloatTy()) {
      continue;
    }
    for (int i = at; i < at + width(r, pass); ++i) compensate(i);
  }
  const size_t n = init.size();
  // Carried: the accumulators, then the compensations of `compensated`.
  auto split = [&](const std::vector<Value*>& vals, std::vector<Value*>& comp) {
    comp.assign(n, nullptr);
    for (size_t k = 0; k < compensated.size(); ++k) comp[compensated[k]] = vals[n + k];
    return std::vector<Value*>(vals.begin(), vals.begin() + n);
  };
  // Prefetching, the loads of the first chunk are made before the loop (when it runs at all),
  // and each iteration loads the next chunk (the last one its own again, never past `end`)
  // before it folds the values loaded by the one before: then a chunk's loads are all in
  // flight together whatever order ptxas gives the instructions of an iteration.
  Prefetched first;
  if (prefetch) {
    BasicBlock* from = b_.GetInsertBlock();
    BasicBlock* load_first = BasicBlock::Create(ctx_, "prefetch", fn_);
    BasicBlock* join = BasicBlock::Create(ctx_, "prefetched", fn_);
    b_.CreateCondBr(b_.CreateICmpULT(begin, end), load_first, join);
    b_.SetInsertPoint(load_first);
    std::vector<Group> groups = make_groups(begin);
    first = prefetched_loads(pass, groups, results);
    BasicBlock* loaded = b_.GetInsertBlock();
    b_.CreateBr(join);
    b_.SetInsertPoint(join);
    for (Value* v : first.values) {
      llvm::PHINode* phi = b_.CreatePHI(v->getType(), 2, "ready");
      phi->addIncoming(v, loaded);
      phi->addIncoming(llvm::PoisonValue::get(v->getType()), from);
      carried.push_back({phi, "ready"});
    }
  }
  const size_t ready_at = n + compensated.size();
  std::vector<Value*> after = counted_loop(
      {"chunk", "chunk.body", "chunk.done", "base"}, begin, end, [&] { return step; }, carried,
      [&](Value* base, const std::vector<Value*>& vals) {
        std::vector<Value*> next_values;
        if (prefetch) {
          Value* next = b_.CreateAdd(base, step);
          std::vector<Group> upcoming =
              make_groups(b_.CreateSelect(b_.CreateICmpULT(next, end), next, base));
          Prefetched loaded = prefetched_loads(pass, upcoming, results);
          internal_check(loaded.slots == first.slots,
                         "lower_reduction: a chunk's prefetched loads differ from the first's");
          next_values = std::move(loaded.values);
        }
        std::vector<Group> groups = make_groups(base);
        if (prefetch) install(first, std::span(vals).subspan(ready_at), groups);
        std::vector<Value*> comp;
        std::vector<Value*> acc = run_pass(pass, groups, results, split(vals, comp), &comp);
        for (int i : compensated) acc.push_back(comp[i]);
        acc.insert(acc.end(), next_values.begin(), next_values.end());
        return acc;
      });
  std::vector<Value*> comp;
  std::vector<Value*> out = split(after, comp);
  for (size_t i = 0; i < n; ++i) {
    if (comp[i]) out[i] = b_.CreateFSub(out[i], comp[i], "compensated");
  }
  return out;
}

// The loads that folding `pass` over `groups` makes, made now (the arithmetic around them is
// left dead): Group::loads fills as it always does, and Group::ready with the scalar loads.
Prefetched ReductionLowering::prefetched_loads(const std::vector<int>& pass,
                                               std::vector<Group>& groups,
                                               const std::vector<std::vector<Value*>>& results) {
  for (Group& g : groups) {
    g.record = true;
    for (int i : pass) {
      const Item& it = prog_.items[i];
      internal_check(it.kind == Item::reduction, "lower_reduction: prefetching a store's pass");
      for (Point& p : g.pts) eval(it.value, p, g, results);
    }
    g.record = false;
  }
  Prefetched out;
  for (size_t k = 0; k < groups.size(); ++k) {
    for (const auto& [key, vals] : groups[k].loads) {
      for (size_t j = 0; j < vals.size(); ++j) {
        out.slots.push_back({k, key, static_cast<int>(j), true});
        out.values.push_back(vals[j]);
      }
    }
    for (const auto& [at, v] : groups[k].ready) {
      out.slots.push_back({k, at.first, at.second, false});
      out.values.push_back(v);
    }
  }
  return out;
}

// Puts `values`, loaded as `layout` says, into groups made for the same chunk.
void ReductionLowering::install(const Prefetched& layout, std::span<Value* const> values,
                                std::vector<Group>& groups) {
  internal_check(values.size() == layout.slots.size(), "lower_reduction: prefetched values");
  for (size_t i = 0; i < values.size(); ++i) {
    const Prefetched::Slot& s = layout.slots[i];
    Group& g = groups.at(s.group);
    if (s.cached) {
      std::vector<Value*>& vals = g.loads[s.key];
      if (vals.size() <= static_cast<size_t>(s.at)) vals.resize(s.at + 1);
      vals[s.at] = values[i];
    } else {
      g.ready[{s.key, s.at}] = values[i];
    }
  }
}

// The reduction's value once combined (mean divides by R).
Value* ReductionLowering::finish(int item, Value* v) {
  const Item& it = prog_.items[item];
  if (it.op == ReduceOp::mean) v = b_.CreateFDiv(v, b_.CreateUIToFP(R_, b_.getFloatTy()));
  return v;
}

// Reductions of the pass that are outputs store their value for the point's row.
void ReductionLowering::store_reductions(const std::vector<int>& pass, const Point& p,
                                         const std::vector<std::vector<Value*>>& results,
                                         Value* cond) {
  for (int i : reductions_of(pass)) {
    const Item& it = prog_.items[i];
    if (it.param < 0) continue;
    Value* v = results[i][results[i].size() > 1 ? p.slot : 0];
    store_if(cond, it.param, offset_of(it.param, it.indices, p), {v});
  }
}

void ReductionLowering::store_row_item(const Item& it, Point& p,
                                       const std::vector<std::vector<Value*>>& results,
                                       Value* cond) {
  Group none;
  Value* v = eval(it.value, p, none, results);
  store_if(cond, it.param, offset_of(it.param, it.indices, p), {v});
}

void ReductionLowering::store_element_item(const Item& it, std::vector<Group>& groups,
                                           const std::vector<std::vector<Value*>>& results) {
  for (Group& g : groups) {
    std::vector<Value*> vals;
    for (Point& p : g.pts) vals.push_back(eval(it.value, p, g, results));
    if (vector_access(g, it.param, it.indices)) {
      Value* ok = g.pts[0].ok;
      for (size_t l = 1; l < g.pts.size(); ++l) ok = b_.CreateAnd(ok, g.pts[l].ok);
      store_if(ok, it.param, offset_of(it.param, it.indices, g.pts[0]), vals);
      note_aligned(it.param, params_[it.param]->dtype);
    } else {
      for (size_t l = 0; l < g.pts.size(); ++l) {
        store_if(g.pts[l].ok, it.param, offset_of(it.param, it.indices, g.pts[l]), {vals[l]});
      }
    }
  }
}

void ReductionLowering::store_if(Value* cond, int param, Value* offset,
                                 const std::vector<Value*>& vals) {
  when(cond, "store", "stored", [&] {
    DType t = params_[param]->dtype;
    em_.store(em_.element_ptr(ptrs_[param], t, offset), t, vals);
  });
}

// Emits body() in a block of its own that runs only when `cond` holds; code emitted after
// it runs either way.
void ReductionLowering::when(Value* cond, const char* name, const char* after,
                             llvm::function_ref<void()> body) {
  BasicBlock* yes = BasicBlock::Create(ctx_, name, fn_);
  BasicBlock* next = BasicBlock::Create(ctx_, after, fn_);
  b_.CreateCondBr(cond, yes, next);
  b_.SetInsertPoint(yes);
  body();
  b_.CreateBr(next);
  b_.SetInsertPoint(next);
}

Value* ReductionLowering::eval(const Expr& e, Point& p, Group& g,
                               const std::vector<std::vector<Value*>>& results) {
  return em_.eval(e, p.memo, [&](const Expr& leaf) -> Value* {
    if (const Load* ld = leaf.as<Load>()) return load(*ld, p, g, results);
    if (const IndexRef* r = leaf.as<IndexRef>()) {
      return em_.int_as(coordinate(r->name, p), leaf.type(), false);
    }
    if (const SymRef* s = leaf.as<SymRef>()) {
      return em_.int_as(dim_value(Dim::symbol(s->name)), leaf.type(), true);
    }
    throw UserError(leaf.loc(), "a reduction nested in another is not supported here");
  });
}

Value* ReductionLowering::coordinate(const std::string& var, const Point& p) {
  if (var == kReduced) {
    internal_check(p.r != nullptr, "lower_reduction: reduced index at row level");
    return p.r;
  }
  internal_check(var != kFolded, "lower_reduction: the coordinate of a folded index");
  const int m = static_cast<int>(reduced_extents_.size());
  if (const int a = suffix_start(var); a >= 0) {
    // The trailing run of reduced indices a ..: r % (R_a * .. * R_{m-1}).
    internal_check(p.r != nullptr, "lower_reduction: reduced index at row level");
    if (!p.axes.empty()) {  // c_{m-1} + c_{m-2} R_{m-1} + .. + c_a (R_{a+1} .. R_{m-1})
      Value* run = p.axes[static_cast<size_t>(m - 1)];
      for (int k = m - 2; k >= a; --k) {
        run = b_.CreateAdd(run, b_.CreateMul(p.axes[static_cast<size_t>(k)], suffix_[k + 1]));
      }
      return run;
    }
    return b_.CreateSub(p.r, b_.CreateMul(divide(p.r, a), suffix_[static_cast<size_t>(a)]),
                        "r.run");
  }
  if (var.rfind("_a", 0) == 0) {
    internal_check(p.r != nullptr, "lower_reduction: reduced index at row level");
    const int a = std::stoi(var.substr(2));
    if (!p.axes.empty()) return p.axes.at(static_cast<size_t>(a));
    return axis_of(p.r, a);
  }
  return p.o.at(std::stoi(var.substr(2)));
}

// Reduced index a of several at flat index r: (r / (R_{a+1} * .. * R_{m-1})) % R_a, the
// remainder as r / S_{a+1} - R_a (r / S_a) (S_a = R_a S_{a+1}).
Value* ReductionLowering::axis_of(Value* r, int a) {
  const int m = static_cast<int>(reduced_extents_.size());
  Value* q = a + 1 < m ? divide(r, a + 1) : r;
  if (a == 0) return q;
  return b_.CreateSub(q, b_.CreateMul(divide(r, a), reduced_extents_[static_cast<size_t>(a)]),
                      "r.axis");
}

// Group [f, l]: (r / S_{l+1}) % E, the remainder as r / S_{l+1} - E (r / S_f); a group of one
// index is axis_of's.
std::vector<Value*> ReductionLowering::axes_of(Value* r) {
  const int m = static_cast<int>(reduced_extents_.size());
  std::vector<Value*> c;
  for (size_t g = 0; g < step_groups_.size(); ++g) {
    const auto [first, last] = step_groups_[g];
    Value* q = last + 1 < m ? divide(r, last + 1) : r;
    c.push_back(g == 0 ? q : b_.CreateSub(q, b_.CreateMul(divide(r, first), step_extents_[g])));
  }
  return c;
}

// Each coordinate and each of k's is below its extent (k's outermost aside), so a sum with
// the carry in is below twice the extent: one subtraction brings it back. The outermost takes
// the last carry as it is: the steps stay inside the reduction.
Stepped ReductionLowering::step_axes(const std::vector<Value*>& c, const std::vector<Value*>& k) {
  Stepped out{std::vector<Value*>(c.size()), std::vector<Value*>(c.size())};
  Value* carry = nullptr;
  for (size_t a = c.size(); a-- > 0;) {
    Value* s = b_.CreateAdd(c[a], k[a], "axis.step");
    if (carry) s = b_.CreateAdd(s, carry);
    if (a == 0) {
      out.axes[a] = s;
      break;
    }
    Value* wraps = b_.CreateICmpUGE(s, step_extents_[a], "axis.wraps");
    out.axes[a] = b_.CreateSelect(wraps, b_.CreateSub(s, step_extents_[a]), s);
    out.wraps[a] = wraps;
    carry = b_.CreateZExt(wraps, ix_);
  }
  return out;
}

// The inputs a kernel over several reduced indices reads, and how the element offset of each
// changes over `distance` (the coordinates of a flat step, axes_of): from the offset's
// coefficient of each reduced coordinate, its offset at that coordinate 1 and every other 0.
std::map<std::string, OffsetStep> ReductionLowering::plan_offset_steps(
    const std::vector<Value*>& distance) {
  const size_t m = reduced_extents_.size(), n = step_groups_.size();
  std::map<std::string, OffsetStep> steps;
  std::set<const ExprNode*> seen;
  auto plan = [&](const Load& ld, int param) {
    const std::string key = load_key(ld);
    if (!uses_reduced(ld.indices) || steps.count(key)) return;
    // A group's coefficient is its innermost index's: the others' are that times the
    // extents after them (reduction::stepped_axis_groups).
    std::vector<Value*> coef(n);
    for (size_t g = 0; g < n; ++g) {
      const auto a = static_cast<size_t>(step_groups_[g].second);
      Point unit;
      unit.o.assign(rank_, ix(0));
      unit.axes.assign(m, ix(0));
      unit.axes[a] = ix(1);
      unit.r = suffix_[a + 1];
      coef[g] = offset_of(param, ld.indices, unit);
    }
    OffsetStep os{param, ld.indices, ix(0), std::vector<Value*>(n)};
    for (size_t g = 0; g < n; ++g) {
      os.step = b_.CreateAdd(os.step, b_.CreateMul(distance[g], coef[g]));
      if (g > 0) os.wrap[g] = b_.CreateSub(coef[g - 1], b_.CreateMul(step_extents_[g], coef[g]));
    }
    steps.emplace(key, std::move(os));
  };
  for (const Item& it : prog_.items) {
    if (it.kind != Item::row_store) for_each_input_load(it.value, params_, seen, plan);
  }
  return steps;
}

AxisSteps ReductionLowering::axis_steps(int64_t distance) {
  // Only where an input's offset divides: reads of the flat index alone add it as it is.
  if (reduced_extents_.size() < 2 || !divides_) return {};
  AxisSteps s;
  if (distance == 1) {  // the innermost coordinate's step, known without dividing
    s.axes.assign(step_groups_.size(), ix(0));
    s.axes.back() = ix(1);
  } else {
    s.axes = axes_of(ix(distance));
  }
  s.offsets = plan_offset_steps(s.axes);
  return s;
}

Value* ReductionLowering::divide(Value* n, int a) {
  return em_.divmod(n, suffix_div_[static_cast<size_t>(a)]).first;
}

std::vector<std::string> ReductionLowering::unfolded(const std::vector<std::string>& idx) const {
  const int m = static_cast<int>(reduced_extents_.size());
  std::vector<std::string> out = idx;
  for (size_t d = 0; d < idx.size(); ++d) {
    const int a = idx[d] == kReduced && m > 1 ? 0 : suffix_start(idx[d]);
    if (a < 0) continue;
    const size_t n = static_cast<size_t>(m - a);
    internal_check(d + 1 >= n, "lower_reduction: a folded run longer than its indices");
    for (size_t k = 0; k < n; ++k) out[d + 1 - n + k] = reduced_axis_var(a + static_cast<int>(k));
  }
  return out;
}

// Element offset (ix_) of tensor `t` (an abi parameter) at `indices` for point p: a sum of
// its coordinates times strides (or the strides a strided variant is given).
Value* ReductionLowering::offset_of(int param, const std::vector<std::string>& indices,
                                    const Point& p) {
  if (!p.offsets.empty()) {
    auto it = p.offsets.find(load_key(params_[param]->name, indices));
    if (it != p.offsets.end()) return it->second;
  }
  if (cfg_.strided && params_[param]->strided) {  // a strided variant: through the strides
    std::vector<Value*> coords;
    for (const std::string& v : unfolded(indices)) coords.push_back(coordinate(v, p));
    Value* off = em_.strided_offset(params_[param]->name, coords);
    internal_check(off != nullptr, "lower_reduction: a strided input without strides");
    return off;
  }
  const std::vector<Dim>& shape = params_[param]->shape;
  Value* off = ix(0);
  Value* stride = nullptr;
  for (int d = static_cast<int>(indices.size()) - 1; d >= 0; --d) {
    // A folded position is part of the flat reduced index after it (reduction_analysis.h).
    if (indices[d] != kFolded) {
      Value* c = coordinate(indices[d], p);
      off = b_.CreateAdd(off, stride ? b_.CreateMul(c, stride) : c);
    }
    Value* ext = dim_value(shape[d]);
    stride = stride ? b_.CreateMul(stride, ext) : ext;
  }
  return off;
}

int ReductionLowering::param_of(const std::string& name) const {
  for (size_t i = 0; i < params_.size(); ++i) {
    if (params_[i]->name == name) return static_cast<int>(i);
  }
  return -1;
}

// The value of load `ld` at point p: p is one of g's points, or g is empty and p a row-level
// point.
Value* ReductionLowering::load(const Load& ld, Point& p, Group& g,
                               const std::vector<std::vector<Value*>>& results) {
  int param = param_of(ld.tensor);
  if (param < 0 || params_[param]->role != TensorRole::input) {
    // The result of a reduction of this kernel, for this row.
    for (size_t i = 0; i < prog_.items.size(); ++i) {
      const Item& it = prog_.items[i];
      if (it.kind != Item::reduction || it.target != ld.tensor) continue;
      internal_check(!results[i].empty(), "lower_reduction: reduction read before its pass");
      Value* v = results[i][results[i].size() > 1 ? p.slot : 0];
      if (it.param >= 0) v = em_.widen(em_.to_storage(v, ld.stored), ld.stored);
      return v;
    }
    throw InternalError("lower_reduction: load of unknown tensor " + ld.tensor);
  }
  const bool uses_vary = vary_ == kReduced ? uses_reduced(ld.indices) : uses(ld.indices, vary_);
  const bool in_group = !g.pts.empty();  // else p is a row-level point
  const std::string key = load_key(ld);
  const int at = in_group ? static_cast<int>(&p - &g.pts.front()) : -1;
  if (in_group && !g.record) {
    if (auto it = g.ready.find({key, at}); it != g.ready.end()) return it->second;
  }
  if (tile_kr_ && in_group) {
    if (auto it = tile_plan_.regions.find(key); it != tile_plan_.regions.end()) {
      return load_tiled(it->second, p, g);
    }
  }
  if (in_group && vector_access(g, param, ld.indices)) {
    std::vector<Value*>& raw = g.loads[key];
    if (raw.empty()) raw = {load_vector(param, ld, g.pts[0])};
    // Lanes widen where they are used: a prefetched vector stays packed until then.
    return em_.widen_lane(raw[0], static_cast<int>(&p - &g.pts.front()), ld.stored);
  }
  if (in_group && g.shared && !uses_vary) {
    std::vector<Value*>& vals = g.loads[key];
    if (vals.empty()) vals = {load_scalar(param, ld, g.pts[0])};
    return vals[0];
  }
  Value* v = load_scalar(param, ld, p);
  if (in_group && g.record) g.ready[{key, at}] = v;
  return v;
}

Value* ReductionLowering::load_scalar(int param, const Load& ld, const Point& p) {
  return em_.load(em_.element_ptr(ptrs_[param], ld.stored, offset_of(param, ld.indices, p)),
                  ld.stored);
}

// The `vec` elements from `first` on, as one vector of the stored type.
// In a row kernel (emit_rows) a row's own input takes the evict_last hints; inputs that are
// the same for every row (a weight) load plainly.
Value* ReductionLowering::load_vector(int param, const Load& ld, const Point& first) {
  note_aligned(param, ld.stored);
  Value* ptr = em_.element_ptr(ptrs_[param], ld.stored, offset_of(param, ld.indices, first));
  if (keep_policy_ && uses_row(ld.indices)) {
    return em_.load_vector_kept(ptr, ld.stored, cfg_.vec, keep_policy_);
  }
  return em_.load_vector(ptr, ld.stored, cfg_.vec);
}

// Whether group g reads or writes tensor `param` at `indices` as one vector: a vector group
// and the vectors' index; in a shifted group, only a tensor laid out like the row.
bool ReductionLowering::vector_access(const Group& g, int param,
                                      const std::vector<std::string>& indices) const {
  if (!g.vector || indices.empty()) return false;
  // A strided input reads its vectors from a tile only (load_tiled), not through its strides.
  if (cfg_.strided && params_[param]->strided) return false;
  // A trailing run of the reduced indices is consecutive along the row's vectors too: the
  // kernel checks that its length is a multiple of vec (run()).
  const int run = vary_ == kReduced ? suffix_start(indices.back()) : -1;
  if (indices.back() != vary_ && run < 0) return false;
  // Every other index is the same for the vector's elements: row indices, folded positions,
  // and (along a run _s<a>) the reduced indices before the run, whose strides are multiples
  // of its length. Not the varying index again, nor another part of the flat one.
  for (size_t i = 0; i + 1 < indices.size(); ++i) {
    const std::string& v = indices[i];
    if (v == vary_) return false;
    if (v == kFolded || vary_ != kReduced || !is_reduced(v)) continue;
    if (v.rfind("_a", 0) != 0 || run < 0 || std::stoi(v.substr(2)) >= run) return false;
  }
  return !g.shifted || aligned_with_row(param, indices);
}

// Whether tensor `param` read at `indices` has element (row, r) at flat offset row x R + r,
// the row kernel's own layout: its indices are the row's, in order, then the reduced run, over
// the same extents. A shifted group's vectors are aligned in that offset; another tensor's
// element r (a weight w[r], at offset r) is not, and is read a lane at a time.
bool ReductionLowering::aligned_with_row(int param, const std::vector<std::string>& indices) const {
  const std::vector<Dim>& shape = params_[param]->shape;
  const size_t n = sk_.reduced.size();
  if (indices.size() != static_cast<size_t>(rank_) + n || shape.size() != indices.size()) {
    return false;
  }
  for (int d = 0; d < rank_; ++d) {
    if (indices[d] != row_var(d) || !(shape[d] == sk_.space[d])) return false;
  }
  for (size_t k = 0; k < n; ++k) {
    const char* want = k + 1 == n ? kReduced : kFolded;
    if (indices[rank_ + k] != want || !(shape[rank_ + k] == sk_.reduced[k])) return false;
  }
  return true;
}

void ReductionLowering::note_aligned(int param, DType t) {
  if (cfg_.strided) return;  // a strided variant checks its vectors' pointers itself
  layout_.align_bytes = std::max(layout_.align_bytes, std::min<int>(16, cfg_.vec * size_of(t)));
  auto& a = layout_.aligned_params;
  if (std::find(a.begin(), a.end(), param) == a.end()) {
    a.push_back(param);
    std::sort(a.begin(), a.end());
  }
}

Value* ReductionLowering::dim_value(const Dim& d) {
  if (d.is_fixed()) return ix(d.value());
  auto it = std::find(symbols_.begin(), symbols_.end(), d.name());
  internal_check(it != symbols_.end(), "lower_reduction: unknown symbol");
  return syms_[it - symbols_.begin()];
}

Value* ReductionLowering::shuffle_xor(Value* v, int offset) {
  bool f = v->getType()->isFloatTy();
  auto id = f ? llvm::Intrinsic::nvvm_shfl_sync_bfly_f32 : llvm::Intrinsic::nvvm_shfl_sync_bfly_i32;
  return b_.CreateIntrinsic(id, {}, {b_.getInt32(-1), v, b_.getInt32(offset), b_.getInt32(31)});
}

// The chunks of a loop already hold `items` vectors each; unrolling further only adds
// registers (and spills).
void ReductionLowering::no_unroll(llvm::Instruction* latch) {
  llvm::Metadata* disable[] = {llvm::MDString::get(ctx_, "llvm.loop.unroll.disable")};
  llvm::MDNode* self = llvm::MDNode::getDistinct(ctx_, {nullptr, llvm::MDNode::get(ctx_, disable)});
  self->replaceOperandWith(0, self);
  latch->setMetadata(llvm::LLVMContext::MD_loop, self);
}

// Row kernels: the first shared-memory slot of pass `pass_index` of `passes` (each
// accumulator of each pass has one slot per warp of the block).
int64_t ReductionLowering::slot_base(const std::vector<std::vector<int>>& passes,
                                     int pass_index) const {
  int64_t slots = 0;
  for (int i = 0; i < pass_index; ++i) {
    for (int r : reductions_of(passes[i])) slots += width(r, passes[i]) * (cfg_.block / 32);
  }
  return slots;
}

// Shared memory for the combines: one 32-bit word per slot.
void ReductionLowering::make_shared_memory() {
  int64_t words = 1;
  if (cfg_.split && shape_ == StepKind::row_reduction) {
    // Two regions: the fold of earlier phases' records, then the phase's own combine.
    if (cfg_.group > 32) words = 2 * int64_t{plan_split(prog_).slots} * (cfg_.block / 32);
  } else if (shape_ == StepKind::row_reduction) {
    if (cfg_.group > 32) {  // persistent and looped rows: one or the other
      words = std::max(slot_base(prog_.passes, static_cast<int>(prog_.passes.size())),
                       slot_base(prog_.looped, static_cast<int>(prog_.looped.size())));
    }
  } else {
    words = int64_t{cfg_.block} * cfg_.vec + int64_t{cfg_.block / cfg_.group} * cfg_.vec;
  }
  words = std::max<int64_t>(words, 1);
  auto* ty = llvm::ArrayType::get(b_.getInt32Ty(), words);
  smem_ = new llvm::GlobalVariable(m_, ty, false, llvm::GlobalValue::InternalLinkage,
                                   llvm::UndefValue::get(ty), fn_->getName() + ".smem", nullptr,
                                   llvm::GlobalValue::NotThreadLocal, 3);
  smem_->setAlignment(llvm::Align(16));
}

void ReductionLowering::store_shared(Value* slot, Value* v) {
  Value* ptr = b_.CreateInBoundsGEP(b_.getInt32Ty(), smem_, slot);
  b_.CreateAlignedStore(b_.CreateBitCast(v, b_.getInt32Ty()), ptr, llvm::Align(4));
}

Value* ReductionLowering::load_shared(Value* slot, Type* t) {
  Value* ptr = b_.CreateInBoundsGEP(b_.getInt32Ty(), smem_, slot);
  return b_.CreateBitCast(b_.CreateAlignedLoad(b_.getInt32Ty(), ptr, llvm::Align(4)), t);
}

}  // namespace kiln::reduction
