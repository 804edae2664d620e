// The largest error of an approximate f32 function over every finite f32 input, against a
// double-precision reference, on the GPU: shared by tanh_approx/ and erf_approx/.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

struct Worst {
  unsigned long long abs_bits, rel_bits;  // errors as double bits (non-negative: order holds)
  unsigned abs_x, rel_x;
};

__device__ inline unsigned long long as_bits(double d) {
  return static_cast<unsigned long long>(__double_as_longlong(d));
}

// F has `static __device__ float got(float)` and `static __device__ double want(double)`.
// locate = false: the largest errors; locate = true: an input at which each happens (a second
// pass, so that the input recorded is one with exactly the largest error).
template <class F>
__global__ void scan(uint64_t start, uint64_t count, Worst* w, bool locate) {
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < count;
       i += uint64_t{gridDim.x} * blockDim.x) {
    unsigned bits = static_cast<unsigned>(start + i);
    float x = __uint_as_float(bits);
    if (!isfinite(x)) continue;
    double want = F::want(static_cast<double>(x));
    double got = F::got(x);
    double abs_err = fabs(got - want);
    unsigned long long a = as_bits(abs_err);
    unsigned long long r = fabs(want) >= 0x1p-126 ? as_bits(abs_err / fabs(want)) : 0;
    if (!locate) {
      atomicMax(&w->abs_bits, a);
      atomicMax(&w->rel_bits, r);
    } else {
      if (a == w->abs_bits) w->abs_x = bits;
      if (r == w->rel_bits) w->rel_x = bits;
    }
  }
}

// Scans every f32 input and prints the largest absolute and relative errors of F, where each
// happens; returns nonzero when the GPU failed.
template <class F>
int report(const char* name) {
  Worst* w;
  cudaMallocManaged(&w, sizeof(Worst));
  std::memset(w, 0, sizeof(Worst));
  const uint64_t total = uint64_t{1} << 32, chunk = uint64_t{1} << 30;
  for (bool locate : {false, true}) {
    for (uint64_t s = 0; s < total; s += chunk) scan<F><<<132 * 8, 256>>>(s, chunk, w, locate);
  }
  if (cudaDeviceSynchronize() != cudaSuccess) return 1;
  double abs_err, rel_err;
  std::memcpy(&abs_err, &w->abs_bits, 8);
  std::memcpy(&rel_err, &w->rel_bits, 8);
  float ax, rx;
  std::memcpy(&ax, &w->abs_x, 4);
  std::memcpy(&rx, &w->rel_x, 4);
  std::printf("%s, every finite f32 input: max abs error %.3e (2^%.2f) at x = %.9g\n", name,
              abs_err, std::log2(abs_err), ax);
  std::printf("%s: max rel error %.3e (2^%.2f) at x = %.9g (results >= 2^-126)\n", name, rel_err,
              std::log2(rel_err), rx);
  cudaFree(w);
  return 0;
}
