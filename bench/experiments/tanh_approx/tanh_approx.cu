// The error of the hardware's tanh.approx.f32 (what Kiln evaluates tanh with in steps whose
// outputs are all f16 or bf16: compiler/emit.cpp, Emitter::approx_tanh), measured over every
// finite f32 input against tanh in double precision. Prints the largest absolute error, the
// largest relative error (over results of magnitude >= 2^-126), where each happens, and what
// NaN and the infinities give.
//   nvcc -O3 -arch=sm_90 tanh_approx.cu -o tanh_approx && ./tanh_approx
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

__device__ float approx_tanh(float x) {
  float y;
  asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

struct Worst {
  unsigned long long abs_bits, rel_bits;  // errors as double bits (non-negative: order holds)
  unsigned abs_x, rel_x;
};

__device__ unsigned long long as_bits(double d) {
  return static_cast<unsigned long long>(__double_as_longlong(d));
}

// locate = false: the largest errors; locate = true: an input at which each happens (a second
// pass, so that the input recorded is one with exactly the largest error).
__global__ void scan(uint64_t start, uint64_t count, Worst* w, bool locate) {
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < count;
       i += uint64_t{gridDim.x} * blockDim.x) {
    unsigned bits = static_cast<unsigned>(start + i);
    float x = __uint_as_float(bits);
    if (!isfinite(x)) continue;
    double want = tanh(static_cast<double>(x));
    double got = approx_tanh(x);
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
  out[0] = approx_tanh(__int_as_float(0x7fc00000));
  out[1] = approx_tanh(__int_as_float(0x7f800000));
  out[2] = approx_tanh(__int_as_float(0xff800000));
  out[3] = approx_tanh(0.0f);
  out[4] = approx_tanh(-0.0f);
}

int main() {
  Worst* w;
  cudaMallocManaged(&w, sizeof(Worst));
  std::memset(w, 0, sizeof(Worst));
  const uint64_t total = uint64_t{1} << 32, chunk = uint64_t{1} << 30;
  for (bool locate : {false, true}) {
    for (uint64_t s = 0; s < total; s += chunk) scan<<<132 * 8, 256>>>(s, chunk, w, locate);
  }
  float* sp;
  cudaMallocManaged(&sp, 5 * sizeof(float));
  specials<<<1, 1>>>(sp);
  if (cudaDeviceSynchronize() != cudaSuccess) return 1;
  double abs_err, rel_err;
  std::memcpy(&abs_err, &w->abs_bits, 8);
  std::memcpy(&rel_err, &w->rel_bits, 8);
  float ax, rx;
  std::memcpy(&ax, &w->abs_x, 4);
  std::memcpy(&rx, &w->rel_x, 4);
  std::printf("every finite f32 input: max abs error %.3e (2^%.2f) at x = %.9g\n", abs_err,
              std::log2(abs_err), ax);
  std::printf("max rel error %.3e (2^%.2f) at x = %.9g (results >= 2^-126)\n", rel_err,
              std::log2(rel_err), rx);
  std::printf("tanh(NaN) = %g, tanh(+inf) = %g, tanh(-inf) = %g, tanh(+0) = %g, tanh(-0) = %g\n",
              sp[0], sp[1], sp[2], sp[3], sp[4]);
  return 0;
}
