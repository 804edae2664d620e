// The kiln command line: one verb per subcommand, each a thin shell over a library.
//
// Every failure ends with a one-line reason on stderr and a non-zero exit: 1 for errors
// (a bad spec or argument, an unreadable file), 2 when `run` finds a wrong result, 3 for an
// internal error (a bug), 77 when `run` or `tune` finds no CUDA driver (so the test suite can
// report a skip). Arguments are checked before anything runs: a misspelled verb or option
// gets the nearest valid one as a suggestion, and --shape values are checked against the
// kernels' symbols (for `run` and `tune`, read from the bundle's manifest, no GPU needed).
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <set>
#include <sstream>

#include "autotune/tune.h"
#include "bundle/atomic_file.h"
#include "bundle/cache.h"
#include "bundle/manifest.h"
#include "bundle/shape_record.h"
#include "compiler/compile.h"
#include "compiler/schedule.h"
#include "compiler/toolkit.h"
#include "ir/text.h"
#include "tools/cache_command.h"
#include "tools/explain.h"
#include "tools/run.h"

namespace kiln {
namespace {

struct SpecFile {
  std::string path, text;
};

// Edit distance with adjacent transpositions (optimal string alignment), for "did you mean"
// suggestions: "prnue" is one edit from "prune".
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min(
          {d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

// The candidate nearest to `word` when it is near enough to be a plausible typo (at most a
// third of the longer name's letters differ), else "". Case differences count half.
std::string nearest(std::string_view word, const std::vector<std::string>& candidates) {
  auto lower = [](std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  };
  std::string best;
  size_t best_d = SIZE_MAX;
  if (word.starts_with("-") && (word.find_first_not_of('-') == std::string_view::npos ||
                                word.size() - word.find_first_not_of('-') < 2)) {
    return best;  // "-x": too short to guess from
  }
  for (const std::string& c : candidates) {
    size_t d = 2 * edit_distance(lower(word), lower(c)) + (lower(word) == lower(c) ? 1 : 0);
    // One letter differs from every other letter by one edit: only its other case counts.
    size_t longest = std::max(word.size(), c.size());
    size_t limit = longest == 1 ? 1 : 2 * std::max<size_t>(1, longest / 3);
    if (d <= limit && d < best_d) {
      best = c;
      best_d = d;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  std::string n = nearest(word, candidates);
  return n.empty() ? "" : fmt::format("; did you mean {}?", n);
}

// Parses and verifies a spec file; on an error prints a located diagnostic and returns null.
// A file without kernels is an error too: compiling it would make an empty bundle.
std::optional<Program> load_spec(const SpecFile& spec) {
  try {
    Program p = parse_program(spec.text);
    if (p.kernels.empty()) {
      fmt::print(stderr, "{}",
                 render_diagnostic(spec.path, spec.text, {},
                                   "no kernels in this file (a spec holds one or more "
                                   "'kernel NAME(inputs) -> (outputs) { ... }')"));
      return std::nullopt;
    }
    return p;
  } catch (const UserError& e) {
    fmt::print(stderr, "{}", render_diagnostic(spec.path, spec.text, e.loc(), e.what()));
    return std::nullopt;
  }
}

// Specs are small; anything past this is not one (and would otherwise be read whole).
constexpr size_t kMaxSpecBytes = size_t{64} << 20;

std::optional<SpecFile> read_spec(const std::string& path) {
  auto fail = [&](int err) -> std::optional<SpecFile> {
    fmt::print(stderr, "kiln: cannot read spec file '{}': {}\n", path, std::strerror(err));
    return std::nullopt;
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    int err = S_ISDIR(st.st_mode) ? EISDIR : errno;
    ::close(fd);
    return fail(err);
  }
  std::string text;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return fail(err);
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > kMaxSpecBytes) {  // /dev/zero, or a file that is not a spec
      ::close(fd);
      fmt::print(stderr, "kiln: cannot read spec file '{}': larger than {} MiB\n", path,
                 kMaxSpecBytes >> 20);
      return std::nullopt;
    }
  }
  ::close(fd);
  return SpecFile{path, std::move(text)};
}

// "M=4097,N=33" (also several --shape options) into symbol values: each NAME an identifier
// given once, each value an integer > 0.
std::optional<SymbolValues> parse_shape(const std::vector<std::string>& args) {
  SymbolValues out;
  for (const std::string& arg : args) {
    std::stringstream ss(arg);
    std::string item;
    bool any = false;
    while (std::getline(ss, item, ',') || !any) {
      any = true;
      size_t eq = item.find('=');
      std::string name = item.substr(0, std::min(eq, item.size()));
      int64_t v = 0;
      size_t used = 0;
      bool ok = eq != std::string::npos && !name.empty() &&
                (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_') &&
                std::all_of(name.begin(), name.end(), [](char c) {
                  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                });
      try {
        if (ok) v = std::stoll(item.substr(eq + 1), &used);
      } catch (const std::exception&) {
        ok = false;
      }
      if (!ok || used == 0 || used != item.size() - eq - 1 ||
          std::isspace(static_cast<unsigned char>(item[eq + 1]))) {
        fmt::print(stderr, "kiln: --shape: expected NAME=INTEGER, got '{}'\n", item);
        return std::nullopt;
      }
      if (v <= 0) {
        fmt::print(stderr, "kiln: --shape: {} must be > 0, got {}\n", name, v);
        return std::nullopt;
      }
      if (!out.emplace(name, v).second) {
        fmt::print(stderr, "kiln: --shape: {} is given twice\n", name);
        return std::nullopt;
      }
      if (ss.eof()) break;
    }
  }
  return out;
}

// A kernel's name and symbols, from a spec or a bundle's manifest.
struct KernelSymbols {
  std::string name;
  std::vector<std::string> symbols;
};

std::string symbols_text(const KernelSymbols& k) {
  return k.symbols.empty() ? "it has none"
                           : fmt::format("its symbols: {}", fmt::join(k.symbols, ", "));
}

// Checks `shape` against the kernels it is for. Every name must be a symbol of one of them;
// with `complete`, each kernel needs a value for each of its symbols. Returns the one-line
// reason for the first problem, or "".
std::string check_shape(const SymbolValues& shape, const std::vector<KernelSymbols>& kernels,
                        bool complete) {
  std::vector<std::string> all;
  for (const KernelSymbols& k : kernels) {
    for (const std::string& s : k.symbols) {
      if (std::find(all.begin(), all.end(), s) == all.end()) all.push_back(s);
    }
  }
  for (const auto& [name, v] : shape) {
    if (std::find(all.begin(), all.end(), name) != all.end()) continue;
    if (kernels.size() == 1) {
      return fmt::format("--shape: kernel {} has no symbol '{}' ({}){}", kernels[0].name, name,
                         symbols_text(kernels[0]), did_you_mean(name, all));
    }
    bool same = std::all_of(kernels.begin(), kernels.end(), [&](const KernelSymbols& k) {
      return k.symbols == kernels[0].symbols;
    });
    if (same) {
      return fmt::format("--shape: no kernel has a symbol '{}' (the {} kernels' symbols: {}){}",
                         name, kernels.size(), fmt::join(all, ", "), did_you_mean(name, all));
    }
    std::vector<std::string> each;
    for (const KernelSymbols& k : kernels) {
      each.push_back(
          fmt::format("{}: {}", k.name,
                      k.symbols.empty() ? "none" : fmt::format("{}", fmt::join(k.symbols, ", "))));
    }
    return fmt::format("--shape: no kernel has a symbol '{}' ({}){}", name, fmt::join(each, "; "),
                       did_you_mean(name, all));
  }
  if (!complete) return "";
  for (const KernelSymbols& k : kernels) {
    std::vector<std::string> missing;
    for (const std::string& s : k.symbols) {
      if (!shape.count(s)) missing.push_back(s);
    }
    if (!missing.empty()) {
      return fmt::format("--shape: kernel {} needs a value for {} ({})", k.name,
                         fmt::join(missing, " and "), symbols_text(k));
    }
  }
  return "";
}

// `several_archs`: --arch named more than one (the default's two are for bundles).
int compile_command(const std::string& spec_path, const std::string& out_dir,
                    std::vector<std::string> archs, bool several_archs, const std::string& emit,
                    bool default_only, int jobs) {
  if (std::string why = check_archs(archs); !why.empty()) {
    fmt::print(stderr, "kiln compile: --arch: {}\n", why);
    return 1;
  }
  std::optional<SpecFile> spec = read_spec(spec_path);
  if (!spec) return 1;
  std::optional<Program> program = load_spec(*spec);
  if (!program) return 1;
  try {
    if (!emit.empty()) {
      Stage stage = emit == "ir"         ? Stage::ir
                    : emit == "schedule" ? Stage::schedule
                    : emit == "plan"     ? Stage::plan
                    : emit == "llvm"     ? Stage::llvm
                    : emit == "header"   ? Stage::header
                                         : Stage::ptx;
      if (stage == Stage::ptx && several_archs) {
        fmt::print(stderr,
                   "kiln compile: --emit=ptx prints the PTX of one architecture; give one "
                   "--arch (got {})\n",
                   fmt::join(archs, ", "));
        return 1;
      }
      std::string text = emit_stage(*program, stage, archs.front());
      if (out_dir.empty()) {
        fmt::print("{}", text);
        return 0;
      }
      // Through a temporary and a rename: an interrupted or failed write leaves the old file.
      if (Status s = files::write_atomically(out_dir, text); !s.ok()) {
        fmt::print(stderr, "kiln compile: {}\n", s.message());
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

int explain_command(const std::string& spec_path, const std::string& kernel,
                    const std::vector<std::string>& shapes, int sms) {
  std::optional<SpecFile> spec = read_spec(spec_path);
  if (!spec) return 1;
  std::optional<Program> program = load_spec(*spec);
  if (!program) return 1;
  std::optional<SymbolValues> sizes = parse_shape(shapes);
  if (!sizes) return 1;
  std::vector<const KernelDef*> chosen;
  std::vector<KernelSymbols> symbols;
  std::vector<std::string> names;
  for (const KernelDef& k : program->kernels) {
    names.push_back(k.name);
    if (!kernel.empty() && k.name != kernel) continue;
    chosen.push_back(&k);
    symbols.push_back({k.name, k.symbols()});
  }
  if (chosen.empty()) {
    fmt::print(stderr, "kiln explain: --kernel: {} has no kernel '{}' (it has: {}){}\n", spec_path,
               kernel, fmt::join(names, ", "), did_you_mean(kernel, names));
    return 1;
  }
  // Without --shape each step's rule names the symbols it depends on; with it, every symbol
  // needs its value (a partial shape would silently explain another case).
  if (std::string why = check_shape(*sizes, symbols, !shapes.empty()); !why.empty()) {
    fmt::print(stderr, "kiln explain: {}\n", why);
    return 1;
  }
  try {
    // Split variants need stream-ordered allocation, which every GPU Kiln targets has.
    const bundle::DeviceFacts device{sms, /*memory_pools=*/true};
    for (size_t i = 0; i < chosen.size(); ++i) {
      fmt::print("{}{}", i ? "\n" : "", explain_kernel(*chosen[i], *sizes, device));
    }
    return 0;
  } catch (const UserError& e) {
    fmt::print(stderr, "{}", render_diagnostic(spec->path, spec->text, e.loc(), e.what()));
    return 1;
  }
}

// The kernels of a bundle that `kernel` selects (all when empty), from its manifest: `run`
// and `tune` check their arguments before they open the driver. Prints the reason and returns
// nullopt when the manifest cannot be read or has no such kernel.
std::optional<std::vector<KernelSymbols>> bundle_kernels(std::string_view verb,
                                                         const std::string& dir,
                                                         const std::string& kernel) {
  Result<bundle::Manifest> m = bundle::read_manifest(dir);
  if (!m.ok()) {
    fmt::print(stderr, "kiln {}: {}\n", verb, m.message());
    return std::nullopt;
  }
  std::vector<KernelSymbols> out;
  std::vector<std::string> names;
  for (const bundle::KernelInfo& k : m->kernels) {
    names.push_back(k.name);
    if (kernel.empty() || k.name == kernel) out.push_back({k.name, k.symbols});
  }
  if (out.empty()) {
    fmt::print(stderr, "kiln {}: bundle {} has no kernel '{}' (it has: {}){}\n", verb, dir, kernel,
               fmt::join(names, ", "), did_you_mean(kernel, names));
    return std::nullopt;
  }
  return out;
}

// ---- command line errors --------------------------------------------------------------------

std::vector<std::string> subcommand_names(CLI::App* app) {
  std::vector<std::string> out;
  for (CLI::App* sub : app->get_subcommands({})) out.push_back(sub->get_name());
  return out;
}

std::vector<std::string> option_names(CLI::App* app) {
  std::vector<std::string> out;
  for (const CLI::Option* o : app->get_options()) {
    for (const std::string& n : o->get_lnames()) out.push_back("--" + n);
    for (const std::string& n : o->get_snames()) out.push_back("-" + n);
  }
  return out;
}

bool has_option(CLI::App* app, const std::string& arg) {
  std::vector<std::string> names = option_names(app);
  std::string name = arg.substr(0, arg.find('='));
  if (arg.rfind("--", 0) != 0 && arg.size() > 2) name = arg.substr(0, 2);  // -j8
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool looks_like_number(const std::string& s) {
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return end != s.c_str() && *end == '\0';
}

// One line for a command line CLI11 refused: an unknown verb or option gets the nearest valid
// one; anything else is CLI11's reason, prefixed with the verb.
std::string argument_error(CLI::App& app, int argc, char** argv, const CLI::ParseError& e) {
  CLI::App* at = &app;
  std::string path = "kiln";
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") break;
    if (arg.size() > 1 && arg[0] == '-' && !looks_like_number(arg)) {
      if (has_option(at, arg)) continue;
      std::string name = arg.substr(0, arg.find('='));
      return fmt::format("{}: unknown option '{}'{}{}", path, arg,
                         did_you_mean(name, option_names(at)),
                         fmt::format(" (see {} --help)", path));
    }
    std::vector<std::string> subs = subcommand_names(at);
    if (subs.empty()) continue;
    CLI::App* sub = nullptr;
    for (CLI::App* s : at->get_subcommands({})) {
      if (s->check_name(arg)) sub = s;
    }
    if (sub == nullptr && at->get_require_subcommand_min() > 0) {
      return fmt::format("{}: unknown command '{}' (commands: {}; see {} --help){}", path, arg,
                         fmt::join(subs, ", "), path, did_you_mean(arg, subs));
    }
    if (sub != nullptr) {
      at = sub;
      path += " " + sub->get_name();
    }
  }
  std::string what = e.what();
  std::replace(what.begin(), what.end(), '\n', ' ');
  while (!what.empty() && what.back() == ' ') what.pop_back();
  if (at->get_require_subcommand_min() > 0 && what.find("subcommand") != std::string::npos) {
    return fmt::format("{}: a command is required (commands: {}; see {} --help)", path,
                       fmt::join(subcommand_names(at), ", "), path);
  }
  if (!what.empty()) what[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(what[0])));
  return fmt::format("{}: {}", path, what);
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
  compile
      ->add_option("--arch", archs,
                   fmt::format("target architectures ({})", fmt::join(supported_archs(), ", ")))
      ->delimiter(',')
      ->check([](const std::string& a) -> std::string {
        if (a.rfind("sm_", 0) != 0 || a.size() < 5 ||
            !std::all_of(a.begin() + 3, a.end() - (a.back() == 'a'), ::isdigit))
          return "expected an architecture like sm_90, got '" + a + "'";
        return check_archs({a});
      });
  compile->add_option("--emit", emit, "print one stage to stdout instead of writing a bundle")
      ->check(CLI::IsMember({"ir", "schedule", "plan", "llvm", "ptx", "header"}));
  compile->add_flag("--default-only", default_only, "compile only each kernel's default variant");
  compile->add_option("-j,--jobs", jobs, "compile threads (default: one per CPU)")
      ->check(CLI::Range(0, 256));

  // kiln explain
  CLI::App* explain = app.add_subcommand(
      "explain", "show how each kernel is split into GPU kernels, their kinds, and why not fewer");
  std::string explain_spec, explain_kernel;
  std::vector<std::string> explain_shapes;
  explain->add_option("spec", explain_spec, "the spec file (.kiln)")->required();
  explain->add_option("--kernel", explain_kernel, "explain only this kernel");
  explain->add_option("--shape", explain_shapes,
                      "symbol values: say which variant runs at these sizes, e.g. M=4096,N=1024");
  int explain_sms = 132;
  explain
      ->add_option("--sms", explain_sms,
                   "the GPU's SM count the split rule is evaluated with (default 132: H100 "
                   "SXM, H200)")
      ->check(CLI::Range(1, 1024));

  // kiln tune
  CLI::App* tune_cmd = app.add_subcommand(
      "tune", "benchmark a bundle's variants on the GPU and record the winners in a cache");
  TuneOptions to;
  std::vector<std::string> tune_shapes;
  std::string tune_kernel, shapes_from, shard_text;
  bool no_descent = false, quiet = false;
  tune_cmd->add_option("bundles", to.bundles, "bundle directories (one or more)")->required();
  tune_cmd->add_option("--shape", tune_shapes,
                       "a shape to tune for, e.g. M=32768,N=1024 (repeatable)");
  tune_cmd->add_option("--shapes-from", shapes_from,
                       "tune the shapes recorded in this file (KILN_RECORD_SHAPES)");
  tune_cmd->add_option("--shard", shard_text,
                       "tune only shard I of N of the (kernel, shape) list, e.g. 0/4");
  tune_cmd->add_option("-c,--cache", to.cache_path, "the autotune cache file (created if missing)")
      ->required();
  tune_cmd->add_option("--kernel", tune_kernel, "tune only this kernel");
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
                "also time a device-to-device copy of at least 1 GiB (the peak copy bandwidth)");
  run->add_option("--json", ro.json_out, "write the results as JSON to this file");
  run->add_option("--inputs", ro.inputs,
                  "float inputs: random (default, or $KILN_RUN_INPUTS), specials (NaN and "
                  "infinities placed from the seed) or neginf_rows (some rows entirely -inf)")
      ->check(CLI::IsMember({"random", "specials", "neginf_rows"}));
  run->add_option("-c,--cache", ro.cache_path, "launch the tuned winners of this autotune cache");
  std::vector<std::string> scalar_args;
  run->add_option("--scalar", scalar_args,
                  "a scalar parameter's value, e.g. eps=1e-5 (repeatable; others are random)");
  std::vector<std::string> stride_args;
  run->add_option("--strides", stride_args,
                  "a strided input's view, in elements, e.g. x=1,33 or x=contiguous (repeatable; "
                  "others are transposed and padded)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help and --version
    fmt::print(stderr, "{}\n", argument_error(app, argc, argv, e));
    return 1;
  }
  try {
    if (*compile) {
      bool several = compile->count("--arch") > 0 && archs.size() > 1;
      return compile_command(spec, out_dir, archs, several, emit, default_only, jobs);
    }
    if (*explain) return explain_command(explain_spec, explain_kernel, explain_shapes, explain_sms);
    if (*tune_cmd) {
      // The kernels of every bundle named (with --kernel, that one, which some bundle has).
      std::optional<std::vector<KernelSymbols>> kernels;
      if (to.bundles.size() == 1) {
        kernels = bundle_kernels("tune", to.bundles[0], tune_kernel);
        if (!kernels) return 1;
      } else {
        kernels.emplace();
        for (const std::string& dir : to.bundles) {
          std::optional<std::vector<KernelSymbols>> k = bundle_kernels("tune", dir, "");
          if (!k) return 1;
          for (KernelSymbols& ks : *k) {
            if (tune_kernel.empty() || ks.name == tune_kernel) kernels->push_back(std::move(ks));
          }
        }
        if (kernels->empty()) {
          fmt::print(stderr, "kiln tune: none of the {} bundles has a kernel '{}'\n",
                     to.bundles.size(), tune_kernel);
          return 1;
        }
      }
      if (tune_shapes.empty() && shapes_from.empty()) {
        fmt::print(stderr, "kiln tune: give --shape M=..,N=.. or --shapes-from FILE\n");
        return 1;
      }
      std::optional<std::pair<int, int>> shard_of;
      if (!shard_text.empty()) {
        std::string why;
        shard_of = parse_shard(shard_text, &why);
        if (!shard_of) {
          fmt::print(stderr, "kiln tune: {}\n", why);
          return 1;
        }
      }
      std::vector<SymbolValues> given;
      for (const std::string& sh : tune_shapes) {
        std::optional<SymbolValues> s = parse_shape({sh});
        if (!s) return 1;
        // A shape is tuned for each kernel whose symbols it binds (the others say "skipped"):
        // every name must be some kernel's symbol, and some kernel must be bound.
        std::string why = check_shape(*s, *kernels, false);
        bool binds_one = std::any_of(kernels->begin(), kernels->end(), [&](const KernelSymbols& k) {
          return check_shape(*s, {k}, true).empty();
        });
        if (why.empty() && !binds_one) {
          why = kernels->size() == 1
                    ? check_shape(*s, *kernels, true)
                    : fmt::format(
                          "--shape {}: no kernel of the bundle gets a value for each of "
                          "its symbols; name one with --kernel to see what it needs",
                          sh);
        }
        if (!why.empty()) {
          fmt::print(stderr, "kiln tune: {}\n", why);
          return 1;
        }
        given.push_back(*s);
      }
      std::vector<bundle::Manifest> manifests;
      for (const std::string& dir : to.bundles) {
        Result<bundle::Manifest> manifest = bundle::read_manifest(dir);
        if (!manifest.ok()) {
          fmt::print(stderr, "kiln tune: {}\n", manifest.message());
          return 1;
        }
        manifests.push_back(std::move(manifest.value()));
      }
      JobList jobs = jobs_from_shapes(manifests, tune_kernel, given);
      if (!shapes_from.empty()) {
        Result<std::vector<shapes::Recorded>> recorded = shapes::read(shapes_from);
        if (!recorded.ok()) {
          fmt::print(stderr, "kiln tune: {}\n", recorded.message());
          return 1;
        }
        JobList more = jobs_from_recorded(manifests, tune_kernel, *recorded, shapes_from);
        jobs.skipped.insert(jobs.skipped.end(), more.skipped.begin(), more.skipped.end());
        jobs.jobs.insert(jobs.jobs.end(), more.jobs.begin(), more.jobs.end());
        std::sort(jobs.jobs.begin(), jobs.jobs.end());
        jobs.jobs.erase(std::unique(jobs.jobs.begin(), jobs.jobs.end()), jobs.jobs.end());
        fmt::print("{}: {} lines, {} distinct (kernel, shape) pairs to tune\n", shapes_from,
                   recorded->size(), more.jobs.size());
      }
      for (const std::string& line : jobs.skipped) fmt::print("{}\n", line);
      to.jobs = jobs.jobs;
      if (shard_of) {
        to.jobs = shard(jobs.jobs, shard_of->first, shard_of->second);
        fmt::print("shard {}/{}: {} of {} (kernel, shape) pairs\n", shard_of->first,
                   shard_of->second, to.jobs.size(), jobs.jobs.size());
      }
      // The cache is read before the GPU is opened: a corrupt or foreign file is refused
      // the same way with or without one (a missing file is created).
      if (Result<cache::Cache> c = cache::load(to.cache_path); !c.ok()) {
        fmt::print(stderr, "kiln tune: {}\n", c.message());
        return 1;
      }
      if (to.jobs.empty()) {  // e.g. a shard of fewer jobs than shards
        fmt::print("nothing to tune\n");
        return 0;
      }
      to.manifests = std::move(manifests);
      to.descent = !no_descent;
      to.progress = !quiet && isatty(2);
      return tune(to);
    }
    if (app.got_subcommand("cache")) return run_cache_commands(app);
    if (*run) {
      std::optional<SymbolValues> s = parse_shape(shapes);
      if (!s) return 1;
      for (const std::string& a : scalar_args) {
        const size_t eq = a.find('=');
        if (eq == 0 || eq == std::string::npos || eq + 1 == a.size()) {
          fmt::print(stderr, "kiln run: --scalar: expected NAME=VALUE, got '{}'\n", a);
          return 1;
        }
        ro.scalars[a.substr(0, eq)] = a.substr(eq + 1);
      }
      for (const std::string& a : stride_args) {
        const size_t eq = a.find('=');
        std::vector<int64_t> view;
        bool ok = eq != 0 && eq != std::string::npos && eq + 1 < a.size();
        if (ok && a.substr(eq + 1) != "contiguous") {
          std::string_view rest = std::string_view(a).substr(eq + 1);
          while (ok) {
            const size_t comma = rest.find(',');
            const std::string_view part = rest.substr(0, comma);
            int64_t v = 0;
            auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
            ok = ec == std::errc() && ptr == part.data() + part.size() && !part.empty();
            view.push_back(v);
            if (comma == std::string_view::npos) break;
            rest = rest.substr(comma + 1);
          }
        }
        if (!ok) {
          fmt::print(stderr,
                     "kiln run: --strides: expected NAME=S0,S1,... or NAME=contiguous, got '{}'\n",
                     a);
          return 1;
        }
        ro.strides[a.substr(0, eq)] = std::move(view);
      }
      std::optional<std::vector<KernelSymbols>> kernels =
          bundle_kernels("run", ro.bundle, ro.kernel);
      if (!kernels) return 1;
      if (std::string why = check_shape(*s, *kernels, true); !why.empty()) {
        fmt::print(stderr, "kiln run: {}\n", why);
        return 1;
      }
      // A cache to launch the winners of must exist: a typo is not an empty cache.
      if (!ro.cache_path.empty()) {
        Result<cache::Cache> c = cache::load_existing(ro.cache_path);
        if (!c.ok()) {
          fmt::print(stderr, "kiln run: -c: {}\n", c.message());
          return 1;
        }
      }
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
