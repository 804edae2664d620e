// See toolkit.h.
#include "compiler/toolkit.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <llvm/BinaryFormat/ELF.h>
#include <llvm/Object/ELF.h>
#include <nvJitLink.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <regex>
#include <sstream>

#ifndef KILN_DEFAULT_CUDA_ROOT
#define KILN_DEFAULT_CUDA_ROOT "/usr/local/cuda"
#endif

namespace kiln {
namespace {

// The nvJitLink entry points, resolved by their unversioned exported names.
struct JitLinkApi {
  decltype(&__nvJitLinkCreate_13_0) create = nullptr;
  decltype(&__nvJitLinkDestroy_13_0) destroy = nullptr;
  decltype(&__nvJitLinkAddData_13_0) add_data = nullptr;
  decltype(&__nvJitLinkComplete_13_0) complete = nullptr;
  decltype(&__nvJitLinkGetLinkedCubinSize_13_0) cubin_size = nullptr;
  decltype(&__nvJitLinkGetLinkedCubin_13_0) cubin = nullptr;
  decltype(&__nvJitLinkGetErrorLogSize_13_0) error_log_size = nullptr;
  decltype(&__nvJitLinkGetErrorLog_13_0) error_log = nullptr;
  decltype(&__nvJitLinkGetInfoLogSize_13_0) info_log_size = nullptr;
  decltype(&__nvJitLinkGetInfoLog_13_0) info_log = nullptr;
  std::string error;  // why it could not be loaded
};

const JitLinkApi& jitlink() {
  static std::once_flag once;
  static JitLinkApi api;
  std::call_once(once, [] {
    std::string path = cuda_root() + "/lib64/libnvJitLink.so";
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) lib = dlopen("libnvJitLink.so.13", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      api.error = fmt::format("libnvJitLink not found at {} ({})", path, dlerror());
      return;
    }
    auto sym = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      if (!fn && api.error.empty()) api.error = fmt::format("libnvJitLink lacks {}", name);
    };
    sym(api.create, "nvJitLinkCreate");
    sym(api.destroy, "nvJitLinkDestroy");
    sym(api.add_data, "nvJitLinkAddData");
    sym(api.complete, "nvJitLinkComplete");
    sym(api.cubin_size, "nvJitLinkGetLinkedCubinSize");
    sym(api.cubin, "nvJitLinkGetLinkedCubin");
    sym(api.error_log_size, "nvJitLinkGetErrorLogSize");
    sym(api.error_log, "nvJitLinkGetErrorLog");
    sym(api.info_log_size, "nvJitLinkGetInfoLogSize");
    sym(api.info_log, "nvJitLinkGetInfoLog");
  });
  return api;
}

int log_number(const std::string& log, const char* pattern) {
  std::smatch m;
  if (std::regex_search(log, m, std::regex(pattern))) return std::stoi(m[1]);
  return 0;
}

