// The shared f64 math decompositions (ir/transforms/math_f64*.cpp) as the Vulkan codegen emits
// them, run on the machine's Vulkan device (lavapipe here) with and without 64-bit integers:
// the float-only variant is what a device without Int64 receives, and no device here lacks
// Int64, so this is the only place it runs on a real Vulkan implementation. Both variants
// must give exactly the bits of the reference interpreter running the same decomposed IR
// (each basic op is IEEE-exact on both; NaN matches any NaN). Their accuracy against libm is
// ir/tests/math_f64_test.cpp's. Skips itself where no Vulkan device is present.
#include "backends/gpu_module.h"
#include "backends/vulkan/codegen/vulkan_codegen.h"
#include "backends/vulkan/runtime/vulkan_driver.h"
#include "hal/tests/hal_test_util.h"
#include "ir/interp/interpreter.h"
#include "ir/text/parser.h"
#include "ir/transforms/math_decompose.h"
#include "ir/transforms/rewrite.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace {

using namespace tessera;

constexpr uint32_t kN = 4096, kWorkgroup = 64;

class VulkanF64Math : public ::testing::Test {
protected:
  void SetUp() override {
    TSR_ASSERT_OK(tsr_registry_create(&registry_));
    tsr_status_t st = tsr_registry_register_driver(registry_, tsr_vulkan_driver());
    if (tsr_status_code(st) == TSR_UNAVAILABLE) {
      std::string why = tsr_status_message(st);
      tsr_status_free(st);
      GTEST_SKIP() << "no Vulkan device: " << why;
    }
    TSR_ASSERT_OK(st);
    TSR_ASSERT_OK(tsr_registry_open_device(registry_, "vulkan:0", &device_));
    info_.struct_size = sizeof info_;
    TSR_ASSERT_OK(tsr_device_info(device_, &info_));
    if (!(info_.features & TSR_FEATURE_FP64))
      GTEST_SKIP() << "vulkan:0 has no f64";
    TSR_ASSERT_OK(tsr_stream_create(device_, &stream_));
  }
  void TearDown() override {
    if (stream_)
      tsr_stream_release(stream_);
    if (device_)
      tsr_device_release(device_);
    if (registry_)
      tsr_registry_release(registry_);
  }

