// See emit.h.
#include "compiler/emit.h"

#include <fmt/format.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/PatternMatch.h>

#include <cmath>

#include "ir/diag.h"

namespace kiln {

using llvm::Type;
using llvm::Value;

Type* Emitter::storage_type(DType t) {
  switch (t) {
    case DType::f32:
      return b_.getFloatTy();
    case DType::i32:
    case DType::u32:
      return b_.getInt32Ty();
    case DType::i64:
      return b_.getInt64Ty();
    case DType::f16:
    case DType::bf16:
      return b_.getInt16Ty();
    case DType::boolean:
      break;
  }
  throw InternalError("storage_type: bool is not stored");
}

Type* Emitter::compute_llvm_type(DType t) {
  switch (compute_type(t)) {
    case DType::f32:
      return b_.getFloatTy();
    case DType::i32:
    case DType::u32:
      return b_.getInt32Ty();
    case DType::i64:
      return b_.getInt64Ty();
    case DType::boolean:
      return b_.getInt1Ty();
    default:
      throw InternalError("compute_llvm_type");
  }
}

Value* Emitter::widen(Value* v, DType t) {
  switch (t) {
    case DType::bf16:  // the bf16 bits are the high half of the f32
      return b_.CreateBitCast(b_.CreateShl(b_.CreateZExt(v, b_.getInt32Ty()), 16), b_.getFloatTy());
    case DType::f16:
      return b_.CreateFPExt(b_.CreateBitCast(v, b_.getHalfTy()), b_.getFloatTy());
    default:
      return v;
  }
}

// bf16 lanes come straight out of the 32-bit words that hold them: the low lane is the word
// shifted up by 16, the high lane the word with its low half cleared (one instruction each,
// where extracting the 16-bit lane and widening it took three).
Value* Emitter::widen_lane(Value* vec, int lane, DType t) {
  auto* vt = llvm::cast<llvm::FixedVectorType>(vec->getType());
  if (t != DType::bf16 || vt->getNumElements() % 2 != 0) {
    return widen(b_.CreateExtractElement(vec, static_cast<uint64_t>(lane)), t);
  }
  Value* words =
      b_.CreateBitCast(vec, llvm::FixedVectorType::get(b_.getInt32Ty(), vt->getNumElements() / 2));
  Value* w = b_.CreateExtractElement(words, static_cast<uint64_t>(lane / 2));
  Value* bits = lane % 2 == 0 ? b_.CreateShl(w, 16) : b_.CreateAnd(w, b_.getInt32(0xFFFF0000u));
  return b_.CreateBitCast(bits, b_.getFloatTy());
}

namespace {

// The word that bf16 lanes `lo` and `hi` were widened from by widen_lane (lo = word << 16, hi =
// word & 0xFFFF0000), or null. Rounding such a lane back to bf16 gives its bits unchanged, a
// NaN's payload included, so a pair of them stores the word as loaded: a copy or a gather of
// bf16 values then holds 4 words a vector in registers, not 8 widened floats.
Value* loaded_bf16_word(Value* lo, Value* hi) {
  using namespace llvm::PatternMatch;
  Value *a = nullptr, *b = nullptr;
  if (!match(lo, m_BitCast(m_Shl(m_Value(a), m_SpecificInt(16))))) return nullptr;
  if (!match(hi, m_BitCast(m_And(m_Value(b), m_SpecificInt(0xFFFF0000u))))) return nullptr;
  if (!a->getType()->isIntegerTy(32)) return nullptr;
  if (a == b) return a;
  // widen_lane casts the loaded vector to words once per lane: the same word of two casts of
  // one vector is the same word.
  Value *va = nullptr, *vb = nullptr, *src_a = nullptr, *src_b = nullptr;
  uint64_t ia = 0, ib = 0;
  if (match(a, m_ExtractElt(m_Value(va), m_ConstantInt(ia))) &&
      match(b, m_ExtractElt(m_Value(vb), m_ConstantInt(ib))) && ia == ib &&
      match(va, m_BitCast(m_Value(src_a))) && match(vb, m_BitCast(m_Value(src_b))) &&
      src_a == src_b) {
    return a;
  }
  return nullptr;
}

// The 16 bits a bf16 value was widened from by widen (zext, << 16), or null.
Value* loaded_bf16_bits(Value* v) {
  using namespace llvm::PatternMatch;
  Value* bits = nullptr;
  if (match(v, m_BitCast(m_Shl(m_ZExt(m_Value(bits)), m_SpecificInt(16)))) &&
      bits->getType()->isIntegerTy(16)) {
    return bits;
  }
  return nullptr;
}

}  // namespace

Value* Emitter::to_storage(Value* v, DType t) {
  switch (t) {
    case DType::bf16:
      if (Value* bits = loaded_bf16_bits(v)) return bits;
      return b_.CreateBitCast(b_.CreateFPTrunc(v, b_.getBFloatTy()), b_.getInt16Ty());
    case DType::f16:
      return b_.CreateBitCast(b_.CreateFPTrunc(v, b_.getHalfTy()), b_.getInt16Ty());
    default:
      return v;
  }
}

Value* Emitter::element_ptr(Value* base, DType t, Value* offset) {
  return b_.CreateInBoundsGEP(storage_type(t), base, offset);
}

Value* Emitter::load(Value* ptr, DType t) {
  return widen(b_.CreateAlignedLoad(storage_type(t), ptr, llvm::Align(size_of(t))), t);
}

Value* Emitter::load_vector(Value* ptr, DType t, int n) {
  auto* vt = llvm::FixedVectorType::get(storage_type(t), n);
  return b_.CreateAlignedLoad(vt, ptr, llvm::Align(std::min<int>(16, n * size_of(t))));
}

Value* Emitter::l2_evict_last_policy() {
  auto* fty = llvm::FunctionType::get(b_.getInt64Ty(), {}, false);
  auto* fn = llvm::InlineAsm::get(fty, "createpolicy.fractional.L2::evict_last.b64 $0, 1.0;", "=l",
                                  /*hasSideEffects=*/false);
  return b_.CreateCall(fn, {}, "l2.keep");
}

// Inline assembly, since LLVM 19's NVPTX backend has no cache-hinted loads. The asm neither
// has side effects nor reads memory as far as LLVM knows, so it may move across the kernel's
// stores: the callers use it for inputs only, which the kernel never writes (they are loaded
// with ld.global.nc already).
Value* Emitter::load_vector_kept(Value* ptr, DType t, int n, Value* policy) {
  const int bytes = n * size_of(t);
  if (bytes != 8 && bytes != 16) return load_vector(ptr, t, n);
  const int words = bytes / 4;
  std::vector<Type*> outs(words, b_.getInt32Ty());
  auto* ret = llvm::StructType::get(b_.getContext(), outs);
  auto* fty = llvm::FunctionType::get(ret, {ptr->getType(), b_.getInt64Ty()}, false);
  std::string regs = words == 4 ? "{$0, $1, $2, $3}, [$4], $5" : "{$0, $1}, [$2], $3";
  std::string cons = words == 4 ? "=r,=r,=r,=r,l,l" : "=r,=r,l,l";
  auto* fn = llvm::InlineAsm::get(
      fty, fmt::format("ld.global.nc.L1::evict_last.L2::cache_hint.v{}.b32 {};", words, regs), cons,
      /*hasSideEffects=*/false);
  Value* r = b_.CreateCall(fn, {ptr, policy});
  auto* wt = llvm::FixedVectorType::get(b_.getInt32Ty(), words);
  Value* w = llvm::PoisonValue::get(wt);
  for (int i = 0; i < words; ++i) w = b_.CreateInsertElement(w, b_.CreateExtractValue(r, i), i);
  return b_.CreateBitCast(w, llvm::FixedVectorType::get(storage_type(t), n));
}

// Inline assembly: LLVM 19's NVPTX backend has no prefetch intrinsic. It has side effects as far
// as LLVM knows (it returns nothing and would be removed otherwise), so it stays where it is
// emitted, in order with the kernel's other memory accesses. The address is computed inside
// it, so that LLVM cannot share it with a later load of the same element and hold it in
// registers between the two (a first form, which prefetched each vector's weights at the top
// of the store pass, took a layernorm tier from 95 to 126 registers with the address outside
// the assembly and to 110 with it inside; not kept).
void Emitter::prefetch_l1(Value* base, DType t, Value* offset) {
  auto* i64 = b_.getInt64Ty();
  auto* fty = llvm::FunctionType::get(b_.getVoidTy(), {i64, i64}, false);
  auto* fn = llvm::InlineAsm::get(
      fty,
      fmt::format("{{ .reg .b64 %pf; mad.lo.s64 %pf, $1, {}, $0; prefetch.global.L1 [%pf]; }}",
                  size_of(t)),
      "l,l", /*hasSideEffects=*/true);
  b_.CreateCall(fn, {b_.CreatePtrToInt(base, i64), b_.CreateSExtOrTrunc(offset, i64)});
}

void Emitter::store(Value* ptr, DType t, const std::vector<Value*>& vals) {
  const int n = static_cast<int>(vals.size());
  if (n == 1) {
    b_.CreateAlignedStore(to_storage(vals[0], t), ptr, llvm::Align(size_of(t)));
    return;
  }
  Value* vec = nullptr;
  if (t == DType::bf16 && n % 2 == 0) {
    const std::vector<Value*> words = storage_words(t, vals);
    vec = llvm::PoisonValue::get(llvm::FixedVectorType::get(b_.getInt32Ty(), n / 2));
    for (int l = 0; l < n / 2; ++l) vec = b_.CreateInsertElement(vec, words[l], l);
  } else {
    vec = llvm::PoisonValue::get(llvm::FixedVectorType::get(storage_type(t), n));
    for (int l = 0; l < n; ++l) vec = b_.CreateInsertElement(vec, to_storage(vals[l], t), l);
  }
  b_.CreateAlignedStore(vec, ptr, llvm::Align(std::min<int>(16, n * size_of(t))));
}

void Emitter::if_else(Value* cond, llvm::function_ref<void()> then,
                      llvm::function_ref<void()> other) {
  llvm::Function* fn = b_.GetInsertBlock()->getParent();
  llvm::LLVMContext& ctx = m_.getContext();
  llvm::BasicBlock* yes = llvm::BasicBlock::Create(ctx, "then", fn);
  llvm::BasicBlock* no = llvm::BasicBlock::Create(ctx, "else", fn);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx, "endif", fn);
  b_.CreateCondBr(cond, yes, no);
  b_.SetInsertPoint(yes);
  then();
  b_.CreateBr(done);
  b_.SetInsertPoint(no);
  other();
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
}

