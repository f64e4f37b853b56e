// Hand-written peer of ir/examples/row_softmax.tir for bench/opencl_bench.cpp: one workgroup
// of 128 per row, strided max / sum(exp) / normalise with local-memory tree reductions (the
// same algorithm), in Tessera's OpenCL kernel ABI (backends/opencl/opencl_abi.h).
#pragma OPENCL FP_CONTRACT OFF
__kernel void tsr_softmax(__global uchar *xb, ulong xo, ulong xn, __global uchar *yb, ulong yo,
                          ulong yn, int cols, __global uint *control) {
  __local float red[128];
  __global const float *x = (__global const float *)(xb + xo) + (size_t)get_group_id(0) * cols;
  __global float *y = (__global float *)(yb + yo) + (size_t)get_group_id(0) * cols;
  int tid = get_local_id(0), nt = get_local_size(0);
  float m = -INFINITY;
  for (int c = tid; c < cols; c += nt)
    m = fmax(m, x[c]);
  red[tid] = m;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = nt >> 1; s > 0; s >>= 1) {
    if (tid < s)
      red[tid] = fmax(red[tid], red[tid + s]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  float rowmax = red[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  float sum = 0.0f;
  for (int c = tid; c < cols; c += nt)
    sum += exp(x[c] - rowmax);
  red[tid] = sum;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = nt >> 1; s > 0; s >>= 1) {
    if (tid < s)
      red[tid] += red[tid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  float rowsum = red[0];
  for (int c = tid; c < cols; c += nt)
    y[c] = exp(x[c] - rowmax) / rowsum;
}
