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
#include "compiler/lower_reduction.h"
#include "compiler/plan.h"
#include "compiler/schedule.h"
#include "compiler/toolkit.h"
#include "ir/text.h"

#ifndef KILN_VERSION
#define KILN_VERSION "0.0.0"
#endif

namespace kiln {
namespace {

using AnyConfig = std::variant<PointwiseConfig, ReductionConfig>;

// One GPU launch of a spec kernel, as the code generator sees it.
struct StepPlan {
  const KernelDef* abi = nullptr;  // the parameters its entry takes (step_abi)
  std::string kind;                // the manifest's Step::kind
  std::vector<Dim> space;
  std::optional<Dim> reduced;
  PointwiseStep pointwise;              // kind "pointwise"
  const ScheduledKernel* sk = nullptr;  // reductions
  ReductionShape shape = ReductionShape::row;
  int max_vec = 1;
  // Row reductions whose looped rows can fuse (ReductionConfig::fuse), and whether fusing
  // leaves them one pass over the row (then the heuristic runs the fused variant on them).
  bool fusable = false, fused_single_pass = false;
  // Row reductions: whether a later pass reads the row again (stage_bytes_per_element > 0);
  // staging variants are made only then, since otherwise they would keep nothing.
  bool stages = false;

  std::vector<AnyConfig> space_of_configs() const {
    std::vector<AnyConfig> out;
    if (kind == "pointwise") {
      for (const PointwiseConfig& c : pointwise_config_space(max_vec)) out.push_back(c);
    } else if (shape == ReductionShape::row) {
      for (const ReductionConfig& c : row_reduction_space(max_vec, fusable)) out.push_back(c);
      if (stages) {  // after every other variant: their ids do not change
        for (const ReductionConfig& c : staged_row_configs(max_vec)) out.push_back(c);
      }
    } else {
      for (const ReductionConfig& c : outer_reduction_space(max_vec)) out.push_back(c);
    }
    return out;
  }
  AnyConfig default_config() const {
    if (kind == "pointwise") return default_pointwise_config(max_vec);
    return shape == ReductionShape::row ? default_row_config(max_vec)
                                        : default_outer_config(max_vec);
  }
};

// A spec kernel's schedule and its steps (which point into the schedule and `abis`).
struct KernelPlan {
  Schedule schedule;
  std::deque<KernelDef> abis;  // one per scheduled kernel when there are buffers
  std::vector<StepPlan> steps;
};

bool declares(const std::vector<TensorDecl>& ds, const std::string& name) {
  return std::any_of(ds.begin(), ds.end(), [&](const TensorDecl& d) { return d.name == name; });
}

// Whether step `sub` reads an output of the spec kernel `k` that an earlier step wrote.
bool reads_kernel_output(const KernelDef& k, const KernelDef& sub) {
  return std::any_of(k.outputs.begin(), k.outputs.end(), [&](const TensorDecl& o) {
    return declares(sub.inputs, o.name) && !declares(sub.outputs, o.name);
  });
}

// The parameters of a step's entry (manifest.h): the spec kernel's, then the schedule's
// buffers as more outputs. A buffer's role is the step's: an output where `sub` writes it, an
// input where it only reads it (so its loads may take the read-only path), else a temp,
// which the entry takes and never touches. A kernel output that an earlier step wrote and
// `sub` only reads is an input of this step likewise (`y[i] = sum(x[i, j], j)` then
// `z[j] = sum(x[i, j] * y[i], i)`).
KernelDef step_abi(const KernelDef& k, const Schedule& s, const KernelDef& sub) {
  KernelDef abi = k;
  for (TensorDecl& o : abi.outputs) {
    if (declares(sub.inputs, o.name) && !declares(sub.outputs, o.name)) o.role = TensorRole::input;
  }
  for (const TensorDecl& b : s.buffers) {
    TensorDecl& t = abi.outputs.emplace_back(b);
    t.role = declares(sub.outputs, b.name)  ? TensorRole::output
             : declares(sub.inputs, b.name) ? TensorRole::input
                                            : TensorRole::temp;
  }
  return abi;
}

// A pointwise step planned on a scheduled kernel's program, its stores renumbered as
// parameters of the step's entry (`abi`).
std::vector<PointwiseStep> plan_sub_pointwise(const KernelDef& abi, const KernelDef& sub) {
  std::vector<PointwiseStep> steps = plan_pointwise(sub);
  std::vector<const TensorDecl*> mine = sub.params(), all = abi.params();
  for (PointwiseStep& st : steps) {
    for (StepStore& store : st.stores) {
      const std::string& name = mine[store.param]->name;
      auto it = std::find_if(all.begin(), all.end(),
                             [&](const TensorDecl* t) { return t->name == name; });
      internal_check(it != all.end(), "compile: a step stores to a non-parameter");
      store.param = static_cast<int>(it - all.begin());
    }
  }
  return steps;
}

std::unique_ptr<KernelPlan> plan_kernel(const KernelDef& k) {
  auto plan = std::make_unique<KernelPlan>();
  plan->schedule = schedule_kernel(k);
  const Schedule& s = plan->schedule;
  auto add_pointwise = [&](const KernelDef& abi, const std::vector<PointwiseStep>& steps) {
    for (const PointwiseStep& st : steps) {
      StepPlan& p = plan->steps.emplace_back();
      p.abi = &abi;
      p.kind = "pointwise";
      p.space = st.space;
      p.pointwise = st;
      p.max_vec = max_vector_width(abi, st);
    }
  };
  bool all_pointwise =
      std::all_of(s.kernels.begin(), s.kernels.end(),
                  [](const ScheduledKernel& sk) { return sk.kind == KernelKind::pointwise; });
  if (all_pointwise) {
    add_pointwise(k, plan_pointwise(k));
    return plan;
  }
  for (const ScheduledKernel& sk : s.kernels) {
    const KernelDef& abi = s.buffers.empty() && !reads_kernel_output(k, sk.def)
                               ? k
                               : plan->abis.emplace_back(step_abi(k, s, sk.def));
    if (sk.kind == KernelKind::pointwise) {
      add_pointwise(abi, plan_sub_pointwise(abi, sk.def));
      continue;
    }
    StepPlan& p = plan->steps.emplace_back();
    p.abi = &abi;
    p.sk = &sk;
    p.shape = reduction_shape(sk);
    p.kind = p.shape == ReductionShape::row ? "row_reduction" : "outer_reduction";
    p.space = sk.space;
    p.reduced = sk.reduced;
    p.max_vec = reduction_vector_width(sk);
    if (p.shape == ReductionShape::row) {
      RowPasses rp = row_passes(abi, sk);
      p.fusable = !rp.fused.empty();
      p.fused_single_pass = p.fusable && rp.looped == 1;
      p.stages = stage_bytes_per_element(abi, sk) > 0;
    }
  }
  return plan;
}

// One (variant, arch) to compile.
struct Job {
  const StepPlan* step;
  AnyConfig cfg;
  bundle::Variant* variant;
  size_t image;  // index into variant->images
};

std::string entry_name(const KernelDef& k, size_t step, size_t variant) {
  return fmt::format("{}_s{}_v{}", k.name, step, variant);
}

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
    out.push_back({t->name, t->dtype, t->shape, t->role == TensorRole::output});
  }
  return out;
}