void Emitter::if_then(Value* cond, llvm::function_ref<void()> then) {
  llvm::Function* fn = b_.GetInsertBlock()->getParent();
  llvm::BasicBlock* yes = llvm::BasicBlock::Create(m_.getContext(), "then", fn);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(m_.getContext(), "endif", fn);
  b_.CreateCondBr(cond, yes, done);
  b_.SetInsertPoint(yes);
  then();
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
}

std::vector<Value*> Emitter::storage_words(DType t, const std::vector<Value*>& vals) {
  std::vector<Value*> words;
  const int n = static_cast<int>(vals.size());
  if (size_of(t) == 4) {
    for (Value* v : vals) words.push_back(b_.CreateBitCast(to_storage(v, t), b_.getInt32Ty()));
    return words;
  }
  internal_check(size_of(t) == 2 && n % 2 == 0, "storage_words: pairs of 16-bit elements");
  for (int l = 0; l < n; l += 2) {
    if (t == DType::bf16) {
      if (Value* word = loaded_bf16_word(vals[l], vals[l + 1])) {
        words.push_back(word);
        continue;
      }
      // Pairs rounded by one cvt.rn.bf16x2.f32 (sm_80+) instead of two conversions and a pack.
      Value* two =
          b_.CreateIntrinsic(llvm::Intrinsic::nvvm_ff2bf16x2_rn, {}, {vals[l + 1], vals[l]});
      words.push_back(b_.CreateBitCast(two, b_.getInt32Ty()));
    } else {
      Value* lo = b_.CreateZExt(to_storage(vals[l], t), b_.getInt32Ty());
      Value* hi = b_.CreateZExt(to_storage(vals[l + 1], t), b_.getInt32Ty());
      words.push_back(b_.CreateOr(lo, b_.CreateShl(hi, 16)));
    }
  }
  return words;
}

Value* Emitter::sreg(llvm::Intrinsic::ID id) {
  return b_.CreateZExt(b_.CreateIntrinsic(id, {}, {}), b_.getInt64Ty());
}

