// Hand-written cpu-native kernels and a fixture that opens cpu:0 and loads them, shared by
// the CPU driver tests. Expected results in the tests are computed independently on the
// host, never read back from an earlier run of these kernels.
//
// Test-only; the kernels are plain C++ functions in the form the CPU codegen will emit.
#pragma once

#include "backends/cpu/runtime/cpu_native_module.h"
#include "hal/tests/hal_test_util.h"
#include "tessera/hal_driver.h"

#include <atomic>
#include <cstdint>
#include <gtest/gtest.h>
#include <vector>

namespace tessera::cpu::testing {

/// The packed record the "scalars" kernel writes: every scalar parameter at a fixed offset.
struct ScalarRecord {
  int8_t i8;
  uint8_t pad0;
  int16_t i16;
  int32_t i32;
  int64_t i64;
  uint16_t f16_bits;
  uint16_t bf16_bits;
  float f32;
  double f64;
};
static_assert(sizeof(ScalarRecord) == 32, "ScalarRecord layout is what the kernel writes");

/// The module of every test kernel:
///   iota(buffer<i32> out, i32 n)                  out[i] = i           (1-D)
///   add_one(buffer<i32> x, i32 n)                 x[i] += 1
///   saxpy(buffer<f32> x, buffer<f32> y, f32 a, i32 n)   y[i] = a*x[i] + y[i]
///   scalars(buffer out, i8, i16, i32, i64, f16, bf16, f32, f64)   writes a ScalarRecord
///   iota3d(buffer<i32> out)                       out[linear global id] = linear global id
///   reverse64(buffer<i32> x) [workgroup 64, 256 B shared]  reverses each group of 64
///   gate(buffer<i32> x) [workgroup 1]             waits for gateOpen(), then x[0] = 42
const tsr_cpu_native_module &testModule();

/// The flag the "gate" kernel spins on.
std::atomic<bool> &gateOpen();

/// A registry with the CPU driver, cpu:0 opened, and the test module loaded.
class CpuTest : public ::testing::Test {
protected:
  void SetUp() override;
  void TearDown() override;

  /// Registers `table` instead of the CPU driver (which must be a CPU-driver wrapper).
  virtual const tsr_driver_v1 *driverTable();
  virtual const char *deviceName() { return "cpu:0"; }

  tsr_kernel_t kernel(const char *name); // owned by the fixture
  tsr_buffer_t allocate(uint64_t size,   // owned by the fixture
                        tsr_memory_kind_t kind = TSR_MEMORY_DEVICE_LOCAL);
  tsr_stream_t newStream(); // owned by the fixture
  tsr_event_t newEvent();   // owned by the fixture
  std::vector<int32_t> readInts(tsr_buffer_t buffer, uint64_t count, uint64_t offset = 0);
  void writeInts(tsr_buffer_t buffer, const std::vector<int32_t> &values, uint64_t offset = 0);

  tsr_registry_t registry_ = nullptr;
  tsr_device_t device_ = nullptr;
  tsr_executable_t executable_ = nullptr;
  tsr_stream_t stream_ = nullptr;
  tsr_device_info_t info_ = {};

private:
  std::vector<tsr_kernel_t> kernels_;
  std::vector<tsr_buffer_t> buffers_;
  std::vector<tsr_stream_t> streams_;
  std::vector<tsr_event_t> events_;
};

} // namespace tessera::cpu::testing
