// OpenCL executables on the machine's OpenCL device (PoCL here): hostile modules (a source
// that does not build, with its build log, cut when long; a kernel the program lacks; a
// signature that is not the ABI's; a NUL in the source; a huge source; another format) and
// the binary cache (a hit is really used, a corrupted or truncated entry is rebuilt with one
// warning, a cache directory that is a file costs one warning and nothing else).
#include "opencl_test_kernels.h"

#include "backends/opencl/opencl_abi.h"
#include "backends/opencl/runtime/binary_cache.h"
#include "backends/opencl/runtime/internal.h"
#include "hal/tests/scoped_env.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <unistd.h>

namespace tessera::opencl::testing {
namespace {

namespace fs = std::filesystem;
using hal::testing::ScopedEnv;

// A kernel that computes c[i] = a[i] * s + b[i] * `factor` under the name vadd.
std::string vaddTimes(int factor) {
  std::string src = kKernelSource;
  std::string from = "c[i] = a[i] * s + b[i];";
  src.replace(src.find(from), from.size(),
              "c[i] = a[i] * s + b[i] * " + std::to_string(factor) + ".0f;");
  return src;
}

std::string slurp(const fs::path &p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void spit(const fs::path &p, const std::string &bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
}

std::vector<fs::path> entries(const fs::path &dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto &e : fs::directory_iterator(dir, ec))
    out.push_back(e.path());
  return out;
}

const std::vector<float> kTimes1 = {10, 13, 16, 19}, kTimes3 = {30, 35, 40, 45};

class OpenClExecutable : public OpenClTest {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tessera-ocl-cache-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    env_ = std::make_unique<ScopedEnv>("TESSERA_CACHE_DIR", dir_.string());
    // The generic program only, so that each source is one cache entry (the per-size
    // programs have their own tests: opencl_sized_test.cpp).
    sized_ = std::make_unique<ScopedEnv>("TESSERA_OPENCL_SIZED_PROGRAMS", "0");
    OpenClTest::SetUp();
  }
  void TearDown() override {
    OpenClTest::TearDown();
    fs::remove_all(dir_);
  }
  fs::path binaries() const { return dir_ / "opencl-binaries"; }

  /// vadd of `source` on 4 elements: c = a * 2 + b with a = i, b = 10 + i.
  std::vector<float> runVadd(const std::string &source) {
    tsr_executable_t exe = nullptr;
    TSR_EXPECT_OK(create(source, {"vadd"}, &exe));
    if (!exe)
      return {};
    tsr_kernel_t k = kernel(exe, "vadd");
    float a[4] = {0, 1, 2, 3}, b[4] = {10, 11, 12, 13};
    tsr_buffer_t A = allocate(16), B = allocate(16), C = allocate(16);
    write(A, 0, a, 16);
    write(B, 0, b, 16);
    tsr_arg_t args[] = {tsr_arg_buffer(A, 0), tsr_arg_buffer(B, 0), tsr_arg_buffer(C, 0),
                        tsr_arg_f32(2.0f), tsr_arg_i32(4)};
    uint32_t grid[3] = {1, 1, 1}, wg[3] = {4, 1, 1};
    TSR_EXPECT_OK(tsr_stream_launch(stream_, k, grid, wg, args, 5));
    std::vector<uint8_t> bytes = read(C, 0, 16);
    std::vector<float> c(4);
    std::memcpy(c.data(), bytes.data(), 16);
    return c;
  }

  /// The entry whose bytes were `good` has been rebuilt from source: a well-formed entry under
  /// the same key, which a further run of vadd times 1 uses silently. Not byte-equal to
  /// `good`: PoCL's program binary carries the work-group specialisations its own kernel
  /// cache holds by then (with a cold PoCL cache, the run after `good` was written compiled
  /// one).
  void expectRebuilt(const std::string &good) {
    uint64_t keyBytes = 0;
    std::memcpy(&keyBytes, good.data() + 8, 8);
    std::optional<std::string> rebuilt =
        BinaryCache(binaries().string()).load(good.substr(40, keyBytes));
    ASSERT_TRUE(rebuilt.has_value());
    EXPECT_NE(*rebuilt, "not a device binary");
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(runVadd(vaddTimes(1)), kTimes1);
    EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  }

