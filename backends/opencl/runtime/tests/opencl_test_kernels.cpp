// The OpenCL driver tests' kernels, module builder and fixture (opencl_test_kernels.h).
//
// Test-only.
#include "opencl_test_kernels.h"

#include "backends/opencl/opencl_abi.h"
#include "backends/opencl/runtime/opencl_driver.h"

#include <map>

namespace tessera::opencl::testing {

const char kKernelSource[] = R"CL(
#pragma OPENCL FP_CONTRACT OFF
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

__kernel void tsr_vadd(__global uchar *b0, ulong o0, ulong n0, __global uchar *b1, ulong o1,
                       ulong n1, __global uchar *b2, ulong o2, ulong n2, float s, int n,
                       __global uint *control) {
  size_t i = get_global_id(0);
  if (i >= (size_t)n || i >= n0 / 4 || i >= n1 / 4 || i >= n2 / 4)
    return;
  __global const float *a = (__global const float *)(b0 + o0);
  __global const float *b = (__global const float *)(b1 + o1);
  __global float *c = (__global float *)(b2 + o2);
  c[i] = a[i] * s + b[i];
}

__kernel void tsr_scalars(__global uchar *b0, ulong o0, ulong n0, char v8, short v16, int v32,
                          long v64, ushort h, ushort bf, float f, double d,
                          __global uint *control) {
  __global long *out = (__global long *)(b0 + o0);
  out[0] = v8;
  out[1] = v16;
  out[2] = v32;
  out[3] = v64;
  out[4] = h;
  out[5] = bf;
  out[6] = as_uint(f);
  out[7] = as_long(d);
}

__kernel void tsr_oob(__global uchar *b0, ulong o0, ulong n0, __global uint *control) {
  if (get_global_id(0) != 0)
    return;
  if (atomic_cmpxchg(&control[1], 0u, 2u) == 0u) {  // TSR_FAULT_STORE_OUT_OF_BOUNDS
    long index = -2000000000L;
    long count = (long)(n0 / 4);
    control[2] = 4u;
    control[3] = 3u;
    control[4] = 0u;
    control[5] = (uint)index;
    control[6] = (uint)(index >> 32);
    control[7] = (uint)count;
    control[8] = (uint)(count >> 32);
    control[9] = get_local_id(0);
    control[10] = get_local_id(1);
    control[11] = get_local_id(2);
    control[12] = get_group_id(0);
    control[13] = get_group_id(1);
    control[14] = get_group_id(2);
  }
}

__kernel void tsr_spin(__global uchar *b0, ulong o0, ulong n0, __global uint *control) {
  __global uint *out = (__global uint *)(b0 + o0);
  uint k = 0;
  while (1) {
    k++;
    if (*(volatile __global uint *)control != 0u) {
      if (atomic_cmpxchg(&control[1], 0u, 8u) == 0u) {  // TSR_FAULT_DEADLINE
        control[9] = get_local_id(0);
        control[12] = get_group_id(0);
      }
      return;
    }
    if (k == 0xffffffffu)
      out[0] = k;  // never reached in a test; keeps the loop's work observable
  }
}

__kernel void tsr_slowfill(__global uchar *b0, ulong o0, ulong n0, int v, int iters,
                           __global uint *control) {
  __global volatile uint *out = (__global volatile uint *)(b0 + o0);
  size_t i = get_global_id(0);
  if (i >= n0 / 4)
    return;
  uint acc = 0;
  for (int k = 0; k < iters; ++k) {
    acc = acc * 1664525u + 1013904223u;
    if (*(volatile __global uint *)control != 0u)
      return;
  }
  out[i] = (uint)v + (acc & 0u);
}
)CL";

namespace {

const tsr_kernel_param_t kVadd[] = {{TSR_TYPE_BUFFER, "a"},
                                    {TSR_TYPE_BUFFER, "b"},
                                    {TSR_TYPE_BUFFER, "c"},
                                    {TSR_TYPE_F32, "s"},
                                    {TSR_TYPE_I32, "n"}};
const tsr_kernel_param_t kScalars[] = {
    {TSR_TYPE_BUFFER, "out"}, {TSR_TYPE_I8, "v8"},   {TSR_TYPE_I16, "v16"},
    {TSR_TYPE_I32, "v32"},    {TSR_TYPE_I64, "v64"}, {TSR_TYPE_F16, "h"},
    {TSR_TYPE_BF16, "bf"},    {TSR_TYPE_F32, "f"},   {TSR_TYPE_F64, "d"}};
const tsr_kernel_param_t kOneBuffer[] = {{TSR_TYPE_BUFFER, "out"}};
const tsr_kernel_param_t kSlowfill[] = {
    {TSR_TYPE_BUFFER, "out"}, {TSR_TYPE_I32, "v"}, {TSR_TYPE_I32, "iters"}};

} // namespace

