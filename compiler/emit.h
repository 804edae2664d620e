// What every lowering to LLVM IR shares: storage and compute types, widening loads and
// rounding stores, kernel annotations, and the evaluation of an expression DAG whose leaves
// (loads, index variables, symbols) each lowering supplies.
//
// Values compute in f32/i32/i1 per ir/expr.h; f16/bf16 widen on load and round (nearest
// even) on store. exp runs on the hardware's ex2.approx (fast_exp, with its error bound), sqrt
// and abs on LLVM intrinsics, and the other math functions (log, rsqrt, tanh, erf, pow) call
// libdevice, which emit_ptx links.
#pragma once

#include <llvm/ADT/STLFunctionalExtras.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <array>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/expr.h"
#include "ir/program.h"

namespace kiln {

/// Memoized values of one point (element or row) being computed, keyed by expression node.
using ValueMemo = std::unordered_map<const ExprNode*, llvm::Value*>;

/// The value of a leaf node (Load, IndexRef, SymRef, Reduce) at the current point. Gathers are
/// evaluated by the Emitter itself: their positions through `eval`, their tensor and extents
/// from the kernel's arguments by name.
using LeafFn = std::function<llvm::Value*(const Expr&)>;

/// A divisor fixed for a kernel's life (an extent), prepared once by Emitter::divisor so that
/// each division by it is a multiplication, not the emulated integer division (tens of
/// instructions each in SASS).
struct Divisor {
  llvm::Value* d = nullptr;      // the divisor, i32 or i64 (0 read as 1)
  llvm::Value* magic = nullptr;  // i32: ceil(2^(31 + l) / d) (u32); i64: 1.0 / d (double)
  llvm::Value* shift = nullptr;  // i32: l = ceil(log2 d)
};

class Emitter {
 public:
  Emitter(llvm::Module& m, llvm::IRBuilder<>& b) : m_(m), b_(b) {}

  llvm::Type* storage_type(DType t);       // f32, i32, or i16 for both half types
  llvm::Type* compute_llvm_type(DType t);  // float, i32 or i1
  /// Loaded storage value -> compute value.
  llvm::Value* widen(llvm::Value* v, DType t);
  /// Lane `lane` of a loaded vector of t, widened to its compute type.
  llvm::Value* widen_lane(llvm::Value* vec, int lane, DType t);
  /// Compute value -> storage value, rounding to nearest even.
  llvm::Value* to_storage(llvm::Value* v, DType t);
  /// Element `offset` (an integer value) of a tensor of type `t` at `base` (a global pointer).
  llvm::Value* element_ptr(llvm::Value* base, DType t, llvm::Value* offset);
  /// One element of type `t` at `ptr`, widened to its compute type.
  llvm::Value* load(llvm::Value* ptr, DType t);
  /// `n` consecutive elements at `ptr` as one vector of the stored type, aligned to
  /// min(16, n * size) bytes (the caller guarantees it).
  llvm::Value* load_vector(llvm::Value* ptr, DType t, int n);
  /// An L2 cache policy (b64) that gives every line it is used on the evict_last priority.
  llvm::Value* l2_evict_last_policy();
  /// As load_vector, for 8 or 16 bytes of a tensor the kernel never writes, with eviction
  /// priorities: evict_last in L1 and `policy` (l2_evict_last_policy) in L2 (PTX
  /// ld.global.nc.L1::evict_last.L2::cache_hint). Other sizes load as load_vector does.
  llvm::Value* load_vector_kept(llvm::Value* ptr, DType t, int n, llvm::Value* policy);
  /// Asks L1 to fetch the line holding element `offset` (i64) of a tensor of type `t` at
  /// `base` (PTX prefetch.global.L1; it writes no register), so that a later load of the line
  /// finds it on chip. The element must be inside the tensor.
  void prefetch_l1(llvm::Value* base, DType t, llvm::Value* offset);
  /// Compute values of consecutive elements of type `t` (2 or 4 bytes) as the 32-bit words that
  /// hold them in memory, rounded: pairs of 16-bit elements (the first in the low half), or one
  /// word per 32-bit element. For a 16-bit type, `vals` holds an even number of values.
  std::vector<llvm::Value*> storage_words(DType t, const std::vector<llvm::Value*>& vals);
  /// Stores compute values to consecutive elements of type `t` at `ptr`, rounded: one scalar
  /// store, or one vector store aligned to min(16, vals.size() * size) bytes.
  void store(llvm::Value* ptr, DType t, const std::vector<llvm::Value*>& vals);
  /// Emits `then` where `cond` holds, else `other`, in the function being built, and continues
  /// after both; if_then has no else block.
  void if_else(llvm::Value* cond, llvm::function_ref<void()> then,
               llvm::function_ref<void()> other);
  void if_then(llvm::Value* cond, llvm::function_ref<void()> then);
  /// A zero-extended special register (tid.x, ctaid.x, ...) as i64.
  llvm::Value* sreg(llvm::Intrinsic::ID id);
  /// `d` (i32 below 2^31, or i64) prepared for divmod, at the insertion point (once per
  /// kernel or loop, not per element).
  Divisor divisor(llvm::Value* d);
  /// {n / d, n % d}, exact for 0 <= n < 2^31 (i32) or n < 2^50 (i64).
  std::pair<llvm::Value*, llvm::Value*> divmod(llvm::Value* n, const Divisor& d);

