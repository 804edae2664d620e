/* The C API of libkiln_runtime, for C programs and foreign-function interfaces (Python ctypes,
 * Rust, Go, ...). Installed as <prefix>/include/kiln/kiln_runtime.h; in the build tree it is
 * runtime/c_api.h. It wraps runtime/runtime.h with opaque handles:
 *
 *   kiln_runtime* rt;  kiln_bundle* b;
 *   if (kiln_runtime_open(0, &rt) != KILN_OK) { puts(kiln_last_error()); return 77; }
 *   kiln_bundle_load(rt, "swiglu.bundle", &b);
 *   kiln_bundle_use_cache(b, "tuned.json");                     (optional)
 *   const kiln_kernel* k = kiln_bundle_find(b, "swiglu");
 *   kiln_launch(k, stream, ptrs, 3, symbols, 2);                (inputs then outputs; M, N)
 *   (a scalar parameter's slot in ptrs holds its value: kiln_scalar_f32(1e-5f);
 *    strided inputs take their strides through kiln_launch_strided)
 *   kiln_bundle_free(b);  kiln_runtime_close(rt);
 *
 * Every function but kiln_bundle_find and kiln_last_error returns KILN_OK (0) or an error code
 * and then leaves a one-line message in kiln_last_error(), which is per thread. No C++
 * exception crosses this interface. A bundle must be freed before its runtime is closed; a
 * kiln_kernel belongs to its bundle. Launches need the runtime's CUDA context current on the
 * calling thread: kiln_runtime_open makes it current on the opening thread, other threads call
 * kiln_runtime_make_current first. The kiln_bundle_kernel_* and kiln_kernel_* functions
 * below describe a bundle's kernels (names, parameters, dtypes, shapes, symbols). */
#ifndef KILN_RUNTIME_C_API_H
#define KILN_RUNTIME_C_API_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Status codes. */
enum {
  KILN_OK = 0,
  KILN_ERROR = 1,                  /**< any other failure: files, manifest, launch checks, CUDA */
  KILN_ERROR_INVALID_ARGUMENT = 2, /**< a NULL handle or pointer where one is required */
  KILN_ERROR_NO_DEVICE = 3         /**< kiln_runtime_open: no CUDA driver to load, or no such
                                        device (any other failure to open is KILN_ERROR) */
};

/** An open CUDA device with its primary context (kiln::Runtime). */
typedef struct kiln_runtime kiln_runtime;
/** A bundle loaded onto a device (kiln::Bundle). */
typedef struct kiln_bundle kiln_bundle;
/** One kernel of a loaded bundle (kiln::Kernel); owned by the bundle. */
typedef struct kiln_kernel kiln_kernel;

/** The message of the last failed call on this thread ("" if none failed yet). The pointer
 *  stays valid until the next failing call on the same thread. */
const char* kiln_last_error(void);

/** Loads libcuda, initialises it and opens device `ordinal`, making its primary context
 *  current on this thread. Fails with KILN_ERROR_NO_DEVICE (the message names libcuda when
 *  there is no driver) when libcuda cannot be loaded or has no such device, and with
 *  KILN_ERROR when the driver is there but fails (too old, cuInit or the context failing). */
int kiln_runtime_open(int ordinal, kiln_runtime** out);
/** Closes a runtime; NULL is allowed and does nothing. */
int kiln_runtime_close(kiln_runtime* rt);
/** Makes the runtime's context current on the calling thread. */
int kiln_runtime_make_current(const kiln_runtime* rt);
/** The device's name ("NVIDIA H100 80GB HBM3"), valid while `rt` is open. */
int kiln_device_name(const kiln_runtime* rt, const char** name);
/** The device's compute capability (9, 0 for sm_90). */
int kiln_device_compute_capability(const kiln_runtime* rt, int* major, int* minor);

/** Scratch memory: a launch of a kernel with buffers or split steps takes scratch memory from
 *  the runtime's stream-ordered pool, and a stream keeps it for its next launches (up to 32 MiB
 *  each, 8 streams; not under graph capture). kiln_runtime_trim_scratch frees what the streams
 *  keep, each in stream order after its last launch (as torch.cuda.empty_cache frees the
 *  caching allocator's blocks), and sets `*freed` (may be NULL) to its bytes; later launches
 *  take scratch anew. */
int kiln_runtime_trim_scratch(const kiln_runtime* rt, size_t* freed);
/** Whether streams keep their scratch between launches (on when the runtime opens, unless
 *  KILN_KEEP_SCRATCH=0 is set): off, every launch takes its scratch from the pool and gives it
 *  back. Set it while no launch runs on another thread. */
int kiln_runtime_set_keep_scratch(kiln_runtime* rt, int on);
/** The streams that keep scratch now, and its bytes in all (either pointer may be NULL). */
int kiln_runtime_cached_scratch(const kiln_runtime* rt, int* streams, size_t* bytes);

/** Loads the bundle directory `dir` (written by `kiln compile -o`) onto `rt`'s device. */
int kiln_bundle_load(const kiln_runtime* rt, const char* dir, kiln_bundle** out);
/** Launches with the tuned winners of the autotune cache file `cache_path` (`kiln tune -c`)
 *  that apply to this device; entries that do not apply are ignored (see KILN_LOG=1). A
 *  missing file is an error ("PATH: no such cache file"), as is one that is not a cache. */
int kiln_bundle_use_cache(kiln_bundle* bundle, const char* cache_path);
/** Frees a bundle; NULL is allowed and does nothing. */
int kiln_bundle_free(kiln_bundle* bundle);
/** The kernel called `name`, or NULL (with a message in kiln_last_error) when there is none. */
const kiln_kernel* kiln_bundle_find(const kiln_bundle* bundle, const char* name);

