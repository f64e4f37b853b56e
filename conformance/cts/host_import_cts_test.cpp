// CTS: tsr_buffer_import_host, an optional feature (hal_driver.h ABI 1.5). A device either
// answers UNIMPLEMENTED naming its driver (then every case here is skipped) or aliases the
// caller's memory: maps return the caller's pointer, copies, fills and kernels read and
// write the caller's bytes, views work, handles may be released in any order while work is
// pending (the release callback runs once the last use retired), and misuse is refused
// before the driver sees it.
#include "conformance/cts/cts.h"

#include "ir/text/parser.h"
#include "tessera/program.h"

#include <cstdlib>
#include <cstring>
#include <memory>

namespace tessera::cts {
namespace {

constexpr const char *kAffine = R"(
kernel @affine(%x: buffer<f32>, %y: buffer<f32>) {
  %i = global_id.x : i32
  %v = load %x[%i] : f32
  %two = const 2.0 : f32
  %one = const 1.0 : f32
  %m = mul %v, %two : f32
  %a = add %m, %one : f32
  store %a, %y[%i] : f32
}
)";

// 4 KiB-aligned caller memory (above any buffer_offset_alignment a device reports).
struct HostBlock {
  explicit HostBlock(size_t bytes) : data(std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096)) {}
  ~HostBlock() { std::free(data); }
  float *f() { return static_cast<float *>(data); }
  void *data;
};

class CtsHostImport : public CtsTest {
protected:
  // The import, or NULL after GTEST_SKIP when the device has none.
  tsr_buffer_t import(void *ptr, uint64_t size) {
    tsr_buffer_t b = nullptr;
    tsr_status_t st = tsr_buffer_import_host(device_, ptr, size, &b);
    if (tsr_status_code(st) == TSR_UNIMPLEMENTED) {
      std::string why = tsr_status_message(st);
      tsr_status_free(st);
      EXPECT_NE(why.find(info_.backend), std::string::npos) << "names the driver: " << why;
      unsupported_ = why;
      return nullptr;
    }
    TSR_EXPECT_OK(st);
    return b;
  }
  std::string unsupported_;
};

#define TSR_IMPORT_OR_SKIP(var, ptr, size)                                                         \
  tsr_buffer_t var = import(ptr, size);                                                            \
  if (!var && !unsupported_.empty())                                                               \
  GTEST_SKIP() << unsupported_
#define TSR_IMPORT_ASSERT(var, ptr, size)                                                          \
  TSR_IMPORT_OR_SKIP(var, ptr, size);                                                              \
  ASSERT_NE(var, nullptr)

TEST_P(CtsHostImport, MapsCopiesAndFillsUseTheCallersBytes) {
  const size_t n = 3 << 12;
  HostBlock host(n);
  std::vector<uint8_t> in = pattern(n, 7);
  std::memcpy(host.data, in.data(), n);
  TSR_IMPORT_ASSERT(b, host.data, n);
  void *p = nullptr;
  TSR_ASSERT_OK(tsr_buffer_map(b, 64, 16, &p));
  EXPECT_EQ(p, static_cast<char *>(host.data) + 64) << "a map is the caller's memory";
  TSR_ASSERT_OK(tsr_buffer_unmap(b));
  EXPECT_EQ(read(b, 0, n), in) << "the device reads what the caller wrote";
  std::vector<uint8_t> w = pattern(100, 8);
  write(b, 1000, w);
  EXPECT_EQ(std::memcmp(static_cast<char *>(host.data) + 1000, w.data(), 100), 0);
  uint32_t v = 0xA5A5C3C3;
  TSR_ASSERT_OK(tsr_stream_fill(stream_, b, 4096, 4096, &v, 4));
  TSR_ASSERT_OK(tsr_stream_synchronize(stream_));
  uint32_t got = 0;
  std::memcpy(&got, static_cast<char *>(host.data) + 4096 + 404, 4);
  EXPECT_EQ(got, v) << "a device fill lands in the caller's memory";
  EXPECT_EQ(std::memcmp(static_cast<char *>(host.data) + 8192, in.data() + 8192, n - 8192), 0)
      << "bytes outside the fill are untouched";
  tsr_buffer_release(b);
}

