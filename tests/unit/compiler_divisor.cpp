// Emitter::divisor and Emitter::divmod (compiler/emit.cpp), the division by an extent that
// pointwise coordinates and multi-axis reduced indices use: the IR they emit is run through
// LLVM's interpreter and compared with the exact quotient and remainder, at the edges of
// their ranges (divisor 1, powers of two and their neighbours, n up to 2^31 - 1 for i32 and
// 2^50 - 1 for i64) and at random. The interpreter knows no NVVM intrinsics, so they are
// replaced before it runs: llvm.nvvm.mulhi.ui (PTX mul.hi.u32) by its definition, the high
// half of the 64-bit product, and llvm.nvvm.rcp.approx.ftz.d by a reciprocal worse than the
// hardware's (the correctly rounded one with all but 16 bits of its mantissa cleared), so
// that the Newton steps after it must do their work.
#include <llvm/ExecutionEngine/ExecutionEngine.h>
#include <llvm/ExecutionEngine/GenericValue.h>
#include <llvm/ExecutionEngine/Interpreter.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "compiler/emit.h"

using namespace kiln;

namespace {

// Replaces each call of the intrinsic `name` in `m` by what `expand` builds from its call.
void replace_calls(llvm::Module& m, const char* name,
                   const std::function<llvm::Value*(llvm::IRBuilder<>&, llvm::CallInst*)>& expand) {
  llvm::Function* f = m.getFunction(name);
  if (!f) return;
  std::vector<llvm::CallInst*> calls;
  for (llvm::User* u : f->users()) calls.push_back(llvm::cast<llvm::CallInst>(u));
  for (llvm::CallInst* call : calls) {
    llvm::IRBuilder<> b(call);
    call->replaceAllUsesWith(expand(b, call));
    call->eraseFromParent();
  }
}

void lower_nvvm(llvm::Module& m) {
  replace_calls(m, "llvm.nvvm.mulhi.ui", [](llvm::IRBuilder<>& b, llvm::CallInst* call) {
    llvm::Type* i64 = b.getInt64Ty();
    llvm::Value* wide = b.CreateMul(b.CreateZExt(call->getArgOperand(0), i64),
                                    b.CreateZExt(call->getArgOperand(1), i64));
    return b.CreateTrunc(b.CreateLShr(wide, 32), b.getInt32Ty());
  });
  replace_calls(m, "llvm.nvvm.rcp.approx.ftz.d", [](llvm::IRBuilder<>& b, llvm::CallInst* call) {
    llvm::Value* exact =
        b.CreateFDiv(llvm::ConstantFP::get(b.getDoubleTy(), 1.0), call->getArgOperand(0));
    llvm::Value* bits =
        b.CreateAnd(b.CreateBitCast(exact, b.getInt64Ty()), b.getInt64(~((int64_t{1} << 36) - 1)));
    return b.CreateBitCast(bits, b.getDoubleTy());
  });
}

// `quotient(n, d)` and `remainder(n, d)` on integers of `bits` bits, built by the Emitter.
class DivisionUnderTest {
 public:
  explicit DivisionUnderTest(unsigned bits) {
    auto module = std::make_unique<llvm::Module>("divisor", ctx_);
    llvm::IRBuilder<> b(ctx_);
    Emitter em(*module, b);
    llvm::Type* ty = b.getIntNTy(bits);
    auto* fty = llvm::FunctionType::get(ty, {ty, ty}, false);
    for (int which = 0; which < 2; ++which) {
      auto* fn = llvm::Function::Create(fty, llvm::Function::ExternalLinkage,
                                        which == 0 ? "quotient" : "remainder", *module);
      b.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", fn));
      Divisor d = em.divisor(fn->getArg(1));
      auto [q, r] = em.divmod(fn->getArg(0), d);
      b.CreateRet(which == 0 ? q : r);
      fns_[which] = fn;
    }
    lower_nvvm(*module);
    REQUIRE_FALSE(llvm::verifyModule(*module, &llvm::errs()));
    std::string err;
    engine_.reset(llvm::EngineBuilder(std::move(module))
                      .setEngineKind(llvm::EngineKind::Interpreter)
                      .setErrorStr(&err)
                      .create());
    INFO(err);
    REQUIRE(engine_);
    bits_ = bits;
  }

  uint64_t call(int which, uint64_t n, uint64_t d) {
    std::vector<llvm::GenericValue> args(2);
    args[0].IntVal = llvm::APInt(bits_, n);
    args[1].IntVal = llvm::APInt(bits_, d);
    return engine_->runFunction(fns_[which], args).IntVal.getZExtValue();
  }

  void check(uint64_t n, uint64_t d) {
    const uint64_t dd = d == 0 ? 1 : d;  // 0 is read as 1
    INFO("n = " << n << ", d = " << d);
    CHECK(call(0, n, d) == n / dd);
    CHECK(call(1, n, d) == n % dd);
  }

 private:
  llvm::LLVMContext ctx_;
  std::unique_ptr<llvm::ExecutionEngine> engine_;
  llvm::Function* fns_[2] = {nullptr, nullptr};
  unsigned bits_ = 0;
};

// Divisors and numerators at the edges of [1, limit]: small ones, powers of two and their
// neighbours, the limit itself.
std::vector<uint64_t> edges(uint64_t limit) {
  std::vector<uint64_t> out = {1,  2,   3,   5,   6,    7,    9,    10,   12,    17,    33,     49,
                               56, 100, 196, 641, 1000, 1001, 3136, 4095, 32761, 65535, 6700417};
  for (int k = 2; (uint64_t{1} << k) <= limit; ++k) {
    const uint64_t p = uint64_t{1} << k;
    for (uint64_t v : {p - 1, p, p + 1}) {
      if (v <= limit) out.push_back(v);
    }
  }
  out.push_back(limit);
  out.push_back(limit - 1);
  return out;
}

void exercise(DivisionUnderTest& t, uint64_t limit, uint64_t seed) {
  const std::vector<uint64_t> ds = edges(limit);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<uint64_t> any(0, limit);
  t.check(17, 0);
  for (uint64_t d : ds) {
    std::vector<uint64_t> ns = {
        0, 1, d - 1, d, limit, limit - 1, limit - limit % d, limit - limit % d - 1};
    if (d + 1 <= limit) ns.push_back(d + 1);
    if (d <= limit / 3) ns.insert(ns.end(), {3 * d - 1, 3 * d, 3 * d + 1});
    for (int i = 0; i < 8; ++i) ns.push_back(any(rng));
    for (uint64_t n : ns) t.check(n, d);
  }
  for (int i = 0; i < 2000; ++i) {
    // Divisors of every magnitude: a random bit length, then a random value of that length.
    const int bits = static_cast<int>(rng() % 64);
    const uint64_t d = 1 + (rng() & ((uint64_t{1} << bits) - 1)) % limit;
    t.check(any(rng), d);
    t.check(any(rng) / d * d, d);  // an exact multiple
  }
}

}  // namespace

TEST_CASE("divisor and divmod divide exactly below 2^31 in 32 bits", "[compiler][divisor]") {
  DivisionUnderTest t(32);
  exercise(t, (uint64_t{1} << 31) - 1, 31);
}

TEST_CASE("divisor and divmod divide exactly below 2^50 in 64 bits", "[compiler][divisor]") {
  DivisionUnderTest t(64);
  exercise(t, (uint64_t{1} << 50) - 1, 50);
}