// Division by an invariant divisor. i32 (Granlund and Montgomery, "Division by invariant
// integers using multiplication", 1994): with l = ceil(log2 d) and m = ceil(2^(31+l) / d),
// which lies in [2^31, 2^32), n / d = floor(2n * m / 2^(32+l)) = mul.hi(2n, m) >> l for every
// n < 2^31: m = 2^(31+l) / d + e with 0 <= e < 1 makes the estimate n / d + n e / 2^(31+l),
// whose excess is below 2^-l <= 1 / d, too little to reach the next integer; d = 1 gives
// m = 2^31 and l = 0. i64: n times the reciprocal of d, then one step each way.
//
// Both take 1 / d in double precision from rcp.approx.ftz.f64 and three Newton steps
// (r += r (1 - d r): the relative error squares each step, so any first estimate good to
// 2^-16 ends at the rounding's, about 2^-52), not a correctly rounded division: that is a
// call into a CUDA subroutine, and a kernel that calls one has registers reserved across the
// call (measured: a 4-D pointwise kernel went from 96 to 248 registers, twice as slow). So
// 2^(31+l) / d is estimated within 2^-19, its floor is ceil(2^(31+l) / d) or up to two less,
// and two comparisons raise it; n / d is estimated within one for n / d < 2^50.
Value* Emitter::reciprocal(Value* x) {
  Value* r = b_.CreateIntrinsic(llvm::Intrinsic::nvvm_rcp_approx_ftz_d, {}, {x});
  Value* one = llvm::ConstantFP::get(b_.getDoubleTy(), 1.0);
  for (int step = 0; step < 3; ++step) {
    r = b_.CreateFAdd(r, b_.CreateFMul(r, b_.CreateFSub(one, b_.CreateFMul(x, r))), "rcp");
  }
  return r;
}

Divisor Emitter::divisor(Value* d) {
  auto* ty = llvm::cast<llvm::IntegerType>(d->getType());
  Type* f64 = b_.getDoubleTy();
  Divisor out;
  out.d = b_.CreateSelect(b_.CreateICmpEQ(d, llvm::ConstantInt::get(ty, 0)),
                          llvm::ConstantInt::get(ty, 1), d, "div.d");
  if (ty->getBitWidth() == 64) {
    out.magic = reciprocal(b_.CreateUIToFP(out.d, f64));
    return out;
  }
  internal_check(ty->getBitWidth() == 32, "Emitter::divisor: an i32 or i64 divisor");
  Value* lz = b_.CreateIntrinsic(llvm::Intrinsic::ctlz, {ty},
                                 {b_.CreateSub(out.d, b_.getInt32(1)), b_.getFalse()});
  out.shift = b_.CreateSub(b_.getInt32(32), lz, "div.l");
  Value* d64 = b_.CreateZExt(out.d, b_.getInt64Ty());
  Value* pow = b_.CreateShl(
      b_.getInt64(1), b_.CreateZExt(b_.CreateAdd(out.shift, b_.getInt32(31)), b_.getInt64Ty()));
  Value* m = b_.CreateFPToUI(
      b_.CreateFMul(b_.CreateUIToFP(pow, f64), reciprocal(b_.CreateUIToFP(out.d, f64))),
      b_.getInt64Ty());
  for (int step = 0; step < 2; ++step) {
    Value* short_ = b_.CreateICmpULT(b_.CreateMul(m, d64), pow);
    m = b_.CreateAdd(m, b_.CreateZExt(short_, b_.getInt64Ty()));
  }
  out.magic = b_.CreateTrunc(m, b_.getInt32Ty(), "div.m");
  return out;
}

std::pair<Value*, Value*> Emitter::divmod(Value* n, const Divisor& d) {
  if (n->getType()->isIntegerTy(32)) {
    // mul.hi.u32 (the generic i64 product's high half is not matched to it once the
    // optimizer has rewritten the zero extensions).
    Value* twice = b_.CreateShl(n, b_.getInt32(1), "", /*HasNUW=*/true);  // 2n < 2^32
    Value* hi = b_.CreateIntrinsic(llvm::Intrinsic::nvvm_mulhi_ui, {}, {twice, d.magic});
    Value* q = b_.CreateLShr(hi, d.shift, "q");
    return {q, b_.CreateSub(n, b_.CreateMul(q, d.d, "", true, true), "r", true, true)};
  }
  auto i64 = [&](int64_t v) { return b_.getInt64(v); };
  Value* est = b_.CreateFMul(b_.CreateUIToFP(n, b_.getDoubleTy()), d.magic);
  Value* q = b_.CreateFPToUI(est, b_.getInt64Ty());
  Value* r = b_.CreateSub(n, b_.CreateMul(q, d.d));
  Value* low = b_.CreateICmpSLT(r, i64(0));
  q = b_.CreateSelect(low, b_.CreateSub(q, i64(1)), q);
  r = b_.CreateSelect(low, b_.CreateAdd(r, d.d), r);
  Value* high = b_.CreateICmpUGE(r, d.d);
  return {b_.CreateSelect(high, b_.CreateAdd(q, i64(1)), q, "q"),
          b_.CreateSelect(high, b_.CreateSub(r, d.d), r, "r")};
}

void Emitter::annotate_kernel(llvm::Function* fn, int max_threads) {
  llvm::LLVMContext& ctx = m_.getContext();
  llvm::NamedMDNode* md = m_.getOrInsertNamedMetadata("nvvm.annotations");
  auto op = [&](const char* key, int v) {
    llvm::Metadata* ops[] = {llvm::ValueAsMetadata::get(fn), llvm::MDString::get(ctx, key),
                             llvm::ValueAsMetadata::get(b_.getInt32(v))};
    md->addOperand(llvm::MDNode::get(ctx, ops));
  };
  op("kernel", 1);
  op("maxntidx", max_threads);
}

void Emitter::min_blocks_per_sm(llvm::Function* fn, int blocks) {
  llvm::LLVMContext& ctx = m_.getContext();
  llvm::Metadata* ops[] = {llvm::ValueAsMetadata::get(fn), llvm::MDString::get(ctx, "minctasm"),
                           llvm::ValueAsMetadata::get(b_.getInt32(blocks))};
  m_.getOrInsertNamedMetadata("nvvm.annotations")->addOperand(llvm::MDNode::get(ctx, ops));
}

