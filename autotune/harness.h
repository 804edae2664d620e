// The benchmark harness shared by `kiln run` and `kiln tune`: device buffers for one kernel at
// one shape, random inputs (optionally with NaN and infinities), outputs and scratch memory
// poisoned before each checked launch, every output element checked against the interpreter
// within a tolerance derived from its dtype and the kernel's reduced extent (docs/testing.md,
// "Tolerances"), and timing with CUDA events (warm-up, L2 flushed between repetitions,
// median and spread).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "autotune/gpu_check.h"
#include "autotune/l2_flush.h"
#include "autotune/search.h"
#include "ir/interpreter.h"
#include "runtime/runtime.h"

namespace kiln {

/// Thrown by the harness when a driver call fails; the message names the call.
struct HarnessError {
  std::string message;
};

class DeviceBuffer {
 public:
  DeviceBuffer(const Runtime& rt, size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  CUdeviceptr get() const { return ptr_; }

 private:
  const Runtime& rt_;
  CUdeviceptr ptr_ = 0;
};

/// How the harness fills float inputs (i32 inputs are always uniform in [-1000, 1000]
/// without 0, so a division by one never divides by zero).
enum class InputMode {
  random,       // uniform in [-2, 2)
  specials,     // random, then NaN, +inf and -inf placed from the seed (see fill_specials)
  neginf_rows,  // random, then about one row in four entirely -inf (rank >= 2 inputs)
};
/// "random", "specials" or "neginf_rows"; nullopt for anything else.
std::optional<InputMode> parse_input_mode(std::string_view name);

/// The error an output element of type `t` may have (docs/testing.md, "Tolerances"):
///   |got - exact| <= u_out * |exact| + gamma * (|exact| + scale)
/// where `exact` is the interpreter's value before the output's own rounding, u_out the unit
/// roundoff of the output type (bf16 2^-8, f16 2^-11; 0 for f32, whose rounding is one of the
/// f32 roundings below), gamma = 16 * 2^-24 * (1 + ceil(log2 K)) the f32 computation's
/// (16 roundings per element and level of a summation tree over K, the kernel's longest
/// reduced extent; K = 1 pointwise), and scale the largest finite |exact| of the output: an
/// error made in a sum is absolute in the scale of what was summed, so a small element (a sum
/// that cancels, x - mean near 0) may carry it. i32 outputs are exact.
///
/// When the interpreter's value before the output's rounding is itself representable in the
/// output type (a cast in the spec, e.g. f16(...), rounded it already), the exact value is
/// unknown within that rounding, and a flip of it costs up to one ulp: u_out is allowed twice.
///
/// A kernel with approximate functions (the manifest's steps[].approx_error: tanh and erf on
/// tanh.approx.f32 where every output of the step is f16 or bf16) adds their error to gamma: an
/// absolute error of at most 2^-10 in tanh or erf, scaled by what multiplies it, is at most that of
/// the output's largest value where the factors are no larger than it (GELU's 0.5 h, a scaled
/// tanh).
struct Tolerance {
  double rel = 0;    // u_out + gamma, or --rtol when given
  double gamma = 0;  // the coefficient of scale
  double u_out = 0;  // the output type's unit roundoff (0 for f32, i32 and under --rtol)
  // NaN passes where the reference is +inf or -inf: the kernel folds a product of floats
  // (folds_float_products), whose partials the GPU and the interpreter (f64) group differently,
  // so that one may underflow to 0 before an infinity joins it (0 x inf) where the other does not.
  // Set for every float output of such a kernel, whether or not it reads the product.
  bool nan_for_inf = false;
  static Tolerance of(DType t, int64_t reduced_extent, double rtol_override = -1,
                      double approx_error = 0);
};

/// Whether a statement of `def` folds a product of floating-point values (`prod` or `cumprod`),
/// which sets Tolerance::nan_for_inf for its outputs.
bool folds_float_products(const KernelDef& def);

/// The interpreter's outputs, one per parameter (inputs copied): `stored` in the outputs'
/// storage types; `wide` with f16 and bf16 outputs kept in f32 (the value before their last
/// rounding, which is what a tolerance of u_out * |exact| bounds).
struct Reference {
  std::vector<HostTensor> stored, wide;
  std::vector<double> scale;  // per parameter: the largest finite |exact| (0 for inputs)
};
/// The interpreter's outputs of `def` at `shape` for the parameters `params` (inputs filled,
/// outputs of the right dtype and shape), as a Reference.
Reference reference_outputs(const KernelDef& def, const SymbolValues& shape,
                            const std::vector<HostTensor>& params);

/// The verdict on one output: elements out of tolerance, NaN/inf where the reference has
/// none or the reverse, and the worst element (largest error / its tolerance).
struct Comparison {
  int64_t bad = 0;
  int64_t worst = -1;      // flat index of the worst element, -1 if none was compared
  double worst_ratio = 0;  // its |got - exact| / tolerance (or infinity for a special)
  double worst_got = 0, worst_want = 0;
  double max_scaled_err = 0;  // max |got - exact| / (|exact| + scale) over finite elements
};
Comparison compare(const HostTensor& out, const HostTensor& stored, const HostTensor& wide,
                   const Tolerance& tol);
/// The same with the output's scale given (Reference::scale), saving a pass.
Comparison compare(const HostTensor& out, const HostTensor& stored, const HostTensor& wide,
                   const Tolerance& tol, double scale);
/// "element 1034 [1, 34]: got 0.5, expected 0.25" for `c`'s worst element.
std::string describe_worst(const Comparison& c, const std::vector<int64_t>& shape);

/// One kernel's arguments at one shape: host and device copies of every parameter, inputs
/// filled by `mode` from `seed`. Checked launches set the runtime's scratch poison
/// (Runtime::set_scratch_poison) to the outputs' poison byte, so that a kernel's buffers and
/// split workspaces hold garbage too; timed launches run without it.
/// Values of scalar parameters by name, as text (`1e-5`, `42`), parsed in the scalar's type.
using ScalarValues = std::map<std::string, std::string, std::less<>>;

/// A scalar parameter's value from `rng` (f32, f16, bf16: uniform in [0.125, 0.875), a rate or
/// an epsilon; i32: [1, 1000]; u32: [1, 2000]; i64: any nonzero 64-bit value, so that a seed or
/// an offset exercises its high word), or from `text` when not empty; stored into the rank-0
/// `t`. Throws HarnessError on text that is not a value of its type.
void fill_scalar(HostTensor& t, std::mt19937_64& rng, std::string_view name, std::string_view text);
/// The slot of kiln_launch's `ptrs` for a scalar held in `t` (manifest.h): its bits, zero-extended.
CUdeviceptr scalar_slot(const HostTensor& t);

/// Strides of strided inputs by name, in elements (`kiln run --strides x=1,33`); an empty
/// vector: the contiguous ones.
using StrideValues = std::map<std::string, std::vector<int64_t>, std::less<>>;

/// The layout the harness gives the `nth` strided input (0, 1, ...) of a kernel, of `extents`,
/// when none is given. Even nth: its dimensions stored in reverse order (a transposed view, for
/// rank 2) with the innermost stored one padded by an element (strides[0] = 1, strides[1] =
/// extents[0] + 1, strides[d] = strides[d - 1] * extents[d - 1]); rank 1: every other element
/// (stride 2). Odd nth: expanded along its first dimension (stride 0, as torch's expand), the
/// others row-major; rank 1: stride 0 (one element read everywhere).
std::vector<int64_t> default_view_strides(const std::vector<int64_t>& extents, int nth = 0);

/// Elements a view of `extents` with `strides` spans: the last element's offset plus one.
int64_t view_footprint(const std::vector<int64_t>& extents, const std::vector<int64_t>& strides);

class KernelHarness {
 public:
  /// `scalars` gives some scalar parameters their values; the others are drawn (fill_scalar).
  /// A strided input (`x: f32[M, N] strided`) lives in a buffer of its view's footprint with
  /// the strides `strides` gives it, else default_view_strides (with `contiguous_views`: the
  /// contiguous ones); the elements outside the view hold NaN bytes (0xFF), so a kernel that
  /// reads them fails the check. The interpreter's reference reads the same logical values.
  KernelHarness(Runtime& rt, const KernelDef& def, const bundle::KernelInfo& info,
                const SymbolValues& shape, uint64_t seed, InputMode mode = InputMode::random,
                const ScalarValues& scalars = {}, const StrideValues& strides = {},
                bool contiguous_views = false);
  ~KernelHarness();