/** Launches `kernel` on `stream` (0: the default stream). `ptrs` are device pointers, inputs
 *  then outputs in declared order; `symbols` are the symbol values in the kernel's order. Every
 *  argument is checked against the manifest before anything is launched. A scalar parameter
 *  (`eps: f32` in the spec; kiln_kernel_param_scalar) is passed by value: its slot in `ptrs`
 *  holds the value itself, its bytes zero-extended to 64 bits, as kiln_scalar_f32 and its
 *  siblings make it (any other high bits are refused). */
int kiln_launch(const kiln_kernel* kernel, CUstream stream, const CUdeviceptr* ptrs, size_t nptrs,
                const int64_t* symbols, size_t nsymbols);

/** kiln_launch for kernels with strided inputs (`x: f32[M, N] strided` in the spec;
 *  kiln_kernel_param_strided): `strides` holds, for each strided input in parameter order, one
 *  stride per dimension, in elements (torch's Tensor.stride()), `nstrides` being the sum of
 *  their ranks; NULL with 0 means contiguous tensors (as kiln_launch). Strides may be 0
 *  (expanded views) but not negative; each view's footprint must fit int64 bytes. When a
 *  strided input's strides are not the contiguous ones, the steps that read it run their
 *  strided variants. */
int kiln_launch_strided(const kiln_kernel* kernel, CUstream stream, const CUdeviceptr* ptrs,
                        size_t nptrs, const int64_t* symbols, size_t nsymbols,
                        const int64_t* strides, size_t nstrides);

/** The slot of a scalar argument in kiln_launch's `ptrs`: the value's bits, zero-extended.
 *  f16 and bf16 scalars take their 16-bit patterns (kiln_scalar_u16). */
static inline CUdeviceptr kiln_scalar_f32(float v) {
  union {
    float f;
    uint32_t u;
  } b;
  b.f = v;
  return (CUdeviceptr)b.u;
}
static inline CUdeviceptr kiln_scalar_u16(uint16_t bits) {
  return (CUdeviceptr)bits;
}
static inline CUdeviceptr kiln_scalar_i32(int32_t v) {
  return (CUdeviceptr)(uint32_t)v;
}
static inline CUdeviceptr kiln_scalar_u32(uint32_t v) {
  return (CUdeviceptr)v;
}
static inline CUdeviceptr kiln_scalar_i64(int64_t v) {
  return (CUdeviceptr)(uint64_t)v;
}

/* Introspection: what a bundle holds and what each kernel takes, so that a binding (Python's
 * kiln package) can check its arguments and infer the symbols from their shapes. Strings stay
 * valid while the bundle is loaded. A kernel's parameters are its inputs then its outputs, in
 * the order kiln_launch takes their pointers; its symbols are in the order kiln_launch takes
 * their values. */

/** The number of kernels in the bundle. */
int kiln_bundle_kernel_count(const kiln_bundle* bundle, size_t* count);
/** The kernel at `index` (0 .. count - 1, the bundle manifest's order). */
int kiln_bundle_kernel_at(const kiln_bundle* bundle, size_t index, const kiln_kernel** out);
/** The kernel's name ("rmsnorm"). */
int kiln_kernel_name(const kiln_kernel* kernel, const char** name);
/** The number of parameters (inputs then outputs) and of symbols. */
int kiln_kernel_counts(const kiln_kernel* kernel, size_t* nparams, size_t* nsymbols);
/** Parameter `index`: its name, its dtype as text ("f32", "f16", "bf16", "i32", "i64" or "u32"),
 * its rank and whether it is an output (1) or an input (0). Any out-pointer may be NULL. */
int kiln_kernel_param(const kiln_kernel* kernel, size_t index, const char** name,
                      const char** dtype, size_t* rank, int* is_output);
/** Whether parameter `index` is a scalar passed by value (1) or a tensor passed by pointer
 *  (0). A scalar has rank 0 and is an input. */
int kiln_kernel_param_scalar(const kiln_kernel* kernel, size_t index, int* is_scalar);
/** Whether parameter `index` takes strides at launch (1: kiln_launch_strided) or is a
 *  contiguous tensor or a scalar (0). A strided parameter is an input of rank 1 or more. */
int kiln_kernel_param_strided(const kiln_kernel* kernel, size_t index, int* is_strided);
/** Dimension `dim` of parameter `index`: a fixed extent (`*value` = the extent, `*symbol` = -1)
 *  or a symbol (`*value` = 0, `*symbol` = its index among the kernel's symbols). */
int kiln_kernel_param_dim(const kiln_kernel* kernel, size_t index, size_t dim, int64_t* value,
                          int* symbol);
/** The name of symbol `index` ("M"). */
int kiln_kernel_symbol(const kiln_kernel* kernel, size_t index, const char** name);

/** One launch's arguments in one struct, for callers that keep it and change only what
 *  changes between launches: a foreign-function interface pays for each argument it converts,
 *  so the Python package fills one per thread (the arrays once, the pointers, symbols and
 *  stream per call) and passes its address. The fields mean what kiln_launch's do. */
typedef struct kiln_launch_args {
  const kiln_kernel* kernel;
  CUstream stream;
  const CUdeviceptr* ptrs;
  size_t nptrs;
  const int64_t* symbols;
  size_t nsymbols;
} kiln_launch_args;

/** kiln_launch(args->kernel, args->stream, args->ptrs, args->nptrs, args->symbols,
 *  args->nsymbols); KILN_ERROR_INVALID_ARGUMENT when `args` is NULL. */
int kiln_launch_packed(const kiln_launch_args* args);

#ifdef __cplusplus
}
#endif

#endif /* KILN_RUNTIME_C_API_H */