  /// Marks `fn` a kernel with at most `max_threads` threads per block.
  void annotate_kernel(llvm::Function* fn, int max_threads);
  /// Asks ptxas to fit `blocks` blocks of `fn` on an SM (PTX .minnctapersm): it limits the
  /// registers, spilling where it must.
  void min_blocks_per_sm(llvm::Function* fn, int blocks);
  /// exp(x) on ex2.approx.ftz (see emit.cpp for its error).
  llvm::Value* fast_exp(llvm::Value* x);
  /// tanh(x) on tanh.approx.f32 (see emit.cpp for its error).
  llvm::Value* approx_tanh(llvm::Value* x);
  /// erf(x) as tanh.approx.f32 of an odd polynomial (see emit.cpp for its error).
  llvm::Value* approx_erf(llvm::Value* x);
  /// A kernel taking one global pointer per parameter of `abi` (noalias; readonly for inputs,
  /// writeonly for outputs; a scalar parameter by value, in its storage type) then one i64 per
  /// symbol; with `workspace`, then a global pointer (noalias) and an i64 phase (split reductions,
  /// bundle/manifest.h); with `tensor_maps` > 0, then that many 128-byte tensor maps (byval, grid
  /// constants) and an i64 (contractions); last, one i64 per dimension of each strided parameter
  /// (`x.stride0`, ...), in parameter order, whether the variant reads them or not.
  llvm::Function* declare_kernel(const KernelDef& abi, const std::string& entry, int max_threads,
                                 bool workspace = false, int tensor_maps = 0);

  /// Whether loads of strided parameters go through their strides (a strided variant:
  /// PointwiseConfig::strided). Gathers follow it; each lowering applies it to its own loads.
  void set_read_strides(bool on) { read_strides_ = on; }
  /// Whether tanh and erf run on approx_tanh and approx_erf (PointwiseStep::fast_functions).
  void set_fast_functions(bool on) { fast_functions_ = on; }
  bool read_strides() const { return read_strides_; }
  /// Element offset (i64) of `tensor` at `coords` (integers, zero-extended) through the
  /// current kernel's stride arguments of that tensor, or nullptr when it has none.
  llvm::Value* strided_offset(const std::string& tensor, const std::vector<llvm::Value*>& coords);

  /// e at the current point: memoized in `memo`, leaves from `leaf`.
  llvm::Value* eval(const Expr& e, ValueMemo& memo, const LeafFn& leaf);

  /// rand: Philox 4x32-10 of three i64 values as an f32 in [0, 1) (ir/expr.h philox_uniform).
  /// A counter that is a shared value plus a lane's constant (a vector's lanes) shares the
  /// Philox calls of its block of four with the other lanes (emit.cpp says how).
  llvm::Value* philox_uniform(llvm::Value* seed, llvm::Value* offset, llvm::Value* counter);
  /// rand's 24-bit integer k (i32): the number is k * 2^-24.
  llvm::Value* philox_bits(llvm::Value* seed, llvm::Value* offset, llvm::Value* counter);
  /// rand OP v (OP one of < <= > >=) from rand's integer k, in integers (emit.cpp says how).
  llvm::Value* rand_compare(BinaryOp op, llvm::Value* k, llvm::Value* v);
  /// `n` as rand_compare when it orders rand against a value that is the same for every
  /// element; nullptr otherwise.
  llvm::Value* rand_ordering(const Binary& n, ValueMemo& memo, const LeafFn& leaf);
  /// The four words of Philox 4x32-10 for counter block `block` (i64).
  std::array<llvm::Value*, 4> philox_block(llvm::Value* seed, llvm::Value* offset,
                                           llvm::Value* block);

  /// 32 bytes of zeros in global memory, aligned to 16, one per module: what a load that must not
  /// touch its tensor reads instead (a gather from an empty tensor, a tiled vector outside its
  /// tensor: up to 8 f32 lanes).
  llvm::Value* zeros();
  /// A gather's element address (its positions clamped: ir/expr.h), or zeros() when the tensor
  /// has an empty dimension.
  llvm::Value* gather_pointer(const Expr& e, ValueMemo& memo, const LeafFn& leaf);
  /// One element there, widened.
  llvm::Value* gather(const Expr& e, ValueMemo& memo, const LeafFn& leaf);

  /// The identity of a reduction over values of type `t` (0, 1, -inf/INT32_MIN, ...).
  llvm::Value* identity(ReduceOp op, DType t);
  /// a (op) b for a reduction's accumulator (max and min propagate NaN like the interpreter).
  llvm::Value* combine(ReduceOp op, llvm::Value* a, llvm::Value* b);

  /// An integer value (i64 or i32) as the node's type (f32 or an integer type), for index
  /// variables and symbols.
  llvm::Value* int_as(llvm::Value* v, DType t, bool is_signed);
  /// A dimension's extent as i64: a constant, or the kernel's symbol argument of that name.
  llvm::Value* dim_value(const Dim& d);

 private:
  llvm::Function* libdevice(const char* name, int arity);
  llvm::Value* intrinsic(llvm::Intrinsic::ID id, std::vector<llvm::Value*> args);
  llvm::Value* int_div(llvm::Value* a, llvm::Value* b, bool is_signed);
  /// 1 / x (double, x >= 1) without a call: rcp.approx and Newton steps (emit.cpp).
  llvm::Value* reciprocal(llvm::Value* x);
  llvm::Value* eval_op(const Expr& e, ValueMemo& memo, const LeafFn& leaf);

  llvm::Module& m_;
  llvm::IRBuilder<>& b_;
  bool read_strides_ = false;
  bool fast_functions_ = false;
};

}  // namespace kiln
