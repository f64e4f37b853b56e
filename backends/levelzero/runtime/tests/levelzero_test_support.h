// Helpers of the Level Zero driver tests: pointing the driver at the fake loader
// (fake_libze.c) or the system's, a registry with the driver and its opened device, the
// fake's counters, and test modules: SPIR-V words whose OpEntryPoints name the fake's
// host-run kernels, wrapped as a TSR_LEVELZERO_FORMAT tsr_gpu_module.
//
// Test-only. Environment changes are not thread-safe: tests make them before any thread.
#pragma once

#include "backends/gpu_module.h"
#include "backends/levelzero/levelzero_abi.h"
#include "backends/levelzero/runtime/levelzero_driver.h"
#include "hal/tests/hal_test_util.h"
#include "hal/tests/scoped_env.h"

#include <cstring>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <optional>
#include <string>
#include <vector>

namespace tessera::levelzero::testing {

using hal::testing::ScopedEnv;

/// Points the driver at the fake loader in `mode` ("" = one working device).
struct UseFakeZe {
  explicit UseFakeZe(const std::string &mode = "")
      : library("TESSERA_LEVELZERO_LIBRARY", std::string(TSR_FAKE_ZE_PATH)),
        fakeMode("TESSERA_FAKE_ZE_MODE", mode), fail("TESSERA_FAKE_ZE_FAIL", std::nullopt) {}
  ScopedEnv library, fakeMode, fail;
};

/// A global the fake exports (see fake_libze.c); the fake must be loaded.
template <typename T = int> T fakeGlobal(const char *name, int index = 0) {
  void *library = dlopen(TSR_FAKE_ZE_PATH, RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(library, nullptr) << "the fake loader is not loaded";
  if (!library)
    return T(-1);
  auto *value = static_cast<T *>(dlsym(library, name));
  dlclose(library); // drops the reference RTLD_NOLOAD took
  EXPECT_NE(value, nullptr) << name;
  return value ? value[index] : T(-1);
}

/// Registers the driver in a new registry; the registration status goes to *status.
inline tsr_registry_t registryWithLevelZero(tsr_status_t *status) {
  tsr_registry_t registry = nullptr;
  EXPECT_EQ(tsr_registry_create(&registry), nullptr);
  *status = tsr_registry_register_driver(registry, tsr_levelzero_driver());
  return registry;
}

/// levelzero:0 of the fake, opened; released (with the registry) at the end of the scope.
class FakeDevice {
public:
  FakeDevice() {
    tsr_status_t status = nullptr;
    registry_ = registryWithLevelZero(&status);
    EXPECT_EQ(hal::testing::consume(status), "");
    EXPECT_EQ(hal::testing::consume(tsr_registry_open_device(registry_, "levelzero:0", &device_)),
              "");
  }
  ~FakeDevice() {
    tsr_device_release(device_);
    tsr_registry_release(registry_);
  }
  tsr_device_t get() const { return device_; }

private:
  tsr_registry_t registry_ = nullptr;
  tsr_device_t device_ = nullptr;
};

/// SPIR-V words: the header, then one OpEntryPoint Kernel per name (all the fake reads).
inline std::vector<uint32_t> spirvWithEntries(const std::vector<std::string> &names) {
  std::vector<uint32_t> words = {0x07230203, 0x00010200, 0, 100, 0};
  uint32_t id = 1;
  for (const std::string &name : names) {
    std::vector<uint32_t> literal((name.size() + 4) / 4, 0); // NUL-terminated, padded
    std::memcpy(literal.data(), name.data(), name.size());
    words.push_back(uint32_t((3 + literal.size()) << 16) | 15u); // OpEntryPoint
    words.push_back(6);                                          // ExecutionModel Kernel
    words.push_back(id++);
    words.insert(words.end(), literal.begin(), literal.end());
  }
  return words;
}

/// vadd(a, b, c: buffer<f32>, n: i32), store_params(out, i8, i16, i32, i64, f16, bf16, f32,
/// f64), fault(out) and spin() as a "levelzero" module over `words`.
class TestModule {
public:
  explicit TestModule(std::vector<uint32_t> words = spirvWithEntries({"vadd", "store_params",
                                                                      "fault", "spin"}))
      : words_(std::move(words)) {
    kernels_[0] = {"vadd", vaddParams_, 4, nullptr, 0, 0};
    kernels_[1] = {"store_params", storeParams_, 9, nullptr, 0, 0};
    kernels_[2] = {"fault", faultParams_, 1, nullptr, 0, 0};
    kernels_[3] = {"spin", nullptr, 0, nullptr, 0, 0};
    module_.struct_size = sizeof(module_);
    module_.version = TSR_GPU_MODULE_VERSION;
    module_.image = words_.data();
    module_.image_size = words_.size() * 4;
    module_.kernels = kernels_;
    module_.kernel_count = 4;
  }
  TestModule(const TestModule &) = delete;
  TestModule &operator=(const TestModule &) = delete;

  tsr_status_t create(tsr_device_t device, tsr_executable_t *out) {
    return tsr_executable_create(device, TSR_LEVELZERO_FORMAT, &module_, sizeof(module_), out);
  }
  tsr_gpu_module &module() { return module_; }

private:
  std::vector<uint32_t> words_;
  const tsr_kernel_param_t vaddParams_[4] = {
      {TSR_TYPE_BUFFER, "a"}, {TSR_TYPE_BUFFER, "b"}, {TSR_TYPE_BUFFER, "c"}, {TSR_TYPE_I32, "n"}};
  const tsr_kernel_param_t storeParams_[9] = {
      {TSR_TYPE_BUFFER, "out"}, {TSR_TYPE_I8, nullptr},  {TSR_TYPE_I16, nullptr},
      {TSR_TYPE_I32, nullptr},  {TSR_TYPE_I64, nullptr}, {TSR_TYPE_F16, nullptr},
      {TSR_TYPE_BF16, nullptr}, {TSR_TYPE_F32, nullptr}, {TSR_TYPE_F64, nullptr}};
  const tsr_kernel_param_t faultParams_[1] = {{TSR_TYPE_BUFFER, "out"}};
  tsr_gpu_kernel kernels_[4] = {};
  tsr_gpu_module module_ = {};
};

} // namespace tessera::levelzero::testing
