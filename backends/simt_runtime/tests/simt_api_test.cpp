// The SIMT vendor table: opening a library by environment variable or by name, resolving
// the vendor's own symbols and then every shared entry by the names the vendor gives (the
// first missing one named, with the library), and the status of a vendor error (HAL code
// from CUDA's numbering, "<driver>: <call>: NAME (description)"). The expected addresses
// come from dlsym itself; libm stands in for a vendor library.
#include "backends/simt_runtime/simt_api.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <string>

namespace tessera::simt::testing {
namespace {

constexpr const char *kEnv = "TESSERA_SIMT_TEST_LIBRARY";

/// Every shared entry named `name`.
SimtApiNames allNamed(const char *name) {
  SimtApiNames names;
#define TSR_SIMT_TEST_NAME(entry, params) names.entry = name;
  TSR_SIMT_ENTRIES(TSR_SIMT_TEST_NAME)
#undef TSR_SIMT_TEST_NAME
  return names;
}

VendorLibrary openLibm() {
  unsetenv(kEnv);
  std::string error;
  VendorLibrary libm = openVendorLibrary(kEnv, {"libm.so.6"}, &error);
  EXPECT_NE(libm.handle, nullptr) << error;
  return libm;
}

TEST(SimtApi, OpensTheFirstLibraryThatLoads) {
  unsetenv(kEnv);
  std::string error;
  VendorLibrary library =
      openVendorLibrary(kEnv, {"/nonexistent/libvendor.so", "libm.so.6"}, &error);
  ASSERT_NE(library.handle, nullptr) << error;
  EXPECT_EQ(library.name, "libm.so.6");
  EXPECT_EQ(library.handle, dlopen("libm.so.6", RTLD_NOW | RTLD_NOLOAD));
}

TEST(SimtApi, TheEnvironmentVariableReplacesTheNames) {
  setenv(kEnv, "/nonexistent/libfake.so", 1);
  std::string error;
  VendorLibrary library = openVendorLibrary(kEnv, {"libm.so.6"}, &error);
  unsetenv(kEnv);
  EXPECT_EQ(library.handle, nullptr);
  EXPECT_NE(error.find("/nonexistent/libfake.so"), std::string::npos) << error;
}

TEST(SimtApi, ResolvesVendorSymbolsThenEverySharedEntry) {
  VendorLibrary libm = openLibm();
  SimtApi api;
  api.names = allNamed("cos");
  void *own = nullptr;
  std::string error;
  ASSERT_TRUE(resolveSymbols(libm, {{"sin", &own}}, &api, &error)) << error;
  EXPECT_EQ(own, dlsym(libm.handle, "sin"));
  void *cosine = dlsym(libm.handle, "cos");
  EXPECT_EQ(reinterpret_cast<void *>(api.memAlloc), cosine);
  EXPECT_EQ(reinterpret_cast<void *>(api.launchKernel), cosine);
}

TEST(SimtApi, AMissingSymbolIsNamedWithItsLibrary) {
  VendorLibrary libm = openLibm();
  SimtApi api;
  api.names = allNamed("cos");
  api.names.launchKernel = "cuMemAllocAsync";
  std::string error;
  EXPECT_FALSE(resolveSymbols(libm, {}, &api, &error));
  EXPECT_EQ(error, "libm.so.6: symbol cuMemAllocAsync not found");
  // Entries before the missing one are resolved; a vendor symbol is checked first.
  EXPECT_EQ(reinterpret_cast<void *>(api.moduleUnload), dlsym(libm.handle, "cos"));
  void *own = nullptr;
  EXPECT_FALSE(resolveSymbols(libm, {{"cuInit", &own}}, &api, &error));
  EXPECT_EQ(error, "libm.so.6: symbol cuInit not found");
}

TEST(SimtApi, AnEntryWithoutANameIsReportedNotDereferenced) {
  VendorLibrary libm = openLibm();
  SimtApi api;
  api.names = allNamed("cos");
  api.names.memFree = nullptr;
  std::string error;
  EXPECT_FALSE(resolveSymbols(libm, {}, &api, &error));
  EXPECT_EQ(error, "libm.so.6: no symbol name for the entry memFree");
}

std::string describeForTest(const SimtApi &, Result error) {
  return error == 2 ? "ERROR_OUT_OF_MEMORY (out of memory)" : "ERROR_" + std::to_string(error);
}

TEST(SimtApi, VendorErrorsBecomeHalStatuses) {
  SimtApi api;
  api.driverName = "test driver";
  api.describeError = describeForTest;
  EXPECT_EQ(simtStatus(api, kSuccess, "memAlloc"), nullptr);
  tsr_status_t status = simtStatus(api, 2, "memAlloc");
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(tsr_status_code(status), TSR_RESOURCE_EXHAUSTED);
  EXPECT_STREQ(tsr_status_message(status),
               "test driver: memAlloc: ERROR_OUT_OF_MEMORY (out of memory)");
  tsr_status_free(status);
  // CUDA's numbers, which HIP shares.
  EXPECT_EQ(statusCodeOf(100), TSR_UNAVAILABLE);      // NO_DEVICE
  EXPECT_EQ(statusCodeOf(218), TSR_INVALID_ARGUMENT); // INVALID_PTX
  EXPECT_EQ(statusCodeOf(500), TSR_NOT_FOUND);
  EXPECT_EQ(statusCodeOf(801), TSR_UNIMPLEMENTED);
  EXPECT_EQ(statusCodeOf(700), TSR_INTERNAL); // ILLEGAL_ADDRESS: the device is broken
}

TEST(SimtApi, ErrorDescriptionsDropWhatRepeatsTheName) {
  EXPECT_EQ(describeError(2, "E_OOM", "out of memory"), "E_OOM (out of memory)");
  EXPECT_EQ(describeError(2, "E_OOM", "E_OOM"), "E_OOM");
  EXPECT_EQ(describeError(7, nullptr, nullptr), "error 7");
  EXPECT_EQ(describeError(7, nullptr, "why"), "error 7 (why)");
}

} // namespace
} // namespace tessera::simt::testing
