// Real values from the Kernel flavour without Level Zero hardware: the module is translated by
// `llvm-spirv-15 -r` into SPIR bitcode, which PoCL (the CPU OpenCL device, cl_khr_spir) builds
// and runs with the arguments of backends/levelzero/levelzero_abi.h. Each result is compared
// with a naive sequential loop here. This proves the ABI (views at offsets, the 1-D dispatch
// of a 3-D workgroup, the control words), the integer f16 rounding, the f32 atomic add loop,
// barriers and checked-mode fault records; not Level Zero itself, and not the subgroup ops
// (SPV_INTEL_subgroups is not PoCL's). Skips with the reason without llvm-spirv-15 or an
// OpenCL platform. OpenCL is linked into this test only.
#include "backends/kernel_faults.h"
#include "backends/levelzero/codegen/tests/levelzero_test_util.h"
#include "backends/levelzero/levelzero_abi.h"

#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

namespace tessera::levelzero {
namespace {

/// One argument of a launch: a buffer (its bytes, and the view's offset into them) or a
/// scalar's bytes.
struct Arg {
  std::vector<uint8_t> bytes;
  uint64_t offset = 0;
  bool buffer = true;
};

template <typename T> Arg buffer(const std::vector<T> &v, uint64_t offsetElems = 0) {
  Arg a;
  a.bytes.resize((v.size() + offsetElems) * sizeof(T), 0xcd); // bytes before the view: junk
  std::memcpy(a.bytes.data() + offsetElems * sizeof(T), v.data(), v.size() * sizeof(T));
  a.offset = offsetElems * sizeof(T);
  return a;
}
template <typename T> Arg scalar(T v) {
  Arg a;
  a.bytes.resize(sizeof(T));
  std::memcpy(a.bytes.data(), &v, sizeof(T));
  a.buffer = false;
  return a;
}
template <typename T> std::vector<T> view(const Arg &a) {
  std::vector<T> v((a.bytes.size() - a.offset) / sizeof(T));
  std::memcpy(v.data(), a.bytes.data() + a.offset, v.size() * sizeof(T));
  return v;
}

class PoclRun : public ::testing::Test {
protected:
  void SetUp() override {
    if (std::system("llvm-spirv-15 --version > /dev/null 2>&1") != 0)
      GTEST_SKIP() << "llvm-spirv-15 not found: it turns the SPIR-V into PoCL's SPIR input";
    cl_platform_id p = nullptr;
    cl_uint n = 0;
    if (clGetPlatformIDs(1, &p, &n) != CL_SUCCESS || n == 0 ||
        clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &dev_, nullptr) != CL_SUCCESS)
      GTEST_SKIP() << "no OpenCL platform / device (PoCL) here";
    cl_int err = 0;
    ctx_ = clCreateContext(nullptr, 1, &dev_, nullptr, nullptr, &err);
    ASSERT_EQ(err, CL_SUCCESS);
    q_ = clCreateCommandQueueWithProperties(ctx_, dev_, nullptr, &err);
    ASSERT_EQ(err, CL_SUCCESS);
  }
  void TearDown() override {
    if (q_)
      clReleaseCommandQueue(q_);
    if (ctx_)
      clReleaseContext(ctx_);
  }

