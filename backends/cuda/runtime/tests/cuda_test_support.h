// Helpers of the CUDA driver tests: switching the library the driver loads (the fake
// libcuda of fake_libcuda.c, or the system's), registering the driver, reading the fake's
// counters, and the test kernels as a "cuda" module (gpu_module.h).
//
// Test-only. Environment changes are not thread-safe: tests make them before any thread.
#pragma once

#include "backends/cuda/runtime/cuda_driver.h"
#include "backends/gpu_module.h"
#include "hal/tests/hal_test_util.h"
#include "hal/tests/scoped_env.h"

#include <dlfcn.h>
#include <fstream>
#include <gtest/gtest.h>
#include <iterator>
#include <optional>
#include <sstream>
#include <stdlib.h>
#include <string>
#include <vector>

namespace tessera::cuda::testing {

using hal::testing::ScopedEnv;

/// Points the driver at the fake libcuda in `mode` ("" = one working device).
struct UseFakeCuda {
  explicit UseFakeCuda(const std::string &mode)
      : library("TESSERA_CUDA_LIBRARY", std::string(TSR_FAKE_CUDA_PATH)),
        fakeMode("TESSERA_FAKE_CUDA_MODE", mode) {}
  ScopedEnv library, fakeMode;
};

/// A counter the fake exports (see fake_libcuda.c); the fake must be loaded.
inline int fakeCounter(const char *name) {
  void *library = dlopen(TSR_FAKE_CUDA_PATH, RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(library, nullptr) << "the fake libcuda is not loaded";
  if (!library)
    return -1;
  auto *value = static_cast<int *>(dlsym(library, name));
  EXPECT_NE(value, nullptr) << name;
  return value ? *value : -1;
}

/// Registers the CUDA driver in a new registry; the registration status goes to *status.
inline tsr_registry_t registryWithCuda(tsr_status_t *status) {
  tsr_registry_t registry = nullptr;
  EXPECT_EQ(tsr_registry_create(&registry), nullptr);
  *status = tsr_registry_register_driver(registry, tsr_cuda_driver());
  return registry;
}

inline std::string readText(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// The kernels of test_kernels.ptx as a "cuda" module: PTX always, and an image when given.
class TestModule {
public:
  explicit TestModule(std::vector<unsigned char> image = {}, std::string ptx = "")
      : image_(std::move(image)),
        ptx_(ptx.empty()
                 ? readText(TESSERA_SOURCE_DIR "/backends/cuda/runtime/tests/test_kernels.ptx")
                 : std::move(ptx)) {
    kernels_[0] = {"vector_add", vectorAddParams_, 4, nullptr, 0, 0};
    kernels_[1] = {"store_params", storeParams_, 9, nullptr, 0, 0};
    module_.struct_size = sizeof(module_);
    module_.version = TSR_GPU_MODULE_VERSION;
    module_.image = image_.empty() ? nullptr : image_.data();
    module_.image_size = image_.size();
    module_.fallback = ptx_.c_str();
    module_.fallback_size = ptx_.size() + 1;
    module_.kernels = kernels_;
    module_.kernel_count = 2;
  }
  TestModule(const TestModule &) = delete;
  TestModule &operator=(const TestModule &) = delete;

  tsr_gpu_module &module() { return module_; }
  const std::string &ptx() const { return ptx_; }

private:
  std::vector<unsigned char> image_;
  std::string ptx_;
  const tsr_kernel_param_t vectorAddParams_[4] = {
      {TSR_TYPE_BUFFER, "a"}, {TSR_TYPE_BUFFER, "b"}, {TSR_TYPE_BUFFER, "c"}, {TSR_TYPE_I32, "n"}};
  const tsr_kernel_param_t storeParams_[9] = {
      {TSR_TYPE_BUFFER, "out"}, {TSR_TYPE_I8, nullptr},  {TSR_TYPE_I16, nullptr},
      {TSR_TYPE_I32, nullptr},  {TSR_TYPE_I64, nullptr}, {TSR_TYPE_F16, nullptr},
      {TSR_TYPE_BF16, nullptr}, {TSR_TYPE_F32, nullptr}, {TSR_TYPE_F64, nullptr}};
  tsr_gpu_kernel kernels_[2] = {};
  tsr_gpu_module module_ = {};
};

} // namespace tessera::cuda::testing
