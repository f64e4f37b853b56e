// The CUDA driver's table, and how registering it reports a system without CUDA: no
// library, a library without the entry points, cuInit failing, no device (the last two
// through the fake libcuda). Each asserts the reason the registry lists.
#include "backends/cuda/runtime/tests/cuda_test_support.h"
#include "hal/tests/driver_registration_check.h"
#include "hal/tests/memory_accounting_check.h"

#include "tessera/hal_driver.h"

#include <cstring>

namespace tessera::cuda::testing {
namespace {

void expectUnavailable(const std::string &reason) {
  hal::testing::expectDriverUnavailable(tsr_cuda_driver(), "cuda", reason);
}

TEST(CudaDriverTable, HeaderAndEveryEntryArePresent) {
  // device_compiler_caps (ABI 1.3) is optional: the target reads the architecture from
  // tsr_device_info_t, which is this driver's whole capability record.
  hal::testing::expectDriverTable(tsr_cuda_driver(), "cuda",
                                  offsetof(tsr_driver_v1, device_compiler_caps));
}

TEST(CudaDriverRegistration, UnavailableWithoutLibcuda) {
  ScopedEnv library("TESSERA_CUDA_LIBRARY", std::nullopt);
  if (dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL))
    GTEST_SKIP() << "libcuda.so.1 is installed here (the CudaDevice tests use it)";
  expectUnavailable("dlopen failed: libcuda.so.1: cannot open shared object file");
}

TEST(CudaDriverRegistration, LibraryPathFromTheEnvironment) {
  ScopedEnv library("TESSERA_CUDA_LIBRARY", "/nonexistent/libcuda.so.1");
  expectUnavailable("dlopen failed: /nonexistent/libcuda.so.1: cannot open shared object file");
}

TEST(CudaDriverRegistration, LibraryWithoutTheEntryPoints) {
  ScopedEnv library("TESSERA_CUDA_LIBRARY", "libm.so.6");
  expectUnavailable("lacks an entry point (driver too old?)");
  expectUnavailable("cuGetErrorName");
}

TEST(CudaDriverRegistration, TheMissingEntryPointIsNamedWithItsLibrary) {
  // The vendor-only entry points are resolved first, cuGetErrorName leading them.
  ScopedEnv library("TESSERA_CUDA_LIBRARY", "libm.so.6");
  expectUnavailable("cuda driver: the CUDA driver library lacks an entry point (driver too old?): "
                    "libm.so.6: symbol cuGetErrorName not found");
}

TEST(CudaDriverRegistration, ToolkitStubResolvesEveryEntryPoint) {
  // The toolkit's stub exports the real driver's symbols (so the names in cuda_api.h are
  // right) and fails cuInit, as it does when the stub is found instead of the driver. Once
  // loaded, its soname makes it this process's "libcuda.so.1": never where a driver exists.
  if (dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL))
    GTEST_SKIP() << "a CUDA driver is installed (the CudaDevice tests use it)";
  const char *stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (!dlopen(stub, RTLD_NOW | RTLD_LOCAL))
    GTEST_SKIP() << "no CUDA toolkit stub at " << stub;
  ScopedEnv library("TESSERA_CUDA_LIBRARY", stub);
  expectUnavailable("cuda driver: cuInit: CUDA_ERROR_STUB_LIBRARY");
}

TEST(CudaDriverRegistration, CuInitFailureNamesTheCudaError) {
  UseFakeCuda fake("init_error");
  expectUnavailable("cuda driver: cuInit: CUDA_ERROR_INSUFFICIENT_DRIVER (CUDA driver version is "
                    "insufficient for CUDA runtime version)");
}

TEST(CudaDriverRegistration, NoDeviceIsUnavailable) {
  UseFakeCuda fake("no_device");
  expectUnavailable("cuda driver: no CUDA device (cuDeviceGetCount found 0)");
}

TEST(CudaDriverRegistration, FakeDeviceIsListedWithItsAttributes) {
  UseFakeCuda fake("");
  tsr_status_t status = nullptr;
  tsr_registry_t registry = registryWithCuda(&status);
  TSR_ASSERT_OK(status);
  uint32_t count = 0;
  TSR_EXPECT_OK(tsr_registry_unavailable_count(registry, &count));
  EXPECT_EQ(count, 0u);
  TSR_EXPECT_OK(tsr_registry_device_count(registry, &count));
  ASSERT_EQ(count, 1u);
  tsr_device_info_t info = {};
  info.struct_size = sizeof(info);
  TSR_ASSERT_OK(tsr_registry_device_info(registry, 0, &info));
  // The values fake_libcuda.c reports, through the attribute numbers of cuda.h.
  EXPECT_STREQ(info.name, "cuda:0");
  EXPECT_STREQ(info.backend, "cuda");
  EXPECT_STREQ(info.vendor, "NVIDIA");
  EXPECT_STREQ(info.architecture, "sm_90");
  EXPECT_EQ(info.total_memory, uint64_t(1) << 30);
  EXPECT_EQ(info.compute_units, 132u);
  EXPECT_EQ(info.max_workgroup_size[0], 1024u);
  EXPECT_EQ(info.max_workgroup_size[2], 64u);
  EXPECT_EQ(info.max_workgroup_total, 1024u);
  EXPECT_EQ(info.max_grid_size[0], 2147483647u);
  EXPECT_EQ(info.max_grid_size[1], 65535u);
  EXPECT_EQ(info.max_shared_memory, 49152u);
  EXPECT_EQ(info.subgroup_size, 32u);
  EXPECT_EQ(info.buffer_offset_alignment, 256u);
  const uint64_t expected = TSR_FEATURE_FP16 | TSR_FEATURE_BF16 | TSR_FEATURE_FP64 |
                            TSR_FEATURE_INT8 | TSR_FEATURE_INT16 | TSR_FEATURE_INT64 |
                            TSR_FEATURE_SUBGROUPS | TSR_FEATURE_FLOAT_ATOMICS;
  EXPECT_EQ(info.features, expected);
  tsr_registry_release(registry);
  EXPECT_EQ(fakeCounter("fake_cuda_primary_retains"), 0);
}

// Memory is accounted in total against what the device reports (issue #10), refused
// before the vendor allocator is called (hal/tests/memory_accounting_check.h).
TEST(CudaDriverMemory, AllocationsAreAccountedInTotal) {
  UseFakeCuda fake("");
  ScopedEnv limit("TESSERA_MEMORY_LIMIT_BYTES", std::to_string(hal::testing::kAccountingTestLimit));
  tsr_status_t status = nullptr;
  tsr_registry_t registry = registryWithCuda(&status);
  TSR_ASSERT_OK(status);
  tsr_device_t device = nullptr;
  TSR_ASSERT_OK(tsr_registry_open_device(registry, "cuda:0", &device));
  hal::testing::expectMemoryAccountedInTotal(device, "cuda driver: out of memory on cuda:0: ");
  tsr_device_release(device);
  tsr_registry_release(registry);
}

} // namespace
} // namespace tessera::cuda::testing