llvm::Function* Emitter::declare_kernel(const KernelDef& abi, const std::string& entry,
                                        int max_threads, bool workspace, int tensor_maps) {
  std::vector<const TensorDecl*> params = abi.params();
  std::vector<std::string> symbols = abi.symbols();
  std::vector<Type*> arg_types;
  for (const TensorDecl* p : params) {
    arg_types.push_back(p->scalar ? storage_type(p->dtype) : b_.getPtrTy(1));  // by value
  }
  arg_types.insert(arg_types.end(), symbols.size(), b_.getInt64Ty());
  if (workspace) arg_types.insert(arg_types.end(), {b_.getPtrTy(1), b_.getInt64Ty()});
  const size_t first_map = arg_types.size();
  if (tensor_maps > 0) {
    arg_types.insert(arg_types.end(), static_cast<size_t>(tensor_maps), b_.getPtrTy());
    arg_types.push_back(b_.getInt64Ty());
  }
  const size_t first_stride = arg_types.size();
  std::vector<std::string> stride_names;
  for (const TensorDecl* p : params) {
    if (!p->strided) continue;
    for (size_t d = 0; d < p->shape.size(); ++d) {
      stride_names.push_back(fmt::format("{}.stride{}", p->name, d));
      arg_types.push_back(b_.getInt64Ty());
    }
  }
  auto* fty = llvm::FunctionType::get(b_.getVoidTy(), arg_types, false);
  auto* fn = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, entry, &m_);
  for (size_t i = 0; i < params.size(); ++i) {
    llvm::Argument* arg = fn->getArg(i);
    arg->setName(params[i]->name);
    if (params[i]->scalar) continue;
    arg->addAttr(llvm::Attribute::NoAlias);
    // A temp is a buffer this step neither reads nor writes (compile.cpp, step_abi).
    if (params[i]->role == TensorRole::input) arg->addAttr(llvm::Attribute::ReadOnly);
    if (params[i]->role == TensorRole::output) arg->addAttr(llvm::Attribute::WriteOnly);
    if (params[i]->role == TensorRole::temp) arg->addAttr(llvm::Attribute::ReadNone);
  }
  for (size_t i = 0; i < symbols.size(); ++i) fn->getArg(params.size() + i)->setName(symbols[i]);
  if (workspace) {
    llvm::Argument* ws = fn->getArg(params.size() + symbols.size());
    ws->setName("workspace");
    ws->addAttr(llvm::Attribute::NoAlias);
    fn->getArg(params.size() + symbols.size() + 1)->setName("phase");
  }
  for (size_t i = 0; i < stride_names.size(); ++i) {
    fn->getArg(static_cast<unsigned>(first_stride + i))->setName(stride_names[i]);
  }
  annotate_kernel(fn, max_threads);
  if (tensor_maps > 0) {
    // Each map is passed by value and read in place: its address (cvta.param) is what TMA
    // takes, so it is a grid constant (not copied to local memory).
    llvm::LLVMContext& ctx = m_.getContext();
    auto* map_ty = llvm::ArrayType::get(b_.getInt8Ty(), 128);
    std::vector<llvm::Metadata*> indices;
    for (int i = 0; i < tensor_maps; ++i) {
      llvm::Argument* arg = fn->getArg(static_cast<unsigned>(first_map) + i);
      arg->setName(fmt::format("tensor_map{}", i));
      arg->addAttr(llvm::Attribute::getWithByValType(ctx, map_ty));
      arg->addAttr(llvm::Attribute::getWithAlignment(ctx, llvm::Align(64)));
      indices.push_back(llvm::ValueAsMetadata::get(
          b_.getInt32(static_cast<uint32_t>(first_map) + static_cast<uint32_t>(i) + 1)));
    }
    fn->getArg(static_cast<unsigned>(first_map) + tensor_maps)->setName("maps_ok");
    llvm::Metadata* ops[] = {llvm::ValueAsMetadata::get(fn),
                             llvm::MDString::get(ctx, "grid_constant"),
                             llvm::MDNode::get(ctx, indices)};
    m_.getOrInsertNamedMetadata("nvvm.annotations")->addOperand(llvm::MDNode::get(ctx, ops));
  }
  return fn;
}

llvm::Function* Emitter::libdevice(const char* name, int arity) {
  std::vector<Type*> args(arity, b_.getFloatTy());
  auto callee = m_.getOrInsertFunction(name, llvm::FunctionType::get(b_.getFloatTy(), args, false));
  auto* f = llvm::cast<llvm::Function>(callee.getCallee());
  f->setDoesNotAccessMemory();
  f->setDoesNotThrow();
  return f;
}

// exp(x) = 2^(x log2 e) on the hardware's ex2.approx.ftz (2 instructions, as Triton lowers
// exp; libdevice's __nv_expf adds about 10 for a correctly scaled range reduction). The
// relative error is about |x| * 2^-24 from rounding x log2 e plus 2^-22 from ex2: at most
// 6e-6 where the result is a normal f32. Results below 2^-126 flush to 0.
Value* Emitter::fast_exp(Value* x) {
  Value* scaled = b_.CreateFMul(x, llvm::ConstantFP::get(b_.getFloatTy(), 1.4426950408889634));
  return b_.CreateIntrinsic(llvm::Intrinsic::nvvm_ex2_approx_ftz_f, {}, {scaled});
}

// tanh on the hardware's tanh.approx.f32 (one MUFU instruction; libdevice's __nv_tanhf is
// about 20), for values that only feed f16 and bf16 stores. Inline assembly: LLVM 19 has no
// intrinsic for it. Its error, measured on an H200 over every f32 input
// (bench/experiments/tanh_approx): at most 2^-16.93 absolute and 2^-16.46 relative, far under
// half a bf16 step (2^-9 relative); NaN stays NaN, +-inf gives +-1. The PTX ISA promises
// 2^-10.987 on every architecture, which kApproxError (plan.h) rounds up.
Value* Emitter::approx_tanh(Value* x) {
  auto* fty = llvm::FunctionType::get(b_.getFloatTy(), {b_.getFloatTy()}, false);
  auto* fn = llvm::InlineAsm::get(fty, "tanh.approx.f32 $0, $1;", "=f,f",
                                  /*hasSideEffects=*/false);
  return b_.CreateCall(fn, {x}, "tanh");
}

// erf(x) as tanh(x p(x^2)), p of degree 4, on tanh.approx.f32: 7 instructions where libdevice's
// __nv_erff is about 20, for values that only feed f16 and bf16 stores. p is fitted (weighted
// least squares in atanh(erf(x)) / x, reweighted towards the minimax error of erf, on [0, 4.5];
// bench/experiments/erf_approx/fit.py): with tanh exact, |tanh(x p(x^2)) - erf(x)| <= 2.9e-6
// (2^-18.4) for every x, so the error is tanh.approx.f32's (2^-16.93 measured, 2^-10.987 in the
// PTX ISA) plus that; measured over every f32 input on an H200 in
// bench/experiments/erf_approx. p's leading coefficient is positive and p >= 1.128 for x^2 >= 0,
// so x p(x^2) grows past tanh's saturation beyond the fitted range (x p >= 12 for x >= 4) and
// +-inf give +-1 (x^2 = inf, p = inf); NaN stays NaN; odd, so erf(-0) = -0.
Value* Emitter::approx_erf(Value* x) {
  static constexpr float kP[] = {0x1.20dc14p+0f, 0x1.a59d00p-4f, -0x1.047a5ap-11f, -0x1.b34dfep-12f,
                                 0x1.0e7bdep-15f};  // p's c0 .. c4
  Value* u = b_.CreateFMul(x, x);
  Value* p = llvm::ConstantFP::get(b_.getFloatTy(), kP[4]);
  for (int i = 3; i >= 0; --i) {
    p = b_.CreateIntrinsic(llvm::Intrinsic::fma, {b_.getFloatTy()},
                           {p, u, llvm::ConstantFP::get(b_.getFloatTy(), kP[i])});
  }
  return approx_tanh(b_.CreateFMul(x, p));
}

