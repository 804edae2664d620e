// The kiln command line: one verb per subcommand, each a thin shell over a library.
//
// Every failure ends with a one-line reason on stderr and a non-zero exit: 1 for errors
// (a bad spec or argument, an unreadable file), 2 when `run` finds a wrong result, 77 when
// `run` finds no CUDA driver or device (so the test suite can report a skip).
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fstream>
#include <sstream>

#include "autotune/tune.h"
#include "compiler/compile.h"
#include "compiler/schedule.h"
#include "compiler/toolkit.h"
#include "ir/text.h"
#include "tools/cache_command.h"
#include "tools/run.h"

namespace kiln {
namespace {

struct SpecFile {
  std::string path, text;
};

// Parses and verifies a spec file; on an error prints a located diagnostic and returns null.
std::optional<Program> load_spec(const SpecFile& spec) {
  try {
    return parse_program(spec.text);
  } catch (const UserError& e) {
    fmt::print(stderr, "{}", render_diagnostic(spec.path, spec.text, e.loc(), e.what()));
    return std::nullopt;
  }
}

std::optional<SpecFile> read_spec(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    fmt::print(stderr, "kiln: cannot read spec file '{}'\n", path);
    return std::nullopt;
  }
  std::stringstream ss;
  ss << f.rdbuf();
  return SpecFile{path, ss.str()};
}

// "M=4097,N=33" (also several --shape options) into symbol values.
std::optional<SymbolValues> parse_shape(const std::vector<std::string>& args) {
  SymbolValues out;
  for (const std::string& arg : args) {
    std::stringstream ss(arg);
    for (std::string item; std::getline(ss, item, ',');) {
      size_t eq = item.find('=');
      std::string name = item.substr(0, eq);
      int64_t v = 0;
      size_t used = 0;
      bool ok = eq != std::string::npos && !name.empty();
      try {
        if (ok) v = std::stoll(item.substr(eq + 1), &used);
      } catch (const std::exception&) {
        ok = false;
      }
      if (!ok || used != item.size() - eq - 1) {
        fmt::print(stderr, "kiln: --shape: expected NAME=INTEGER, got '{}'\n", item);
        return std::nullopt;
      }
      out[name] = v;
    }
  }
  return out;
}

int compile_command(const std::string& spec_path, const std::string& out_dir,
                    std::vector<std::string> archs, const std::string& emit, bool default_only,
                    int jobs) {
  std::optional<SpecFile> spec = read_spec(spec_path);
  if (!spec) return 1;
  std::optional<Program> program = load_spec(*spec);
  if (!program) return 1;
  try {
    if (!emit.empty()) {
      Stage stage = emit == "ir"         ? Stage::ir
                    : emit == "schedule" ? Stage::schedule
                    : emit == "llvm"     ? Stage::llvm
                    : emit == "header"   ? Stage::header
                                         : Stage::ptx;
      std::string text = emit_stage(*program, stage, archs.front());
      if (out_dir.empty()) {
        fmt::print("{}", text);
        return 0;
      }
      std::ofstream f(out_dir, std::ios::binary | std::ios::trunc);
      f << text;
      if (!f.flush()) {
        fmt::print(stderr, "kiln compile: cannot write {}\n", out_dir);
        return 1;
      }
      return 0;
    }
    if (out_dir.empty()) {
      fmt::print(stderr, "kiln compile: -o BUNDLE is required unless --emit is given\n");
      return 1;
    }
    CompileOptions opts;
    opts.archs = archs;
    opts.all_variants = !default_only;
    opts.jobs = jobs;
    CompiledBundle b = compile_program(*program, opts);
    for (const std::string& w : b.warnings) fmt::print(stderr, "kiln compile: warning: {}\n", w);
    if (Status s = write_bundle(b, out_dir); !s.ok()) {
      fmt::print(stderr, "kiln compile: {}\n", s.message());
      return 1;
    }
    size_t variants = 0;
    for (const auto& k : b.manifest.kernels) {
      for (const auto& st : k.steps) variants += st.variants.size();
    }
    fmt::print("wrote {}: {} kernel(s), {} variant(s) for {}\n", out_dir, b.manifest.kernels.size(),
               variants, fmt::join(archs, ", "));
    return 0;
  } catch (const UserError& e) {
    fmt::print(stderr, "{}", render_diagnostic(spec->path, spec->text, e.loc(), e.what()));
    return 1;
  }
}

int explain_command(const std::string& spec_path, const std::vector<std::string>& shapes) {
  std::optional<SpecFile> spec = read_spec(spec_path);
  if (!spec) return 1;
  std::optional<Program> program = load_spec(*spec);
  if (!program) return 1;
  std::optional<SymbolValues> sizes = parse_shape(shapes);
  if (!sizes) return 1;
  try {
    for (size_t i = 0; i < program->kernels.size(); ++i) {
      ScheduleOptions opts;
      opts.sizes = *sizes;
      fmt::print("{}{}", i ? "\n" : "",
                 explain_schedule(schedule_kernel(program->kernels[i], opts)));
    }
    return 0;
  } catch (const UserError& e) {
    fmt::print(stderr, "{}", render_diagnostic(spec->path, spec->text, e.loc(), e.what()));
    return 1;
  }
}

}  // namespace
}  // namespace kiln

