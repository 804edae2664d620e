// The error of the hardware's tanh.approx.f32 (what Kiln evaluates tanh with in steps whose
// outputs are all f16 or bf16: compiler/emit.cpp, Emitter::approx_tanh), measured over every
// finite f32 input against tanh in double precision (../approx_error.cuh). Prints the largest
// absolute error, the largest relative error (over results of magnitude >= 2^-126), where each
// happens, and what NaN and the infinities give.
//   nvcc -O3 -arch=sm_90 tanh_approx.cu -o tanh_approx && ./tanh_approx
#include "../approx_error.cuh"

__device__ float approx_tanh(float x) {
  float y;
  asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

struct Approx {
  static __device__ float got(float x) { return approx_tanh(x); }
  static __device__ double want(double x) { return tanh(x); }
};

__global__ void specials(float* out) {
  out[0] = approx_tanh(__int_as_float(0x7fc00000));
  out[1] = approx_tanh(__int_as_float(0x7f800000));
  out[2] = approx_tanh(__int_as_float(0xff800000));
  out[3] = approx_tanh(0.0f);
  out[4] = approx_tanh(-0.0f);
}

int main() {
  if (report<Approx>("tanh.approx.f32")) return 1;
  float* sp;
  cudaMallocManaged(&sp, 5 * sizeof(float));
  specials<<<1, 1>>>(sp);
  if (cudaDeviceSynchronize() != cudaSuccess) return 1;
  std::printf("tanh(NaN) = %g, tanh(+inf) = %g, tanh(-inf) = %g, tanh(+0) = %g, tanh(-0) = %g\n",
              sp[0], sp[1], sp[2], sp[3], sp[4]);
  return 0;
}
