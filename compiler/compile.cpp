// See compile.h.
#include "compiler/compile.h"

#include <fmt/format.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>
#include <variant>

#include "bundle/atomic_file.h"
#include "compiler/codegen.h"
#include "compiler/config.h"
#include "compiler/header.h"
#include "compiler/kernel_plan.h"
#include "compiler/lower_contraction.h"
#include "compiler/lower_reduction.h"
#include "compiler/lower_scan.h"
#include "compiler/plan.h"
#include "compiler/reduction_analysis.h"
#include "compiler/schedule.h"
#include "compiler/target.h"
#include "compiler/toolkit.h"
#include "ir/text.h"

#ifndef KILN_VERSION
#define KILN_VERSION "0.0.0"
#endif

namespace kiln {
namespace {

// One (variant, arch) to compile.
struct Job {
  const StepPlan* step;
  AnyConfig cfg;
  bundle::Variant* variant;
  size_t image;  // index into variant->images
};

// Runs fn(i) for i in [0, n) on `jobs` threads; rethrows the first exception.
template <class F>
void parallel_for(size_t n, int jobs, F&& fn) {
  if (jobs <= 0) jobs = std::max(1u, std::thread::hardware_concurrency());
  jobs = std::min<int>(jobs, n);
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::mutex mu;
  auto worker = [&] {
    for (size_t i; (i = next++) < n;) {
      try {
        fn(i);
      } catch (...) {
        std::lock_guard lock(mu);
        if (!error) error = std::current_exception();
        next = n;
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 1; t < jobs; ++t) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

std::vector<bundle::ParamInfo> param_infos(const KernelDef& k) {
  std::vector<bundle::ParamInfo> out;
  for (const TensorDecl* t : k.params()) {
    out.push_back(
        {t->name, t->dtype, t->shape, t->role == TensorRole::output, t->scalar, t->strided});
  }
  return out;
}

// Adds the kernel of `plan` with `cfg` to `m` as `entry`.
void lower_step(llvm::Module& m, const StepPlan& plan, const AnyConfig& cfg,
                const std::string& arch, const std::string& entry, VariantLayout* layout) {
  if (const auto* pc = std::get_if<PointwiseConfig>(&cfg)) {
    lower_pointwise(m, *plan.abi, plan.pointwise, *pc, entry, layout);
  } else if (const auto* cc = std::get_if<ContractionConfig>(&cfg)) {
    lower_contraction(m, *plan.abi, *plan.sk, *cc, plan.fast_functions, arch, entry, layout);
  } else if (const auto* sc = std::get_if<ScanConfig>(&cfg)) {
    lower_scan(m, *plan.abi, *plan.sk, *sc, entry, layout);
  } else {
    lower_reduction(m, *plan.abi, *plan.sk, std::get<ReductionConfig>(cfg), entry, layout);
  }
  for (const std::string& name : {entry, general_entry_name(entry)}) {
    if (llvm::Function* fn = m.getFunction(name)) make_dependent(*fn, arch);
  }
}

// What building one image produced; applied to the manifest by the caller.
struct BuiltImage {
  VariantLayout layout;
  std::string ptx;
  Result<Cubin> cubin = Status::error("assembly disabled");
};

// The assembler of each kind of kernel. nvJitLink has ptxas compile an image as relocatable
// code, and for pointwise and scan kernels ptxas then takes far more registers than the same
// PTX needs assembled as a whole program (ptxas 13.0, sm_90, default variants: dropout bf16 78
// against 32, rotary 144 against 56, bias + GELU 64 against 36, column scans 117 against 32),
// which costs them occupancy. Measured on an H200, one binary assembling both ways, default
// variants (bench/results/2026-11-27-h200-philox, call 2): dropout bf16 16K x 8K 155.3 -> 145.9
// us, rotary 16K x 32 x 128 bf16 102.6 -> 83.7, rotary f32 181.9 -> 170.6, a hashed gather
// 203.5 -> 198.4, cumsum 4K x 32K 291.1 -> 282.0, one 64M row 199.6 -> 195.4; embedding and the
// causal mask within 0.5%. The tiled transposes stay with nvJitLink: level or slower assembled
// whole (call 3, 8192^2 f32 -> bf16 102.4 -> 104.1 us; the others within 1%). So do row and
// outer reductions: the cross-entropy's default (several rows a block) lost, 495.6 -> 528.7
// us, and build_image's occupancy hint (below) already gives the row kernels the registers it
// measured best (an outer prefetching config may be assembled whole there:
// whole_program_fits_more). Contractions choose by their PTX (assemble_cubin: wgmma and setmaxnreg
// need a whole program).
Assembly assembly_for(const AnyConfig& cfg) {
  const auto* pc = std::get_if<PointwiseConfig>(&cfg);
  return (pc && !pc->tiled()) || std::holds_alternative<ScanConfig>(cfg) ? Assembly::whole_program
                                                                         : Assembly::separate;
}

// `blocks_per_sm` > 0 asks ptxas to fit that many blocks on an SM (require_blocks_per_sm),
// `general_blocks` > 0 as many of the variant's general entry (bundle::GeneralForm).
BuiltImage build_image_once(const StepPlan& step, const AnyConfig& cfg, const std::string& entry,
                            const std::string& arch, bool assemble, int blocks_per_sm, Assembly how,
                            int general_blocks = 0) {
  BuiltImage out;
  llvm::LLVMContext ctx;
  llvm::Module m(entry, ctx);
  lower_step(m, step, cfg, arch, entry, &out.layout);
  if (blocks_per_sm > 0) require_blocks_per_sm(m, entry, blocks_per_sm);
  if (general_blocks > 0) require_blocks_per_sm(m, out.layout.general_entry, general_blocks);
  out.ptx = emit_ptx(m, arch);
  if (assemble) out.cubin = assemble_cubin(out.ptx, arch, entry, how);
  return out;
}

// Occupancy. nvJitLink has ptxas compile an image as relocatable code, and ptxas then gives a
// kernel more registers than it needs: a bf16 layernorm row of 4096 at 256 threads got 56
// registers per thread (4 blocks per SM), where asked for 6 blocks it fits in 40 without
// spilling. Registers bound how many rows a row kernel has in flight per SM. So the image of
// a row kernel whose block holds one row, when its registers hold it below kTargetThreads per
// SM, is built again asking for that many threads' worth of blocks, and the second image is
// kept when it spills nothing and uses fewer registers. Measured on an H200 (bench/results/
// 2026-11-21-h200-reductions.md, seventh run): at 32768x4096, layernorm 256 threads x 16
// elements 162.78 -> 137.15 us, rmsnorm 138.53 -> 133.12 us, 512 x 16 238.78 -> 189.60 us;
// but blocks of several rows often lost (rmsnorm 128 threads, 64 per row: 148.48 -> 166.14 us;
// layernorm 256 threads, 32 per row: 189.09 -> 263.36 us), so they keep ptxas's choice, as do
// staging variants (their shared memory bounds them) and pointwise kernels (not measured).
// Outer kernels are bound by the loads in flight per SM, that is by their blocks per SM, and
// nvJitLink gave them half again the registers plain ptxas needs (bf16 column sums, 8-byte
// loads: 64 against 40; 16-byte: 107 against 75), so they take the hint too, and when it
// spills, one block more than ptxas's choice (expected, not measured yet). The hint is not
// pushed to a full SM: there ptxas spills (rmsnorm 256 x 16 at 32 registers: 12 bytes).
// Measured on an H200; 3/4 of sm_80's and sm_90's 2048 threads per SM (on sm_86 and sm_89,
// whose SMs hold 1536, the hint asks for a full SM: not measured there).
constexpr int kTargetThreads = 1536;

// Blocks of `threads` that fit on an SM of `arch` when each thread takes `registers`.
int blocks_by_registers(const TargetFacts& t, int registers, int threads) {
  const int per_warp =
      (registers * t.warp_size + t.register_granule - 1) / t.register_granule * t.register_granule;
  const int warps = (threads + t.warp_size - 1) / t.warp_size;
  return t.registers_per_sm / (std::max(per_warp, t.register_granule) * warps);
}

// Whether build_image may ask for more blocks per SM (above).
bool wants_occupancy_hint(const StepPlan& step, const AnyConfig& cfg) {
  const auto* rc = std::get_if<ReductionConfig>(&cfg);
  if (rc && step.kind == StepKind::outer_reduction) return true;
  return rc && step.kind == StepKind::row_reduction &&
         rows_per_block(StepKind::row_reduction, *rc) == 1 && !rc->stage;
}

// The image of a reduction or pointwise config assembled `how`, with the occupancy hint where
// it applies (above). A variant's general entry (an outer kernel's 64-bit one, for launches
// past 2^31 - 1 elements: bundle::GeneralForm) has registers of its own, often more (sums over
// b and h of [B, C, H, W]: 40 against 111), so it is hinted by them, after the own entry, and
// kept the same way: no spills (no more than unhinted, in the general entry), fewer registers
// in the one hinted.
BuiltImage hinted_image(const StepPlan& step, const AnyConfig& cfg, const std::string& entry,
                        const std::string& arch, bool assemble, int threads, Assembly how) {
  BuiltImage out = build_image_once(step, cfg, entry, arch, assemble, 0, how);
  if (!out.cubin.ok() || !wants_occupancy_hint(step, cfg)) return out;
  const TargetFacts& facts = target_facts(arch);
  const int target = kTargetThreads / threads;
  // Outer kernels: the target, else one block more than ptxas's choice.
  auto tries = [&](int registers) {
    const int blocks = blocks_by_registers(facts, registers, threads);
    std::vector<int> t;
    if (target > blocks) t.push_back(target);
    if (target > blocks && step.kind == StepKind::outer_reduction && blocks + 1 < target) {
      t.push_back(blocks + 1);
    }
    return t;
  };
  const std::string& general = out.layout.general_entry;
  auto general_facts = [&](const BuiltImage& im) {
    return general.empty() ? CubinFacts{} : cubin_facts(im.cubin->bytes, general);
  };
  // The general entry may spill unhinted (a 512-thread block caps it at 128 registers): a
  // hint must not make it spill more.
  const CubinFacts unhinted = general_facts(out);
  auto general_fine = [&](const BuiltImage& im) {
    const CubinFacts f = general_facts(im);
    return general.empty() || (f.found && f.frame_bytes <= unhinted.frame_bytes);
  };
  int own_hint = 0;
  for (int t : tries(out.cubin->registers)) {
    BuiltImage hinted = build_image_once(step, cfg, entry, arch, assemble, t, how);
    if (hinted.cubin.ok() && hinted.cubin->spill_bytes == 0 && hinted.cubin->registers > 0 &&
        hinted.cubin->registers < out.cubin->registers && general_fine(hinted)) {
      out = std::move(hinted);
      own_hint = t;
      break;
    }
  }
  const CubinFacts before = general_facts(out);
  if (!before.found || before.registers <= 0) return out;
  for (int t : tries(before.registers)) {
    BuiltImage hinted = build_image_once(step, cfg, entry, arch, assemble, own_hint, how, t);
    if (hinted.cubin.ok() && hinted.cubin->spill_bytes == 0 &&
        hinted.cubin->registers == out.cubin->registers && general_fine(hinted) &&
        general_facts(hinted).registers < before.registers) {
      return hinted;
    }
  }
  return out;
}

// A prefetching outer config (its loads in flight by construction, whatever ptxas's schedule:
// compiler/config.cpp prefetching_outer_configs) is assembled as a whole program too, and that
// image kept where it fits twice the blocks per SM or more. Over reduced indices apart (an
// offset stepped per index) ptxas as nvJitLink runs it took 108-120 registers, 2 blocks of 256
// threads, where whole it took 64, 4 blocks: measured on an H200, the sums and maxima over b and h
// of [8, 64, 128, 511] f32 59.7 -> 46.6 us and 59.2 -> 46.9, [4, 32, 512, 1001] 110.1 -> 83.9.
// Where the whole program only adds blocks (a mean over a middle axis: 64 -> 40 registers, 4 ->
// 6 blocks) it was as often slower ([64, 1024, 513] 38.1 -> 43.5 us: 1026 tiles, a second wave
// of 234 blocks) as faster ([24, 2048, 1001] bf16 47.1 -> 35.8: 751 tiles in one wave), and
// over every outer config, not only these, the whole program was slower as often (bf16 column
// sums of 8191 x 8193, the rule's v14, 79.2 -> 117.3 us; ptxas issued its loads two at a time:
// bench/results/2026-12-01-h200-outer-scalar, call 1) (bench/results/
// 2026-12-01-h200-stepped-axes, call 2).
bool whole_program_fits_more(const BuiltImage& relocatable, const BuiltImage& whole,
                             const std::string& arch, int threads) {
  if (!relocatable.cubin.ok() || !whole.cubin.ok() || whole.cubin->spill_bytes > 0 ||
      whole.cubin->registers <= 0 || relocatable.cubin->registers <= 0) {
    return false;
  }
  const TargetFacts& facts = target_facts(arch);
  return blocks_by_registers(facts, whole.cubin->registers, threads) >=
         2 * blocks_by_registers(facts, relocatable.cubin->registers, threads);
}

// A row kernel of one row a block over reduced indices apart whose offsets it steps
// (steps_reduced_axes: compiler/lower/reduction_rows.cpp row_groups) and whose relocatable
// image, hinted, still holds fewer than kTargetThreads per SM is assembled as a whole program
// too, and that image kept where it fits twice the blocks (whole_program_fits_more). There
// nvJitLink's ptxas took 72-80 registers where the whole program took 32-40 (per-channel sums
// and variances of NCHW, 512 threads: 1 block per SM against 3) and the hint, asking for 40,
// spilled: per-channel sums of [128, 64, 56, 56] f32 56.7 -> 32.0 us (the rule's split variant,
// which it ran again), bf16 variances of [64, 256, 56, 56] 42.5 -> 37.4. Not over one reduced
// index: there the same fallback made an f32 softmax of 4096 x 32768 (v30: 86 -> 64
// registers, 1 -> 2 blocks an SM) 1.06x slower, the other row kernels of the suite level
// (bench/results/2026-12-01-h200-row-steps, calls 1, 2 and 4).
bool row_image_below_target(const StepPlan& step, const AnyConfig& cfg, const BuiltImage& out,
                            const std::string& arch, int threads) {
  if (step.kind != StepKind::row_reduction || !wants_occupancy_hint(step, cfg) || !out.cubin.ok() ||
      out.cubin->registers <= 0 || step.sk == nullptr || step.abi == nullptr ||
      !steps_reduced_axes(*step.abi, *step.sk)) {
    return false;
  }
  return blocks_by_registers(target_facts(arch), out.cubin->registers, threads) <
         kTargetThreads / threads;
}

BuiltImage build_image(const StepPlan& step, const AnyConfig& cfg, const std::string& entry,
                       const std::string& arch, bool assemble, int threads) {
  // A contraction's persistent grid counts on its blocks per SM fitting (registers).
  if (const auto* cc = std::get_if<ContractionConfig>(&cfg)) {
    BuiltImage out =
        build_image_once(step, cfg, entry, arch, assemble, cc->ctas_per_sm, assembly_for(cfg));
    // Not shipped even as PTX (a driver would JIT it into the same hang): a compiler bug.
    if (out.cubin.ok() && out.ptx.find("setmaxnreg.") != std::string::npos &&
        out.cubin->registers * cc->threads() < specialized_register_pool(*cc)) {
      throw InternalError(fmt::format(
          "ptxas gave {} registers a thread to {}, whose setmaxnreg requests need {} in all "
          "for {} threads: it would wait forever",
          out.cubin->registers, entry, specialized_register_pool(*cc), cc->threads()));
    }
    return out;
  }
  const Assembly how = assembly_for(cfg);
  BuiltImage out = hinted_image(step, cfg, entry, arch, assemble, threads, how);
  const auto* rc = std::get_if<ReductionConfig>(&cfg);
  if (rc && how != Assembly::whole_program && assemble &&
      (rc->prefetch || row_image_below_target(step, cfg, out, arch, threads))) {
    BuiltImage whole =
        hinted_image(step, cfg, entry, arch, assemble, threads, Assembly::whole_program);
    if (whole_program_fits_more(out, whole, arch, threads)) return whole;
  }
  return out;
}

// Writes every file of `b` into `dir`, manifest.json last, each through its own temporary and
// a rename (bundle/atomic_file.h). The caller holds the bundle's lock.
Status write_files(const CompiledBundle& b, const std::string& dir) {
  auto path = [&](const std::string& name) { return (std::filesystem::path(dir) / name).string(); };
  for (const auto& [name, data] : b.files) {
    Status s = files::write_atomically(path(name), data);
    if (!s.ok()) return s;
  }
  return files::write_atomically(path("manifest.json"), bundle::to_json(b.manifest));
}

std::string bundle_lock_path(const std::string& dir) {
  return (std::filesystem::path(dir) / "manifest.json.lock").string();
}

// Records a built image in its variant and `files`; returns a warning, if any.
std::string apply_image(BuiltImage&& built, bundle::Variant& v, size_t image,
                        std::map<std::string, std::string>& files) {
  bundle::ArchImage& im = v.images[image];
  v.align_bytes = built.layout.align_bytes;
  v.aligned_params = built.layout.aligned_params;
  internal_check(built.layout.general_entry == v.general.entry &&
                     built.layout.row_multiple == v.general.row_multiple,
                 "compile: the lowered entries differ from the plan's");
  im.ptx_hash = content_hash(built.ptx);
  files[im.ptx] = std::move(built.ptx);
  if (!built.cubin.ok()) return fmt::format("no cubin for {}: {}", im.arch, built.cubin.message());
  im.cubin = fmt::format("{}.{}.cubin", v.entry, im.arch);
  im.registers = built.cubin->registers;
  im.spill_bytes = built.cubin->spill_bytes;
  im.shared_bytes = built.cubin->shared_bytes;
  im.cubin_hash = content_hash(built.cubin->bytes);
  files[im.cubin] = std::move(built.cubin->bytes);
  return "";
}

}  // namespace

bundle::Variant compile_variant(const KernelDef& k, size_t step, const PointwiseConfig& cfg, int id,
                                const std::string& entry, const std::vector<std::string>& archs,
                                std::map<std::string, std::string>& files) {
  std::unique_ptr<KernelPlan> plan = plan_kernel(k);
  internal_check(step < plan->steps.size(), "compile_variant: no such step");
  const StepPlan& sp = plan->steps[step];
  if (sp.kind != StepKind::pointwise) {
    throw std::runtime_error(
        fmt::format("step {} of {} is a {}: only its precompiled variants "
                    "can run",
                    step, k.name, to_string(sp.kind)));
  }
  bundle::Variant v = manifest_variant(plan_variant(sp, cfg), id, entry, archs);
  for (size_t im = 0; im < v.images.size(); ++im) {
    std::string w = apply_image(
        build_image(sp, cfg, v.entry, v.images[im].arch, true, v.block_threads), v, im, files);
    if (!w.empty()) throw std::runtime_error(w);
  }
  return v;
}

const std::vector<std::string>& supported_archs() {
  static const std::vector<std::string> archs{"sm_80", "sm_86", "sm_87",
                                              "sm_89", "sm_90", "sm_90a"};
  return archs;
}

std::string check_archs(const std::vector<std::string>& archs) {
  const std::vector<std::string>& ok = supported_archs();
  if (archs.empty())
    return fmt::format("no architecture given (Kiln compiles for {})", fmt::join(ok, ", "));
  for (size_t i = 0; i < archs.size(); ++i) {
    if (std::find(ok.begin(), ok.end(), archs[i]) == ok.end()) {
      return fmt::format(
          "unsupported architecture '{}' (Kiln compiles for {}; PTX for sm_90 also runs on "
          "newer GPUs through the driver's JIT)",
          archs[i], fmt::join(ok, ", "));
    }
    if (std::find(archs.begin(), archs.begin() + i, archs[i]) != archs.begin() + i) {
      return fmt::format("architecture '{}' is given twice", archs[i]);
    }
  }
  return "";
}

CompiledBundle compile_program(const Program& p, const CompileOptions& opts) {
  if (std::string why = check_archs(opts.archs); !why.empty()) throw UserError({}, why);
  CompiledBundle out;
  out.manifest.kiln_version = KILN_VERSION;
  out.manifest.llvm_version = llvm_version();

  // 1. plan every kernel and lay out its variants in the manifest
  std::vector<std::unique_ptr<KernelPlan>> plans;
  for (const KernelDef& k : p.kernels) plans.push_back(plan_kernel(k));
  out.manifest.kernels.reserve(p.kernels.size());
  std::vector<Job> jobs;
  for (size_t ki = 0; ki < p.kernels.size(); ++ki) {
    const KernelDef& k = p.kernels[ki];
    bundle::KernelInfo& info = out.manifest.kernels.emplace_back();
    info.name = k.name;
    info.hash = content_hash(k);
    info.ir = print(k);
    info.params = param_infos(k);
    for (const TensorDecl& b : plans[ki]->schedule.buffers) {
      info.buffers.push_back({b.name, b.dtype, b.shape, false});
    }
    info.symbols = k.symbols();
    info.dependent_launch = true;  // lower_step: make_dependent
    info.steps.reserve(plans[ki]->steps.size());
    for (size_t si = 0; si < plans[ki]->steps.size(); ++si) {
      const StepPlan& step = plans[ki]->steps[si];
      std::vector<int> planned;  // manifest id -> plan index
      bundle::Step& bs = info.steps.emplace_back(
          manifest_step(*plans[ki], si, opts.archs, !opts.all_variants, &planned));
      for (bundle::Variant& v : bs.variants) {
        const AnyConfig& cfg =
            step.variants[static_cast<size_t>(planned[static_cast<size_t>(v.id)])].config;
        for (size_t im = 0; im < v.images.size(); ++im) jobs.push_back({&step, cfg, &v, im});
      }
    }
  }

  // 2. lower, emit PTX and assemble every (variant, arch), in parallel
  std::mutex mu;
  parallel_for(jobs.size(), opts.jobs, [&](size_t i) {
    const Job& job = jobs[i];
    BuiltImage built =
        build_image(*job.step, job.cfg, job.variant->entry, job.variant->images[job.image].arch,
                    opts.assemble, job.variant->block_threads);
    std::lock_guard lock(mu);
    std::string w = apply_image(std::move(built), *job.variant, job.image, out.files);
    if (opts.assemble && !w.empty() &&
        std::find(out.warnings.begin(), out.warnings.end(), w) == out.warnings.end()) {
      out.warnings.push_back(w);
    }
  });
  return out;
}

Status write_bundle(const CompiledBundle& b, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::error(fmt::format("{}: cannot create directory: {}", dir, ec.message()));
  Result<files::FileLock> lock = files::FileLock::acquire(bundle_lock_path(dir));
  if (!lock.ok()) return lock.status();
  return write_files(b, dir);
}

Result<int> add_variant(const std::string& dir, const KernelDef& k, size_t step,
                        const PointwiseConfig& cfg) {
  Result<files::FileLock> lock = files::FileLock::acquire(bundle_lock_path(dir));
  if (!lock.ok()) return lock.status();
  Result<bundle::Manifest> m = bundle::read_manifest(dir);
  if (!m.ok()) return m.status();
  CompiledBundle b;
  b.manifest = std::move(m).value();
  auto info = std::find_if(b.manifest.kernels.begin(), b.manifest.kernels.end(),
                           [&](const bundle::KernelInfo& i) { return i.name == k.name; });
  if (info == b.manifest.kernels.end() || info->hash != content_hash(k)) {
    return Status::error(fmt::format("{}: kernel {} {} while a variant was being added", dir,
                                     k.name,
                                     info == b.manifest.kernels.end() ? "was removed" : "changed"));
  }
  if (step >= info->steps.size()) {
    return Status::error(fmt::format("{}: kernel {} has no step {}", dir, k.name, step));
  }
  std::vector<bundle::Variant>& variants = info->steps[step].variants;
  const std::map<std::string, int64_t> config = cfg.as_map();
  for (const bundle::Variant& v : variants) {
    if (v.config == config) return v.id;  // another process added it first
  }
  std::vector<std::string> archs;
  for (const bundle::ArchImage& im : variants.front().images) archs.push_back(im.arch);
  const int id = static_cast<int>(variants.size());
  // The entry names of a bundle need not follow the ids (a manifest cut down to some
  // variants keeps their files): the new one takes the first free name from its id on.
  std::set<std::string> taken;
  for (const bundle::KernelInfo& ki : b.manifest.kernels) {
    for (const bundle::Step& s : ki.steps) {
      for (const bundle::Variant& v : s.variants) {
        taken.insert(v.entry);
        if (!v.general.entry.empty()) taken.insert(v.general.entry);
        for (const bundle::ArchImage& im : v.images) taken.insert({im.ptx, im.cubin});
      }
    }
  }
  auto is_free = [&](const std::string& entry) {
    if (taken.count(entry) || taken.count(general_entry_name(entry))) return false;
    return std::none_of(archs.begin(), archs.end(), [&](const std::string& arch) {
      return taken.count(fmt::format("{}.{}.ptx", entry, arch)) ||
             taken.count(fmt::format("{}.{}.cubin", entry, arch));
    });
  };
  size_t n = static_cast<size_t>(id);
  while (!is_free(entry_name(k.name, step, n))) ++n;
  variants.push_back(
      compile_variant(k, step, cfg, id, entry_name(k.name, step, n), archs, b.files));
  if (Status s = write_files(b, dir); !s.ok()) return s;
  return id;
}

std::string emit_stage(const Program& p, Stage stage, const std::string& arch) {
  if (std::string why = check_archs({arch}); !why.empty()) throw UserError({}, why);
  if (stage == Stage::ir) return print(p);
  if (stage == Stage::header) return emit_header(p, "kiln_kernels");
  if (stage == Stage::schedule) {
    std::string out;
    for (const KernelDef& k : p.kernels) out += print_schedule(schedule_kernel(k));
    return out;
  }
  if (stage == Stage::plan) {
    std::string out;
    for (const KernelDef& k : p.kernels) out += print_plan(*plan_kernel(k));
    return out;
  }
  llvm::LLVMContext ctx;
  llvm::Module m("kiln", ctx);
  for (const KernelDef& k : p.kernels) {
    std::unique_ptr<KernelPlan> plan = plan_kernel(k);
    for (size_t si = 0; si < plan->steps.size(); ++si) {
      const StepPlan& step = plan->steps[si];
      std::vector<size_t> shown{static_cast<size_t>(step.default_variant)};
      if (!step.passes.fused.empty()) {  // and the default's fused copy
        ReductionConfig fused = std::get<ReductionConfig>(step.variants[shown[0]].config);
        fused.fuse = true;
        auto it =
            std::find_if(step.variants.begin(), step.variants.end(),
                         [&](const PlannedVariant& v) { return v.config == AnyConfig(fused); });
        internal_check(it != step.variants.end(), "emit_stage: no fused copy of the default");
        shown.push_back(static_cast<size_t>(it - step.variants.begin()));
      }
      for (size_t id = 0; id < step.variants.size(); ++id) {
        if (step.variants[id].strided) shown.push_back(id);
      }
      for (size_t id : shown) {
        lower_step(m, step, step.variants[id].config, arch, entry_name(k.name, si, id), nullptr);
      }
    }
  }
  return stage == Stage::llvm ? module_text(m) : emit_ptx(m, arch);
}

}  // namespace kiln
