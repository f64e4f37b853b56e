// CTS: executables and launch, through the backend's own compiler (tessera::Program): every
// scalar argument type arrives bit-exact, 3-D grids cover every work-item once, workgroup
// shared memory with a barrier, buffer views as arguments, and launch misuse.
#include "conformance/cts/cts.h"

#include "ir/text/parser.h"
#include "tessera/program.h"

#include <cstring>

namespace tessera::cts {
namespace {

using CtsLaunch = CtsTest;

constexpr const char *kKernels = R"(
kernel @scalars(%o8: buffer<i8>, %o16: buffer<i16>, %o32: buffer<i32>, %o64: buffer<i64>, %oh: buffer<f16>, %ob: buffer<bf16>, %of: buffer<f32>, %od: buffer<f64>, %a: i8, %b: i16, %c: i32, %d: i64, %e: f16, %f: bf16, %g: f32, %h: f64) {
  %i = global_id.x : i32
  store %a, %o8[%i] : i8
  store %b, %o16[%i] : i16
  store %c, %o32[%i] : i32
  store %d, %o64[%i] : i64
  store %e, %oh[%i] : f16
  store %f, %ob[%i] : bf16
  store %g, %of[%i] : f32
  store %h, %od[%i] : f64
}

kernel @iota3d(%out: buffer<i32>) {
  %x = global_id.x : i32
  %y = global_id.y : i32
  %z = global_id.z : i32
  %gx = num_groups.x : i32
  %gy = num_groups.y : i32
  %lx = local_size.x : i32
  %ly = local_size.y : i32
  %w = mul %gx, %lx : i32
  %gyl = mul %gy, %ly : i32
  %h = mul %w, %gyl : i32
  %zh = mul %z, %h : i32
  %yw = mul %y, %w : i32
  %s = add %zh, %yw : i32
  %idx = add %s, %x : i32
  store %idx, %out[%idx] : i32
}

kernel @reverse64(%x: buffer<i32>) {
  %buf = shared_alloc : shared<i32, 64>
  %l = local_id.x : i32
  %g = global_id.x : i32
  %v = load %x[%g] : i32
  store %v, %buf[%l] : i32
  barrier
  %c63 = const 63 : i32
  %r = sub %c63, %l : i32
  %w = load %buf[%r] : i32
  store %w, %x[%g] : i32
}
)";

class Programs {
public:
  std::unique_ptr<Program> compile(tsr_device_t device, std::string *error) {
    auto parsed = ir::parseModule(kKernels, "cts_kernels.tir");
    if (!parsed.ok()) {
      *error = "the CTS kernels do not parse";
      return nullptr;
    }
    module_ = std::move(parsed.module);
    return Program::create(device, *module_, nullptr, withSupportedBounds(device, {}), error);
  }

private:
  std::unique_ptr<ir::Module> module_;
};

TEST_P(CtsLaunch, EveryScalarTypeArrivesBitExact) {
  Programs ps;
  std::string err;
  auto p = ps.compile(device_, &err);
  ASSERT_NE(p, nullptr) << err;
  const ProgramKernel *k = p->kernel("scalars");
  ASSERT_NE(k, nullptr);
  const int n = 3;
  const size_t sizes[8] = {1, 2, 4, 8, 2, 2, 4, 8};
  std::vector<tsr_arg_t> args;
  for (size_t s : sizes)
    args.push_back(tsr_arg_buffer(allocate(s * n), 0));
  uint16_t f16 = 0x3C01, bf16 = 0xC049; // 1.0009765625, -3.140625
  args.push_back(tsr_arg_i8(-7));
  args.push_back(tsr_arg_i16(-30000));
  args.push_back(tsr_arg_i32(-2000000000));
  args.push_back(tsr_arg_i64(-(int64_t(1) << 60) - 3));
  args.push_back(tsr_arg_f16_bits(f16));
  args.push_back(tsr_arg_bf16_bits(bf16));
  args.push_back(tsr_arg_f32(-1.5e-30f));
  args.push_back(tsr_arg_f64(6.02214076e23));
  uint32_t grid[3] = {1, 1, 1}, wg[3] = {n, 1, 1};
  TSR_ASSERT_OK(tsr_stream_launch(stream_, k->kernel, grid, wg, args.data(), uint32_t(args.size())));
  int8_t i8 = -7;
  int16_t i16 = -30000;
  int32_t i32 = -2000000000;
  int64_t i64 = -(int64_t(1) << 60) - 3;
  float f32 = -1.5e-30f;
  double f64 = 6.02214076e23;
  const void *want[8] = {&i8, &i16, &i32, &i64, &f16, &bf16, &f32, &f64};
  for (int t = 0; t < 8; ++t) {
    std::vector<uint8_t> got = read(args[t].value.buffer.buf, 0, sizes[t] * n);
    for (int i = 0; i < n; ++i)
      EXPECT_EQ(std::memcmp(&got[i * sizes[t]], want[t], sizes[t]), 0)
          << "parameter " << t << ", work-item " << i;
  }
}

TEST_P(CtsLaunch, ThreeDimensionalGridsCoverEveryWorkItemOnce) {
  Programs ps;
  std::string err;
  auto p = ps.compile(device_, &err);
  ASSERT_NE(p, nullptr) << err;
  uint32_t grid[3] = {3, 2, 5}, wg[3] = {4, 2, 2};
  const int total = 3 * 4 * 2 * 2 * 5 * 2;
  tsr_buffer_t out = allocate(total * 4);
  int32_t minus1 = -1;
  TSR_ASSERT_OK(tsr_stream_fill(stream_, out, 0, total * 4, &minus1, 4));
  tsr_arg_t arg = tsr_arg_buffer(out, 0);
  TSR_ASSERT_OK(tsr_stream_launch(stream_, p->kernel("iota3d")->kernel, grid, wg, &arg, 1));
  std::vector<uint8_t> got = read(out, 0, total * 4);
  for (int i = 0; i < total; ++i) {
    int32_t v = 0;
    std::memcpy(&v, &got[i * 4], 4);
    ASSERT_EQ(v, i) << "element " << i;
  }
}

TEST_P(CtsLaunch, SharedMemoryAndBarrierWithAViewArgument) {
  Programs ps;
  std::string err;
  auto p = ps.compile(device_, &err);
  ASSERT_NE(p, nullptr) << err;
  const int groups = 4, n = groups * 64;
  uint64_t off = std::max<uint64_t>(info_.buffer_offset_alignment, 4);
  tsr_buffer_t b = allocate(off + n * 4);
  std::vector<int32_t> in(n);
  for (int i = 0; i < n; ++i)
    in[i] = i * 3 + 1;
  std::vector<uint8_t> bytes(n * 4);
  std::memcpy(bytes.data(), in.data(), bytes.size());
  write(b, off, bytes);
  tsr_buffer_t view = nullptr;
  TSR_ASSERT_OK(tsr_buffer_create_view(b, off, n * 4, &view));
  tsr_arg_t arg = tsr_arg_buffer(view, 0);
  uint32_t grid[3] = {groups, 1, 1}, wg[3] = {64, 1, 1};
  TSR_ASSERT_OK(tsr_stream_launch(stream_, p->kernel("reverse64")->kernel, grid, wg, &arg, 1));
  std::vector<uint8_t> got = read(b, off, n * 4);
  tsr_buffer_release(view);
  for (int i = 0; i < n; ++i) {
    int32_t v = 0;
    std::memcpy(&v, &got[i * 4], 4);
    ASSERT_EQ(v, in[(i / 64) * 64 + 63 - i % 64]) << "element " << i;
  }
}

TEST_P(CtsLaunch, MismatchedLaunchesAreRefused) {
  Programs ps;
  std::string err;
  auto p = ps.compile(device_, &err);
  ASSERT_NE(p, nullptr) << err;
  tsr_kernel_t k = p->kernel("iota3d")->kernel;
  tsr_buffer_t out = allocate(64);
  tsr_arg_t good = tsr_arg_buffer(out, 0), bad = tsr_arg_i32(1);
  uint32_t grid[3] = {1, 1, 1}, wg[3] = {1, 1, 1}, zero[3] = {0, 1, 1};
  uint32_t huge[3] = {info_.max_workgroup_total + 1, 1, 1};
  TSR_EXPECT_ERROR(tsr_stream_launch(stream_, k, grid, wg, &bad, 1), TSR_INVALID_ARGUMENT, "");
  TSR_EXPECT_ERROR(tsr_stream_launch(stream_, k, grid, wg, &good, 0), TSR_INVALID_ARGUMENT, "");
  TSR_EXPECT_ERROR(tsr_stream_launch(stream_, k, zero, wg, &good, 1), TSR_INVALID_ARGUMENT, "is 0");
  TSR_EXPECT_ERROR(tsr_stream_launch(stream_, k, grid, huge, &good, 1), TSR_OUT_OF_RANGE, "");
  tsr_executable_t exe = nullptr;
  const char junk[16] = "not a module";
  tsr_status_t st = tsr_executable_create(device_, "no-such-format", junk, sizeof junk, &exe);
  EXPECT_EQ(tsr_status_code(st), TSR_UNIMPLEMENTED) << tsr_status_message(st);
  tsr_status_free(st);
}

TSR_CTS_SUITE(CtsLaunch);

} // namespace
} // namespace tessera::cts
