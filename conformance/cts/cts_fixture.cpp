// The CtsTest fixture: one device and stream per test, skip lists applied before anything runs.
#include "conformance/cts/cts.h"

namespace tessera::cts {

std::string paramName(const ::testing::TestParamInfo<std::string> &info) {
  std::string s = info.param;
  for (char &c : s)
    if (!isalnum(static_cast<unsigned char>(c)))
      c = '_';
  return s;
}

std::vector<uint8_t> pattern(size_t n, unsigned seed) {
  std::vector<uint8_t> bytes(n);
  for (size_t i = 0; i < n; ++i)
    bytes[i] = uint8_t((i * 131 + seed * 17 + (i >> 8)) & 0xff);
  return bytes;
}

void CtsTest::SetUp() {
  const auto *t = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string suite = t->test_suite_name(), name = t->name();
  suite = suite.substr(suite.find('/') + 1);   // "Devices/CtsCopies" -> "CtsCopies"
  name = name.substr(0, name.find('/'));       // "RoundTrip/cpu_0" -> "RoundTrip"
  std::string backend = GetParam().substr(0, GetParam().find(':'));
  std::string why = skipReason(backend, suite + "." + name);
  if (!why.empty())
    GTEST_SKIP() << backend << " declares: " << why;
  TSR_ASSERT_OK(tsr_registry_open_device(registry(), GetParam().c_str(), &device_));
  info_.struct_size = sizeof info_;
  TSR_ASSERT_OK(tsr_device_info(device_, &info_));
  TSR_ASSERT_OK(tsr_stream_create(device_, &stream_));
}

void CtsTest::TearDown() {
  if (stream_)
    tsr_status_free(tsr_stream_synchronize(stream_)); // leave nothing running
  for (auto s : streams_)
    tsr_stream_release(s);
  for (auto e : events_)
    tsr_event_release(e);
  for (auto b : buffers_)
    tsr_buffer_release(b);
  if (stream_)
    tsr_stream_release(stream_);
  if (device_)
    tsr_device_release(device_);
}

tsr_buffer_t CtsTest::allocate(uint64_t size, tsr_memory_kind_t kind) {
  tsr_buffer_t b = nullptr;
  TSR_EXPECT_OK(tsr_buffer_allocate(device_, size, kind, &b));
  if (b)
    buffers_.push_back(b);
  return b;
}

tsr_stream_t CtsTest::newStream() {
  tsr_stream_t s = nullptr;
  TSR_EXPECT_OK(tsr_stream_create(device_, &s));
  if (s)
    streams_.push_back(s);
  return s;
}

tsr_event_t CtsTest::newEvent() {
  tsr_event_t e = nullptr;
  TSR_EXPECT_OK(tsr_event_create(device_, &e));
  if (e)
    events_.push_back(e);
  return e;
}

std::vector<uint8_t> CtsTest::read(tsr_buffer_t b, uint64_t offset, uint64_t n) {
  std::vector<uint8_t> out(n, 0xEE);
  TSR_EXPECT_OK(tsr_stream_copy_d2h(stream_, b, offset, out.data(), n));
  TSR_EXPECT_OK(tsr_stream_synchronize(stream_));
  return out;
}

void CtsTest::write(tsr_buffer_t b, uint64_t offset, const std::vector<uint8_t> &bytes) {
  TSR_EXPECT_OK(tsr_stream_copy_h2d(stream_, bytes.data(), b, offset, bytes.size()));
  TSR_EXPECT_OK(tsr_stream_synchronize(stream_)); // `bytes` may die after the return
}

} // namespace tessera::cts