  /// Compiles `text`, translates and runs kernel `name` over `groups` x-groups of a
  /// workgroup (wx, wy, wz) with `args`; returns the control words (cancel flag + record).
  std::vector<uint32_t> run(const std::string &text, const std::string &name,
                            std::vector<Arg> &args, size_t groups, uint32_t wx, uint32_t wy = 1,
                            uint32_t wz = 1, tsr_bounds_mode bounds = TSR_BOUNDS_ROBUST,
                            uint32_t cancel = 0) {
    LevelZeroCompileOptions opts;
    opts.bounds = bounds;
    LevelZeroModule m;
    std::string err;
    EXPECT_TRUE(testing::compileText(text, &m, &err, opts)) << err;
    std::string base = ::testing::TempDir() + "lz_pocl_" + name;
    std::ofstream(base + ".spv", std::ios::binary)
        .write(reinterpret_cast<const char *>(m.words.data()), std::streamsize(m.words.size() * 4));
    std::string cmd = "llvm-spirv-15 -r " + base + ".spv -o " + base + ".bc";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::ifstream in(base + ".bc", std::ios::binary);
    std::vector<unsigned char> bc((std::istreambuf_iterator<char>(in)), {});
    const unsigned char *bp = bc.data();
    size_t size = bc.size();
    cl_int st = 0, e = 0;
    cl_program prog = clCreateProgramWithBinary(ctx_, 1, &dev_, &size, &bp, &st, &e);
    EXPECT_EQ(e, CL_SUCCESS);
    e = clBuildProgram(prog, 1, &dev_, "-x spir -spir-std=1.2", nullptr, nullptr);
    char log[8192] = {};
    clGetProgramBuildInfo(prog, dev_, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, nullptr);
    EXPECT_EQ(e, CL_SUCCESS) << log;
    cl_kernel k = clCreateKernel(prog, name.c_str(), &e);
    EXPECT_EQ(e, CL_SUCCESS);
    std::vector<cl_mem> mems;
    cl_uint idx = 0;
    for (Arg &a : args) {
      if (!a.buffer) {
        EXPECT_EQ(clSetKernelArg(k, idx++, a.bytes.size(), a.bytes.data()), CL_SUCCESS);
        continue;
      }
      mems.push_back(
          clCreateBuffer(ctx_, CL_MEM_COPY_HOST_PTR, a.bytes.size(), a.bytes.data(), &e));
      cl_ulong off = a.offset, bytes = a.bytes.size() - a.offset;
      EXPECT_EQ(clSetKernelArg(k, idx++, sizeof(cl_mem), &mems.back()), CL_SUCCESS);
      EXPECT_EQ(clSetKernelArg(k, idx++, 8, &off), CL_SUCCESS);
      EXPECT_EQ(clSetKernelArg(k, idx++, 8, &bytes), CL_SUCCESS);
    }
    for (uint32_t w : {wx, wy, wz})
      EXPECT_EQ(clSetKernelArg(k, idx++, 4, &w), CL_SUCCESS);
    std::vector<uint32_t> control(TSR_LEVELZERO_CONTROL_WORDS, 0);
    control[0] = cancel; // the host's cancel flag (the driver sets it past a deadline)
    cl_mem ctl = clCreateBuffer(ctx_, CL_MEM_COPY_HOST_PTR, 64, control.data(), &e);
    EXPECT_EQ(clSetKernelArg(k, idx++, sizeof(cl_mem), &ctl), CL_SUCCESS);
    size_t local = size_t(wx) * wy * wz, global = groups * local; // 1-D, as the driver does
    EXPECT_EQ(clEnqueueNDRangeKernel(q_, k, 1, nullptr, &global, &local, 0, nullptr, nullptr),
              CL_SUCCESS);
    size_t b = 0;
    for (Arg &a : args)
      if (a.buffer)
        clEnqueueReadBuffer(q_, mems[b++], CL_TRUE, 0, a.bytes.size(), a.bytes.data(), 0, nullptr,
                            nullptr);
    clEnqueueReadBuffer(q_, ctl, CL_TRUE, 0, 64, control.data(), 0, nullptr, nullptr);
    for (cl_mem mem : mems)
      clReleaseMemObject(mem);
    clReleaseMemObject(ctl);
    clReleaseKernel(k);
    clReleaseProgram(prog);
    return control;
  }

  cl_device_id dev_ = nullptr;
  cl_context ctx_ = nullptr;
  cl_command_queue q_ = nullptr;
};

TEST_F(PoclRun, ViewsAtOffsetsScalarsAndThe3DWorkgroup) {
  // y = a*x + y on views that start inside their allocations; ids of a 4x2x3 workgroup.
  std::string text =
      R"(kernel @ids(%x: buffer<f32, readonly>, %y: buffer<f32>, %lid: buffer<i32>, %a: f32, %n: i32, %h: f16, %flag: i1) {
  %lx = local_id.x : i32
  %ly = local_id.y : i32
  %lz = local_id.z : i32
  %g = group_id.x : i32
  %wx = local_size.x : i32
  %wy = local_size.y : i32
  %wz = local_size.z : i32
  %p1 = mul %ly, %wx : i32
  %wxy = mul %wx, %wy : i32
  %p2 = mul %lz, %wxy : i32
  %p3 = add %p1, %p2 : i32
  %lin = add %p3, %lx : i32
  %wxyz = mul %wxy, %wz : i32
  %gs = mul %g, %wxyz : i32
  %i = add %gs, %lin : i32
  %in = cmp.slt %i, %n : i32
  if %in {
    %xv = load %x[%i] : f32
    %yv = load %y[%i] : f32
    %hv = convert %h : f16 -> f32
    %t = mul %a, %xv : f32
    %s = add %t, %yv : f32
    %u = add %s, %hv : f32
    %one = const 1.0 : f32
    %z = const 0.0 : f32
    %f = select %flag, %one, %z : f32
    %w = add %u, %f : f32
    store %w, %y[%i] : f32
  }
  %c100 = const 100 : i32
  %c10 = const 10 : i32
  %c1000 = const 1000 : i32
  %a1 = mul %lz, %c100 : i32
  %a2 = mul %ly, %c10 : i32
  %a3 = mul %g, %c1000 : i32
  %s1 = add %a1, %a2 : i32
  %s2 = add %s1, %lx : i32
  %code = add %s2, %a3 : i32
  store %code, %lid[%i] : i32
}
)";
  const int n = 50, groups = 3;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = 0.25f * float(i) - 3.0f;
    y[i] = 1.5f - float(i);
  }
  std::vector<Arg> args = {
      buffer(x, 3),      buffer(y, 5),       buffer(std::vector<int32_t>(72 + 7, -1), 7),
      scalar(2.5f),      scalar(int32_t(n)), scalar(uint16_t(0x3c00)) /* f16 1.0 */,
      scalar(uint8_t(1))};
  std::vector<uint32_t> ctl = run(text, "ids", args, groups, 4, 2, 3);
  std::vector<float> got = view<float>(args[1]);
  for (int i = 0; i < n; ++i) // each op rounds once (no contraction): the same in C
    EXPECT_EQ(got[i], ((2.5f * x[i] + y[i]) + 1.0f) + 1.0f) << i;
  std::vector<int32_t> ids = view<int32_t>(args[2]);
  for (int g = 0; g < groups; ++g)
    for (int z = 0; z < 3; ++z)
      for (int yy = 0; yy < 2; ++yy)
        for (int xx = 0; xx < 4; ++xx)
          EXPECT_EQ(ids[g * 24 + z * 8 + yy * 4 + xx], g * 1000 + z * 100 + yy * 10 + xx);
  EXPECT_EQ(view<uint8_t>(args[0]).size(), size_t(n) * 4); // the bytes before stay junk
  EXPECT_EQ(args[0].bytes[0], 0xcd);
  EXPECT_EQ(ctl[1], 0u) << "no fault";
}

