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

}  // extern "C"