Value* Emitter::intrinsic(llvm::Intrinsic::ID id, std::vector<Value*> args) {
  return b_.CreateIntrinsic(id, {args[0]->getType()}, args);
}

Value* Emitter::int_as(Value* v, DType t, bool is_signed) {
  if (t == DType::f32) {
    return is_signed ? b_.CreateSIToFP(v, b_.getFloatTy()) : b_.CreateUIToFP(v, b_.getFloatTy());
  }
  return b_.CreateIntCast(v, compute_llvm_type(t), is_signed);  // truncates or extends
}

Value* Emitter::dim_value(const Dim& d) {
  if (d.is_fixed()) return b_.getInt64(d.value());
  llvm::Function* fn = b_.GetInsertBlock()->getParent();
  for (llvm::Argument& a : fn->args()) {
    if (a.getName() == d.name() && a.getType()->isIntegerTy(64)) return &a;
  }
  throw InternalError(fmt::format("emit: symbol '{}' is not a parameter of the kernel", d.name()));
}

Value* Emitter::strided_offset(const std::string& tensor, const std::vector<Value*>& coords) {
  llvm::Function* fn = b_.GetInsertBlock()->getParent();
  Value* off = nullptr;
  for (size_t d = 0; d < coords.size(); ++d) {
    const std::string name = fmt::format("{}.stride{}", tensor, d);
    Value* stride = nullptr;
    for (llvm::Argument& a : fn->args()) {
      if (a.getName() == name) stride = &a;
    }
    if (!stride) return nullptr;
    Value* term = b_.CreateMul(b_.CreateZExtOrTrunc(coords[d], b_.getInt64Ty()), stride);
    off = off ? b_.CreateAdd(off, term) : term;
  }
  return off ? off : b_.getInt64(0);
}

// A gather (ir/expr.h): each position as i64 (u32 zero-extends, i32 sign-extends), clamped
// into [0, extent - 1], the row-major offset in i64, one scalar load. The tensor is the kernel
// parameter of that name (declare_kernel names them). A tensor with an empty dimension reads
// from a zero constant instead, as the interpreter reads 0.
Value* Emitter::gather_pointer(const Expr& e, ValueMemo& memo, const LeafFn& leaf) {
  const Gather& g = *e.as<Gather>();
  llvm::Function* fn = b_.GetInsertBlock()->getParent();
  Value* base = nullptr;
  for (llvm::Argument& a : fn->args()) {
    if (a.getName() == g.tensor && a.getType()->isPointerTy()) base = &a;
  }
  if (!base) throw InternalError(fmt::format("emit: gathered '{}' is not a parameter", g.tensor));
  Value* off = b_.getInt64(0);
  Value* stride = nullptr;
  Value* nonempty = nullptr;
  std::vector<Value*> positions(g.indices.size());  // for a strided tensor's offset
  for (size_t d = g.indices.size(); d-- > 0;) {
    Expr i = wrap(g.indices[d]);
    Value* pos = eval(i, memo, leaf);
    pos = b_.CreateIntCast(pos, b_.getInt64Ty(), i.type() != DType::u32);
    Value* ext = dim_value(g.shape[d]);
    if (!i.as<IndexRef>()) {  // a plain index variable is in range already
      pos = b_.CreateIntrinsic(llvm::Intrinsic::smax, {b_.getInt64Ty()}, {pos, b_.getInt64(0)});
      pos = b_.CreateIntrinsic(llvm::Intrinsic::smin, {b_.getInt64Ty()},
                               {pos, b_.CreateSub(ext, b_.getInt64(1))});
    }
    positions[d] = pos;
    off = b_.CreateAdd(off, stride ? b_.CreateMul(pos, stride) : pos);
    stride = stride ? b_.CreateMul(stride, ext) : ext;
    if (!g.shape[d].is_fixed()) {
      Value* ne = b_.CreateICmpSGT(ext, b_.getInt64(0));
      nonempty = nonempty ? b_.CreateAnd(nonempty, ne) : ne;
    }
  }
  if (read_strides_) {
    if (Value* s = strided_offset(g.tensor, positions)) off = s;
  }
  Value* ptr = element_ptr(base, g.stored, off);
  // A vector gather (compiler/lower_pointwise.cpp) loads up to 16 bytes there.
  if (nonempty) ptr = b_.CreateSelect(nonempty, ptr, zeros());
  return ptr;
}

Value* Emitter::zeros() {
  auto* zero = m_.getGlobalVariable("kiln_zeros", /*AllowInternal=*/true);
  if (!zero) {
    auto* ty = llvm::ArrayType::get(b_.getInt64Ty(), 4);
    zero = new llvm::GlobalVariable(m_, ty, /*isConstant=*/true, llvm::GlobalValue::InternalLinkage,
                                    llvm::ConstantAggregateZero::get(ty), "kiln_zeros", nullptr,
                                    llvm::GlobalValue::NotThreadLocal, /*AddressSpace=*/1);
    zero->setAlignment(llvm::Align(16));
  }
  return zero;
}

Value* Emitter::gather(const Expr& e, ValueMemo& memo, const LeafFn& leaf) {
  return load(gather_pointer(e, memo, leaf), e.as<Gather>()->stored);
}

namespace {

// counter = base + c (mod 2^64) with c a constant, found through adds (exact mod 2^64) and
// integer extensions of adds that cannot wrap (zext of `add nuw`, sext of `add nsw`). Returns
// c, and sets *base to a value equal to counter - c; base is built from the same operations
// for every lane of a vector, so common-subexpression elimination merges the lanes' bases.
uint64_t split_constant(llvm::IRBuilder<>& b, Value* v, Value** base) {
  if (auto* c = llvm::dyn_cast<llvm::ConstantInt>(v)) {
    *base = nullptr;
    return c->getZExtValue();
  }
  auto* inst = llvm::dyn_cast<llvm::Instruction>(v);
  *base = v;
  if (!inst) return 0;
  if (inst->getOpcode() == llvm::Instruction::Add && v->getType()->isIntegerTy(64)) {
    Value *x = nullptr, *y = nullptr;
    uint64_t c =
        split_constant(b, inst->getOperand(0), &x) + split_constant(b, inst->getOperand(1), &y);
    if (c == 0) return 0;
    *base = !x ? y : !y ? x : b.CreateAdd(x, y);
    if (!*base) *base = b.getInt64(0);
    return c;
  }
  auto* ext = llvm::dyn_cast<llvm::CastInst>(inst);
  if (!ext || (ext->getOpcode() != llvm::Instruction::ZExt &&
               ext->getOpcode() != llvm::Instruction::SExt)) {
    return 0;
  }
  auto* add = llvm::dyn_cast<llvm::BinaryOperator>(ext->getOperand(0));
  auto* c = add ? llvm::dyn_cast<llvm::ConstantInt>(add->getOperand(1)) : nullptr;
  const bool zext = ext->getOpcode() == llvm::Instruction::ZExt;
  if (!add || add->getOpcode() != llvm::Instruction::Add || !c ||
      !(zext ? add->hasNoUnsignedWrap() : add->hasNoSignedWrap()) || c->isNegative()) {
    return 0;
  }
  *base = zext ? b.CreateZExt(add->getOperand(0), v->getType())
               : b.CreateSExt(add->getOperand(0), v->getType());
  return c->getZExtValue();
}

}  // namespace