Module makeModule(const std::string &source, const std::vector<std::string> &names) {
  static const std::map<std::string, std::pair<const tsr_kernel_param_t *, uint32_t>> kTables = {
      {"vadd", {kVadd, 5}},
      {"scalars", {kScalars, 9}},
      {"oob", {kOneBuffer, 1}},
      {"spin", {kOneBuffer, 1}},
      {"slowfill", {kSlowfill, 3}}};
  Module m;
  for (const std::string &name : names) {
    auto it = kTables.find(name);
    // An unknown name is a kernel the program lacks: one buffer parameter.
    auto [params, count] = it == kTables.end() ? std::pair{kOneBuffer, 1u} : it->second;
    m.kernels.push_back(
        {it == kTables.end() ? name.c_str() : it->first.c_str(), params, count, nullptr, 0, 0});
  }
  m.module.struct_size = sizeof m.module;
  m.module.version = TSR_GPU_MODULE_VERSION;
  m.module.image = source.data();
  m.module.image_size = source.size();
  m.module.kernels = m.kernels.data();
  m.module.kernel_count = uint32_t(m.kernels.size());
  return m;
}

void OpenClTest::SetUp() {
  TSR_ASSERT_OK(tsr_registry_create(&registry_));
  tsr_status_t st = tsr_registry_register_driver(registry_, tsr_opencl_driver());
  if (tsr_status_code(st) == TSR_UNAVAILABLE) {
    std::string why = tsr_status_message(st);
    tsr_status_free(st);
    GTEST_SKIP() << "no OpenCL platform: " << why;
  }
  TSR_ASSERT_OK(st);
  uint32_t n = 0;
  TSR_ASSERT_OK(tsr_registry_device_count(registry_, &n));
  if (n == 0)
    GTEST_SKIP() << "the OpenCL platform has no device";
  TSR_ASSERT_OK(tsr_registry_open_device(registry_, "opencl:0", &device_));
  info_.struct_size = sizeof info_;
  TSR_ASSERT_OK(tsr_device_info(device_, &info_));
  TSR_ASSERT_OK(tsr_stream_create(device_, &stream_));
}

void OpenClTest::TearDown() {
  if (stream_)
    TSR_EXPECT_OK(tsr_stream_synchronize(stream_));
  for (auto k : kernels_)
    tsr_kernel_release(k);
  for (auto e : executables_)
    tsr_executable_release(e);
  for (auto b : buffers_)
    tsr_buffer_release(b);
  if (stream_)
    tsr_stream_release(stream_);
  if (device_)
    tsr_device_release(device_);
  if (registry_)
    tsr_registry_release(registry_);
}

tsr_buffer_t OpenClTest::allocate(uint64_t size, tsr_memory_kind_t kind) {
  tsr_buffer_t b = nullptr;
  TSR_EXPECT_OK(tsr_buffer_allocate(device_, size, kind, &b));
  buffers_.push_back(b);
  return b;
}

std::vector<uint8_t> OpenClTest::read(tsr_buffer_t b, uint64_t offset, uint64_t n) {
  std::vector<uint8_t> out(n, 0xEE);
  TSR_EXPECT_OK(tsr_stream_copy_d2h(stream_, b, offset, out.data(), n));
  TSR_EXPECT_OK(tsr_stream_synchronize(stream_));
  return out;
}

void OpenClTest::write(tsr_buffer_t b, uint64_t offset, const void *data, uint64_t n) {
  TSR_EXPECT_OK(tsr_stream_copy_h2d(stream_, data, b, offset, n));
  TSR_EXPECT_OK(tsr_stream_synchronize(stream_));
}

tsr_status_t OpenClTest::create(const std::string &source, const std::vector<std::string> &names,
                                tsr_executable_t *out) {
  Module m = makeModule(source, names);
  tsr_status_t st =
      tsr_executable_create(device_, TSR_OPENCL_FORMAT, &m.module, sizeof m.module, out);
  if (!st)
    executables_.push_back(*out);
  return st;
}

tsr_kernel_t OpenClTest::kernel(tsr_executable_t exe, const char *name) {
  tsr_kernel_t k = nullptr;
  TSR_EXPECT_OK(tsr_executable_kernel(exe, name, &k));
  kernels_.push_back(k);
  return k;
}

} // namespace tessera::opencl::testing