  /// `y = op(x [, x2])` compiled with `int64` and run on vulkan:0. `decomposed`: the op is
  /// expanded by decomposeMath, whose expansions use 64-bit integers exactly when allowed.
  std::vector<double> runOnDevice(const ir::Module &m, const std::vector<double> &x,
                                  const std::vector<double> &x2, bool int64,
                                  bool decomposed = true) {
    vulkan::VulkanCompileOptions o;
    o.caps.float64 = true;
    o.caps.int64 = int64;
    o.caps.signedZeroInfNanPreserve = info_.features & TSR_FEATURE_FLOAT_PRESERVE;
    o.bounds = TSR_BOUNDS_UNCHECKED; // no control buffer: the module is all the ABI
    std::string err;
    auto cm = vulkan::compileKernelModule(m, o, &err);
    EXPECT_NE(cm, nullptr) << err;
    if (!cm)
      return {};
    EXPECT_EQ(cm->dump("spirv.dis").find("Capability Int64") == std::string::npos,
              !(int64 && decomposed));
    const vulkan::VulkanKernelInfo &ki = cm->kernels().at(0);
    std::vector<tsr_kernel_param_t> params;
    for (size_t i = 0; i < ki.params.size(); ++i)
      params.push_back({TSR_TYPE_BUFFER, "p"});
    tsr_gpu_kernel k = {ki.name.c_str(),        params.data(),        uint32_t(params.size()),
                        ki.paramOffsets.data(), ki.pushConstantBytes, 0};
    tsr_gpu_module gm = {};
    gm.struct_size = sizeof gm;
    gm.version = TSR_GPU_MODULE_VERSION;
    gm.image = cm->words().data();
    gm.image_size = cm->words().size() * 4;
    gm.kernels = &k;
    gm.kernel_count = 1;
    tsr_executable_t exe = nullptr;
    TSR_EXPECT_OK(tsr_executable_create(device_, TSR_VULKAN_SPIRV_FORMAT, &gm, sizeof gm, &exe));
    tsr_kernel_t kern = nullptr;
    TSR_EXPECT_OK(tsr_executable_kernel(exe, ki.name.c_str(), &kern));
    std::vector<const std::vector<double> *> ins{&x};
    if (!x2.empty())
      ins.push_back(&x2);
    std::vector<tsr_buffer_t> bufs;
    std::vector<tsr_arg_t> args;
    for (size_t i = 0; i <= ins.size(); ++i) {
      tsr_buffer_t b = nullptr;
      TSR_EXPECT_OK(tsr_buffer_allocate(device_, kN * 8, TSR_MEMORY_DEVICE_LOCAL, &b));
      if (i < ins.size())
        TSR_EXPECT_OK(tsr_stream_copy_h2d(stream_, ins[i]->data(), b, 0, kN * 8));
      bufs.push_back(b);
      args.push_back(tsr_arg_buffer(b, 0));
    }
    uint32_t grid[3] = {kN / kWorkgroup, 1, 1}, wg[3] = {kWorkgroup, 1, 1};
    TSR_EXPECT_OK(tsr_stream_launch(stream_, kern, grid, wg, args.data(), uint32_t(args.size())));
    std::vector<double> y(kN);
    TSR_EXPECT_OK(tsr_stream_copy_d2h(stream_, bufs.back(), 0, y.data(), kN * 8));
    TSR_EXPECT_OK(tsr_stream_synchronize(stream_));
    for (tsr_buffer_t b : bufs)
      tsr_buffer_release(b);
    tsr_kernel_release(kern);
    tsr_executable_release(exe);
    return y;
  }

  tsr_registry_t registry_ = nullptr;
  tsr_device_t device_ = nullptr;
  tsr_stream_t stream_ = nullptr;
  tsr_device_info_t info_ = {};
};

/// The interpreter on `m` decomposed as the Vulkan codegen does (nothing native at f64 but
/// rsqrt, which these kernels do not use): the expected bits.
std::vector<double> reference(const ir::Module &m, const std::vector<double> &x,
                              const std::vector<double> &x2, bool int64) {
  ir::Module d = ir::cloneModule(m);
  ir::decomposeMath(d, {ir::NativeMathSet::none(), int64});
  std::vector<ir::HostBuffer> bufs;
  for (const auto *v : {&x, &x2})
    if (!v->empty()) {
      bufs.emplace_back(ir::Scalar::F64, kN);
      std::memcpy(bufs.back().bytes.data(), v->data(), kN * 8);
    }
  bufs.emplace_back(ir::Scalar::F64, kN);
  std::vector<ir::KernelArg> args(bufs.size());
  for (size_t i = 0; i < bufs.size(); ++i)
    args[i].buffer = &bufs[i];
  ir::LaunchDims dims;
  dims.grid = {kN / kWorkgroup, 1, 1};
  dims.workgroup = {kWorkgroup, 1, 1};
  ir::InterpResult r = ir::interpret(d, *d.functions.back(), dims, args);
  EXPECT_TRUE(r.ok) << r.error;
  std::vector<double> y(kN);
  std::memcpy(y.data(), bufs.back().bytes.data(), kN * 8);
  return y;
}

/// Specials, then random doubles: every binade, and a dense range around the interesting part.
std::vector<double> inputs(uint64_t seed, double lo, double hi) {
  std::vector<double> v = {NAN,
                           INFINITY,
                           -INFINITY,
                           0.0,
                           -0.0,
                           0x1p-1074,
                           -0x1p-1074,
                           0x1p-1022,
                           DBL_MAX,
                           1.0,
                           -1.0,
                           0x1.921fb54442d18p0,
                           std::bit_cast<double>(0x7506AC5B262CA1FFull)}; // hard for sin, cos
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  while (v.size() < kN)
    v.push_back(v.size() % 2 ? std::bit_cast<double>(rng()) : d(rng));
  return v;
}

