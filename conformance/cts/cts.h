// The HAL conformance suite (`tessera cts`): gtest suites parametrised over every device of
// every available driver — the built-in ones and plugin .so files given with --driver — that
// check what hal.h promises, independently of any one backend.
//
// A driver joins by being registered; it declares the tests it cannot pass in
// conformance/cts/skips/<backend>.txt ("TestGlob  reason"), and those are reported as skipped
// with the reason. Expected values are computed on the host in each test.
#pragma once

#include "hal/tests/hal_test_util.h"
#include "tessera/hal.h"

#include <gtest/gtest.h>
#include <string>
#include <vector>

namespace tessera::cts {

/// The registry the suite runs against (built in main before the tests are registered).
tsr_registry_t registry();
/// "backend:index" of every device the suite runs on.
const std::vector<std::string> &deviceNames();
/// The reason `test` ("Suite.Name") is skipped on `backend`, or empty.
std::string skipReason(const std::string &backend, const std::string &test);

/// Opens the parameter's device and a stream; releases everything the test allocated.
class CtsTest : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override;
  void TearDown() override;

  tsr_buffer_t allocate(uint64_t size, tsr_memory_kind_t kind = TSR_MEMORY_DEVICE_LOCAL);
  tsr_stream_t newStream();
  tsr_event_t newEvent();
  /// The bytes [offset, offset + n) of `b`, read through `stream_` and synchronized.
  std::vector<uint8_t> read(tsr_buffer_t b, uint64_t offset, uint64_t n);
  void write(tsr_buffer_t b, uint64_t offset, const std::vector<uint8_t> &bytes);

  tsr_device_t device_ = nullptr;
  tsr_stream_t stream_ = nullptr;
  tsr_device_info_t info_ = {};

private:
  std::vector<tsr_buffer_t> buffers_;
  std::vector<tsr_stream_t> streams_;
  std::vector<tsr_event_t> events_;
};

/// Deterministic test bytes.
std::vector<uint8_t> pattern(size_t n, unsigned seed);

/// "cpu_0" from "cpu:0", for test names.
std::string paramName(const ::testing::TestParamInfo<std::string> &info);

} // namespace tessera::cts

#define TSR_CTS_SUITE(Suite)                                                                       \
  INSTANTIATE_TEST_SUITE_P(Devices, Suite, ::testing::ValuesIn(::tessera::cts::deviceNames()),    \
                           ::tessera::cts::paramName);                                             \
  GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Suite)
