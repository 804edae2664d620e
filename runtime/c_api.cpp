// The C API (c_api.h) over runtime.h. Each handle is the C++ object itself behind an opaque
// type: kiln_runtime is a kiln::Runtime, kiln_bundle a kiln::Bundle, kiln_kernel a
// kiln::Kernel. Every entry point catches everything, so no exception reaches C.
#include "runtime/c_api.h"

#include <exception>
#include <memory>
#include <span>
#include <string>

#include "bundle/cache.h"
#include "runtime/runtime.h"

namespace {

thread_local std::string last_error;

int fail(int code, std::string message) noexcept {
  try {
    last_error = std::move(message);
  } catch (...) {
    last_error.clear();  // out of memory: an empty message beats none
  }
  return code;
}

int fail(const kiln::Status& s) noexcept {
  return fail(KILN_ERROR, s.message());
}

int invalid(const char* what) noexcept {
  return fail(KILN_ERROR_INVALID_ARGUMENT, std::string(what));
}

// Runs `f` (returning an int status) and turns any exception into KILN_ERROR.
template <class F>
int guarded(const char* fn, F&& f) noexcept {
  try {
    return f();
  } catch (const std::exception& e) {
    return fail(KILN_ERROR, std::string(fn) + ": " + e.what());
  } catch (...) {
    return fail(KILN_ERROR, std::string(fn) + ": unknown exception");
  }
}

kiln::Runtime* cpp(kiln_runtime* p) {
  return reinterpret_cast<kiln::Runtime*>(p);
}
const kiln::Runtime* cpp(const kiln_runtime* p) {
  return reinterpret_cast<const kiln::Runtime*>(p);
}
kiln::Bundle* cpp(kiln_bundle* p) {
  return reinterpret_cast<kiln::Bundle*>(p);
}
const kiln::Bundle* cpp(const kiln_bundle* p) {
  return reinterpret_cast<const kiln::Bundle*>(p);
}
const kiln::Kernel* cpp(const kiln_kernel* p) {
  return reinterpret_cast<const kiln::Kernel*>(p);
}

}  // namespace

