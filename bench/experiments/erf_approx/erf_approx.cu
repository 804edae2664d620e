// The error of Kiln's approximate erf (compiler/emit.cpp, Emitter::approx_erf: tanh.approx.f32
// of x p(x^2), in steps whose outputs are all f16 or bf16), and of libdevice's erff beside it,
// measured over every finite f32 input against erf in double precision (../approx_error.cuh):
// the largest absolute error and where it happens, the largest relative error over
// |erf(x)| >= 2^-126, and what NaN, the infinities and the zeros give.
//   nvcc -O3 -arch=sm_90 erf_approx.cu -o erf_approx && ./erf_approx
#include "../approx_error.cuh"

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

struct Approx {
  static __device__ float got(float x) { return approx_erf(x); }
  static __device__ double want(double x) { return erf(x); }
};
struct Libdevice {
  static __device__ float got(float x) { return erff(x); }
  static __device__ double want(double x) { return erf(x); }
};

__global__ void specials(float* out) {
  const float in[] = {__int_as_float(0x7fc00000), __int_as_float(0x7f800000),
                      __int_as_float(0xff800000), 0.0f, -0.0f};
  for (int i = 0; i < 5; ++i) out[i] = approx_erf(in[i]);
}

int main() {
  if (report<Approx>("approx_erf") || report<Libdevice>("libdevice erff")) return 1;
  float* sp;
  cudaMallocManaged(&sp, 5 * sizeof(float));
  specials<<<1, 1>>>(sp);
  if (cudaDeviceSynchronize() != cudaSuccess) return 1;
  std::printf("approx_erf(NaN) = %g, (+inf) = %g, (-inf) = %g, (+0) = %g, (-0) = %g (signbit %d)\n",
              sp[0], sp[1], sp[2], sp[3], sp[4], std::signbit(sp[4]) ? 1 : 0);
  return 0;
}
