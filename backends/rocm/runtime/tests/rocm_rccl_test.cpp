// The ROCm driver's native collective channel (hal_driver.h ABI 1.4) over RCCL: through the
// fake libamdhip64 (two devices) and the fake librccl.so.1 (fake_libnccl.c), every
// collective of every type and operator on 1 to 4 ranks spread over both devices (the fake
// checks each call is made with the communicator's device current and on a stream of it),
// in place, RCCL errors as statuses, abort; and an absent library as UNAVAILABLE with the
// reason. Expected values come from channel_test_support.h's reference of hal.h.
#include "backends/rocm/runtime/rocm_driver.h"
#include "backends/simt_runtime/tests/channel_test_cases.h"
#include "hal/tests/scoped_env.h"

namespace tessera::rocm::testing {
namespace {

using hal::testing::ScopedEnv;
using namespace simt::testing;

/// The fake HIP runtime and the fake RCCL.
struct UseFakes {
  ScopedEnv hip{"TESSERA_HIP_LIBRARY", std::string(TSR_FAKE_HIP_PATH)};
  ScopedEnv mode{"TESSERA_FAKE_HIP_MODE", std::nullopt};
  ScopedEnv rccl{"TESSERA_RCCL_LIBRARY", std::string(TSR_FAKE_RCCL_PATH)};
};

/// Rank r on the fake's device r % 2.
class RocmRccl : public ChannelTest {
protected:
  RocmRccl() : ChannelTest(tsr_rocm_driver(), 2, TSR_FAKE_RCCL_PATH) {}
  UseFakes fakes_;
};

TEST_P(RocmRccl, EveryReductionOfEveryTypeAndOperator) { checkReductions(rig()); }
TEST_P(RocmRccl, EveryMovementOfEveryType) { checkMovements(rig()); }
TEST_P(RocmRccl, InPlace) { checkInPlace(rig()); }
TEST_P(RocmRccl, RcclErrorsAreStatuses) { checkErrors(rig(), "rocm driver", fakeLibrary()); }
TEST_P(RocmRccl, Abort) { checkAbort(rig(), fakeLibrary()); }

INSTANTIATE_TEST_SUITE_P(Ranks, RocmRccl, ::testing::Values(1u, 2u, 3u, 4u));

TEST(RocmRcclLibrary, AbsentIsUnavailableWithTheLoadersReason) {
  UseFakes fakes;
  ScopedEnv rccl("TESSERA_RCCL_LIBRARY", "/nonexistent/librccl.so.1");
  OpenedDevice d(tsr_rocm_driver(), 1);
  ASSERT_NE(d.device, nullptr);
  const char *reason = "rocm driver: RCCL is not available: dlopen failed: "
                       "/nonexistent/librccl.so.1: cannot open shared object file";
  tsr_comm_unique_id_t id = {};
  TSR_EXPECT_ERROR(d.t->channel_unique_id(d.driver, &id), TSR_UNAVAILABLE, reason);
  tsr_drv_channel_t channel = nullptr;
  TSR_EXPECT_ERROR(d.t->channel_create(d.device, &id, 1, 0, &channel), TSR_UNAVAILABLE, reason);
  EXPECT_EQ(channel, nullptr);
}

} // namespace
} // namespace tessera::rocm::testing