/// f32 -> f16 bits, rounded in `mode` (0 rte, 1 rtz, 2 rtp, 3 rtn): an independent
/// reference through exact double arithmetic over every candidate half.
uint16_t refHalf(float f, int mode) {
  if (std::isnan(f))
    return 0x7e00;
  double v = f;
  uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  double a = std::fabs(v);
  auto value = [](uint16_t h) { // a non-negative half's value
    int e = (h >> 10) & 31, m = h & 1023;
    if (e == 31)
      return INFINITY * 1.0;
    return e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
  };
  uint16_t lo = 0;
  while (lo < 0x7c00 && value(uint16_t(lo + 1)) <= a)
    ++lo; // the largest half <= a (0x7c00 = inf)
  if (value(lo) == a)
    return uint16_t(sign | lo);
  uint16_t hi = uint16_t(lo + 1);
  bool neg = sign != 0;
  bool up = false; // toward larger magnitude
  switch (mode) {
  case 0:
    up = a - value(lo) > value(hi) - a || (a - value(lo) == value(hi) - a && (lo & 1));
    if (lo == 0x7bff && a >= 65520.0)
      up = true;
    break;
  case 1:
    up = false;
    break;
  case 2:
    up = !neg;
    break;
  default:
    up = neg;
    break;
  }
  return uint16_t(sign | (up ? hi : lo));
}

TEST_F(PoclRun, F16RoundingOnTheBitsInEveryMode) {
  std::string text =
      R"(kernel @h(%x: buffer<f32, readonly>, %e: buffer<f16>, %z: buffer<f16>, %p: buffer<f16>, %m: buffer<f16>, %n: i32) {
  %i = global_id.x : i32
  %in = cmp.slt %i, %n : i32
  if %in {
    %v = load %x[%i] : f32
    %a = convert %v : f32 -> f16
    store %a, %e[%i] : f16
    %b = convert.rtz %v : f32 -> f16
    store %b, %z[%i] : f16
    %c = convert.rtp %v : f32 -> f16
    store %c, %p[%i] : f16
    %d = convert.rtn %v : f32 -> f16
    store %d, %m[%i] : f16
  }
}
)";
  std::vector<float> x = {0.0f,
                          -0.0f,
                          1.0f,
                          1.0009765625f,
                          1.00048828125f /* tie */,
                          1.00146484375f /* tie, odd */,
                          65504.0f,
                          65519.0f,
                          65520.0f,
                          1e6f,
                          -1e6f,
                          INFINITY,
                          -INFINITY,
                          5.9604645e-8f /* 2^-24 */,
                          2.9802322e-8f /* 2^-25: tie to 0 */,
                          3.0e-8f,
                          1e-10f,
                          -1e-10f,
                          6.1035156e-5f,
                          6.0e-5f,
                          -3.14159f,
                          0.1f,
                          1e-40f /* f32 subnormal */,
                          std::nanf("")};
  for (int k = 0; k < 200; ++k) // a spread of ordinary values
    x.push_back(std::ldexp(float(k * 7919 % 1000) / 997.0f - 0.5f, k % 40 - 24));
  int n = int(x.size());
  std::vector<uint16_t> zero(x.size(), 0);
  std::vector<Arg> args = {buffer(x),    buffer(zero), buffer(zero),
                           buffer(zero), buffer(zero), scalar(int32_t(n))};
  run(text, "h", args, (x.size() + 63) / 64, 64);
  for (int mode = 0; mode < 4; ++mode) {
    std::vector<uint16_t> got = view<uint16_t>(args[1 + mode]);
    for (int i = 0; i < n; ++i) {
      uint16_t want = refHalf(x[i], mode);
      if (std::isnan(x[i]))
        EXPECT_EQ(got[i] & 0x7e00, 0x7e00) << "NaN stays a quiet NaN";
      else
        EXPECT_EQ(got[i], want) << "x=" << x[i] << " mode " << mode;
    }
  }
}