// The manifest entry of a variant, its images not yet built.
bundle::Variant make_variant(const StepPlan& plan, const AnyConfig& cfg, int id, bool is_default,
                             const std::vector<std::string>& archs, const std::string& entry) {
  bundle::Variant v;
  v.id = id;
  v.is_default = is_default;
  v.entry = entry;
  if (const auto* pc = std::get_if<PointwiseConfig>(&cfg)) {
    v.config = pc->as_map();
    v.block_threads = pc->block;
    v.elements_per_block = pc->elements_per_block();
  } else {
    const ReductionConfig& rc = std::get<ReductionConfig>(cfg);
    v.config = rc.as_map();
    v.block_threads = rc.block;
    v.elements_per_block = rows_per_block(plan.shape, rc);
    if (plan.shape == ReductionShape::row) {
      v.max_reduced = row_heuristic_limit(rc, plan.max_vec, plan.fused_single_pass);
    }
    if (rc.split) {
      SplitShape ss = split_shape(*plan.abi, *plan.sk);
      // The elements of the reduced extent a block walks per iteration.
      const int64_t chunk =
          plan.shape == ReductionShape::row ? rc.capacity() : int64_t{rc.group} * rc.items;
      v.split = {ss.phases, ss.slots, chunk};
    }
    if (rc.stage) {
      v.stage = {stage_bytes_per_element(*plan.abi, *plan.sk), rows_per_block(plan.shape, rc),
                 rc.vec};
    }
  }
  for (const std::string& arch : archs) {
    v.images.push_back({arch, fmt::format("{}.{}.ptx", v.entry, arch), "", 0, 0, 0, "", ""});
  }
  return v;
}

