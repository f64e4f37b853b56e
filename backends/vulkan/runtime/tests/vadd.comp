// Test kernel for the Vulkan driver, written to Tessera's Vulkan kernel ABI
// (backends/gpu_module.h): c[i] = a[i] + b[i] * s for i < n.
#version 450
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer B { float b[]; };
layout(set = 0, binding = 2) writeonly buffer C { float c[]; };
layout(push_constant) uniform Scalars {
  layout(offset = 0) float s;  // parameter 3
  layout(offset = 8) int64_t n_unused; // parameter 4 (an 8-byte slot)
  layout(offset = 16) int n;   // parameter 5
};
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < uint(n))
    c[i] = a[i] + b[i] * s;
}