// Philox 4x32-10 as ir/expr.h's philox_uniform: the same words, rounds and conversion, so the
// GPU's numbers are the interpreter's bit for bit. Each round's two 32 x 32 -> 64-bit products
// are one mul.wide.u32 each, which ptxas assembles to one IMAD.WIDE.U32 writing the pair of
// registers the round reads its words from. Inline PTX: written as an i64 product in LLVM IR,
// the optimizer widened the rounds' xors and products to 64 bits.
std::array<Value*, 4> Emitter::philox_block(Value* seed, Value* offset, Value* block) {
  Type* i32 = b_.getInt32Ty();
  auto lo = [&](Value* v) { return b_.CreateTrunc(v, i32); };
  auto hi = [&](Value* v) { return b_.CreateTrunc(b_.CreateLShr(v, 32), i32); };
  Value* c[4] = {lo(block), hi(block), lo(offset), hi(offset)};
  Value* k0 = lo(seed);
  Value* k1 = hi(seed);
  auto* pair = llvm::StructType::get(i32, i32);
  auto* wide = llvm::InlineAsm::get(llvm::FunctionType::get(pair, {i32, b_.getInt64Ty()}, false),
                                    "{ .reg .b64 t; mul.wide.u32 t, $2, $3; mov.b64 {$0, $1}, t; }",
                                    "=r,=r,r,n",
                                    /*hasSideEffects=*/false);
  // {low word, high word} of a * m.
  auto product = [&](Value* a, uint32_t m) {
    llvm::CallInst* p = b_.CreateCall(wide, {a, b_.getInt64(m)});  // i64: printed unsigned
    p->setDoesNotAccessMemory();  // so that the lanes' identical products are merged
    p->setDoesNotThrow();
    return std::pair{b_.CreateExtractValue(p, 0), b_.CreateExtractValue(p, 1)};
  };
  for (int round = 0; round < 10; ++round) {
    auto [lo1, hi1] = product(c[2], 0xCD9E8D57u);
    auto [lo0, hi0] = product(c[0], 0xD2511F53u);
    c[0] = b_.CreateXor(b_.CreateXor(hi1, c[1]), k0);
    c[1] = lo1;
    c[2] = b_.CreateXor(b_.CreateXor(hi0, c[3]), k1);
    c[3] = lo0;
    k0 = b_.CreateAdd(k0, b_.getInt32(0x9E3779B9u));
    k1 = b_.CreateAdd(k1, b_.getInt32(0xBB67AE85u));
  }
  return {c[0], c[1], c[2], c[3]};
}

// One call of Philox gives four numbers: counters 4b .. 4b + 3 share block b. The lanes of a
// vector have counters base + 0, base + 1, ...: each lane's counter is split into a shared
// base and its constant c (split_constant), and its block and word computed from those:
// base + c = 4 * ((base >> 2) + (c >> 2)) + r with r = (base & 3) + (c & 3) in [0, 6], so the
// block is (base >> 2) + (c >> 2) + (r >> 2) and the word r & 3. Masked to 62 bits the block is
// exactly (base + c mod 2^64) >> 2 even when the sum wraps. A lane then computes the blocks
// (base >> 2) + (c >> 2) and, when c & 3 != 0, the next one, and selects; the lanes' identical
// computations are merged by the optimizer, so a vector of 8 lanes computes 3 blocks (2 when
// base is a known multiple of 4), not 8.
Value* Emitter::philox_bits(Value* seed, Value* offset, Value* counter) {
  Type* i32 = b_.getInt32Ty();
  Value* base = nullptr;
  uint64_t c = split_constant(b_, counter, &base);
  Value* w = nullptr;
  if (c == 0 || c >= (uint64_t{1} << 31) || !base) {
    std::array<Value*, 4> words = philox_block(seed, offset, b_.CreateLShr(counter, 2));
    Value* word = b_.CreateTrunc(b_.CreateAnd(counter, b_.getInt64(3)), i32);
    w = b_.CreateSelect(b_.CreateICmpEQ(word, b_.getInt32(0)), words[0], words[1]);
    w = b_.CreateSelect(b_.CreateICmpEQ(word, b_.getInt32(2)), words[2], w);
    w = b_.CreateSelect(b_.CreateICmpEQ(word, b_.getInt32(3)), words[3], w);
  } else {
    const uint64_t mask62 = (uint64_t{1} << 62) - 1;
    Value* low = b_.CreateAnd(base, b_.getInt64(3));
    Value* r = b_.CreateAdd(low, b_.getInt64(c & 3));
    Value* block0 = b_.CreateAnd(b_.CreateAdd(b_.CreateLShr(base, 2), b_.getInt64(c >> 2)), mask62);
    std::array<Value*, 4> a = philox_block(seed, offset, block0);
    Value* word = b_.CreateTrunc(b_.CreateAnd(r, b_.getInt64(3)), i32);
    auto pick = [&](const std::array<Value*, 4>& words) {
      Value* v = b_.CreateSelect(b_.CreateICmpEQ(word, b_.getInt32(0)), words[0], words[1]);
      v = b_.CreateSelect(b_.CreateICmpEQ(word, b_.getInt32(2)), words[2], v);
      return b_.CreateSelect(b_.CreateICmpEQ(word, b_.getInt32(3)), words[3], v);
    };
    w = pick(a);
    if ((c & 3) != 0) {
      Value* block1 = b_.CreateAnd(b_.CreateAdd(block0, b_.getInt64(1)), mask62);
      Value* next = pick(philox_block(seed, offset, block1));
      w = b_.CreateSelect(b_.CreateICmpUGE(r, b_.getInt64(4)), next, w);
    }
  }
  return b_.CreateLShr(w, 8);
}

// (w >> 8) has 24 bits: exact in f32, and so is the product by 2^-24.
Value* Emitter::philox_uniform(Value* seed, Value* offset, Value* counter) {
  Value* f = b_.CreateUIToFP(philox_bits(seed, offset, counter), b_.getFloatTy());
  return b_.CreateFMul(f, llvm::ConstantFP::get(b_.getFloatTy(), 0x1p-24));
}