  std::span<const CUdeviceptr> ptrs() const { return ptrs_; }
  std::span<const int64_t> symbols() const { return syms_; }
  /// The strided inputs' strides, for Kernel::launch (empty when the kernel has none).
  std::span<const int64_t> strides() const { return strides_; }
  /// Whether every strided input's view is contiguous.
  bool contiguous_views() const { return contiguous_views_; }
  CUstream stream() const { return stream_; }
  /// Each input read once plus each output written once.
  double bytes_moved() const { return bytes_moved_; }

  /// The longest reduced extent of the kernel's steps at this shape (1 if none reduces).
  int64_t reduced_extent() const { return reduced_extent_; }

  /// The interpreter's outputs for these inputs.
  Reference reference() const;

  /// Poisons every output, and every buffer and split workspace the launch allocates, with
  /// `poison` bytes, calls `launch`, and returns the outputs (one per parameter; inputs are
  /// left empty).
  std::vector<HostTensor> run_poisoned(const std::function<void()>& launch, uint8_t poison);

  /// Runs `launch` twice, poisoned differently (0xFF, then 0x7F: scratch memory too), and
  /// compares every output element of both runs with `ref` (Tolerance::of the output's type,
  /// `rtol` >= 0 overriding its relative part): an empty list means every element was
  /// written and is within tolerance, with NaN and infinities where the reference has them
  /// (NaN passing for an infinity in a kernel that folds a product of floats,
  /// Tolerance::nan_for_inf); otherwise one line per output naming the worst element. `max_err`
  /// receives the largest scaled error (Comparison::max_scaled_err). When both runs left an output
  /// with the same bytes it is compared once: the verdict of the second would be the first's.
  std::vector<std::string> check(const std::function<void()>& launch, const Reference& ref,
                                 double rtol, double* max_err);
  /// check()'s verdict, decided on the GPU when the candidate passes (the tuner's checks,
  /// docs/autotune.md): both runs stay on the device and `cmp` counts, per output, the
  /// elements whose bytes differ between the runs and those of the second run outside the
  /// tolerance, against the reference uploaded once per harness. When no element differs or
  /// fails and every element was visited, the candidate passes with nothing copied to the
  /// host; otherwise (a wrong element, a run-to-run difference, a comparator that did not
  /// load or run, an output of a kind it does not compare) check() runs and decides.
  std::vector<std::string> check_fast(const GpuComparator& cmp, const std::function<void()>& launch,
                                      const Reference& ref);
  /// How many check_fast calls the GPU decided (the rest ran check()).
  int fast_verdicts() const { return fast_verdicts_; }
  /// As check, but every output must equal `want` bitwise (the tuner's deterministic mode).
  std::vector<std::string> check_bitwise(const std::function<void()>& launch,
                                         const std::vector<HostTensor>& want);

