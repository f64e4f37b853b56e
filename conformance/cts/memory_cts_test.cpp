// CTS: buffers and mapping, copies (every direction, offsets, unaligned sizes, bounds) and
// fills (every pattern size, odd offsets, misuse).
#include "conformance/cts/cts.h"

#include <cstring>

namespace tessera::cts {
namespace {

using CtsBuffers = CtsTest;
using CtsCopies = CtsTest;
using CtsFills = CtsTest;

TEST_P(CtsBuffers, SizesAndViewsAreReported) {
  tsr_buffer_t b = allocate(4097);
  ASSERT_NE(b, nullptr);
  uint64_t size = 0;
  TSR_ASSERT_OK(tsr_buffer_size(b, &size));
  EXPECT_EQ(size, 4097u);
  tsr_buffer_t view = nullptr;
  TSR_ASSERT_OK(tsr_buffer_create_view(b, info_.buffer_offset_alignment, 100, &view));
  TSR_ASSERT_OK(tsr_buffer_size(view, &size));
  EXPECT_EQ(size, 100u);
  tsr_buffer_release(view);
}

TEST_P(CtsBuffers, BadAllocationsAreRefused) {
  tsr_buffer_t b = nullptr;
  TSR_EXPECT_ERROR(tsr_buffer_allocate(device_, 0, TSR_MEMORY_DEVICE_LOCAL, &b),
                   TSR_INVALID_ARGUMENT, "size is 0");
  tsr_status_t st = tsr_buffer_allocate(device_, info_.total_memory + 1, TSR_MEMORY_DEVICE_LOCAL, &b);
  EXPECT_TRUE(tsr_status_code(st) == TSR_RESOURCE_EXHAUSTED || tsr_status_code(st) == TSR_OUT_OF_RANGE ||
              tsr_status_code(st) == TSR_INVALID_ARGUMENT)
      << tsr_status_message(st);
  tsr_status_free(st);
  EXPECT_EQ(b, nullptr);
  tsr_buffer_t parent = allocate(64);
  TSR_EXPECT_ERROR(tsr_buffer_create_view(parent, 0, 65, &b), TSR_OUT_OF_RANGE, "");
}

TEST_P(CtsBuffers, HostVisibleMemoryMapsBothWays) {
  tsr_buffer_t b = allocate(1 << 16, TSR_MEMORY_HOST_VISIBLE);
  std::vector<uint8_t> in = pattern(1 << 16, 1);
  void *p = nullptr;
  TSR_ASSERT_OK(tsr_buffer_map(b, 0, in.size(), &p));
  std::memcpy(p, in.data(), in.size());
  TSR_ASSERT_OK(tsr_buffer_unmap(b));
  EXPECT_EQ(read(b, 0, in.size()), in); // host writes reach the device
  uint32_t v = 0x5A5A0101;
  TSR_ASSERT_OK(tsr_stream_fill(stream_, b, 0, 1 << 16, &v, 4));
  TSR_ASSERT_OK(tsr_stream_synchronize(stream_));
  TSR_ASSERT_OK(tsr_buffer_map(b, 256, 4, &p));
  uint32_t got = 0;
  std::memcpy(&got, p, 4);
  EXPECT_EQ(got, v); // device writes reach the host
  TSR_ASSERT_OK(tsr_buffer_unmap(b));
}

TEST_P(CtsBuffers, DeviceLocalOnlyMemoryDoesNotMap) {
  tsr_buffer_t b = allocate(64, TSR_MEMORY_DEVICE_LOCAL);
  void *p = nullptr;
  TSR_EXPECT_ERROR(tsr_buffer_map(b, 0, 64, &p), TSR_FAILED_PRECONDITION, "");
}

TEST_P(CtsCopies, RoundTripOfFourMebibytes) {
  const size_t n = 4 << 20;
  tsr_buffer_t b = allocate(n);
  std::vector<uint8_t> in = pattern(n, 2);
  write(b, 0, in);
  EXPECT_EQ(read(b, 0, n), in);
}

TEST_P(CtsCopies, OffsetsAndOddSizesAreByteExact) {
  std::vector<uint8_t> model = pattern(1001, 3);
  tsr_buffer_t a = allocate(1001), b = allocate(777);
  write(a, 0, model);
  std::vector<uint8_t> bm(777, 0);
  write(b, 0, bm);
  TSR_ASSERT_OK(tsr_stream_copy_d2d(stream_, a, 13, b, 5, 701));
  std::memcpy(&bm[5], &model[13], 701);
  EXPECT_EQ(read(b, 0, 777), bm);
  std::vector<uint8_t> piece = pattern(3, 9);
  write(a, 998, piece);
  std::memcpy(&model[998], piece.data(), 3);
  EXPECT_EQ(read(a, 0, 1001), model);
  // Non-overlapping ranges of one allocation.
  TSR_ASSERT_OK(tsr_stream_copy_d2d(stream_, a, 0, a, 500, 500));
  std::memcpy(&model[500], &model[0], 500);
  EXPECT_EQ(read(a, 0, 1001), model);
}

TEST_P(CtsCopies, OutOfBoundsCopiesAreRefused) {
  tsr_buffer_t a = allocate(100), b = allocate(100);
  std::vector<uint8_t> host(200);
  TSR_EXPECT_ERROR(tsr_stream_copy_h2d(stream_, host.data(), a, 50, 51), TSR_OUT_OF_RANGE, "");
  TSR_EXPECT_ERROR(tsr_stream_copy_d2h(stream_, a, 0, host.data(), 101), TSR_OUT_OF_RANGE, "");
  TSR_EXPECT_ERROR(tsr_stream_copy_d2d(stream_, a, 1, b, 0, 100), TSR_OUT_OF_RANGE, "");
  TSR_EXPECT_ERROR(tsr_stream_copy_d2d(stream_, a, 0, a, 10, 20), TSR_INVALID_ARGUMENT, "overlap");
}

TEST_P(CtsFills, EveryPatternSizeAtOddOffsets) {
  const size_t n = 4099;
  std::vector<uint8_t> model = pattern(n, 4);
  tsr_buffer_t b = allocate(n);
  write(b, 0, model);
  uint8_t p1 = 0xC3;
  uint16_t p2 = 0xBEEF;
  uint32_t p4 = 0x01234567;
  TSR_ASSERT_OK(tsr_stream_fill(stream_, b, 1, 2, &p1, 1));
  TSR_ASSERT_OK(tsr_stream_fill(stream_, b, 7, 1000, &p1, 1));
  TSR_ASSERT_OK(tsr_stream_fill(stream_, b, 1010, 998, &p2, 2));
  TSR_ASSERT_OK(tsr_stream_fill(stream_, b, 2012, 2000, &p4, 4));
  std::memset(&model[1], p1, 2);
  std::memset(&model[7], p1, 1000);
  for (size_t i = 1010; i < 2008; i += 2)
    std::memcpy(&model[i], &p2, 2);
  for (size_t i = 2012; i < 4012; i += 4)
    std::memcpy(&model[i], &p4, 4);
  EXPECT_EQ(read(b, 0, n), model);
}

TEST_P(CtsFills, MisalignedFillsAreRefused) {
  tsr_buffer_t b = allocate(64);
  uint32_t p = 0;
  TSR_EXPECT_ERROR(tsr_stream_fill(stream_, b, 2, 8, &p, 4), TSR_INVALID_ARGUMENT, "");
  TSR_EXPECT_ERROR(tsr_stream_fill(stream_, b, 0, 6, &p, 4), TSR_INVALID_ARGUMENT, "");
  TSR_EXPECT_ERROR(tsr_stream_fill(stream_, b, 0, 8, &p, 3), TSR_INVALID_ARGUMENT, "pattern_size");
  TSR_EXPECT_ERROR(tsr_stream_fill(stream_, b, 60, 8, &p, 4), TSR_OUT_OF_RANGE, "");
}

TSR_CTS_SUITE(CtsBuffers);
TSR_CTS_SUITE(CtsCopies);
TSR_CTS_SUITE(CtsFills);

} // namespace
} // namespace tessera::cts