TEST_F(PoclRun, FloatAtomicAddLoopBarrierAndShared) {
  // Every work-item adds 1 to one buffer float and 0.5 to a shared one; after the barrier
  // work-item 0 of each group adds the shared total to the buffer's second float.
  std::string text = R"(kernel @acc(%out: buffer<f32>) {
  %s = shared_alloc : shared<f32, 1>
  %l = local_id.x : i32
  %z = const 0 : i32
  %fz = const 0.0 : f32
  %first = cmp.eq %l, %z : i32
  if %first {
    store %fz, %s[%z] : f32
  }
  barrier
  %one = const 1.0 : f32
  %half = const 0.5 : f32
  %o = atomic_add %out[%z], %one : f32
  %o2 = atomic_add %s[%z], %half : f32
  barrier
  if %first {
    %t = load %s[%z] : f32
    %k = const 1 : i32
    %o3 = atomic_add %out[%k], %t : f32
  }
}
)";
  std::vector<Arg> args = {buffer(std::vector<float>{0.0f, 0.0f})};
  run(text, "acc", args, 8, 128);
  std::vector<float> got = view<float>(args[0]);
  EXPECT_EQ(got[0], 8.0f * 128); // exact: small integers, whatever the order
  EXPECT_EQ(got[1], 8.0f * 64);
}

TEST_F(PoclRun, CheckedModeRecordsTheFirstOutOfBoundsStore) {
  std::string text = R"(kernel @oob(%y: buffer<i32>, %n: i32) {
  %i = global_id.x : i32
  %in = cmp.slt %i, %n : i32
  if %in {
    store %i, %y[%i] : i32
  }
}
)";
  std::vector<Arg> args = {buffer(std::vector<int32_t>(10, -1), 2), scalar(int32_t(12))};
  std::vector<uint32_t> ctl = run(text, "oob", args, 1, 16, 1, 1, TSR_BOUNDS_CHECKED);
  std::vector<int32_t> y = view<int32_t>(args[0]);
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(y[i], i);
  EXPECT_EQ(args[0].bytes[0], 0xcd) << "nothing written before the view";
  EXPECT_EQ(ctl[1], uint32_t(TSR_FAULT_STORE_OUT_OF_BOUNDS));
  EXPECT_EQ(ctl[2], 5u) << "line";
  EXPECT_EQ(ctl[4], 0u) << "parameter index";
  EXPECT_TRUE(ctl[5] == 10u || ctl[5] == 11u) << "index " << ctl[5];
  EXPECT_EQ(ctl[7], 10u) << "the view's element count";
}

TEST_F(PoclRun, ACancelledLaunchEndsWithADeadlineRecord) {
  // A loop of n iterations: uncancelled it sums 0..n-1; with the cancel flag already set the
  // kernel ends at its entry poll, writes nothing and claims the record as DEADLINE.
  std::string text = R"(kernel @spin(%y: buffer<i32>, %n: i32) {
  %z = const 0 : i32
  %one = const 1 : i32
  %s = for %i = %z to %n step %one iter(%a = %z) : i32 {
    %a2 = add %a, %i : i32
    yield %a2
  }
  %g = global_id.x : i32
  store %s, %y[%g] : i32
}
)";
  std::vector<Arg> args = {buffer(std::vector<int32_t>(4, -1)), scalar(int32_t(3000))};
  std::vector<uint32_t> ctl = run(text, "spin", args, 1, 4);
  EXPECT_EQ(ctl[1], 0u);
  for (int32_t v : view<int32_t>(args[0]))
    EXPECT_EQ(v, 2999 * 3000 / 2);
  args = {buffer(std::vector<int32_t>(4, -1)), scalar(int32_t(3000))};
  ctl = run(text, "spin", args, 1, 4, 1, 1, TSR_BOUNDS_ROBUST, 1);
  EXPECT_EQ(ctl[1], uint32_t(TSR_FAULT_DEADLINE));
  for (int32_t v : view<int32_t>(args[0]))
    EXPECT_EQ(v, -1);
}

} // namespace
} // namespace tessera::levelzero
