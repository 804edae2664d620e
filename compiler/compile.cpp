// See compile.h.
#include "compiler/compile.h"

#include <fmt/format.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <atomic>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "compiler/codegen.h"
#include "compiler/config.h"
#include "compiler/header.h"
#include "compiler/plan.h"
#include "compiler/schedule.h"
#include "compiler/toolkit.h"
#include "ir/text.h"

#ifndef KILN_VERSION
#define KILN_VERSION "0.0.0"
#endif

namespace kiln {
namespace {

// One (variant, arch) to compile.
struct Job {
  const KernelDef* kernel;
  const PointwiseStep* step;
  PointwiseConfig cfg;
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
bundle::Variant make_variant(const KernelDef& k, size_t step, const PointwiseConfig& cfg, int id,
                             bool is_default, const std::vector<std::string>& archs) {
  bundle::Variant v;
  v.id = id;
  v.config = cfg.as_map();
  v.is_default = is_default;
  v.entry = entry_name(k, step, id);
  v.block_threads = cfg.block;
  v.elements_per_block = cfg.elements_per_block();
  for (const std::string& arch : archs) {
    v.images.push_back({arch, fmt::format("{}.{}.ptx", v.entry, arch), "", 0, 0, 0});
  }
  return v;
}

// What building one image produced; applied to the manifest by the caller.
struct BuiltImage {
  VariantLayout layout;
  std::string ptx;
  Result<Cubin> cubin = Status::error("assembly disabled");
};

BuiltImage build_image(const KernelDef& k, const PointwiseStep& step, const PointwiseConfig& cfg,
                       const std::string& entry, const std::string& arch, bool assemble) {
  BuiltImage out;
  llvm::LLVMContext ctx;
  llvm::Module m(entry, ctx);
  lower_pointwise(m, k, step, cfg, entry, &out.layout);
  out.ptx = emit_ptx(m, arch);
  if (assemble) out.cubin = assemble_cubin(out.ptx, arch);
  return out;
}

// Records a built image in its variant and `files`; returns a warning, if any.
std::string apply_image(BuiltImage&& built, bundle::Variant& v, size_t image,
                        std::map<std::string, std::string>& files) {
  bundle::ArchImage& im = v.images[image];
  v.align_bytes = built.layout.align_bytes;
  v.aligned_params = built.layout.aligned_params;
  files[im.ptx] = std::move(built.ptx);
  if (!built.cubin.ok()) return fmt::format("no cubin for {}: {}", im.arch, built.cubin.message());
  im.cubin = fmt::format("{}.{}.cubin", v.entry, im.arch);
  im.registers = built.cubin->registers;
  im.spill_bytes = built.cubin->spill_bytes;
  im.shared_bytes = built.cubin->shared_bytes;
  files[im.cubin] = std::move(built.cubin->bytes);
  return "";
}

}  // namespace

bundle::Variant compile_variant(const KernelDef& k, size_t step, const PointwiseConfig& cfg,
                                int id, const std::vector<std::string>& archs,
                                std::map<std::string, std::string>& files) {
  std::vector<PointwiseStep> steps = plan_pointwise(k);
  internal_check(step < steps.size(), "compile_variant: no such step");
  bundle::Variant v = make_variant(k, step, cfg, id, false, archs);
  for (size_t im = 0; im < v.images.size(); ++im) {
    std::string w = apply_image(build_image(k, steps[step], cfg, v.entry, archs[im], true), v, im, files);
    if (!w.empty()) throw std::runtime_error(w);
  }
  return v;
}

CompiledBundle compile_program(const Program& p, const CompileOptions& opts) {
  CompiledBundle out;
  out.manifest.kiln_version = KILN_VERSION;
  out.manifest.llvm_version = llvm_version();

  // 1. plan every kernel and lay out its variants in the manifest
  std::vector<std::vector<PointwiseStep>> plans;
  for (const KernelDef& k : p.kernels) plans.push_back(plan_pointwise(k));
  out.manifest.kernels.reserve(p.kernels.size());
  std::vector<Job> jobs;
  for (size_t ki = 0; ki < p.kernels.size(); ++ki) {
    const KernelDef& k = p.kernels[ki];
    bundle::KernelInfo& info = out.manifest.kernels.emplace_back();
    info.name = k.name;
    info.hash = content_hash(k);
    info.ir = print(k);
    info.params = param_infos(k);
    info.symbols = k.symbols();
    info.steps.reserve(plans[ki].size());
    for (size_t si = 0; si < plans[ki].size(); ++si) {
      const PointwiseStep& step = plans[ki][si];
      bundle::Step& bs = info.steps.emplace_back();
      bs.name = fmt::format("{}_s{}", k.name, si);
      bs.kind = "pointwise";
      bs.space = step.space;
      int max_vec = max_vector_width(k, step);
      PointwiseConfig def = default_pointwise_config(max_vec);
      std::vector<PointwiseConfig> space = pointwise_config_space(max_vec);
      if (!opts.all_variants) space = {def};
      bs.variants.reserve(space.size());
      for (const PointwiseConfig& cfg : space) {
        int id = static_cast<int>(bs.variants.size());
        bs.variants.push_back(make_variant(k, si, cfg, id, cfg == def, opts.archs));
      }
      for (bundle::Variant& v : bs.variants) {
        for (size_t im = 0; im < v.images.size(); ++im) {
          jobs.push_back({&k, &step, space[v.id], &v, im});
        }
      }
    }
  }

  // 2. lower, emit PTX and assemble every (variant, arch), in parallel
  std::mutex mu;
  parallel_for(jobs.size(), opts.jobs, [&](size_t i) {
    const Job& job = jobs[i];
    BuiltImage built = build_image(*job.kernel, *job.step, job.cfg, job.variant->entry,
                                   job.variant->images[job.image].arch, opts.assemble);
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
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::error(fmt::format("{}: cannot create directory: {}", dir, ec.message()));
  auto write = [&](const std::string& name, const std::string& data) -> Status {
    fs::path final_path = fs::path(dir) / name;
    fs::path tmp = final_path;
    tmp += ".tmp";
    {
      std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
      f.write(data.data(), static_cast<std::streamsize>(data.size()));
      f.close();
      if (!f) return Status::error(fmt::format("{}: cannot write", tmp.string()));
    }
    fs::rename(tmp, final_path, ec);
    if (ec)
      return Status::error(fmt::format("{}: cannot rename: {}", final_path.string(), ec.message()));
    return Status();
  };
  for (const auto& [name, data] : b.files) {
    if (Status s = write(name, data); !s.ok()) return s;
  }
  return write("manifest.json", bundle::to_json(b.manifest));
}

std::string emit_stage(const Program& p, Stage stage, const std::string& arch) {
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
    std::vector<PointwiseStep> steps = plan_pointwise(k);
    for (size_t si = 0; si < steps.size(); ++si) {
      int max_vec = max_vector_width(k, steps[si]);
      PointwiseConfig cfg = default_pointwise_config(max_vec);
      std::vector<PointwiseConfig> space = pointwise_config_space(max_vec);
      size_t id = std::find(space.begin(), space.end(), cfg) - space.begin();
      lower_pointwise(m, k, steps[si], cfg, entry_name(k, si, id), nullptr);
    }
  }
  return stage == Stage::llvm ? module_text(m) : emit_ptx(m, arch);
}

}  // namespace kiln
