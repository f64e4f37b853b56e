// CTS: stream ordering (long dependent chains, queries), events across streams (record,
// wait, re-record, never-recorded events), and released-handle misuse.
#include "conformance/cts/cts.h"

#include <cstring>

namespace tessera::cts {
namespace {

using CtsStreams = CtsTest;
using CtsEvents = CtsTest;

uint32_t word(const std::vector<uint8_t> &bytes, size_t at) {
  uint32_t w = 0;
  std::memcpy(&w, &bytes[at], 4);
  return w;
}

TEST_P(CtsStreams, ADependentChainRunsInOrder) {
  // Each step copies the previous buffer's contents after overwriting one word of it.
  tsr_buffer_t a = allocate(1 << 16), b = allocate(1 << 16);
  for (uint32_t i = 0; i < 300; ++i) {
    TSR_ASSERT_OK(tsr_stream_fill(stream_, a, (i % 16) * 4, 4, &i, 4));
    TSR_ASSERT_OK(tsr_stream_copy_d2d(stream_, a, 0, b, 0, 1 << 16));
    TSR_ASSERT_OK(tsr_stream_copy_d2d(stream_, b, 0, a, 0, 1 << 16));
  }
  std::vector<uint8_t> got = read(b, 0, 64);
  for (uint32_t slot = 0; slot < 16; ++slot) { // the last i < 300 with i % 16 == slot
    uint32_t last = slot <= 299 % 16 ? 288 + slot : 272 + slot;
    EXPECT_EQ(word(got, slot * 4), last) << "slot " << slot;
  }
}

TEST_P(CtsStreams, QueryIsIdleAfterSynchronize) {
  tsr_buffer_t a = allocate(1 << 20);
  uint32_t v = 1;
  TSR_ASSERT_OK(tsr_stream_fill(stream_, a, 0, 1 << 20, &v, 4));
  TSR_ASSERT_OK(tsr_stream_synchronize(stream_));
  bool idle = false;
  TSR_ASSERT_OK(tsr_stream_query(stream_, &idle));
  EXPECT_TRUE(idle);
}

TEST_P(CtsStreams, DeviceToHostThenHostToDeviceOnOneStreamSeesTheData) {
  tsr_buffer_t a = allocate(256), b = allocate(256);
  uint32_t v = 0xA1B2C3D4;
  TSR_ASSERT_OK(tsr_stream_fill(stream_, a, 0, 256, &v, 4));
  std::vector<uint8_t> host(256, 0);
  TSR_ASSERT_OK(tsr_stream_copy_d2h(stream_, a, 0, host.data(), 256));
  TSR_ASSERT_OK(tsr_stream_copy_h2d(stream_, host.data(), b, 0, 256));
  EXPECT_EQ(word(read(b, 0, 256), 252), v);
}

TEST_P(CtsEvents, WaitOrdersWorkAcrossStreams) {
  tsr_stream_t s2 = newStream();
  tsr_event_t e = newEvent();
  tsr_buffer_t a = allocate(4 << 20), b = allocate(4 << 20);
  for (uint32_t round = 1; round <= 3; ++round) {
    TSR_ASSERT_OK(tsr_stream_fill(stream_, a, 0, 4 << 20, &round, 4));
    TSR_ASSERT_OK(tsr_stream_record_event(stream_, e)); // re-recording replaces the record
    TSR_ASSERT_OK(tsr_stream_wait_event(s2, e));
    TSR_ASSERT_OK(tsr_stream_copy_d2d(s2, a, 0, b, 0, 4 << 20));
    TSR_ASSERT_OK(tsr_stream_synchronize(s2));
    std::vector<uint8_t> got(16);
    TSR_ASSERT_OK(tsr_stream_copy_d2h(s2, b, (4 << 20) - 16, got.data(), 16));
    TSR_ASSERT_OK(tsr_stream_synchronize(s2));
    EXPECT_EQ(word(got, 12), round);
  }
}

TEST_P(CtsEvents, SynchronizeCoversHostCopies) {
  tsr_event_t e = newEvent();
  tsr_buffer_t a = allocate(1 << 20);
  uint32_t v = 77;
  TSR_ASSERT_OK(tsr_stream_fill(stream_, a, 0, 1 << 20, &v, 4));
  std::vector<uint32_t> host(1 << 18, 0);
  TSR_ASSERT_OK(tsr_stream_copy_d2h(stream_, a, 0, host.data(), 1 << 20));
  TSR_ASSERT_OK(tsr_stream_record_event(stream_, e));
  TSR_ASSERT_OK(tsr_event_synchronize(e));
  bool ready = false;
  TSR_ASSERT_OK(tsr_event_query(e, &ready));
  EXPECT_TRUE(ready);
  EXPECT_EQ(host.back(), 77u);
}

TEST_P(CtsEvents, NeverRecordedEventsAreComplete) {
  tsr_event_t e = newEvent();
  bool ready = false;
  TSR_ASSERT_OK(tsr_event_query(e, &ready));
  EXPECT_TRUE(ready);
  TSR_EXPECT_OK(tsr_event_synchronize(e));
  TSR_EXPECT_OK(tsr_stream_wait_event(stream_, e)); // no wait at all
}

TEST_P(CtsEvents, ReleasedHandlesAreRefused) {
  tsr_event_t e = nullptr;
  TSR_ASSERT_OK(tsr_event_create(device_, &e));
  tsr_event_release(e);
  TSR_EXPECT_ERROR(tsr_event_synchronize(e), TSR_INVALID_ARGUMENT, "released");
  TSR_EXPECT_ERROR(tsr_stream_record_event(stream_, nullptr), TSR_INVALID_ARGUMENT, "NULL");
}

TSR_CTS_SUITE(CtsStreams);
TSR_CTS_SUITE(CtsEvents);

} // namespace
} // namespace tessera::cts
