// The compiler-target seam (backends/target.h) as a new backend sees it: a target defined in
// this file alone, registered with one call, shows up in `tessera compile --help`, compiles
// through `tessera compile`, and is the one Program and the conformance runner use for a
// device of its backend (a HAL driver registered here under the same backend name). Plus
// name and alias lookup, the unknown-target error, the capability record, and the compile
// cache holding the CPU's artefact in the one container encoding.
#include "backends/builtin_targets.h"
#include "backends/cpu/runtime/cpu_driver.h"
#include "backends/gpu_module.h"
#include "backends/target.h"
#include "backends/vulkan/codegen/vulkan_codegen.h"
#include "backends/vulkan/runtime/vulkan_driver.h"
#include "conformance/catalog.h"
#include "conformance/runner.h"
#include "ir/text/parser.h"
#include "tessera/artefact.h"
#include "tessera/compile_cache.h"
#include "tessera/hal_driver.h"
#include "tessera/program.h"
#include "tools/commands.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace tessera {
namespace {

namespace fs = std::filesystem;

std::atomic<int> toyCompiles{0};

// A target for the HAL backend "toy": the CPU's code under another name and profile. It
// compiles by asking the registry's cpu target, so it needs no codegen of its own.
class ToyTarget final : public Target {
public:
  std::string_view name() const override { return "toy"; }
  std::vector<std::string_view> aliases() const override { return {"toy-old"}; }
  std::string description() const override { return "the toy backend's objects (a test)"; }
  std::string_view backend() const override { return "toy"; }
  std::string_view format() const override { return TSR_CPU_FORMAT; }
  PrecisionProfile declaredProfile() const override { return PrecisionProfile::Relaxed; }
  std::vector<std::string> stageFiles() const override { return {"0-toy.o"}; }
  bool deviceOptions(const tsr_device_info_t &, std::string_view, TargetOptions *,
                     std::string *) const override {
    return true;
  }
  std::string cacheKey(const TargetOptions &opts) const override {
    return "toy " + cpu()->cacheKey(opts);
  }
  std::optional<Artefact> compile(const ir::Module &m, const TargetOptions &opts,
                                  std::string *error) const override {
    ++toyCompiles;
    std::optional<Artefact> a = cpu()->compile(m, opts, error);
    if (a && opts.keepStages)
      a->stages = {{"0-toy.o", std::string(a->image.begin(), a->image.end())}};
    return a;
  }

private:
  static const Target *cpu() { return defaultTargets().find("cpu"); }
};

// Registered once for the whole binary, as a plugin would at start-up.
const Target *toy() {
  static const Target *t = [] {
    defaultTargets().add(std::make_unique<ToyTarget>());
    return defaultTargets().find("toy");
  }();
  return t;
}

std::string example(const char *name) {
  return std::string(TESSERA_SOURCE_DIR) + "/ir/examples/" + name;
}

TEST(TargetRegistry, BuiltinTargetsByCanonicalNameAndAlias) {
  TargetRegistry r;
  registerBuiltinTargets(r);
  EXPECT_EQ(r.names(), "cpu, vulkan, cuda, rocm, opencl, levelzero");
  struct Name {
    const char *asked, *canonical;
    bool alias;
  };
  for (const Name &n : {Name{"cpu", "cpu", false}, Name{"vulkan", "vulkan", false},
                        Name{"spirv-vulkan", "vulkan", true}, Name{"spirv", "vulkan", true},
                        Name{"vulkan-spirv", "vulkan", true}, Name{"cuda", "cuda", false},
                        Name{"ptx", "cuda", true}, Name{"rocm", "rocm", false},
                        Name{"hsaco", "rocm", true}, Name{"rocm-hsaco", "rocm", true},
                        Name{"opencl", "opencl", false}, Name{"opencl-c", "opencl", true},
                        Name{"cl", "opencl", true}, Name{"levelzero", "levelzero", false},
                        Name{"spirv-kernel", "levelzero", true},
                        Name{"level-zero", "levelzero", true}, Name{"ze", "levelzero", true}}) {
    bool alias = !n.alias;
    const Target *t = r.find(n.asked, &alias);
    ASSERT_NE(t, nullptr) << n.asked;
    EXPECT_EQ(t->name(), n.canonical) << n.asked;
    EXPECT_EQ(alias, n.alias) << n.asked;
    // One canonical name everywhere: the HAL backend and the executable format too.
    EXPECT_EQ(t->backend(), n.canonical);
    EXPECT_EQ(t->format(), n.canonical);
    EXPECT_EQ(r.forBackend(n.canonical), t);
  }
  EXPECT_EQ(r.find("x"), nullptr);
  EXPECT_EQ(r.forBackend("x"), nullptr);
  EXPECT_EQ(r.unknownTarget("x"), "unknown target 'x' (targets: cpu, vulkan, cuda, rocm, opencl, levelzero)");
  EXPECT_EQ(r.find("vulkan")->declaredProfile(), PrecisionProfile::Relaxed);
  EXPECT_EQ(r.find("cpu")->declaredProfile(), PrecisionProfile::Full);
  EXPECT_FALSE(r.find("cuda")->boundsModeSupported(TSR_BOUNDS_ROBUST));
  EXPECT_TRUE(r.find("cuda")->boundsModeSupported(TSR_BOUNDS_UNCHECKED));
  EXPECT_TRUE(r.find("cpu")->buffersInHostMemory());
  EXPECT_FALSE(r.find("vulkan")->buffersInHostMemory());
}

TEST(TargetRegistry, ANameOrAliasTakenTwiceIsRefused) {
  TargetRegistry r;
  registerBuiltinTargets(r);
  EXPECT_TRUE(r.add(std::make_unique<ToyTarget>()));
  EXPECT_FALSE(r.add(std::make_unique<ToyTarget>())) << "'toy' is taken";
  EXPECT_EQ(r.names(), "cpu, vulkan, cuda, rocm, opencl, levelzero, toy");
  EXPECT_EQ(r.find("toy-old")->name(), "toy");
}

TEST(TargetRegistry, CapsRecordParsing) {
  std::vector<std::pair<std::string, std::string>> e;
  std::string err;
  ASSERT_TRUE(parseCapsRecord("version=1\nvulkan.float16=1\n\ncuda.arch=sm_90\n", &e, &err));
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0], (std::pair<std::string, std::string>{"vulkan.float16", "1"}));
  EXPECT_EQ(e[1], (std::pair<std::string, std::string>{"cuda.arch", "sm_90"}));
  EXPECT_TRUE(parseCapsRecord("", &e, &err) && e.empty());
  EXPECT_FALSE(parseCapsRecord("vulkan.float16=1\n", &e, &err));
  EXPECT_EQ(err, "capability record does not start with version=1");
  EXPECT_FALSE(parseCapsRecord("version=2\n", &e, &err));
  EXPECT_EQ(err, "capability record version 2 (this build reads 1)");
  EXPECT_FALSE(parseCapsRecord("version=1\nfloat16\n", &e, &err));
  EXPECT_EQ(err, "capability record line 2 is not key=value: 'float16'");
}

