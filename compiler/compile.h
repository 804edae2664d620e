// The compiler's pipeline, one stage per line, each printable with `kiln compile --emit=`:
//   spec kernel (ir) -> fusion schedule (schedule) -> kernel plan (plan: steps, variants and
//   the rule that picks one) -> LLVM IR per variant (llvm) -> PTX (ptx) -> cubin -> bundle.
// `kiln compile` is a thin shell over this file.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "bundle/manifest.h"
#include "bundle/status.h"
#include "compiler/config.h"
#include "ir/program.h"

namespace kiln {

/// The architectures Kiln compiles for, oldest first: those both LLVM 19's NVPTX backend and
/// the CUDA toolkit's nvJitLink target, from sm_80 on (the code generator's bf16 conversions,
/// `createpolicy` and cache-hinted loads need sm_80). PTX for the newest of them also runs on
/// later GPUs through the driver's JIT.
const std::vector<std::string>& supported_archs();

/// Empty when every one of `archs` is supported and none is listed twice; else a one-line
/// reason that lists the supported ones ("unsupported architecture 'sm_100' (Kiln compiles
/// for ...)").
std::string check_archs(const std::vector<std::string>& archs);

struct CompileOptions {
  std::vector<std::string> archs{"sm_80", "sm_90"};
  bool all_variants = true;  // false: only each step's heuristic default
  bool assemble = true;      // also assemble cubins (else PTX only)
  int jobs = 0;              // compile threads; 0 = one per hardware thread
};

/// A bundle in memory: its manifest and the contents of every file it names.
struct CompiledBundle {
  bundle::Manifest manifest;
  std::map<std::string, std::string> files;
  std::vector<std::string> warnings;  // e.g. "no cubin for sm_90: nvJitLink not found"
};

/// Compiles every kernel of a verified program. Throws UserError for constructs the code
/// generator does not support (with their source location) and for archs check_archs
/// refuses.
CompiledBundle compile_program(const Program& p, const CompileOptions& opts);

/// Compiles one more variant, `id`, of step `step` of kernel `k` with `cfg` for `archs` (the
/// autotuner's configurations beyond the precompiled grid), as entry `entry` (files
/// ENTRY.ARCH.ptx and ENTRY.ARCH.cubin, added to `files`). Throws std::runtime_error when a
/// cubin cannot be assembled.
bundle::Variant compile_variant(const KernelDef& k, size_t step, const PointwiseConfig& cfg, int id,
                                const std::string& entry, const std::vector<std::string>& archs,
                                std::map<std::string, std::string>& files);

/// Writes a bundle directory: every file, then manifest.json last, each through a temporary
/// file of its own (bundle/atomic_file.h) and a rename, so a reader never sees a
/// half-written bundle; under the bundle's lock, DIR/manifest.json.lock, which add_variant
/// also takes.
Status write_bundle(const CompiledBundle& b, const std::string& dir);

/// Adds the variant of step `step` of kernel `k` with `cfg` to the bundle in `dir` (for
/// `kiln tune`) and returns its id. Under the bundle's lock it re-reads the manifest: a
/// variant with this config that another process added is reused; else the next id is
/// compiled (compile_variant, which may throw) under an entry name that no variant of the
/// bundle uses (so no file of another variant is overwritten, whatever the manifest's
/// numbering) and its files and the manifest are written as write_bundle does. Safe with several
/// processes and threads adding at once. Fails when the bundle cannot be read or written, or no
/// longer has kernel `k` as it was.
Result<int> add_variant(const std::string& dir, const KernelDef& k, size_t step,
                        const PointwiseConfig& cfg);

enum class Stage { ir, schedule, plan, llvm, ptx, header };
/// The text of one stage for every kernel (for the default variant of each step, and for a
/// row reduction with fused variants the default's fused copy after it): the
/// canonical IR, the fusion schedule (compiler/schedule.h), the kernel plan
/// (compiler/kernel_plan.h), the LLVM IR as lowered (before optimization), the PTX for
/// `arch`, or the typed launchers (compiler/header.h, in namespace `kiln_kernels`). Throws
/// UserError for an arch check_archs refuses.
std::string emit_stage(const Program& p, Stage stage, const std::string& arch);

}  // namespace kiln
