// From an LLVM module to PTX through the NVPTX backend.
//
//  1. Target: triple nvptx64-nvidia-cuda, CPU = the arch (sm_80, sm_90, ...).
//  2. libdevice: if the module calls __nv_* functions, libdevice.10.bc (read once per process)
//     is parsed into the module's context and linked with LinkOnlyNeeded; the module flag
//     nvvm-reflect-ftz = 0 keeps denormals (IEEE results, as the interpreter computes).
//  3. Everything but the kernels is internalized, so O3 inlines and drops the library code,
//     and NVVMReflect (registered by the NVPTX target machine) folds __nvvm_reflect.
//  4. The O3 pipeline, then the backend's assembly printer, allowed to fuse a * b + c into
//     one fma (nvcc's default; ir/expr.h allows it).
#include <fmt/format.h>
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/CodeGen/CommandFlags.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Transforms/IPO/Internalize.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <set>

#include "compiler/codegen.h"
#include "compiler/toolkit.h"
#include "ir/diag.h"

extern "C" {
void LLVMInitializeNVPTXTargetInfo();
void LLVMInitializeNVPTXTarget();
void LLVMInitializeNVPTXTargetMC();
void LLVMInitializeNVPTXAsmPrinter();
}

namespace kiln {
namespace {

constexpr const char* kTriple = "nvptx64-nvidia-cuda";

void init_nvptx() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

// The libdevice bitcode, read from disk once per process.
const llvm::MemoryBuffer& libdevice_buffer() {
  static std::once_flag once;
  static std::unique_ptr<llvm::MemoryBuffer> buf;
  std::call_once(once, [] {
    std::string path = libdevice_path();
    auto r = llvm::MemoryBuffer::getFile(path);
    if (!r)
      throw std::runtime_error(
          fmt::format("cannot read libdevice at {}: {}", path, r.getError().message()));
    buf = std::move(*r);
  });
  return *buf;
}

// 90 for "sm_90" and "sm_90a"; 0 for text that is not an sm_ architecture.
int sm_number(const std::string& arch) {
  return arch.rfind("sm_", 0) == 0 ? std::atoi(arch.c_str() + 3) : 0;
}

std::unique_ptr<llvm::TargetMachine> make_target_machine(const std::string& arch) {
  init_nvptx();
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(kTriple, err);
  if (!target) throw InternalError("NVPTX target not registered: " + err);
  llvm::TargetOptions opts;
  opts.AllowFPOpFusion = llvm::FPOpFusion::Fast;  // a * b + c may become one fma, as in nvcc
  // Cache-hinted loads (Emitter::load_vector_kept) need PTX ISA 7.4; LLVM would write 7.0 for
  // sm_80 and sm_86. 7.8 is what it writes for sm_89 and sm_90 (CUDA 11.8 and later).
  const int sm = sm_number(arch);
  const std::string features = sm > 0 && sm < 89 ? "+ptx78" : "";
  return std::unique_ptr<llvm::TargetMachine>(
      target->createTargetMachine(kTriple, arch, features, opts, llvm::Reloc::PIC_, std::nullopt,
                                  llvm::CodeGenOptLevel::Aggressive));
}

void link_libdevice(llvm::Module& m) {
  bool needed = false;
  for (const llvm::Function& f : m) needed |= f.isDeclaration() && f.getName().starts_with("__nv_");
  if (!needed) return;
  auto lib = llvm::parseBitcodeFile(libdevice_buffer().getMemBufferRef(), m.getContext());
  if (!lib) throw std::runtime_error("cannot parse libdevice: " + llvm::toString(lib.takeError()));
  (*lib)->setTargetTriple(m.getTargetTriple());
  (*lib)->setDataLayout(m.getDataLayout());
  if (llvm::Linker::linkModules(m, std::move(*lib), llvm::Linker::Flags::LinkOnlyNeeded)) {
    throw InternalError("linking libdevice failed");
  }
}

bool is_kernel(const llvm::GlobalValue& gv, const std::set<std::string>& kernels) {
  return kernels.count(gv.getName().str()) != 0;
}

}  // namespace

void require_blocks_per_sm(llvm::Module& m, const std::string& entry, int blocks) {
  llvm::Function* fn = m.getFunction(entry);
  internal_check(fn != nullptr, "require_blocks_per_sm: no such kernel in the module");
  llvm::LLVMContext& ctx = m.getContext();
  llvm::Metadata* ops[] = {
      llvm::ValueAsMetadata::get(fn), llvm::MDString::get(ctx, "minctasm"),
      llvm::ValueAsMetadata::get(llvm::ConstantInt::get(llvm::Type::getInt32Ty(ctx), blocks))};
  m.getOrInsertNamedMetadata("nvvm.annotations")->addOperand(llvm::MDNode::get(ctx, ops));
}

bool dependent_launch_arch(const std::string& arch) {
  return sm_number(arch) >= 90;
}

llvm::CallInst* emit_asm_statement(llvm::IRBuilderBase& b, const char* text) {
  auto* fty = llvm::FunctionType::get(b.getVoidTy(), {}, false);
  llvm::CallInst* call =
      b.CreateCall(llvm::InlineAsm::get(fty, text, "~{memory}", /*hasSideEffects=*/true), {});
  call->addFnAttr(llvm::Attribute::Convergent);
  return call;
}

namespace {
constexpr const char* kDeferredWaitAttribute = "kiln-deferred-dependency-wait";
}  // namespace

void defer_dependency_wait(llvm::Function& fn) {
  fn.addFnAttr(kDeferredWaitAttribute);
}

llvm::CallInst* emit_dependency_wait(llvm::IRBuilderBase& b) {
  return emit_asm_statement(b, "griddepcontrol.wait;");
}

void make_dependent(llvm::Function& fn, const std::string& arch) {
  if (!dependent_launch_arch(arch) || fn.isDeclaration()) return;
  llvm::IRBuilder<> b(&*fn.getEntryBlock().getFirstInsertionPt());
  emit_asm_statement(b, "griddepcontrol.launch_dependents;");
  if (!fn.hasFnAttribute(kDeferredWaitAttribute)) {
    emit_dependency_wait(b);
    return;
  }
  for (llvm::BasicBlock& bb : fn) {
    if (auto* ret = llvm::dyn_cast<llvm::ReturnInst>(bb.getTerminator())) {
      b.SetInsertPoint(ret);
      emit_dependency_wait(b);
    }
  }
}

void require_cluster(llvm::Function& fn, int blocks) {
  fn.addFnAttr(kClusterAttribute, std::to_string(blocks));
}

namespace {

// Declares the cluster dimensions of each kernel that require_cluster marked: LLVM 19's NVPTX
// back end has no annotation for them, so they go into the PTX text, after the entry's
// parameter list and performance directives (PTX ISA, "Cluster Dimension Directives").
std::string add_cluster_directives(std::string ptx, const std::map<std::string, int>& clusters) {
  for (const auto& [name, blocks] : clusters) {
    const std::string entry = ".entry " + name + "(";
    const size_t at = ptx.find(entry);
    internal_check(at != std::string::npos, "emit_ptx: a cluster kernel's entry is missing");
    const size_t body = ptx.find("\n{\n", at);
    internal_check(body != std::string::npos, "emit_ptx: a cluster kernel has no body");
    ptx.insert(body + 1, fmt::format(".explicitcluster\n.reqnctapercluster {}, 1, 1\n", blocks));
  }
  return ptx;
}

}  // namespace

std::string emit_ptx(llvm::Module& m, const std::string& arch, std::string* optimized_ir) {
  auto tm = make_target_machine(arch);
  m.setTargetTriple(kTriple);
  m.setDataLayout(tm->createDataLayout());
  m.addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", uint32_t{0});

  std::set<std::string> kernels;
  std::map<std::string, int> clusters;
  for (const llvm::Function& f : m) {
    if (!f.isDeclaration()) kernels.insert(f.getName().str());
    if (f.hasFnAttribute(kClusterAttribute)) {
      clusters[f.getName().str()] =
          std::stoi(f.getFnAttribute(kClusterAttribute).getValueAsString().str());
    }
  }
  link_libdevice(m);
  llvm::internalizeModule(m, [&](const llvm::GlobalValue& gv) { return is_kernel(gv, kernels); });

  std::string verify_errors;
  llvm::raw_string_ostream verify_os(verify_errors);
  if (llvm::verifyModule(m, &verify_os)) {
    throw InternalError("generated LLVM IR does not verify: " + verify_errors);
  }

  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(tm.get());
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(m, mam);
  if (optimized_ir) *optimized_ir = module_text(m);

  llvm::SmallString<0> ptx;
  llvm::raw_svector_ostream os(ptx);
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::AssemblyFile)) {
    throw InternalError("NVPTX cannot emit assembly");
  }
  pm.run(m);
  return add_cluster_directives(std::string(ptx.str()), clusters);
}

std::string module_text(const llvm::Module& m) {
  std::string s;
  llvm::raw_string_ostream os(s);
  m.print(os, nullptr);
  return s;
}

std::string llvm_version() {
  return LLVM_VERSION_STRING;
}

}  // namespace kiln