// The Vulkan target takes every capability from the record, exactly: what a record says is
// what the options (and so the cache key and the code) say, and an unknown name or a bad
// value is an error, never a guess.
TEST(TargetRegistry, VulkanCapabilitiesComeFromTheRecordExactly) {
  const Target *vk = defaultTargets().find("vulkan");
  tsr_device_info_t info{};
  std::snprintf(info.name, sizeof info.name, "vulkan:0");
  TargetOptions opts;
  std::string err;
  ASSERT_TRUE(vk->deviceOptions(info,
                                "version=1\nvulkan.subgroupSize=32\nvulkan.float64=0\n"
                                "vulkan.maxComputeSharedMemorySize=49152\n",
                                &opts, &err))
      << err;
  EXPECT_EQ(opts.subgroupSize, 32u);
  vulkan::VulkanTargetCaps want; // lavapipe's defaults, then the record's three values
  want.subgroupSize = 32;
  want.float64 = false;
  want.maxComputeSharedMemorySize = 49152;
  EXPECT_NE(vk->cacheKey(opts).find(want.describe()), std::string::npos) << vk->cacheKey(opts);
  // f64 math needs Float64: the record's 0 makes it a compile error naming the op.
  auto m = ir::parseModule("kernel @k(%o: buffer<f64>) {\n"
                           "  %i = global_id.x : i32\n"
                           "  %v = load %o[%i] : f64\n"
                           "  %e = exp %v : f64\n"
                           "  store %e, %o[%i] : f64\n}\n",
                           "f64.tir");
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE(vk->compile(*m.module, opts, &err).has_value());
  EXPECT_NE(err.find("f64.tir:"), std::string::npos) << err;
  EXPECT_FALSE(vk->deviceOptions(info, "version=1\nvulkan.float17=1\n", &opts, &err));
  EXPECT_EQ(err, "unknown vulkan capability 'float17'");
  EXPECT_FALSE(vk->deviceOptions(info, "version=1\nvulkan.float16=2\n", &opts, &err));
  EXPECT_EQ(err, "vulkan capability float16 has the value '2' (expected 0 or 1)");
  EXPECT_FALSE(vk->deviceOptions(info, "", &opts, &err));
  EXPECT_NE(err.find("gives no capability record"), std::string::npos) << err;
}

