// Hand-written peer of ir/examples/row_softmax.tir for bench/vulkan_bench.cpp: one workgroup
// per row, a strided pass per step, shared-memory tree reductions for the row max and sum.
// Same kernel ABI as Tessera's (binding = parameter index, `cols` in push constants).
#version 450
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Scalars { layout(offset = 0) int cols; };
shared float red[1024];

float reduce(float v, bool isMax) {
  uint tid = gl_LocalInvocationID.x;
  red[tid] = v;
  barrier();
  for (uint s = gl_WorkGroupSize.x / 2; s > 0; s >>= 1) {
    if (tid < s)
      red[tid] = isMax ? max(red[tid], red[tid + s]) : red[tid] + red[tid + s];
    barrier();
  }
  float r = red[0];
  barrier();
  return r;
}

void main() {
  uint row = gl_WorkGroupID.x, tid = gl_LocalInvocationID.x, nt = gl_WorkGroupSize.x;
  uint base = row * uint(cols);
  float m = -1.0 / 0.0;
  for (uint c = tid; c < uint(cols); c += nt)
    m = max(m, x[base + c]);
  m = reduce(m, true);
  float s = 0.0;
  for (uint c = tid; c < uint(cols); c += nt)
    s += exp(x[base + c] - m);
  s = reduce(s, false);
  float inv = 1.0 / s;
  for (uint c = tid; c < uint(cols); c += nt)
    y[base + c] = exp(x[base + c] - m) * inv;
}