// rand OP v with rand = k * 2^-24 (k = philox_bits, an integer in [0, 2^24)) is k OP t with
// t = v * 2^24: scaling both sides by a power of two is exact (a t that overflows to +-inf
// compares as v did). An integer compares with a real t as with ceil(t) (>=, <) or floor(t)
// (>, <=), and clamped to [-1, 2^24] that bound is an exact i32 giving the same answer for
// every k; a NaN v, for which every one of these comparisons is false, takes the bound that
// makes it false. Where v is the same for every element (a dropout's p), the bound is computed
// once and each element costs a shift and an integer compare instead of a conversion (a
// quarter-rate instruction), a multiply and a float compare.
Value* Emitter::rand_compare(BinaryOp op, Value* k, Value* v) {
  auto f32 = [&](double x) { return llvm::ConstantFP::get(b_.getFloatTy(), x); };
  Value* t = b_.CreateFMul(v, f32(0x1p24));
  bool up = op == BinaryOp::ge || op == BinaryOp::lt;  // ceil(t); floor(t) for > and <=
  Value* bound = intrinsic(up ? llvm::Intrinsic::ceil : llvm::Intrinsic::floor, {t});
  bound = intrinsic(llvm::Intrinsic::maxnum, {bound, f32(-1.0)});
  bound = intrinsic(llvm::Intrinsic::minnum, {bound, f32(0x1p24)});
  bool greater = op == BinaryOp::ge || op == BinaryOp::gt;
  Value* never = f32(greater ? 0x1p24 : -1.0);
  bound = b_.CreateSelect(b_.CreateFCmpUNO(t, t), never, bound);
  Value* n = b_.CreateFPToSI(bound, b_.getInt32Ty());
  switch (op) {
    case BinaryOp::ge:
      return b_.CreateICmpSGE(k, n);
    case BinaryOp::gt:
      return b_.CreateICmpSGT(k, n);
    case BinaryOp::le:
      return b_.CreateICmpSLE(k, n);
    case BinaryOp::lt:
      return b_.CreateICmpSLT(k, n);
    default:
      throw InternalError("rand_compare: not an ordering");
  }
}

Value* Emitter::identity(ReduceOp op, DType t) {
  bool f = compute_type(t) == DType::f32;
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::mean:
      return f ? llvm::ConstantFP::get(b_.getFloatTy(), 0.0) : b_.getInt32(0);
    case ReduceOp::prod:
      return f ? llvm::ConstantFP::get(b_.getFloatTy(), 1.0) : b_.getInt32(1);
    case ReduceOp::max:
      return f ? llvm::ConstantFP::get(b_.getFloatTy(), -INFINITY) : b_.getInt32(INT32_MIN);
    case ReduceOp::min:
      return f ? llvm::ConstantFP::get(b_.getFloatTy(), INFINITY) : b_.getInt32(INT32_MAX);
  }
  throw InternalError("identity: reduce op");
}

Value* Emitter::combine(ReduceOp op, Value* a, Value* b) {
  bool f = a->getType()->isFloatTy();
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::mean:
      return f ? b_.CreateFAdd(a, b) : b_.CreateAdd(a, b);
    case ReduceOp::prod:
      return f ? b_.CreateFMul(a, b) : b_.CreateMul(a, b);
    case ReduceOp::max:
      return f ? intrinsic(llvm::Intrinsic::maximum, {a, b})
               : intrinsic(llvm::Intrinsic::smax, {a, b});
    case ReduceOp::min:
      return f ? intrinsic(llvm::Intrinsic::minimum, {a, b})
               : intrinsic(llvm::Intrinsic::smin, {a, b});
  }
  throw InternalError("combine: reduce op");
}

Value* Emitter::eval(const Expr& e, ValueMemo& memo, const LeafFn& leaf) {
  if (auto it = memo.find(e.ptr().get()); it != memo.end()) return it->second;
  Value* v = eval_op(e, memo, leaf);
  memo.emplace(e.ptr().get(), v);
  return v;
}

// Truncating division with x / 0 = 0 and MIN / -1 = MIN (ir/expr.h), signed (i32, i64) or
// unsigned (u32).
Value* Emitter::int_div(Value* a, Value* b, bool is_signed) {
  auto* ty = llvm::cast<llvm::IntegerType>(a->getType());
  auto c = [&](int64_t v) { return llvm::ConstantInt::get(ty, v, /*IsSigned=*/true); };
  Value* zero = b_.CreateICmpEQ(b, c(0));
  if (!is_signed) {
    return b_.CreateSelect(zero, c(0), b_.CreateUDiv(a, b_.CreateSelect(zero, c(1), b)));
  }
  Value* min = llvm::ConstantInt::get(ty, llvm::APInt::getSignedMinValue(ty->getBitWidth()));
  Value* ovf = b_.CreateAnd(b_.CreateICmpEQ(a, min), b_.CreateICmpEQ(b, c(-1)));
  Value* safe_b = b_.CreateSelect(b_.CreateOr(zero, ovf), c(1), b);
  return b_.CreateSelect(zero, c(0), b_.CreateSDiv(a, safe_b));
}

// A comparison of rand with a value that is the same for every element, in either order, as
// rand_compare; nullptr for any other binary node.
Value* Emitter::rand_ordering(const Binary& n, ValueMemo& memo, const LeafFn& leaf) {
  if (!is_comparison(n.op) || n.op == BinaryOp::eq || n.op == BinaryOp::ne) return nullptr;
  BinaryOp op = n.op;
  Expr a = wrap(n.a), b = wrap(n.b);
  if (!a.as<Rand>()) {  // v OP rand is rand OP' v, with OP' the mirrored ordering
    std::swap(a, b);
    op = op == BinaryOp::lt   ? BinaryOp::gt
         : op == BinaryOp::le ? BinaryOp::ge
         : op == BinaryOp::gt ? BinaryOp::lt
                              : BinaryOp::le;
  }
  const Rand* r = a.as<Rand>();
  if (!r || !is_launch_invariant(b)) return nullptr;
  Value* k = philox_bits(eval(wrap(r->seed), memo, leaf), eval(wrap(r->offset), memo, leaf),
                         eval(wrap(r->counter), memo, leaf));
  return rand_compare(op, k, eval(b, memo, leaf));
}