TEST(TargetRegistry, GpuTargetsReadTheArchitectureFromTheRecordOrTheDeviceInfo) {
  tsr_device_info_t info{};
  std::snprintf(info.architecture, sizeof info.architecture, "sm_86");
  TargetOptions opts;
  std::string err;
  const Target *cuda = defaultTargets().find("cuda");
  ASSERT_TRUE(cuda->deviceOptions(info, "", &opts, &err)) << err;
  EXPECT_EQ(opts.arch, "sm_80"); // the newest PTX target an sm_86 runs
  ASSERT_TRUE(cuda->deviceOptions(info, "version=1\ncuda.arch=sm_90\n", &opts, &err)) << err;
  EXPECT_EQ(opts.arch, "sm_90");
  std::snprintf(info.architecture, sizeof info.architecture, "sm_75");
  EXPECT_FALSE(cuda->deviceOptions(info, "", &opts, &err));
  EXPECT_NE(err.find("'sm_75' is not supported"), std::string::npos) << err;
  const Target *rocm = defaultTargets().find("rocm");
  std::snprintf(info.architecture, sizeof info.architecture, "gfx90a:sramecc+:xnack-");
  ASSERT_TRUE(rocm->deviceOptions(info, "", &opts, &err)) << err;
  EXPECT_EQ(opts.arch, "gfx90a");
}

TEST(TargetRegistry, ATestTargetAppearsInCompileHelpAndCompiles) {
  ASSERT_NE(toy(), nullptr);
  std::string help = cli::compileHelp();
  EXPECT_NE(help.find("targets (cpu, vulkan, cuda, rocm, opencl, levelzero, toy)"), std::string::npos) << help;
  EXPECT_NE(help.find("  toy     the toy backend's objects (a test)"), std::string::npos) << help;
  EXPECT_NE(help.find("old names: toy-old"), std::string::npos);
  EXPECT_NE(help.find("old names: spirv-vulkan, spirv, vulkan-spirv"), std::string::npos);

  fs::path dir = fs::temp_directory_path() / ("tessera-toy-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string file = example("saxpy.tir"), out = (dir / "s.tsrx").string(),
              dump = (dir / "dump").string();
  int before = toyCompiles;
  const char *argv[] = {"tessera", "compile",   file.c_str(), "--target",  "toy-old",
                        "-o",      out.c_str(), "--dump-dir", dump.c_str()};
  ASSERT_EQ(cli::cmdCompile(9, const_cast<char **>(argv)), 0);
  EXPECT_EQ(toyCompiles, before + 1);
  std::ifstream f(out, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto a = decodeArtefact(bytes);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->format, TSR_CPU_FORMAT);
  ASSERT_EQ(a->kernels.size(), 1u);
  EXPECT_EQ(a->kernels[0].name, "saxpy");
  EXPECT_EQ(std::string(reinterpret_cast<const char *>(a->image.data()), 4), "\x7f"
                                                                             "ELF");
  EXPECT_EQ(fs::file_size(dir / "dump" / "0-toy.o"), a->image.size());
  const char *bad[] = {"tessera", "compile", file.c_str(), "--target", "nope"};
  EXPECT_EQ(cli::cmdCompile(5, const_cast<char **>(bad)), 1);
  fs::remove_all(dir);
}

// A HAL driver for backend "toy": the CPU driver's entry points under another name (its
// executables in the "cpu" format are what the toy target produces).
tsr_driver_v1 toyDriver() {
  tsr_driver_v1 d = *tsr_cpu_driver();
  d.name = "toy";
  return d;
}

class ToyDevice : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_NE(toy(), nullptr);
    ASSERT_EQ(tsr_registry_create(&registry_), nullptr);
    table_ = toyDriver();
    ASSERT_EQ(tsr_registry_register_driver(registry_, &table_), nullptr);
    ASSERT_EQ(tsr_registry_open_device(registry_, "toy:0", &device_), nullptr);
  }
  void TearDown() override {
    if (device_)
      tsr_device_release(device_);
    if (registry_)
      tsr_registry_release(registry_);
  }
  tsr_driver_v1 table_{};
  tsr_registry_t registry_ = nullptr;
  tsr_device_t device_ = nullptr;
};

