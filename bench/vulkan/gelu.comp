// Hand-written peer of ir/examples/gelu_affine.tir for bench/vulkan_bench.cpp:
// y = gelu(a*x + b) with gelu(t) = 0.5 t (1 + erf(t / sqrt 2)), written to Tessera's Vulkan
// kernel ABI (bindings = parameter index, scalars in push constants, workgroup size from
// specialization constants 0..2). GLSL has no erf: this uses the rational approximation
// a GLSL programmer would reach for (Abramowitz & Stegun 7.1.26, |error| < 1.5e-7).
#version 450
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) readonly buffer B { float b[]; };
layout(set = 0, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Scalars {
  layout(offset = 0) float a;
  layout(offset = 4) int n;
};

float erf_as(float v) {
  float s = sign(v), z = abs(v);
  float t = 1.0 / (1.0 + 0.3275911 * z);
  float p = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  return s * (1.0 - p * exp(-z * z));
}

void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i >= uint(n))
    return;
  float t = fma(a, x[i], b[i]);
  y[i] = 0.5 * t * (1.0 + erf_as(t * 0.70710677));
}