// Adds the kernel of `plan` with `cfg` to `m` as `entry`.
void lower_step(llvm::Module& m, const StepPlan& plan, const AnyConfig& cfg,
                const std::string& entry, VariantLayout* layout) {
  if (const auto* pc = std::get_if<PointwiseConfig>(&cfg)) {
    lower_pointwise(m, *plan.abi, plan.pointwise, *pc, entry, layout);
  } else {
    lower_reduction(m, *plan.abi, *plan.sk, std::get<ReductionConfig>(cfg), entry, layout);
  }
}

// What building one image produced; applied to the manifest by the caller.
struct BuiltImage {
  VariantLayout layout;
  std::string ptx;
  Result<Cubin> cubin = Status::error("assembly disabled");
};

// `blocks_per_sm` > 0 asks ptxas to fit that many blocks on an SM (require_blocks_per_sm).
BuiltImage build_image_once(const StepPlan& step, const AnyConfig& cfg, const std::string& entry,
                            const std::string& arch, bool assemble, int blocks_per_sm) {
  BuiltImage out;
  llvm::LLVMContext ctx;
  llvm::Module m(entry, ctx);
  lower_step(m, step, cfg, entry, &out.layout);
  if (blocks_per_sm > 0) require_blocks_per_sm(m, entry, blocks_per_sm);
  out.ptx = emit_ptx(m, arch);
  if (assemble) out.cubin = assemble_cubin(out.ptx, arch);
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
// staging variants (their shared memory bounds them) and outer and pointwise kernels (not
// measured). The hint is not pushed to a full SM: there ptxas spills (rmsnorm 256 x 16 at 32
// registers: 12 bytes).
constexpr int kRegistersPerSm = 65536;  // sm_70 to sm_90
constexpr int kTargetThreads = 1536;    // per SM: 3/4 of sm_80's and sm_90's 2048

// Blocks of `threads` that fit on an SM when each thread takes `registers` (allocated per
// warp in units of 256).
int blocks_by_registers(int registers, int threads) {
  int per_warp = (registers * 32 + 255) / 256 * 256;
  return kRegistersPerSm / (std::max(per_warp, 256) * ((threads + 31) / 32));
}

// Whether build_image may ask for more blocks per SM (above).
bool wants_occupancy_hint(const StepPlan& step, const AnyConfig& cfg) {
  const auto* rc = std::get_if<ReductionConfig>(&cfg);
  return rc && step.shape == ReductionShape::row && rows_per_block(step.shape, *rc) == 1 &&
         !rc->stage;
}

BuiltImage build_image(const StepPlan& step, const AnyConfig& cfg, const std::string& entry,
                       const std::string& arch, bool assemble, int threads) {
  BuiltImage out = build_image_once(step, cfg, entry, arch, assemble, 0);
  if (!out.cubin.ok() || !wants_occupancy_hint(step, cfg)) return out;
  int target = kTargetThreads / threads;
  if (target <= blocks_by_registers(out.cubin->registers, threads)) return out;
  BuiltImage hinted = build_image_once(step, cfg, entry, arch, assemble, target);
  if (hinted.cubin.ok() && hinted.cubin->spill_bytes == 0 &&
      hinted.cubin->registers < out.cubin->registers) {
    return hinted;
  }
  return out;
}

// Writes every file of `b` into `dir`, manifest.json last, each through its own temporary and
// a rename (runtime/atomic_file.h). The caller holds the bundle's lock.
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
  if (sp.kind != "pointwise") {
    throw std::runtime_error(
        fmt::format("step {} of {} is a {}: only its precompiled variants "
                    "can run",
                    step, k.name, sp.kind));
  }
  bundle::Variant v = make_variant(sp, cfg, id, false, archs, entry);
  for (size_t im = 0; im < v.images.size(); ++im) {
    std::string w =
        apply_image(build_image(sp, cfg, v.entry, archs[im], true, v.block_threads), v, im, files);
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
    info.steps.reserve(plans[ki]->steps.size());
    for (size_t si = 0; si < plans[ki]->steps.size(); ++si) {
      const StepPlan& step = plans[ki]->steps[si];
      bundle::Step& bs = info.steps.emplace_back();
      bs.name = fmt::format("{}_s{}", k.name, si);
      bs.kind = bundle::parse_step_kind(step.kind).value();
      bs.space = step.space;
      if (step.reduced) bs.reduced = {*step.reduced};
      AnyConfig def = step.default_config();
      std::vector<AnyConfig> space = step.space_of_configs();
      if (!opts.all_variants) space = {def};
      bs.variants.reserve(space.size());
      for (const AnyConfig& cfg : space) {
        int id = static_cast<int>(bs.variants.size());
        bs.variants.push_back(
            make_variant(step, cfg, id, cfg == def, opts.archs, entry_name(k, si, id)));
      }
      for (bundle::Variant& v : bs.variants) {
        for (size_t im = 0; im < v.images.size(); ++im) {
          jobs.push_back({&step, space[v.id], &v, im});
        }
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
        for (const bundle::ArchImage& im : v.images) taken.insert({im.ptx, im.cubin});
      }
    }
  }
  auto is_free = [&](const std::string& entry) {
    if (taken.count(entry)) return false;
    return std::none_of(archs.begin(), archs.end(), [&](const std::string& arch) {
      return taken.count(fmt::format("{}.{}.ptx", entry, arch)) ||
             taken.count(fmt::format("{}.{}.cubin", entry, arch));
    });
  };
  size_t n = static_cast<size_t>(id);
  while (!is_free(entry_name(k, step, n))) ++n;
  variants.push_back(compile_variant(k, step, cfg, id, entry_name(k, step, n), archs, b.files));
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
  llvm::LLVMContext ctx;
  llvm::Module m("kiln", ctx);
  for (const KernelDef& k : p.kernels) {
    std::unique_ptr<KernelPlan> plan = plan_kernel(k);
    for (size_t si = 0; si < plan->steps.size(); ++si) {
      const StepPlan& step = plan->steps[si];
      std::vector<AnyConfig> space = step.space_of_configs();
      std::vector<AnyConfig> shown{step.default_config()};
      if (step.fusable) {  // and the default's fused copy
        ReductionConfig fused = std::get<ReductionConfig>(shown[0]);
        fused.fuse = true;
        shown.push_back(fused);
      }
      for (const AnyConfig& cfg : shown) {
        size_t id = std::find(space.begin(), space.end(), cfg) - space.begin();
        lower_step(m, step, cfg, entry_name(k, si, id), nullptr);
      }
    }
  }
  return stage == Stage::llvm ? module_text(m) : emit_ptx(m, arch);
}

}  // namespace kiln