TEST_F(ToyDevice, ProgramAndTheConformanceRunnerUseTheDeviceBackendsTarget) {
  tsr_device_info_t info{};
  info.struct_size = sizeof info;
  ASSERT_EQ(tsr_device_info(device_, &info), nullptr);
  EXPECT_EQ(targetForDevice(info), toy());
  EXPECT_EQ(conform::declaredProfile("toy"), PrecisionProfile::Relaxed);

  conform::Catalog cat = conform::buildCatalog();
  std::vector<size_t> selected;
  for (size_t i = 0; i < cat.cases.size() && selected.size() < 3; ++i)
    if (cat.cases[i].id.rfind("exp.f32/", 0) == 0)
      selected.push_back(i);
  ASSERT_EQ(selected.size(), 3u);
  conform::DeviceRun dev;
  dev.name = "toy:0";
  dev.device = device_;
  dev.features = info.features;
  dev.profile = conform::declaredProfile("toy");
  conform::RunReport report;
  int before = toyCompiles;
  conform::runDevice(cat, selected, dev, 1, report, nullptr);
  EXPECT_GT(toyCompiles, before) << "the runner compiled through the toy target";
  ASSERT_EQ(report.results.size(), 3u);
  for (const conform::CaseResult &r : report.results) {
    EXPECT_EQ(r.device, "toy:0");
    EXPECT_EQ(r.status, "pass") << r.id << ": " << r.message;
    EXPECT_GT(r.tolerance, 0) << r.id;
  }
}

// The compile cache holds the CPU's artefact in the one container every target uses, and a
// second Program loads it from disk; an entry crafted into another target's format is a miss
// with one warning, then rebuilt.
TEST(TargetRegistry, CpuArtefactGoesThroughTheOneCacheEncoding) {
  tsr_registry_t registry = nullptr;
  ASSERT_EQ(tsr_registry_create(&registry), nullptr);
  ASSERT_EQ(tsr_registry_register_driver(registry, tsr_cpu_driver()), nullptr);
  tsr_device_t device = nullptr;
  ASSERT_EQ(tsr_registry_open_device(registry, "cpu:0", &device), nullptr);
  auto m = ir::parseFile(example("saxpy.tir"));
  ASSERT_TRUE(m.ok());
  fs::path dir = fs::temp_directory_path() / ("tessera-cpu-cache-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  std::string err;
  CacheKey key;
  {
    CompileCache cache(dir);
    auto p = Program::create(device, *m.module, &cache, {}, &err);
    ASSERT_NE(p, nullptr) << err;
    EXPECT_EQ(p->stats().source, ProgramStats::Source::Compiled);
    EXPECT_EQ(p->kernel("saxpy")->subgroupSize, 16u);
  }
  for (const auto &e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file())
      key = CompileCache::recordedKey(e.path()).value_or(CacheKey{});
  ASSERT_FALSE(key.digest.empty());
  {
    CompileCache cache(dir);
    std::optional<std::string> payload = cache.lookup(key);
    ASSERT_TRUE(payload);
    EXPECT_EQ(payload->rfind("TSRX1 cpu\nkernel saxpy 0 0 16 4 ", 0), 0u) << payload->substr(0, 64);
    auto p = Program::create(device, *m.module, &cache, {}, &err);
    ASSERT_NE(p, nullptr) << err;
    EXPECT_EQ(p->stats().source, ProgramStats::Source::MemoryCache);
    std::string crafted = *payload;
    crafted.replace(6, 3, "vulkan");
    ASSERT_TRUE(cache.store(key, crafted));
  }
  CompileCache cache(dir);
  std::vector<std::string> warnings;
  cache.setWarningSink([&](const std::string &l) { warnings.push_back(l); });
  auto p = Program::create(device, *m.module, &cache, {}, &err);
  ASSERT_NE(p, nullptr) << err;
  EXPECT_EQ(p->stats().source, ProgramStats::Source::Compiled);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("its format is 'vulkan', not cpu's 'cpu'"), std::string::npos)
      << warnings[0];
  p.reset();
  tsr_device_release(device);
  tsr_registry_release(registry);
  fs::remove_all(dir);
}

