// CTS: kernel faults are statuses (issue #10, docs/ir.md "Faults", docs/hal.md). Through the
// backend's own compiler in checked mode: the first fault of a launch is reported once by
// tsr_stream_synchronize (and by tsr_event_synchronize of a later record), with the one
// message format, and the same stream then runs a correct launch; a launch past its deadline
// (tsr_stream_set_timeout) ends with DEADLINE_EXCEEDED and the stream goes on; robust mode
// reads 0 and drops stores at the buffer *view*'s end. Expected values are written out here.
#include "conformance/cts/cts.h"

#include "ir/text/parser.h"
#include "tessera/program.h"

#include <chrono>
#include <cstring>

namespace tessera::cts {
namespace {

constexpr const char *kKernels = R"(kernel @store_at(%x: buffer<i32>, %i: i32, %v: i32) {
  %zero = const 0 : i32
  %l = local_id.x : i32
  %first = cmp.eq %l, %zero : i32
  if %first {
    store %v, %x[%i] : i32
  }
}

kernel @copy_shifted(%x: buffer<i32, readonly>, %out: buffer<i32>, %shift: i32) {
  %g = global_id.x : i32
  %j = add %g, %shift : i32
  %v = load %x[%j] : i32
  store %v, %out[%g] : i32
}

kernel @spin(%out: buffer<i32>, %start: i32) {
  %zero = const 0 : i32
  %one = const 1 : i32
  %last = while iter(%k = %start) {
    %go = cmp.sge %k, %zero : i32
    condition %go
  } do {
    %k2 = add %k, %one : i32
    %k3 = and %k2, %start : i32
    yield %k3
  }
  store %last, %out[%zero] : i32
}
)";

/// The fault kernels compiled in a bounds mode; a backend without that mode skips the test.
class CtsKernelFaults : public CtsTest {
protected:
  /// *out stays null when the test is skipped (no such mode here) or failed (compile error).
  void programIn(tsr_bounds_mode mode, const Program **out) {
    *out = nullptr;
    if (!boundsModeSupported(info_.backend, mode))
      GTEST_SKIP() << info_.backend << " has no " << boundsModeName(mode)
                   << " bounds mode yet (Program refuses it)";
    auto parsed = ir::parseModule(kKernels, "faults.tir");
    ASSERT_TRUE(parsed.ok()) << "the CTS fault kernels do not parse";
    module_ = std::move(parsed.module);
    ProgramOptions opts;
    opts.bounds = mode;
    std::string err;
    program_ = Program::create(device_, *module_, nullptr, opts, &err);
    ASSERT_NE(program_, nullptr) << err;
    *out = program_.get();
  }

private:
  std::unique_ptr<ir::Module> module_;
  std::unique_ptr<Program> program_;
};