extern "C" {

const char* kiln_last_error(void) {
  return last_error.c_str();
}

int kiln_runtime_open(int ordinal, kiln_runtime** out) {
  if (out == nullptr) return invalid("kiln_runtime_open: out is NULL");
  *out = nullptr;
  return guarded("kiln_runtime_open", [&]() -> int {
    auto rt = kiln::Runtime::open(ordinal);
    if (!rt.ok()) {
      const kiln::StatusCode c = rt.status().code();
      return fail(c == kiln::StatusCode::no_driver || c == kiln::StatusCode::no_device
                      ? KILN_ERROR_NO_DEVICE
                      : KILN_ERROR,
                  rt.message());
    }
    *out = reinterpret_cast<kiln_runtime*>(std::move(rt).value().release());
    return KILN_OK;
  });
}

int kiln_runtime_close(kiln_runtime* rt) {
  return guarded("kiln_runtime_close", [&]() -> int {
    delete cpp(rt);
    return KILN_OK;
  });
}

int kiln_runtime_make_current(const kiln_runtime* rt) {
  if (rt == nullptr) return invalid("kiln_runtime_make_current: runtime is NULL");
  return guarded("kiln_runtime_make_current", [&]() -> int {
    kiln::Status s = cpp(rt)->make_current();
    return s.ok() ? KILN_OK : fail(s);
  });
}

int kiln_device_name(const kiln_runtime* rt, const char** name) {
  if (rt == nullptr || name == nullptr) return invalid("kiln_device_name: NULL argument");
  *name = cpp(rt)->device().name.c_str();
  return KILN_OK;
}

int kiln_device_compute_capability(const kiln_runtime* rt, int* major, int* minor) {
  if (rt == nullptr || major == nullptr || minor == nullptr) {
    return invalid("kiln_device_compute_capability: NULL argument");
  }
  *major = cpp(rt)->device().cc_major;
  *minor = cpp(rt)->device().cc_minor;
  return KILN_OK;
}

int kiln_runtime_trim_scratch(const kiln_runtime* rt, size_t* freed) {
  if (rt == nullptr) return invalid("kiln_runtime_trim_scratch: runtime is NULL");
  return guarded("kiln_runtime_trim_scratch", [&]() -> int {
    const size_t bytes = cpp(rt)->trim_scratch();
    if (freed != nullptr) *freed = bytes;
    return KILN_OK;
  });
}

int kiln_runtime_set_keep_scratch(kiln_runtime* rt, int on) {
  if (rt == nullptr) return invalid("kiln_runtime_set_keep_scratch: runtime is NULL");
  cpp(rt)->set_keep_scratch(on != 0);
  return KILN_OK;
}

int kiln_runtime_cached_scratch(const kiln_runtime* rt, int* streams, size_t* bytes) {
  if (rt == nullptr) return invalid("kiln_runtime_cached_scratch: runtime is NULL");
  return guarded("kiln_runtime_cached_scratch", [&]() -> int {
    const auto [n, b] = cpp(rt)->cached_scratch();
    if (streams != nullptr) *streams = n;
    if (bytes != nullptr) *bytes = b;
    return KILN_OK;
  });
}

int kiln_bundle_load(const kiln_runtime* rt, const char* dir, kiln_bundle** out) {
  if (out == nullptr) return invalid("kiln_bundle_load: out is NULL");
  *out = nullptr;
  if (rt == nullptr) return invalid("kiln_bundle_load: runtime is NULL");
  if (dir == nullptr) return invalid("kiln_bundle_load: bundle directory is NULL");
  return guarded("kiln_bundle_load", [&]() -> int {
    auto b = kiln::Bundle::load(*cpp(rt), dir);
    if (!b.ok()) return fail(b.status());
    *out = reinterpret_cast<kiln_bundle*>(std::move(b).value().release());
    return KILN_OK;
  });
}

int kiln_bundle_use_cache(kiln_bundle* bundle, const char* cache_path) {
  if (bundle == nullptr) return invalid("kiln_bundle_use_cache: bundle is NULL");
  if (cache_path == nullptr) return invalid("kiln_bundle_use_cache: cache path is NULL");
  return guarded("kiln_bundle_use_cache", [&]() -> int {
    // A cache that is not there is a mistake, not an empty cache.
    auto c = kiln::cache::load_existing(cache_path);
    if (!c.ok()) return fail(c.status());
    (void)cpp(bundle)->use_cache(*c);
    return KILN_OK;
  });
}

int kiln_bundle_free(kiln_bundle* bundle) {
  return guarded("kiln_bundle_free", [&]() -> int {
    delete cpp(bundle);
    return KILN_OK;
  });
}

const kiln_kernel* kiln_bundle_find(const kiln_bundle* bundle, const char* name) {
  if (bundle == nullptr || name == nullptr) {
    invalid("kiln_bundle_find: NULL argument");
    return nullptr;
  }
  const kiln::Kernel* k = nullptr;
  guarded("kiln_bundle_find", [&]() -> int {
    k = cpp(bundle)->find(name);
    if (k != nullptr) return KILN_OK;
    std::string names;
    for (const kiln::bundle::KernelInfo& info : cpp(bundle)->manifest().kernels) {
      names += (names.empty() ? "" : ", ") + info.name;
    }
    return fail(KILN_ERROR,
                "bundle has no kernel '" + std::string(name) + "' (its kernels: " + names + ")");
  });
  return reinterpret_cast<const kiln_kernel*>(k);
}

int kiln_launch(const kiln_kernel* kernel, CUstream stream, const CUdeviceptr* ptrs, size_t nptrs,
                const int64_t* symbols, size_t nsymbols) {
  if (kernel == nullptr) return invalid("kiln_launch: kernel is NULL");
  if ((ptrs == nullptr && nptrs > 0) || (symbols == nullptr && nsymbols > 0)) {
    return invalid("kiln_launch: argument array is NULL");
  }
  return guarded("kiln_launch", [&]() -> int {
    kiln::Status s = cpp(kernel)->launch(stream, std::span<const CUdeviceptr>(ptrs, nptrs),
                                         std::span<const int64_t>(symbols, nsymbols));
    return s.ok() ? KILN_OK : fail(s);
  });
}

int kiln_launch_strided(const kiln_kernel* kernel, CUstream stream, const CUdeviceptr* ptrs,
                        size_t nptrs, const int64_t* symbols, size_t nsymbols,
                        const int64_t* strides, size_t nstrides) {
  if (kernel == nullptr) return invalid("kiln_launch_strided: kernel is NULL");
  if ((ptrs == nullptr && nptrs > 0) || (symbols == nullptr && nsymbols > 0) ||
      (strides == nullptr && nstrides > 0)) {
    return invalid("kiln_launch_strided: argument array is NULL");
  }
  return guarded("kiln_launch_strided", [&]() -> int {
    kiln::Status s = cpp(kernel)->launch(stream, std::span<const CUdeviceptr>(ptrs, nptrs),
                                         std::span<const int64_t>(symbols, nsymbols),
                                         std::span<const int64_t>(strides, nstrides));
    return s.ok() ? KILN_OK : fail(s);
  });
}

int kiln_launch_packed(const kiln_launch_args* args) {
  if (args == nullptr) return invalid("kiln_launch_packed: args is NULL");
  return kiln_launch(args->kernel, args->stream, args->ptrs, args->nptrs, args->symbols,
                     args->nsymbols);
}

int kiln_bundle_kernel_count(const kiln_bundle* bundle, size_t* count) {
  if (bundle == nullptr || count == nullptr) {
    return invalid("kiln_bundle_kernel_count: NULL argument");
  }
  *count = cpp(bundle)->manifest().kernels.size();
  return KILN_OK;
}

int kiln_bundle_kernel_at(const kiln_bundle* bundle, size_t index, const kiln_kernel** out) {
  if (bundle == nullptr || out == nullptr) return invalid("kiln_bundle_kernel_at: NULL argument");
  *out = nullptr;
  return guarded("kiln_bundle_kernel_at", [&]() -> int {
    const auto& kernels = cpp(bundle)->manifest().kernels;
    if (index >= kernels.size()) {
      return fail(KILN_ERROR_INVALID_ARGUMENT, "kiln_bundle_kernel_at: index " +
                                                   std::to_string(index) + " out of range (" +
                                                   std::to_string(kernels.size()) + " kernels)");
    }
    const kiln::Kernel* k = cpp(bundle)->find(kernels[index].name);
    if (k == nullptr) return fail(KILN_ERROR, "kernel '" + kernels[index].name + "' not loaded");
    *out = reinterpret_cast<const kiln_kernel*>(k);
    return KILN_OK;
  });
}

int kiln_kernel_name(const kiln_kernel* kernel, const char** name) {
  if (kernel == nullptr || name == nullptr) return invalid("kiln_kernel_name: NULL argument");
  *name = cpp(kernel)->name().c_str();
  return KILN_OK;
}

int kiln_kernel_counts(const kiln_kernel* kernel, size_t* nparams, size_t* nsymbols) {
  if (kernel == nullptr) return invalid("kiln_kernel_counts: kernel is NULL");
  if (nparams != nullptr) *nparams = cpp(kernel)->info().params.size();
  if (nsymbols != nullptr) *nsymbols = cpp(kernel)->info().symbols.size();
  return KILN_OK;
}

namespace {

// The parameter `index` of `kernel`, or null after a message naming `fn`. May throw
// (std::string): call it inside guarded().
const kiln::bundle::ParamInfo* param_at(const kiln_kernel* kernel, size_t index, const char* fn) {
  if (kernel == nullptr) {
    fail(KILN_ERROR_INVALID_ARGUMENT, std::string(fn) + ": kernel is NULL");
    return nullptr;
  }
  const auto& params = cpp(kernel)->info().params;
  if (index >= params.size()) {
    fail(KILN_ERROR_INVALID_ARGUMENT,
         std::string(fn) + ": parameter index " + std::to_string(index) + " out of range (" +
             cpp(kernel)->name() + " has " + std::to_string(params.size()) + ")");
    return nullptr;
  }
  return &params[index];
}

}  // namespace

int kiln_kernel_param(const kiln_kernel* kernel, size_t index, const char** name,
                      const char** dtype, size_t* rank, int* is_output) {
  return guarded("kiln_kernel_param", [&]() -> int {
    const kiln::bundle::ParamInfo* p = param_at(kernel, index, "kiln_kernel_param");
    if (p == nullptr) return KILN_ERROR_INVALID_ARGUMENT;
    if (name != nullptr) *name = p->name.c_str();
    if (dtype != nullptr) *dtype = kiln::to_string(p->dtype).data();  // literals: NUL-terminated
    if (rank != nullptr) *rank = p->shape.size();
    if (is_output != nullptr) *is_output = p->output ? 1 : 0;
    return KILN_OK;
  });
}

int kiln_kernel_param_scalar(const kiln_kernel* kernel, size_t index, int* is_scalar) {
  if (is_scalar == nullptr) return invalid("kiln_kernel_param_scalar: NULL argument");
  return guarded("kiln_kernel_param_scalar", [&]() -> int {
    const kiln::bundle::ParamInfo* p = param_at(kernel, index, "kiln_kernel_param_scalar");
    if (p == nullptr) return KILN_ERROR_INVALID_ARGUMENT;
    *is_scalar = p->scalar ? 1 : 0;
    return KILN_OK;
  });
}

int kiln_kernel_param_strided(const kiln_kernel* kernel, size_t index, int* is_strided) {
  if (is_strided == nullptr) return invalid("kiln_kernel_param_strided: NULL argument");
  return guarded("kiln_kernel_param_strided", [&]() -> int {
    const kiln::bundle::ParamInfo* p = param_at(kernel, index, "kiln_kernel_param_strided");
    if (p == nullptr) return KILN_ERROR_INVALID_ARGUMENT;
    *is_strided = p->strided ? 1 : 0;
    return KILN_OK;
  });
}

int kiln_kernel_param_dim(const kiln_kernel* kernel, size_t index, size_t dim, int64_t* value,
                          int* symbol) {
  if (value == nullptr || symbol == nullptr) {
    return invalid("kiln_kernel_param_dim: NULL argument");
  }
  return guarded("kiln_kernel_param_dim", [&]() -> int {
    const kiln::bundle::ParamInfo* p = param_at(kernel, index, "kiln_kernel_param_dim");
    if (p == nullptr) return KILN_ERROR_INVALID_ARGUMENT;
    if (dim >= p->shape.size()) {
      return fail(KILN_ERROR_INVALID_ARGUMENT, "kiln_kernel_param_dim: dim " + std::to_string(dim) +
                                                   " out of range (" + p->name + " has rank " +
                                                   std::to_string(p->shape.size()) + ")");
    }
    const kiln::Dim& d = p->shape[dim];
    if (d.is_fixed()) {
      *value = d.value();
      *symbol = -1;
      return KILN_OK;
    }
    const auto& symbols = cpp(kernel)->info().symbols;
    for (size_t j = 0; j < symbols.size(); ++j) {
      if (symbols[j] == d.name()) {
        *value = 0;
        *symbol = static_cast<int>(j);
        return KILN_OK;
      }
    }
    return fail(KILN_ERROR, "kiln_kernel_param_dim: symbol " + d.name() + " not in the kernel");
  });
}

int kiln_kernel_symbol(const kiln_kernel* kernel, size_t index, const char** name) {
  if (kernel == nullptr || name == nullptr) return invalid("kiln_kernel_symbol: NULL argument");
  return guarded("kiln_kernel_symbol", [&]() -> int {
    const auto& symbols = cpp(kernel)->info().symbols;
    if (index >= symbols.size()) {
      return fail(KILN_ERROR_INVALID_ARGUMENT,
                  "kiln_kernel_symbol: index " + std::to_string(index) + " out of range (" +
                      cpp(kernel)->name() + " has " + std::to_string(symbols.size()) + " symbols)");
    }
    *name = symbols[index].c_str();
    return KILN_OK;
  });
}

}  // extern "C"