// The HAL side of the record: the validation layer's checks, UNIMPLEMENTED from a driver
// without one, and a length query followed by a (possibly truncated) copy.
TEST(TargetRegistry, DeviceCompilerCapsThroughTheHal) {
  tsr_registry_t registry = nullptr;
  ASSERT_EQ(tsr_registry_create(&registry), nullptr);
  ASSERT_EQ(tsr_registry_register_driver(registry, tsr_cpu_driver()), nullptr);
  tsr_device_t device = nullptr;
  ASSERT_EQ(tsr_registry_open_device(registry, "cpu:0", &device), nullptr);
  size_t len = 7;
  tsr_status_t st = tsr_device_compiler_caps(device, nullptr, 0, &len);
  EXPECT_EQ(tsr_status_code(st), TSR_UNIMPLEMENTED);
  EXPECT_NE(std::string(tsr_status_message(st)).find("device_compiler_caps"), std::string::npos)
      << tsr_status_message(st);
  EXPECT_EQ(len, 0u) << "out_len is zeroed on entry";
  tsr_status_free(st);
  st = tsr_device_compiler_caps(device, nullptr, 4, &len);
  EXPECT_EQ(tsr_status_code(st), TSR_INVALID_ARGUMENT);
  tsr_status_free(st);
  st = tsr_device_compiler_caps(device, nullptr, 0, nullptr);
  EXPECT_EQ(tsr_status_code(st), TSR_INVALID_ARGUMENT);
  tsr_status_free(st);
  std::string caps, err;
  EXPECT_TRUE(deviceCompilerCaps(device, &caps, &err)) << err;
  EXPECT_TRUE(caps.empty());
  tsr_device_release(device);
  tsr_registry_release(registry);
}

// vulkan:0's record (lavapipe here): every capability the driver names is one the target
// knows, and the ones tsr_device_info_t also reports agree with it.
TEST(TargetRegistry, VulkanDriverRecordAgreesWithTheDeviceInfo) {
  tsr_registry_t registry = nullptr;
  ASSERT_EQ(tsr_registry_create(&registry), nullptr);
  tsr_status_t st = tsr_registry_register_driver(registry, tsr_vulkan_driver());
  tsr_device_t device = nullptr;
  if (st || tsr_registry_open_device(registry, "vulkan:0", &device)) {
    tsr_status_free(st);
    tsr_registry_release(registry);
    GTEST_SKIP() << "no vulkan:0 here";
  }
  tsr_device_info_t info{};
  info.struct_size = sizeof info;
  ASSERT_EQ(tsr_device_info(device, &info), nullptr);
  std::string caps, err;
  ASSERT_TRUE(deviceCompilerCaps(device, &caps, &err)) << err;
  ASSERT_EQ(caps.rfind("version=1\n", 0), 0u) << caps;
  TargetOptions opts;
  ASSERT_TRUE(targetForDevice(info)->deviceOptions(info, caps, &opts, &err)) << err;
  std::vector<std::pair<std::string, std::string>> e;
  ASSERT_TRUE(parseCapsRecord(caps, &e, &err));
  vulkan::VulkanTargetCaps parsed;
  for (const auto &[k, v] : e)
    ASSERT_TRUE(parsed.set(k.substr(7), v, &err)) << err;
  EXPECT_EQ(e.size(), 26u) << "one line per VulkanTargetCaps field:\n" << caps;
  if (std::string(info.architecture).find("llvmpipe") != std::string::npos) {
    EXPECT_EQ(parsed.maxPushDescriptors, 32u) << "lavapipe's push descriptors per kernel";
    EXPECT_TRUE(parsed.cooperativeMatrix.empty()) << "lavapipe lacks VK_KHR_cooperative_matrix";
    EXPECT_EQ(parsed.maxControlFlowNesting, 80u) << "gallivm's LP_MAX_TGSI_NESTING";
  }
  EXPECT_EQ(parsed.subgroupSize, info.subgroup_size);
  EXPECT_EQ(parsed.maxComputeSharedMemorySize, info.max_shared_memory);
  EXPECT_EQ(parsed.float64, (info.features & TSR_FEATURE_FP64) != 0);
  EXPECT_EQ(parsed.shaderBufferFloat32AtomicAdd, (info.features & TSR_FEATURE_FLOAT_ATOMICS) != 0);
  size_t len = 0;
  char head[4];
  ASSERT_EQ(tsr_device_compiler_caps(device, head, sizeof head, &len), nullptr);
  EXPECT_EQ(len, caps.size()) << "the full length, even when the copy is cut";
  EXPECT_EQ(std::string(head, 4), "vers");
  tsr_device_release(device);
  tsr_registry_release(registry);
}

} // namespace
} // namespace tessera