  /// Times `fn` (which enqueues work on stream()): >= 3 launches and >= 2 ms of warm-up (at
  /// most 16), then `reps` timed launches, enqueued in batches of 16 with one wait each (0: about
  /// `budget_ms` of wall time worth, each repetition's cost taken from the warm-up, 10..2000), each
  /// preceded by a read of twice the L2 when `flush_l2` (autotune/l2_flush.h). Pruning: with
  /// `prune_above_us` > 0 (the best median so far), timing stops after kPruneReps repetitions when
  /// the fastest of them took more than kPruneFactor times that: even the candidate's best run is
  /// far beyond any spread of the best's. The result then has `pruned` set, its median and fastest
  /// of those repetitions.
  static constexpr int kPruneReps = 5;
  static constexpr double kPruneFactor = 1.5;
  /// The pruning rule on the repetitions timed so far (microseconds): true when there are
  /// kPruneReps of them, `best_us` > 0, and the fastest is above kPruneFactor x best_us.
  static bool clearly_slower(std::span<const double> reps_us, double best_us);
  /// Settling: with `settle` > 0, timing stops once there are kSettleMinReps repetitions or
  /// more and a ~95% confidence interval of their median (order statistics) is within
  /// `settle` x the median: more repetitions would not move it (the tuner: 1%).
  static constexpr int kSettleMinReps = 10;
  /// The settling rule on the repetitions so far, sorted.
  static bool settled(std::span<const double> sorted_us, double settle);
  Measurement time(const std::function<void()>& fn, int reps, bool flush_l2, double budget_ms = 200,
                   double prune_above_us = 0, double settle = 0);

 private:
  // Poisons the outputs and the launch's buffers and workspaces with `poison` bytes and
  // enqueues `launch` (run_poisoned and check_fast's runs).
  void launch_poisoned(const std::function<void()>& launch, uint8_t poison);

  Runtime& rt_;
  const KernelDef& def_;
  CUstream stream_ = nullptr;
  std::vector<HostTensor> host_;
  std::vector<std::unique_ptr<DeviceBuffer>> dev_;
  std::unique_ptr<L2Flush> flush_;
  std::vector<CUdeviceptr> ptrs_;
  std::vector<int64_t> syms_;
  std::vector<int64_t> strides_;
  bool contiguous_views_ = true;
  SymbolValues shape_;
  double bytes_moved_ = 0;
  int64_t reduced_extent_ = 1;
  double approx_error_ = 0;      // the largest steps[].approx_error of the kernel
  bool float_products_ = false;  // folds_float_products(def_)
  // check_fast's device memory, made at its first call: per output, the reference in the
  // output's type, its values before rounding as f32, and the first run's copy; counters.
  struct DeviceReference {
    std::unique_ptr<DeviceBuffer> stored, wide, run1;
  };
  std::vector<DeviceReference> dref_;
  const Reference* dref_of_ = nullptr;
  std::unique_ptr<DeviceBuffer> counters_;
  int fast_verdicts_ = 0;
};

}  // namespace kiln