void expectSameBits(const char *what, const std::vector<double> &got,
                    const std::vector<double> &want, const std::vector<double> &x,
                    const std::vector<double> &x2) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    bool same = std::bit_cast<uint64_t>(got[i]) == std::bit_cast<uint64_t>(want[i]) ||
                (std::isnan(got[i]) && std::isnan(want[i]));
    if (!same && bad++ < 3)
      ADD_FAILURE() << what << ": x = " << x[i]
                    << (x2.empty() ? "" : ", x2 = " + std::to_string(x2[i])) << ": device "
                    << got[i] << ", interpreter " << want[i];
  }
  EXPECT_EQ(bad, 0u) << what;
}

struct Case {
  const char *op;
  double lo, hi;
  bool binary;
  bool decomposed = true; // false: lowered by the codegen itself, not decomposeMath
};

TEST_F(VulkanF64Math, DecomposedOpsMatchTheInterpreterBitForBitWithAndWithoutInt64) {
  const Case cases[] = {
      {"exp", -750, 720, false},
      {"exp2", -1080, 1030, false},
      {"expm1", -50, 50, false},
      {"log", 0, 4, false},
      {"log2", 0, 4, false},
      {"log1p", -1, 4, false},
      {"erf", -7, 7, false},
      {"sin", -20, 20, false},
      {"cos", -20, 20, false},
      {"tan", -20, 20, false},
      {"sigmoid", -40, 40, false},
      {"tanh", -20, 20, false},
      {"pow", -4, 4, true},
      // Rounding of |x| in [2^31, 2^52), where lavapipe's own f64 Floor/Ceil/Trunc/RoundEven
      // return x unchanged on hosts without AVX-512 (the lowering does not use them).
      {"trunc", -1e13, 1e13, false, false},
      {"floor", -1e13, 1e13, false, false},
      {"ceil", -1e13, 1e13, false, false},
      {"round", -1e13, 1e13, false, false},
      {"floor", -3, 3, false, false}};
  uint64_t seed = 1;
  for (const Case &c : cases) {
    std::string op = c.op;
    std::string text = c.binary
                           ? "kernel @k(%x: buffer<f64, readonly>, %x2: buffer<f64, readonly>, "
                             "%y: buffer<f64>) {\n  %i = global_id.x : i32\n  %a = load %x[%i] : "
                             "f64\n  %b = load %x2[%i] : f64\n  %r = " +
                                 op + " %a, %b : f64\n  store %r, %y[%i] : f64\n}\n"
                           : "kernel @k(%x: buffer<f64, readonly>, %y: buffer<f64>) {\n  %i = "
                             "global_id.x : i32\n  %a = load %x[%i] : f64\n  %r = " +
                                 op + " %a : f64\n  store %r, %y[%i] : f64\n}\n";
    ir::ParseResult pr = ir::parseModule(text, op + ".tir");
    ASSERT_TRUE(pr.ok()) << pr.diags.at(0).str();
    std::vector<double> x = inputs(seed++, c.lo, c.hi);
    std::vector<double> x2 = c.binary ? inputs(seed++, -30, 30) : std::vector<double>{};
    std::vector<double> want = reference(*pr.module, x, x2, true);
    // The interpreter itself: both variants are one function, bit for bit.
    expectSameBits((op + " interpreter float-only").c_str(), reference(*pr.module, x, x2, false),
                   want, x, x2);
    for (bool int64 : {true, false})
      expectSameBits((op + (int64 ? " int64" : " float-only")).c_str(),
                     runOnDevice(*pr.module, x, x2, int64, c.decomposed), want, x, x2);
  }
}

} // namespace