// The assembler's numbers for `entry`: its part of the log, from "Compiling entry function
// 'entry'" to the next entry's, when it names the entry; else the first numbers of the log.
//
// nvJitLink keeps what ptxas made in the CUDA compute cache (~/.nv/ComputeCache) on a machine
// with a driver, and when the cache answers no ptxas runs: its info log then holds only the
// link's summary ("used 48 registers, ... 0 bytes lmem"), never ptxas's report. Measured on the
// H200 machine (bench/results/2026-11-29-h200-lead-last, call 2 and the probe after it): the
// same PTX linked twice in one process gave the report once; a bundle compiled a second time
// recorded 0 registers for every variant, and the occupancy hint then kept an image that
// spills. So an image whose log has no report takes the registers from the cubin and counts its
// local frame as spills (an upper bound: every spill slot is in the frame).
void read_numbers(Cubin& c, const std::string& entry) {
  std::string log = c.info_log;
  const std::string head = "Compiling entry function '";
  const bool report = log.find(head) != std::string::npos;
  if (size_t at = log.find(head + entry + "'"); !entry.empty() && at != std::string::npos) {
    const size_t end = log.find(head, at + head.size());
    log = log.substr(at, end == std::string::npos ? std::string::npos : end - at);
  }
  c.registers = log_number(log, R"(Used (\d+) registers)");
  c.spill_bytes = log_number(log, R"((\d+) bytes spill stores)") +
                  log_number(log, R"((\d+) bytes spill loads)");
  c.shared_bytes = log_number(log, R"((\d+) bytes smem)");
  if (report) return;
  if (const CubinFacts f = cubin_facts(c.bytes, entry); f.found) {
    c.registers = f.registers;
    c.spill_bytes = f.frame_bytes;
  }
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A directory of its own under $TMPDIR (or /tmp), removed with everything in it on exit.
class TempDir {
 public:
  TempDir() {
    const char* t = std::getenv("TMPDIR");
    for (std::string root : {std::string(t && *t ? t : "/tmp"), std::string("/tmp")}) {
      std::string tmpl = root + "/kiln-ptxas-XXXXXX";
      if (::mkdtemp(tmpl.data())) {
        path_ = tmpl;
        return;
      }
      error_ =
          fmt::format("cannot create a temporary directory in {}: {}", root, std::strerror(errno));
    }
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  const std::string& error() const { return error_; }

 private:
  std::filesystem::path path_;
  std::string error_;
};

// The toolkit's ptxas, whole-program: `ptxas -arch=ARCH -O3 -v kernel.ptx -o kernel.cubin`,
// its output (the -v report, or the errors) in the log.
Result<Cubin> ptxas_cubin(const std::string& ptxas, const std::string& ptx, const std::string& arch,
                          const std::string& entry) {
  TempDir dir;
  if (dir.path().empty()) return Status::error("ptxas: " + dir.error());
  const std::filesystem::path in = dir.path() / "kernel.ptx", out = dir.path() / "kernel.cubin",
                              log = dir.path() / "ptxas.log";
  {
    std::ofstream f(in, std::ios::binary);
    f << ptx;
    if (!f.flush()) return Status::error("ptxas: cannot write " + in.string());
  }
  const std::string arch_opt = "-arch=" + arch;
  std::vector<std::string> args{ptxas, arch_opt, "-O3", "-v", in.string(), "-o", out.string()};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = 0;
  const int err = ::posix_spawn(&pid, ptxas.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) {
    return Status::error(fmt::format("ptxas: cannot run {}: {}", ptxas, std::strerror(err)));
  }
  int status = 0;
  pid_t waited = 0;
  while ((waited = ::waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  if (waited != pid) {
    return Status::error(fmt::format("ptxas: cannot wait for {}: {}", ptxas, std::strerror(errno)));
  }
  Cubin c;
  c.info_log = read_file(log);
  while (!c.info_log.empty() && c.info_log.back() == '\n') c.info_log.pop_back();
  if (WIFSIGNALED(status)) {
    return Status::error(fmt::format("ptxas was killed by signal {} assembling for {}: {}",
                                     WTERMSIG(status), arch, c.info_log));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Status::error(fmt::format("ptxas rejected the PTX for {}: {}", arch, c.info_log));
  }
  c.bytes = read_file(out);
  if (c.bytes.empty()) return Status::error("ptxas wrote no cubin for " + arch);
  read_numbers(c, entry);
  return c;
}

// ptxas compiling for a link (what nvJitLink does with PTX: separate compilation) serializes
// every wgmma.mma_async of a kernel ("wgmma.mma_async instructions are serialized due to the
// presence of Extern calls", C7509) and ignores setmaxnreg (C7504), even in a kernel that
// calls nothing: measured on an H200, a warpgroup of the TMA contraction then waits for each
// wgmma before issuing the next. Kernels that use either are assembled whole-program by the
// toolkit's ptxas instead.
bool wants_whole_program(const std::string& ptx) {
  return ptx.find("wgmma.mma_async") != std::string::npos ||
         ptx.find("setmaxnreg.") != std::string::npos;
}

}  // namespace

CubinFacts cubin_facts(const std::string& cubin, const std::string& entry) {
  CubinFacts out;
  llvm::Expected<llvm::object::ELF64LEFile> file =
      llvm::object::ELF64LEFile::create(llvm::StringRef(cubin));
  if (!file) {
    llvm::consumeError(file.takeError());
    return out;
  }
  auto sections = file->sections();
  if (!sections) {
    llvm::consumeError(sections.takeError());
    return out;
  }
  // The entry's index in the symbol table, which the attributes name.
  std::optional<uint32_t> symbol;
  for (const auto& sec : *sections) {
    if (sec.sh_type != llvm::ELF::SHT_SYMTAB) continue;
    auto symbols = file->symbols(&sec);
    auto names = file->getStringTableForSymtab(sec);
    if (!symbols || !names) {
      if (!symbols) llvm::consumeError(symbols.takeError());
      if (!names) llvm::consumeError(names.takeError());
      return out;
    }
    for (size_t i = 0; i < symbols->size(); ++i) {
      auto name = (*symbols)[i].getName(*names);
      if (name && *name == entry) symbol = static_cast<uint32_t>(i);
      if (!name) llvm::consumeError(name.takeError());
    }
  }
  if (!symbol) return out;
  // .nv.info: records of a format byte, an attribute byte and, for format 4 (EIFMT_SVAL), a
  // 16-bit size and that many bytes; REGCOUNT (0x2f) and FRAME_SIZE (0x11) hold a symbol index
  // and a 32-bit value. Records of other formats carry no size: the walk stops at one.
  constexpr uint8_t kSval = 4, kFrameSize = 0x11, kRegCount = 0x2f;
  bool registers = false;
  for (const auto& sec : *sections) {
    auto name = file->getSectionName(sec);
    if (!name) {
      llvm::consumeError(name.takeError());
      continue;
    }
    if (*name != ".nv.info") continue;
    auto bytes = file->getSectionContents(sec);
    if (!bytes) {
      llvm::consumeError(bytes.takeError());
      return out;
    }
    const llvm::ArrayRef<uint8_t> b = *bytes;
    for (size_t at = 0; at + 4 <= b.size();) {
      if (b[at] != kSval) break;
      const size_t size = b[at + 2] | (size_t{b[at + 3]} << 8);
      if (at + 4 + size > b.size()) break;
      if (size == 8 && (b[at + 1] == kRegCount || b[at + 1] == kFrameSize)) {
        uint32_t sym = 0, value = 0;
        std::memcpy(&sym, b.data() + at + 4, 4);
        std::memcpy(&value, b.data() + at + 8, 4);
        if (sym == *symbol && value <= 1u << 20) {
          if (b[at + 1] == kRegCount) {
            out.registers = static_cast<int>(value);
            registers = true;
          } else {
            out.frame_bytes = static_cast<int>(value);
          }
        }
      }
      at += 4 + size;
    }
  }
  out.found = registers;
  return out;
}

std::string cuda_root() {
  for (const char* var : {"KILN_CUDA_ROOT", "CUDA_HOME"}) {
    if (const char* v = std::getenv(var); v && *v) return v;
  }
  return KILN_DEFAULT_CUDA_ROOT;
}

std::string libdevice_path() {
  return cuda_root() + "/nvvm/libdevice/libdevice.10.bc";
}

Result<Cubin> assemble_cubin(const std::string& ptx, const std::string& arch,
                             const std::string& entry, Assembly how) {
  const bool mma = wants_whole_program(ptx);
  if (mma || how == Assembly::whole_program) {
    const std::string ptxas = cuda_root() + "/bin/ptxas";
    if (::access(ptxas.c_str(), X_OK) != 0) {
      return Status::error(fmt::format(
          "{} not found: {} are assembled by ptxas as a whole program ({})", ptxas,
          mma ? "kernels with wgmma or setmaxnreg" : "flat pointwise and scan kernels",
          mma ? "nvJitLink would serialize their MMAs"
              : "nvJitLink's separate compilation gives them registers that cost occupancy"));
    }
    return ptxas_cubin(ptxas, ptx, arch, entry);
  }
  const JitLinkApi& api = jitlink();
  if (!api.error.empty()) return Status::error(api.error);
  std::string arch_opt = "-arch=" + arch;
  const char* opts[] = {arch_opt.c_str(), "-O3", "-verbose"};
  nvJitLinkHandle h = nullptr;
  if (api.create(&h, 3, opts) != NVJITLINK_SUCCESS) {
    return Status::error("nvJitLink: cannot create a linker for " + arch);
  }
  auto read_log = [&](auto size_fn, auto log_fn) {
    size_t n = 0;
    size_fn(h, &n);
    std::string s(n, '\0');
    if (n) log_fn(h, s.data());
    while (!s.empty() && (s.back() == '\0' || s.back() == '\n')) s.pop_back();
    return s;
  };
  Status st;
  Cubin out;
  if (api.add_data(h, NVJITLINK_INPUT_PTX, ptx.data(), ptx.size(), "kernel.ptx") !=
          NVJITLINK_SUCCESS ||
      api.complete(h) != NVJITLINK_SUCCESS) {
    st = Status::error(fmt::format("nvJitLink rejected the PTX for {}: {}", arch,
                                   read_log(api.error_log_size, api.error_log)));
  } else {
    size_t n = 0;
    api.cubin_size(h, &n);
    out.bytes.resize(n);
    api.cubin(h, out.bytes.data());
    out.info_log = read_log(api.info_log_size, api.info_log);
    read_numbers(out, entry);
  }
  api.destroy(&h);
  if (!st.ok()) return st;
  return out;
}

}  // namespace kiln