TEST_P(CtsHostImport, KernelsReadAndWriteImportedMemoryThroughViews) {
  auto parsed = ir::parseModule(kAffine, "cts_import.tir");
  ASSERT_TRUE(parsed.ok());
  std::string err;
  auto program =
      Program::create(device_, *parsed.module, nullptr, withSupportedBounds(device_, {}), &err);
  ASSERT_NE(program, nullptr) << err;
  const uint32_t n = 256;
  const uint64_t skip = std::max<uint64_t>(info_.buffer_offset_alignment, 4);
  HostBlock x(n * 4), y(n * 4 + skip);
  for (uint32_t i = 0; i < n; ++i)
    x.f()[i] = float(i) * 0.25f - 7.0f;
  std::memset(y.data, 0, n * 4 + skip);
  TSR_IMPORT_ASSERT(bx, x.data, n * 4);
  // y through the release-callback form: told once, when the last use has retired.
  int released = 0;
  tsr_buffer_t by = nullptr;
  TSR_ASSERT_OK(tsr_buffer_import_host_with_release(
      device_, y.data, n * 4 + skip, [](void *count) { ++*static_cast<int *>(count); }, &released,
      &by));
  tsr_buffer_t yView = nullptr;
  TSR_ASSERT_OK(tsr_buffer_create_view(by, skip, n * 4, &yView));
  tsr_arg_t args[2] = {tsr_arg_buffer(bx, 0), tsr_arg_buffer(yView, 0)};
  uint32_t grid[3] = {n / 64, 1, 1}, wg[3] = {64, 1, 1};
  TSR_ASSERT_OK(tsr_stream_launch(stream_, program->kernel("affine")->kernel, grid, wg, args, 2));
  // Released while the launch may still run: the stream keeps them alive, the caller keeps
  // the memory; the view is released before its parent and the parent before the view.
  tsr_buffer_release(by);
  tsr_buffer_release(yView);
  tsr_buffer_release(bx);
  EXPECT_EQ(released, 0) << "the enqueued launch still holds y";
  TSR_ASSERT_OK(tsr_stream_synchronize(stream_));
  EXPECT_EQ(released, 1) << "synchronize retires the launch: y is the caller's again";
  const char *raw = static_cast<const char *>(y.data);
  for (uint64_t i = 0; i < skip; ++i)
    ASSERT_EQ(raw[i], 0) << "byte " << i << " before the view";
  for (uint32_t i = 0; i < n; ++i) {
    float want = (float(i) * 0.25f - 7.0f) * 2.0f + 1.0f; // exact in f32 for these values
    float got = 0;
    std::memcpy(&got, raw + skip + i * 4, 4);
    ASSERT_EQ(got, want) << "element " << i;
  }
}

TEST_P(CtsHostImport, MisuseIsRefused) {
  HostBlock host(4096);
  tsr_buffer_t b = reinterpret_cast<tsr_buffer_t>(&host); // must be cleared
  TSR_EXPECT_ERROR(tsr_buffer_import_host(device_, nullptr, 64, &b), TSR_INVALID_ARGUMENT,
                   "ptr is NULL");
  EXPECT_EQ(b, nullptr);
  TSR_EXPECT_ERROR(tsr_buffer_import_host(device_, host.data, 0, &b), TSR_INVALID_ARGUMENT,
                   "size is 0");
  TSR_EXPECT_ERROR(tsr_buffer_import_host(nullptr, host.data, 64, &b), TSR_INVALID_ARGUMENT,
                   "device");
  TSR_EXPECT_ERROR(tsr_buffer_import_host(device_, host.data, 64, nullptr), TSR_INVALID_ARGUMENT,
                   "out_buffer");
  if (info_.buffer_offset_alignment > 1) {
    std::string want = "not aligned to " + std::to_string(info_.buffer_offset_alignment) + " bytes";
    TSR_EXPECT_ERROR(tsr_buffer_import_host(device_, static_cast<char *>(host.data) + 1, 64, &b),
                     TSR_INVALID_ARGUMENT, want.c_str());
  }
  TSR_IMPORT_ASSERT(ok, host.data, 4096);
  TSR_EXPECT_ERROR(tsr_stream_copy_h2d(stream_, host.data, ok, 4000, 100), TSR_OUT_OF_RANGE, "");
  tsr_buffer_release(ok);
}

TSR_CTS_SUITE(CtsHostImport);

} // namespace
} // namespace tessera::cts
