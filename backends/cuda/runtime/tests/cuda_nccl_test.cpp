// The CUDA driver's native collective channel (hal_driver.h ABI 1.4) over NCCL: through the
// fake libcuda and the fake libnccl.so.2 (fake_libnccl.c), every collective of every type
// and operator on 1 to 4 ranks, in place, NCCL errors as statuses, abort; an absent or
// incomplete library as UNAVAILABLE with the reason; and, where the real libnccl.so.2 is
// installed, that it exports every entry the channel resolves. Expected values come from
// channel_test_support.h's reference of hal.h's semantics.
#include "backends/cuda/runtime/entry_points.h"
#include "backends/cuda/runtime/tests/cuda_test_support.h"
#include "backends/simt_runtime/nccl_api.h"
#include "backends/simt_runtime/tests/channel_test_cases.h"

namespace tessera::cuda::testing {
namespace {

using namespace simt::testing;

/// The fake libcuda and the fake libnccl.
struct UseFakes {
  UseFakeCuda cuda{""};
  ScopedEnv nccl{"TESSERA_NCCL_LIBRARY", std::string(TSR_FAKE_NCCL_PATH)};
};

/// Ranks on the fake's one device.
class CudaNccl : public ChannelTest {
protected:
  CudaNccl() : ChannelTest(tsr_cuda_driver(), 1, TSR_FAKE_NCCL_PATH) {}
  UseFakes fakes_;
};

TEST_P(CudaNccl, EveryReductionOfEveryTypeAndOperator) { checkReductions(rig()); }
TEST_P(CudaNccl, EveryMovementOfEveryType) { checkMovements(rig()); }
TEST_P(CudaNccl, InPlace) { checkInPlace(rig()); }
TEST_P(CudaNccl, NcclErrorsAreStatuses) { checkErrors(rig(), "cuda driver", fakeLibrary()); }
TEST_P(CudaNccl, Abort) { checkAbort(rig(), fakeLibrary()); }

INSTANTIATE_TEST_SUITE_P(Ranks, CudaNccl, ::testing::Values(1u, 2u, 3u, 4u));

TEST(CudaNcclTable, TheChannelEntriesArePresent) {
  const tsr_driver_v1 *table = tsr_cuda_driver();
  EXPECT_NE(table->channel_unique_id, nullptr);
  EXPECT_NE(table->channel_create, nullptr);
  EXPECT_NE(table->channel_abort, nullptr);
  EXPECT_NE(table->channel_destroy, nullptr);
  EXPECT_NE(table->stream_collective, nullptr);
}

/// Opens the driver over the fake libcuda and expects channel_create (and unless
/// `onlyCreate`, channel_unique_id) to fail with `code` and `message`; the driver itself
/// still works.
void expectChannelFailure(tsr_status_code_t code, const std::string &message,
                          bool onlyCreate = false) {
  UseFakeCuda cuda("");
  OpenedDevice d(tsr_cuda_driver(), 0);
  ASSERT_NE(d.device, nullptr);
  tsr_comm_unique_id_t id = {};
  if (onlyCreate)
    TSR_EXPECT_OK(d.t->channel_unique_id(d.driver, &id));
  else
    TSR_EXPECT_ERROR(d.t->channel_unique_id(d.driver, &id), code, message);
  tsr_drv_channel_t channel = nullptr;
  TSR_EXPECT_ERROR(d.t->channel_create(d.device, &id, 1, 0, &channel), code, message);
  EXPECT_EQ(channel, nullptr);
}

TEST(CudaNcclLibrary, AbsentIsUnavailableWithTheLoadersReason) {
  ScopedEnv nccl("TESSERA_NCCL_LIBRARY", "/nonexistent/libnccl.so.2");
  expectChannelFailure(TSR_UNAVAILABLE,
                       "cuda driver: NCCL is not available: dlopen failed: "
                       "/nonexistent/libnccl.so.2: cannot open shared object file");
}

TEST(CudaNcclLibrary, ALibraryWithoutTheEntriesIsUnavailableNamingTheSymbol) {
  ScopedEnv nccl("TESSERA_NCCL_LIBRARY", std::string(TSR_FAKE_CUDA_PATH));
  expectChannelFailure(TSR_UNAVAILABLE, "symbol ncclGetErrorString not found");
}

TEST(CudaNcclLibrary, AFailedInitialisationIsAStatus) {
  UseFakes fakes;
  ScopedEnv failure("TESSERA_FAKE_NCCL_FAIL", "ncclCommInitRank=2");
  expectChannelFailure(TSR_INTERNAL,
                       "ncclCommInitRank: ncclSystemError (unhandled system "
                       "error): fake failure injected in ncclCommInitRank",
                       true);
}

/// The entries the channel resolves are the real library's names (NCCL 2.10 or later).
TEST(CudaNcclLibrary, TheInstalledLibraryExportsEveryEntry) {
  ScopedEnv nccl("TESSERA_NCCL_LIBRARY", std::nullopt);
  if (!dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL))
    GTEST_SKIP() << "no libnccl.so.2 here: " << dlerror();
  simt::NcclApi api;
  std::string error;
  ASSERT_TRUE(simt::loadNcclApi(kNcclLibrary, &api, &error)) << error;
  EXPECT_NE(api.ncclGetLastError, nullptr);
  std::string text = api.ncclGetErrorString(simt::ncclInvalidUsage);
  EXPECT_NE(text.find("invalid usage"), std::string::npos) << text;
}

/// The installed NCCL through the driver (over the fake libcuda): ncclGetUniqueId needs no
/// GPU and fills the id; ncclCommInitRank gets the 128-byte id by value and, with no CUDA
/// driver for NCCL's own runtime to find, fails as a status naming the call (where a real
/// GPU is present it may succeed instead, and the channel is destroyed).
TEST(CudaNcclLibrary, TheInstalledLibraryThroughTheDriver) {
  ScopedEnv nccl("TESSERA_NCCL_LIBRARY", std::nullopt);
  if (!dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL))
    GTEST_SKIP() << "no libnccl.so.2 here: " << dlerror();
  UseFakeCuda cuda("");
  OpenedDevice d(tsr_cuda_driver(), 0);
  ASSERT_NE(d.device, nullptr);
  tsr_comm_unique_id_t id = {}, zero = {};
  TSR_EXPECT_OK(d.t->channel_unique_id(d.driver, &id));
  EXPECT_NE(std::memcmp(&id, &zero, sizeof(id)), 0) << "ncclGetUniqueId left the id empty";
  tsr_drv_channel_t channel = nullptr;
  tsr_status_t status = d.t->channel_create(d.device, &id, 1, 0, &channel);
  if (status)
    TSR_EXPECT_ERROR(status, TSR_INTERNAL, "cuda driver: ncclCommInitRank: ");
  else
    d.t->channel_destroy(d.device, channel);
}

/// The system's CUDA and NCCL with one rank on GPU 0 (skipped without them): the real ABI
/// (the id by value, the streams, device pointers with offsets) carries every reduction,
/// movement (but the ungrouped send to itself) and in-place call.
TEST(CudaNcclSystem, OneRankOnTheSystemsGpu) {
  ScopedEnv cudaLibrary("TESSERA_CUDA_LIBRARY", std::nullopt);
  ScopedEnv nccl("TESSERA_NCCL_LIBRARY", std::nullopt);
  if (!dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL) ||
      !dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL))
    GTEST_SKIP() << "needs the system's libcuda.so.1 and libnccl.so.2: " << dlerror();
  tsr_drv_driver_t probe = nullptr;
  if (tsr_status_t status = tsr_cuda_driver()->driver_open(&probe))
    GTEST_SKIP() << "no usable CUDA device: " << hal::testing::consume(status);
  tsr_cuda_driver()->driver_close(probe);
  ChannelRig rig(tsr_cuda_driver(), 1, 1);
  ASSERT_TRUE(rig.ok());
  checkReductions(rig);
  checkMovements(rig, /*ring=*/false);
  checkInPlace(rig);
}

} // namespace
} // namespace tessera::cuda::testing
