// Hand-written peer of ir/examples/gelu_affine.tir for bench/opencl_bench.cpp: what a person
// writes in OpenCL C for y = gelu(a*x + b) (exact erf GELU), in Tessera's OpenCL kernel ABI
// (backends/opencl/opencl_abi.h: each buffer as base, byte offset, byte size; the control
// buffer last) so that both kernels run through the same driver. No bounds checks beyond the
// i < n guard, the builtin erf.
#pragma OPENCL FP_CONTRACT OFF
__kernel void tsr_gelu(__global uchar *xb, ulong xo, ulong xn, __global uchar *bb, ulong bo,
                       ulong bn, __global uchar *yb, ulong yo, ulong yn, float a, int n,
                       __global uint *control) {
  int i = get_global_id(0);
  if (i < n) {
    __global const float *x = (__global const float *)(xb + xo);
    __global const float *b = (__global const float *)(bb + bo);
    __global float *y = (__global float *)(yb + yo);
    float t = fma(a, x[i], b[i]);
    y[i] = 0.5f * t * (1.0f + erf(t * 0.70710677f));
  }
}
