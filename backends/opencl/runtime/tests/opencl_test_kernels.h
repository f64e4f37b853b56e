// Hand-written OpenCL C kernels in the ABI of backends/opencl/opencl_abi.h (written as the
// codegen writes them: buffers as base/offset/bytes, the control buffer last), their kernel
// tables, and a fixture that opens opencl:0 — shared by the OpenCL driver's tests so that
// they do not wait for the codegen.
//
// Test-only.
#pragma once

#include "backends/gpu_module.h"
#include "hal/tests/hal_test_util.h"
#include "tessera/hal.h"

#include <gtest/gtest.h>
#include <string>
#include <vector>

namespace tessera::opencl::testing {

/// vadd(a, b, c: buffer<f32>, s: f32, n: i32): c[i] = a[i] * s + b[i] for i < n.
/// scalars(out: buffer<i64>, i8, i16, i32, i64, f16, bf16, f32, f64): out[k] = the bits of
/// scalar k (sign-extended integers, the float's bits).
/// oob(out: buffer<f32>): work-item 0 records a checked-mode store fault (kernel_faults.h) at
/// 4:3, index -2000000000 of parameter 0 (count = the view's elements).
/// spin(out: buffer<u32>): loops until control[0] is set (a volatile read per iteration, as
/// the codegen polls), then claims the record with TSR_FAULT_DEADLINE and returns.
/// slowfill(out: buffer<u32>, v: i32, iters: i32): busy-loops `iters` times, then out[i] = v.
extern const char kKernelSource[];

/// tsr_stream_fill with the pattern in the low `size` bytes of `pattern`.
inline tsr_status_t fillWith(tsr_stream_t stream, tsr_buffer_t buffer, uint64_t offset,
                             uint64_t length, uint32_t pattern, uint32_t size) {
  return tsr_stream_fill(stream, buffer, offset, length, &pattern, size); // little-endian host
}

/// A TSR_OPENCL_FORMAT module of `source` with the kernels named (from the list above).
struct Module {
  tsr_gpu_module module = {};
  std::vector<tsr_gpu_kernel> kernels;
};
Module makeModule(const std::string &source, const std::vector<std::string> &names);

class OpenClTest : public ::testing::Test {
protected:
  void SetUp() override;
  void TearDown() override;

  tsr_buffer_t allocate(uint64_t size, tsr_memory_kind_t kind = TSR_MEMORY_DEVICE_LOCAL);
  std::vector<uint8_t> read(tsr_buffer_t b, uint64_t offset, uint64_t n);
  void write(tsr_buffer_t b, uint64_t offset, const void *data, uint64_t n);
  /// executable_create of `source` with the kernels named.
  tsr_status_t create(const std::string &source, const std::vector<std::string> &names,
                      tsr_executable_t *out);
  tsr_kernel_t kernel(tsr_executable_t exe, const char *name);

  tsr_registry_t registry_ = nullptr;
  tsr_device_t device_ = nullptr;
  tsr_stream_t stream_ = nullptr;
  tsr_device_info_t info_ = {};
  std::vector<tsr_buffer_t> buffers_;
  std::vector<tsr_executable_t> executables_;
  std::vector<tsr_kernel_t> kernels_;
};

} // namespace tessera::opencl::testing