Value* Emitter::eval_op(const Expr& e, ValueMemo& memo, const LeafFn& leaf) {
  auto sub = [&](const std::shared_ptr<const ExprNode>& p) { return eval(wrap(p), memo, leaf); };
  if (const Const* c = e.as<Const>()) {
    switch (e.type()) {
      case DType::f32:
        return llvm::ConstantFP::get(b_.getFloatTy(), c->value);
      case DType::i32:
        return b_.getInt32(static_cast<int32_t>(c->value));
      case DType::u32:
        return b_.getInt32(static_cast<uint32_t>(c->value));
      case DType::i64:
        return b_.getInt64(static_cast<int64_t>(c->value));
      default:
        return b_.getInt1(c->value != 0);
    }
  }
  if (e.as<Gather>()) return gather(e, memo, leaf);
  if (const ScalarRef* sr = e.as<ScalarRef>()) {
    for (llvm::Argument& a : b_.GetInsertBlock()->getParent()->args()) {
      if (a.getName() == sr->name && !a.getType()->isPointerTy()) return widen(&a, sr->stored);
    }
    throw InternalError(fmt::format("emit: scalar '{}' is not a parameter", sr->name));
  }
  if (const Rand* r = e.as<Rand>())
    return philox_uniform(sub(r->seed), sub(r->offset), sub(r->counter));
  if (const Unary* n = e.as<Unary>()) {
    Value* a = sub(n->a);
    bool f = e.type() == DType::f32;
    switch (n->op) {
      case UnaryOp::lnot:
        return b_.CreateNot(a);
      case UnaryOp::neg:
        return f ? b_.CreateFNeg(a) : b_.CreateNeg(a);
      case UnaryOp::abs:
        if (e.type() == DType::u32) return a;
        return f ? intrinsic(llvm::Intrinsic::fabs, {a})
                 : b_.CreateIntrinsic(llvm::Intrinsic::abs, {a->getType()}, {a, b_.getFalse()});
      case UnaryOp::exp:
        return fast_exp(a);
      case UnaryOp::log:
        return b_.CreateCall(libdevice("__nv_logf", 1), {a});
      case UnaryOp::sqrt:
        return intrinsic(llvm::Intrinsic::sqrt, {a});
      case UnaryOp::rsqrt:
        return b_.CreateCall(libdevice("__nv_rsqrtf", 1), {a});
      case UnaryOp::tanh:
        return fast_functions_ ? approx_tanh(a) : b_.CreateCall(libdevice("__nv_tanhf", 1), {a});
      case UnaryOp::erf:
        return fast_functions_ ? approx_erf(a) : b_.CreateCall(libdevice("__nv_erff", 1), {a});
      case UnaryOp::tf32: {  // the top 10 significand bits (ir/dtype.h to_tf32)
        Value* bits = b_.CreateAnd(b_.CreateBitCast(a, b_.getInt32Ty()), b_.getInt32(kTf32Mask));
        return b_.CreateBitCast(bits, b_.getFloatTy());
      }
      case UnaryOp::sigmoid: {
        Value* ex = fast_exp(b_.CreateFNeg(a));
        Value* one = llvm::ConstantFP::get(b_.getFloatTy(), 1.0);
        return b_.CreateFDiv(one, b_.CreateFAdd(one, ex));
      }
    }
    throw InternalError("eval: unary op");
  }
  if (const Binary* n = e.as<Binary>()) {
    if (Value* c = rand_ordering(*n, memo, leaf)) return c;
    Value* a = sub(n->a);
    Value* b = sub(n->b);
    bool f = a->getType()->isFloatTy();
    bool u = wrap(n->a).type() == DType::u32;  // unsigned division, comparisons, max, min
    switch (n->op) {
      case BinaryOp::add:
        return f ? b_.CreateFAdd(a, b) : b_.CreateAdd(a, b);
      case BinaryOp::sub:
        return f ? b_.CreateFSub(a, b) : b_.CreateSub(a, b);
      case BinaryOp::mul:
        return f ? b_.CreateFMul(a, b) : b_.CreateMul(a, b);
      case BinaryOp::div:
        return f ? b_.CreateFDiv(a, b) : int_div(a, b, !u);
      case BinaryOp::max:
        return u ? intrinsic(llvm::Intrinsic::umax, {a, b}) : combine(ReduceOp::max, a, b);
      case BinaryOp::min:
        return u ? intrinsic(llvm::Intrinsic::umin, {a, b}) : combine(ReduceOp::min, a, b);
      case BinaryOp::pow:
        return b_.CreateCall(libdevice("__nv_powf", 2), {a, b});
      case BinaryOp::lt:
        return f ? b_.CreateFCmpOLT(a, b) : u ? b_.CreateICmpULT(a, b) : b_.CreateICmpSLT(a, b);
      case BinaryOp::le:
        return f ? b_.CreateFCmpOLE(a, b) : u ? b_.CreateICmpULE(a, b) : b_.CreateICmpSLE(a, b);
      case BinaryOp::gt:
        return f ? b_.CreateFCmpOGT(a, b) : u ? b_.CreateICmpUGT(a, b) : b_.CreateICmpSGT(a, b);
      case BinaryOp::ge:
        return f ? b_.CreateFCmpOGE(a, b) : u ? b_.CreateICmpUGE(a, b) : b_.CreateICmpSGE(a, b);
      case BinaryOp::eq:
        return f ? b_.CreateFCmpOEQ(a, b) : b_.CreateICmpEQ(a, b);
      case BinaryOp::ne:
        return f ? b_.CreateFCmpUNE(a, b) : b_.CreateICmpNE(a, b);
      case BinaryOp::land:
        return b_.CreateAnd(a, b);
      case BinaryOp::lor:
        return b_.CreateOr(a, b);
    }
    throw InternalError("eval: binary op");
  }
  if (const Select* n = e.as<Select>()) {
    return b_.CreateSelect(sub(n->cond), sub(n->a), sub(n->b));
  }
  if (const Cast* n = e.as<Cast>()) {
    Value* a = sub(n->a);
    Type* from = a->getType();
    const DType from_t = wrap(n->a).type();
    const bool from_signed = from_t == DType::i32 || from_t == DType::i64;
    if (is_integer(n->to)) {
      Type* to = compute_llvm_type(n->to);
      if (from->isFloatTy()) {  // truncates; NaN gives 0; saturates
        auto id = n->to == DType::u32 ? llvm::Intrinsic::fptoui_sat : llvm::Intrinsic::fptosi_sat;
        return b_.CreateIntrinsic(id, {to, from}, {a});
      }
      return b_.CreateIntCast(a, to, from_signed);  // bool and u32 zero-extend; wraps
    }
    Value* f = a;
    if (from->isIntegerTy())
      f = from_signed ? b_.CreateSIToFP(a, b_.getFloatTy()) : b_.CreateUIToFP(a, b_.getFloatTy());
    if (n->to == DType::bf16)
      return b_.CreateFPExt(b_.CreateFPTrunc(f, b_.getBFloatTy()), b_.getFloatTy());
    if (n->to == DType::f16)
      return b_.CreateFPExt(b_.CreateFPTrunc(f, b_.getHalfTy()), b_.getFloatTy());
    return f;
  }
  return leaf(e);  // Load, IndexRef, SymRef, Reduce
}

}  // namespace kiln