  fs::path dir_;
  std::unique_ptr<ScopedEnv> env_, sized_;
};

TEST_F(OpenClExecutable, ASourceThatDoesNotBuildReturnsTheBuildLog) {
  tsr_executable_t exe = nullptr;
  TSR_EXPECT_ERROR(
      create("__kernel void tsr_bad(__global uint *control) { undeclared_x = 1; }", {"bad"}, &exe),
      TSR_INVALID_ARGUMENT, "undeclared_x");
  TSR_EXPECT_ERROR(
      create("this is not OpenCL C", {"bad"}, &exe), TSR_INVALID_ARGUMENT,
      "clBuildProgram of the module's OpenCL C source failed (CL_BUILD_PROGRAM_FAILURE)");
}

TEST_F(OpenClExecutable, ALongBuildLogIsCut) {
  std::string name(3000, 'q');
  std::string src = "__kernel void tsr_bad(__global uint *control) {\n";
  for (int i = 0; i < 8; ++i)
    src += "  " + name + std::to_string(i) + " = 1;\n";
  src += "}\n";
  tsr_executable_t exe = nullptr;
  tsr_status_t st = create(src, {"bad"}, &exe);
  ASSERT_EQ(tsr_status_code(st), TSR_INVALID_ARGUMENT);
  std::string msg = tsr_status_message(st);
  tsr_status_free(st);
  EXPECT_NE(msg.find("(build log cut at 8192 of "), std::string::npos) << msg.substr(0, 300);
  EXPECT_LT(msg.size(), 8192u + 1024u);
}

TEST_F(OpenClExecutable, AKernelTheProgramLacksIsNamed) {
  tsr_executable_t exe = nullptr;
  TSR_EXPECT_ERROR(create(kKernelSource, {"vadd", "missing"}, &exe), TSR_INVALID_ARGUMENT,
                   "kernel @missing: the program has no kernel tsr_missing");
}

TEST_F(OpenClExecutable, ASignatureThatIsNotTheAbisIsRefused) {
  // tsr_oob takes 4 arguments; a table with vadd's 5 parameters needs 3*3 + 2 + 1 = 12.
  std::string src = kKernelSource;
  src += "\n__kernel void tsr_short(__global uint *control) {}\n";
  Module m = makeModule(src, {"vadd"});
  m.kernels[0].name = "short";
  tsr_executable_t exe = nullptr;
  TSR_EXPECT_ERROR(
      tsr_executable_create(device_, TSR_OPENCL_FORMAT, &m.module, sizeof m.module, &exe),
      TSR_INVALID_ARGUMENT,
      "kernel @short: tsr_short takes 1 arguments, but its 5 parameters need 12");
}

TEST_F(OpenClExecutable, MalformedModulesAreRefused) {
  tsr_executable_t exe = nullptr;
  std::string withNul = std::string(kKernelSource) + std::string(1, '\0') + "junk";
  TSR_EXPECT_ERROR(create(withNul, {"vadd"}, &exe), TSR_INVALID_ARGUMENT, "NUL byte at offset");
  Module m = makeModule(kKernelSource, {"vadd"});
  TSR_EXPECT_ERROR(tsr_executable_create(device_, "vulkan", &m.module, sizeof m.module, &exe),
                   TSR_UNIMPLEMENTED, "accepted: opencl");
  m.module.version = 7;
  TSR_EXPECT_ERROR(
      tsr_executable_create(device_, TSR_OPENCL_FORMAT, &m.module, sizeof m.module, &exe),
      TSR_INVALID_ARGUMENT, "tsr_gpu_module version 7");
  uint32_t tiny = 4;
  TSR_EXPECT_ERROR(tsr_executable_create(device_, TSR_OPENCL_FORMAT, &tiny, sizeof tiny, &exe),
                   TSR_INVALID_ARGUMENT, "is not a tsr_gpu_module");
}

TEST_F(OpenClExecutable, HugeSourcesAreRefusedOrBuilt) {
  // Past the driver's limit: refused before the compiler sees it.
  std::string huge(kMaxSourceBytes + 1, ' ');
  tsr_executable_t exe = nullptr;
  TSR_EXPECT_ERROR(create(huge, {}, &exe), TSR_RESOURCE_EXHAUSTED, "exceeds the driver's limit");
  // Large but legal (2 MiB of comments before the kernels): builds and runs.
  std::string big;
  for (int i = 0; i < 32768; ++i)
    big += "// padding line of a large generated source file, 64 bytes long\n";
  EXPECT_EQ(runVadd(big + vaddTimes(1)), kTimes1);
}

TEST_F(OpenClExecutable, TheBinaryCacheStoresAndAHitIsUsed) {
  EXPECT_EQ(runVadd(vaddTimes(1)), kTimes1); // miss: built from source, stored
  ASSERT_EQ(entries(binaries()).size(), 1u);
  fs::path one = entries(binaries())[0];
  EXPECT_EQ(runVadd(vaddTimes(3)), kTimes3);
  ASSERT_EQ(entries(binaries()).size(), 2u);
  fs::path three = entries(binaries())[0] == one ? entries(binaries())[1] : entries(binaries())[0];
  // Store the "times 3" binary under the "times 1" key: a hit must then run times 3, which
  // proves that the binary, not the source, was used.
  auto keyOf = [](const std::string &entry) {
    uint64_t keyBytes = 0;
    std::memcpy(&keyBytes, entry.data() + 8, 8);
    return entry.substr(40, keyBytes);
  };
  std::string e1 = slurp(one), e3 = slurp(three);
  std::string payload3 = e3.substr(40 + keyOf(e3).size());
  BinaryCache cache(binaries().string());
  cache.store(keyOf(e1), payload3);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(runVadd(vaddTimes(1)), kTimes3);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST_F(OpenClExecutable, AWellFormedEntryWhoseBinaryTheDeviceRefusesIsRebuilt) {
  EXPECT_EQ(runVadd(vaddTimes(1)), kTimes1);
  ASSERT_EQ(entries(binaries()).size(), 1u);
  fs::path entry = entries(binaries())[0];
  std::string good = slurp(entry);
  uint64_t keyBytes = 0;
  std::memcpy(&keyBytes, good.data() + 8, 8);
  // Magic, key and checksum all right, the payload no device binary at all.
  BinaryCache(binaries().string()).store(good.substr(40, keyBytes), "not a device binary");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(runVadd(vaddTimes(1)), kTimes1);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_NE(err.find("is unusable"), std::string::npos) << err;
  expectRebuilt(good);
}

TEST_F(OpenClExecutable, CorruptOrTruncatedEntriesAreRebuiltWithOneWarning) {
  EXPECT_EQ(runVadd(vaddTimes(1)), kTimes1);
  ASSERT_EQ(entries(binaries()).size(), 1u);
  fs::path entry = entries(binaries())[0];
  std::string good = slurp(entry);
  for (int damage = 0; damage < 3; ++damage) {
    std::string bad = good;
    if (damage == 0)
      bad[bad.size() - 10] ^= 0x40; // a flipped payload bit
    else if (damage == 1)
      bad.resize(bad.size() / 2); // truncated
    else
      bad = "garbage"; // shorter than a header
    spit(entry, bad);
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(runVadd(vaddTimes(1)), kTimes1) << "damage " << damage;
    std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_NE(err.find("is unusable"), std::string::npos) << err;
    SCOPED_TRACE("damage " + std::to_string(damage));
    expectRebuilt(good);
  }
}

TEST_F(OpenClExecutable, ACacheDirectoryThatIsAFileCostsOneWarning) {
  fs::create_directories(dir_);
  spit(binaries(), "not a directory");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(runVadd(vaddTimes(1)), kTimes1);
  EXPECT_EQ(runVadd(vaddTimes(3)), kTimes3);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_NE(err.find("cannot use"), std::string::npos) << err;
}

} // namespace
} // namespace tessera::opencl::testing
