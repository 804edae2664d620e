// The error of Kiln's approximate erf (compiler/emit.cpp, Emitter::approx_erf: tanh.approx.f32
// of x p(x^2), in steps whose outputs are all f16 or bf16), and of libdevice's erff beside it,
// measured over every finite f32 input against erf in double precision. Prints the largest
// absolute error and where it happens, the largest relative error over |erf(x)| >= 2^-126, and
// what NaN, the infinities and the zeros give.
//   nvcc -O3 -arch=sm_90 erf_approx.cu -o erf_approx && ./erf_approx
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

__device__ float approx_tanh(float x) {
  float y;
  asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// The same operations as the code generator emits: u = x * x, p by fma from c4 down, x * p.
__device__ float approx_erf(float x) {
  const float c[] = {0x1.20dc14p+0f, 0x1.a59d00p-4f, -0x1.047a5ap-11f, -0x1.b34dfep-12f,
                     0x1.0e7bdep-15f};
  float u = __fmul_rn(x, x);
  float p = c[4];
  for (int i = 3; i >= 0; --i) p = __fmaf_rn(p, u, c[i]);
  return approx_tanh(__fmul_rn(x, p));
}

struct Worst {
  unsigned long long abs_bits, rel_bits;  // errors as double bits (non-negative: order holds)
  unsigned abs_x, rel_x;
};

__device__ unsigned long long as_bits(double d) {
  return static_cast<unsigned long long>(__double_as_longlong(d));
}

// locate = false: the largest errors; locate = true: an input at which each happens.
template <bool kApprox>
__global__ void scan(uint64_t start, uint64_t count, Worst* w, bool locate) {
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < count;
       i += uint64_t{gridDim.x} * blockDim.x) {
    unsigned bits = static_cast<unsigned>(start + i);
    float x = __uint_as_float(bits);
    if (!isfinite(x)) continue;
    double want = erf(static_cast<double>(x));
    double got = kApprox ? approx_erf(x) : erff(x);
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

__global__ void specials(float* out) {
  const float in[] = {__int_as_float(0x7fc00000), __int_as_float(0x7f800000),
                      __int_as_float(0xff800000), 0.0f, -0.0f};
  for (int i = 0; i < 5; ++i) out[i] = approx_erf(in[i]);
}

template <bool kApprox>
int report(const char* name) {
  Worst* w;
  cudaMallocManaged(&w, sizeof(Worst));
  std::memset(w, 0, sizeof(Worst));
  const uint64_t total = uint64_t{1} << 32, chunk = uint64_t{1} << 30;
  for (bool locate : {false, true}) {
    for (uint64_t s = 0; s < total; s += chunk) scan<kApprox><<<132 * 8, 256>>>(s, chunk, w, locate);
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
  std::printf("%s: max rel error %.3e (2^%.2f) at x = %.9g (|erf(x)| >= 2^-126)\n", name, rel_err,
              std::log2(rel_err), rx);
  cudaFree(w);
  return 0;
}

int main() {
  if (report<true>("approx_erf") || report<false>("libdevice erff")) return 1;
  float* sp;
  cudaMallocManaged(&sp, 5 * sizeof(float));
  specials<<<1, 1>>>(sp);
  if (cudaDeviceSynchronize() != cudaSuccess) return 1;
  std::printf(
      "approx_erf(NaN) = %g, (+inf) = %g, (-inf) = %g, (+0) = %g, (-0) = %g (signbit %d)\n",
      sp[0], sp[1], sp[2], sp[3], sp[4], std::signbit(sp[4]) ? 1 : 0);
  return 0;
}