std::vector<int32_t> ints(const std::vector<uint8_t> &bytes) {
  std::vector<int32_t> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

std::vector<uint8_t> bytesOf(const std::vector<int32_t> &v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

TEST_P(CtsKernelFaults, CheckedFaultIsReportedOnceAndTheStreamGoesOn) {
  const Program *p = nullptr;
  programIn(TSR_BOUNDS_CHECKED, &p);
  if (!p)
    return;
  tsr_buffer_t x = allocate(16);
  write(x, 0, bytesOf({1, 2, 3, 4}));
  uint32_t grid[3] = {1, 1, 1}, wg[3] = {1, 1, 1};
  tsr_arg_t bad[3] = {tsr_arg_buffer(x, 0), tsr_arg_i32(-2000000000), tsr_arg_i32(9)};
  TSR_ASSERT_OK(tsr_stream_launch(stream_, p->kernel("store_at")->kernel, grid, wg, bad, 3));
  TSR_EXPECT_ERROR(tsr_stream_synchronize(stream_), TSR_OUT_OF_RANGE,
                   "tsr_stream_synchronize: kernel @store_at: out-of-bounds store at 6:5: index "
                   "-2000000000 outside [0, 4) of parameter 0, work-item local (0, 0, 0) of "
                   "workgroup (0, 0, 0)");
  TSR_EXPECT_OK(tsr_stream_synchronize(stream_)); // reported once
  // The same stream runs a correct launch, and the dropped store left x alone.
  tsr_arg_t good[3] = {tsr_arg_buffer(x, 0), tsr_arg_i32(2), tsr_arg_i32(9)};
  TSR_ASSERT_OK(tsr_stream_launch(stream_, p->kernel("store_at")->kernel, grid, wg, good, 3));
  EXPECT_EQ(ints(read(x, 0, 16)), (std::vector<int32_t>{1, 2, 9, 4}));
}

TEST_P(CtsKernelFaults, EventSynchronizeReportsAFaultBeforeTheRecord) {
  const Program *p = nullptr;
  programIn(TSR_BOUNDS_CHECKED, &p);
  if (!p)
    return;
  tsr_buffer_t x = allocate(16), out = allocate(16);
  write(x, 0, bytesOf({1, 2, 3, 4}));
  uint32_t grid[3] = {1, 1, 1}, wg[3] = {4, 1, 1};
  tsr_arg_t args[3] = {tsr_arg_buffer(x, 0), tsr_arg_buffer(out, 0), tsr_arg_i32(1)};
  TSR_ASSERT_OK(tsr_stream_launch(stream_, p->kernel("copy_shifted")->kernel, grid, wg, args, 3));
  tsr_event_t event = newEvent();
  TSR_ASSERT_OK(tsr_stream_record_event(stream_, event));
  TSR_EXPECT_ERROR(tsr_event_synchronize(event), TSR_OUT_OF_RANGE,
                   "kernel @copy_shifted: out-of-bounds load at 13:3: index 4 outside [0, 4) of "
                   "parameter 0, work-item local (3, 0, 0) of workgroup (0, 0, 0)");
  TSR_EXPECT_ERROR(tsr_stream_synchronize(stream_), TSR_OUT_OF_RANGE, "@copy_shifted");
  // The kernel ran on with the defined result: the load past the end read 0.
  EXPECT_EQ(ints(read(out, 0, 16)), (std::vector<int32_t>{2, 3, 4, 0}));
}

TEST_P(CtsKernelFaults, RobustModeIsBoundedByTheView) {
  const Program *p = nullptr;
  programIn(TSR_BOUNDS_ROBUST, &p);
  if (!p)
    return;
  // x is a 4-element view of an 8-element buffer: element 4 of the view exists in memory
  // but is outside the argument, so robust mode must read 0 and drop the store.
  tsr_buffer_t whole = allocate(32), out = allocate(16);
  write(whole, 0, bytesOf({1, 2, 3, 4, 5, 6, 7, 8}));
  tsr_buffer_t view = nullptr;
  TSR_ASSERT_OK(tsr_buffer_create_view(whole, 0, 16, &view));
  uint32_t grid[3] = {1, 1, 1}, wg[3] = {4, 1, 1};
  tsr_arg_t args[3] = {tsr_arg_buffer(view, 0), tsr_arg_buffer(out, 0), tsr_arg_i32(1)};
  TSR_ASSERT_OK(tsr_stream_launch(stream_, p->kernel("copy_shifted")->kernel, grid, wg, args, 3));
  uint32_t one[3] = {1, 1, 1};
  tsr_arg_t store[3] = {tsr_arg_buffer(view, 0), tsr_arg_i32(4), tsr_arg_i32(-9)};
  TSR_ASSERT_OK(tsr_stream_launch(stream_, p->kernel("store_at")->kernel, one, one, store, 3));
  TSR_EXPECT_OK(tsr_stream_synchronize(stream_)); // robust mode reports nothing
  EXPECT_EQ(ints(read(out, 0, 16)), (std::vector<int32_t>{2, 3, 4, 0}));
  EXPECT_EQ(ints(read(whole, 0, 32)), (std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  tsr_buffer_release(view);
}

TEST_P(CtsKernelFaults, ALaunchPastItsDeadlineIsCancelledAndTheStreamGoesOn) {
  const Program *p = nullptr;
  programIn(withSupportedBounds(device_, {}).bounds, &p);
  if (!p)
    return;
  tsr_buffer_t out = allocate(16);
  uint32_t grid[3] = {1, 1, 1}, wg[3] = {1, 1, 1};
  // Every work-item of 64 workgroups spins: all of the device's threads are stuck in it.
  uint32_t many[3] = {64, 1, 1}, four[3] = {4, 1, 1};
  // First the same launch shape with a spin that ends at once, no deadline set: a driver may
  // compile at a shape's first launch (PoCL builds its work-group function then), and this
  // test times the cancellation of a running kernel, not that build.
  tsr_arg_t warm[2] = {tsr_arg_buffer(out, 0), tsr_arg_i32(-1)};
  TSR_ASSERT_OK(tsr_stream_launch(stream_, p->kernel("spin")->kernel, many, four, warm, 2));
  TSR_ASSERT_OK(tsr_stream_synchronize(stream_));
  write(out, 0, bytesOf({0, 0, 0, 0}));
  tsr_status_t st = tsr_stream_set_timeout(stream_, 200 * 1000000ull);
  if (tsr_status_code(st) == TSR_UNIMPLEMENTED) {
    tsr_status_free(st);
    GTEST_SKIP() << info_.backend << " cannot cancel a running kernel (no deadlines)";
  }
  TSR_ASSERT_OK(st);
  tsr_arg_t spin[2] = {tsr_arg_buffer(out, 0), tsr_arg_i32(1)};
  auto t0 = std::chrono::steady_clock::now();
  TSR_ASSERT_OK(tsr_stream_launch(stream_, p->kernel("spin")->kernel, many, four, spin, 2));
  TSR_EXPECT_ERROR(tsr_stream_synchronize(stream_), TSR_DEADLINE_EXCEEDED,
                   "tsr_stream_synchronize: kernel @spin ran past its deadline of 200 ms and "
                   "was cancelled");
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(s, 0.19);
  EXPECT_LT(s, 20.0) << "cancellation must not wait for the kernel";
  // A spin that ends (start = -1 exits at once) runs normally on the same stream.
  tsr_arg_t quick[2] = {tsr_arg_buffer(out, 0), tsr_arg_i32(-1)};
  TSR_ASSERT_OK(tsr_stream_launch(stream_, p->kernel("spin")->kernel, grid, wg, quick, 2));
  EXPECT_EQ(ints(read(out, 0, 16)), (std::vector<int32_t>{-1, 0, 0, 0}));
  // The largest timeout is no deadline in practice, not an overflow to an instant one.
  TSR_ASSERT_OK(tsr_stream_set_timeout(stream_, UINT64_MAX));
  tsr_arg_t again[2] = {tsr_arg_buffer(out, 0), tsr_arg_i32(-2)};
  TSR_ASSERT_OK(tsr_stream_launch(stream_, p->kernel("spin")->kernel, grid, wg, again, 2));
  EXPECT_EQ(ints(read(out, 0, 16)), (std::vector<int32_t>{-2, 0, 0, 0}));
  TSR_EXPECT_OK(tsr_stream_set_timeout(stream_, 0));
}

TSR_CTS_SUITE(CtsKernelFaults);

} // namespace
} // namespace tessera::cts
