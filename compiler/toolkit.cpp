// See toolkit.h.
#include "compiler/toolkit.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <nvJitLink.h>

#include <cstdlib>
#include <mutex>
#include <regex>

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

}  // namespace

std::string cuda_root() {
  for (const char* var : {"KILN_CUDA_ROOT", "CUDA_HOME"}) {
    if (const char* v = std::getenv(var); v && *v) return v;
  }
  return KILN_DEFAULT_CUDA_ROOT;
}

std::string libdevice_path() {
  return cuda_root() + "/nvvm/libdevice/libdevice.10.bc";
}

Result<Cubin> assemble_cubin(const std::string& ptx, const std::string& arch) {
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
    out.registers = log_number(out.info_log, R"(Used (\d+) registers)");
    out.spill_bytes = log_number(out.info_log, R"((\d+) bytes spill stores)") +
                      log_number(out.info_log, R"((\d+) bytes spill loads)");
    out.shared_bytes = log_number(out.info_log, R"((\d+) bytes smem)");
  }
  api.destroy(&h);
  if (!st.ok()) return st;
  return out;
}

}  // namespace kiln