int main(int argc, char** argv) {
  using namespace kiln;
  CLI::App app{"kiln: an ahead-of-time GPU kernel compiler with an autotuning cache"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("kiln ") + KILN_VERSION);

  // kiln compile
  CLI::App* compile =
      app.add_subcommand("compile", "compile a spec into a bundle of PTX and cubin variants");
  std::string spec, out_dir, emit;
  std::vector<std::string> archs{"sm_80", "sm_90"};
  bool default_only = false;
  int jobs = 0;
  compile->add_option("spec", spec, "the spec file (.kiln)")->required();
  compile->add_option("-o,--output", out_dir,
                      "bundle directory to write (with --emit: a file for the text)");
  compile->add_option("--arch", archs, "target architectures (sm_80, sm_90, ...)")
      ->delimiter(',')
      ->check([](const std::string& a) -> std::string {
        if (a.rfind("sm_", 0) == 0 && a.size() >= 5 &&
            std::all_of(a.begin() + 3, a.end(), ::isdigit))
          return "";
        return "expected an architecture like sm_90, got '" + a + "'";
      });
  compile->add_option("--emit", emit, "print one stage to stdout instead of writing a bundle")
      ->check(CLI::IsMember({"ir", "schedule", "llvm", "ptx", "header"}));
  compile->add_flag("--default-only", default_only, "compile only each kernel's default variant");
  compile->add_option("-j,--jobs", jobs, "compile threads (default: one per CPU)")
      ->check(CLI::Range(0, 256));

  // kiln explain
  CLI::App* explain = app.add_subcommand(
      "explain", "show how each kernel is split into GPU kernels, their kinds, and why not fewer");
  std::string explain_spec;
  std::vector<std::string> explain_shapes;
  explain->add_option("spec", explain_spec, "the spec file (.kiln)")->required();
  explain->add_option("--shape", explain_shapes,
                      "symbol values to decide kinds with, e.g. M=4096,N=1024");

  // kiln tune
  CLI::App* tune_cmd = app.add_subcommand(
      "tune", "benchmark a bundle's variants on the GPU and record the winners in a cache");
  TuneOptions to;
  std::vector<std::string> tune_shapes;
  bool no_descent = false, quiet = false;
  tune_cmd->add_option("bundle", to.bundle, "bundle directory")->required();
  tune_cmd
      ->add_option("--shape", tune_shapes, "a shape to tune for, e.g. M=32768,N=1024 (repeatable)")
      ->required();
  tune_cmd->add_option("-c,--cache", to.cache_path, "the autotune cache file (created if missing)")
      ->required();
  tune_cmd->add_option("--kernel", to.kernel, "tune only this kernel");
  tune_cmd->add_flag("--deterministic", to.deterministic,
                     "only accept configs whose results are bitwise those of the default");
  tune_cmd->add_flag("--force", to.force, "re-tune shapes the cache already has");
  tune_cmd->add_flag("--no-descent", no_descent, "time only the precompiled variants");
  tune_cmd->add_flag("-q,--quiet", quiet, "no progress line, even on a terminal");

  // kiln cache
  add_cache_commands(app);

  // kiln run
  CLI::App* run = app.add_subcommand(
      "run", "launch a kernel on random inputs, check it against the CPU interpreter, time it");
  RunOptions ro;
  std::vector<std::string> shapes;
  bool no_check = false;
  run->add_option("bundle", ro.bundle, "bundle directory")->required();
  run->add_option("kernel", ro.kernel, "kernel name")->required();
  run->add_option("--shape", shapes, "symbol values, e.g. M=4097,N=33");
  run->add_option("--variant", ro.variant,
                  "default, all (each step's variants, the others at their default), or a "
                  "variant id");
  run->add_option("--seed", ro.seed, "random seed for the inputs");
  run->add_option("--reps", ro.reps, "timed launches (default: about 200 ms worth)")
      ->check(CLI::Range(1, 1000000));
  run->add_option("--rtol", ro.rtol, "relative error allowed (default by output dtype)")
      ->check(CLI::Range(0.0, 1.0));
  run->add_flag("--no-check", no_check, "skip the comparison with the interpreter");
  run->add_flag("--copy-baseline", ro.copy_baseline,
                "also time a device-to-device copy of the same bytes");
  run->add_option("--json", ro.json_out, "write the results as JSON to this file");
  run->add_option("-c,--cache", ro.cache_path, "launch the tuned winners of this autotune cache");

  auto is_verb = [&](const char* name) {
    auto verbs = app.get_subcommands([&](CLI::App* sub) { return sub->check_name(name); });
    return !verbs.empty();
  };
  if (argc > 1 && argv[1][0] != '-' && !is_verb(argv[1])) {
    fmt::print(stderr,
               "kiln: unknown command '{}' (commands: compile, explain, run, tune, cache; see kiln "
               "--help)\n",
               argv[1]);
    return 1;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 1;  // --help and --version exit 0
  }
  try {
    if (*compile) return compile_command(spec, out_dir, archs, emit, default_only, jobs);
    if (*explain) return explain_command(explain_spec, explain_shapes);
    if (*tune_cmd) {
      for (const std::string& sh : tune_shapes) {
        std::optional<SymbolValues> s = parse_shape({sh});
        if (!s) return 1;
        to.shapes.push_back(*s);
      }
      to.descent = !no_descent;
      to.progress = !quiet && isatty(2);
      return tune(to);
    }
    if (app.got_subcommand("cache")) return run_cache_commands(app);
    if (*run) {
      std::optional<SymbolValues> s = parse_shape(shapes);
      if (!s) return 1;
      ro.shape = *s;
      ro.check = !no_check;
      return run_kernel(ro);
    }
  } catch (const InternalError& e) {
    fmt::print(stderr, "kiln: {}\n", e.what());
    return 3;
  } catch (const std::exception& e) {
    fmt::print(stderr, "kiln: {}\n", e.what());
    return 1;
  }
  return 1;
}
