// The codegen and the driver agree on the kernel ABI (levelzero_abi.h): every kernel of every
// IR example and of a module with every scalar kind (and i1), compiled by the `levelzero` target in
// every bounds mode and strict, loads on the fake GPU, is found by its entry name, and takes
// exactly the arguments the driver sets — the fake (mode abi_only) checks each argument's index and
// size against the module's own OpFunctionParameter types and that the group size is the 1-D x*y*z.
// Nothing runs: values need Intel hardware (the kernels' results are checked on PoCL by the
// codegen's tests).
#include "backends/levelzero/runtime/tests/levelzero_test_support.h"
#include "ir/text/parser.h"
#include "tessera/program.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tessera::levelzero::testing {
namespace {

// The IR examples pass only 32-bit scalars: this kernel takes every kind.
constexpr const char *kEveryScalar = R"(
kernel @every_scalar(%o8: buffer<i8>, %o16: buffer<i16>, %o32: buffer<i32>, %o64: buffer<i64>, %oh: buffer<f16>, %ob: buffer<bf16>, %of: buffer<f32>, %od: buffer<f64>, %a: i8, %b: i16, %c: i32, %d: i64, %e: f16, %f: bf16, %g: f32, %h: f64, %flag: i1) {
  %i = global_id.x : i32
  store %a, %o8[%i] : i8
  store %b, %o16[%i] : i16
  store %c, %o32[%i] : i32
  store %d, %o64[%i] : i64
  store %e, %oh[%i] : f16
  store %f, %ob[%i] : bf16
  store %g, %of[%i] : f32
  %hh = select %flag, %h, %h : f64
  store %hh, %od[%i] : f64
}
)";

std::vector<std::filesystem::path> examples() {
  std::vector<std::filesystem::path> files;
  for (const auto &entry : std::filesystem::directory_iterator(TESSERA_SOURCE_DIR "/ir/examples"))
    if (entry.path().extension() == ".tir")
      files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

/// Launches every kernel of `p` once with arguments of its parameters' kinds.
void launchEveryKernel(tsr_device_t device, tsr_stream_t stream, const Program &p,
                       const std::string &where, int *launched) {
  for (const ProgramKernel &k : p.kernels()) {
    tsr_kernel_info_t info = {};
    info.struct_size = sizeof(info);
    ASSERT_EQ(hal::testing::consume(tsr_kernel_info(k.kernel, &info)), "") << where;
    std::vector<tsr_arg_t> args;
    std::vector<tsr_buffer_t> buffers;
    for (uint32_t i = 0; i < info.param_count; ++i) {
      tsr_arg_t a = {};
      a.kind = info.params[i].kind;
      if (a.kind == TSR_TYPE_BUFFER) {
        tsr_buffer_t b = nullptr;
        ASSERT_EQ(
            hal::testing::consume(tsr_buffer_allocate(device, 256, TSR_MEMORY_DEVICE_LOCAL, &b)),
            "");
        buffers.push_back(b);
        a = tsr_arg_buffer(b, 8);
      }
      args.push_back(a);
    }
    uint32_t grid[3] = {2, 1, 1}, workgroup[3] = {2, 2, 1};
    if (info.required_workgroup_size[0])
      std::copy(info.required_workgroup_size, info.required_workgroup_size + 3, workgroup);
    EXPECT_EQ(hal::testing::consume(tsr_stream_launch(stream, k.kernel, grid, workgroup,
                                                      args.data(), uint32_t(args.size()))),
              "")
        << where << " @" << k.name;
    ++*launched;
    for (tsr_buffer_t b : buffers)
      tsr_buffer_release(b);
  }
  EXPECT_EQ(hal::testing::consume(tsr_stream_synchronize(stream)), "") << where;
}

TEST(LevelZeroAbi, EveryExampleKernelTakesTheDriversArguments) {
  UseFakeZe fake("abi_only");
  FakeDevice device;
  tsr_stream_t stream = nullptr;
  TSR_ASSERT_OK(tsr_stream_create(device.get(), &stream));
  const int before = fakeGlobal("fake_ze_launches");
  int launched = 0;
  const auto files = examples();
  ASSERT_GE(files.size(), 10u);
  std::vector<std::pair<std::string, std::string>> sources = {{"every_scalar.tir", kEveryScalar}};
  for (const auto &path : files) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    sources.emplace_back(path.filename().string(), text.str());
  }
  for (const auto &[name, source] : sources) {
    auto parsed = ir::parseModule(source, name);
    ASSERT_TRUE(parsed.ok()) << name;
    for (tsr_bounds_mode bounds : {TSR_BOUNDS_UNCHECKED, TSR_BOUNDS_ROBUST, TSR_BOUNDS_CHECKED})
      for (bool strict : {false, true}) {
        ProgramOptions opts;
        opts.bounds = bounds;
        opts.strict = strict;
        const std::string where =
            name + " bounds " + std::to_string(int(bounds)) + (strict ? " strict" : "");
        std::string error;
        auto program = Program::create(device.get(), *parsed.module, nullptr, opts, &error);
        ASSERT_NE(program, nullptr) << where << ": " << error;
        launchEveryKernel(device.get(), stream, *program, where, &launched);
      }
  }
  EXPECT_GE(launched, 6 * int(sources.size()));
  EXPECT_EQ(fakeGlobal("fake_ze_launches"), before + launched); // every one reached the fake
  tsr_stream_release(stream);
}

} // namespace
} // namespace tessera::levelzero::testing
