// The ROCm driver's native collective channel (hal_driver.h ABI 1.4) over RCCL: through the
// fake libamdhip64 (two devices) and the fake librccl.so.1 (fake_libnccl.c), every
// collective of every type and operator on 1 to 4 ranks spread over both devices (the fake
// checks each call is made with the communicator's device current and on a stream of it),
// in place, RCCL errors as statuses, abort; an absent library as UNAVAILABLE with the
// reason; and through the public HAL (tsr_comm_create_local over rocm:0 and rocm:1), the
// channel carrying the calls, or without RCCL the HAL's own path. Expected values come from
// channel_test_support.h's reference of hal.h.
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

/// Through the public HAL: tsr_comm_create_local over rocm:0 and rocm:1, then an f32 sum
/// all_reduce and an i16 all_gather of device-local buffers, checked against the reference.
/// `transport` is what the communicator must report: "native" when RCCL loads (the channel
/// carries the calls), "local" when it does not (the HAL's own path, staging the buffers).
void publicCollectives(const char *transport) {
  tsr_registry_t registry = nullptr;
  TSR_ASSERT_OK(tsr_registry_create(&registry));
  TSR_ASSERT_OK(tsr_registry_register_driver(registry, tsr_rocm_driver()));
  const uint32_t n = 2;
  tsr_device_t devices[n] = {};
  TSR_ASSERT_OK(tsr_registry_open_device(registry, "rocm:0", &devices[0]));
  TSR_ASSERT_OK(tsr_registry_open_device(registry, "rocm:1", &devices[1]));
  tsr_comm_t comms[n] = {};
  TSR_ASSERT_OK(tsr_comm_create_local(n, devices, comms));
  const char *name = nullptr;
  TSR_EXPECT_OK(tsr_comm_transport_name(comms[0], &name));
  EXPECT_STREQ(name, transport);
  std::vector<Bytes> sums, halves;
  tsr_stream_t streams[n] = {};
  tsr_buffer_t buffers[n][4] = {};
  for (uint32_t r = 0; r < n; ++r) {
    sums.push_back(inputs(TSR_TYPE_F32, kCount, n, r, 6));
    halves.push_back(inputs(TSR_TYPE_I16, kCount, n, r, 7));
    TSR_ASSERT_OK(tsr_stream_create(devices[r], &streams[r]));
    const uint64_t sizes[4] = {kCount * 4, kCount * 4, kCount * 2, kCount * 2 * n};
    for (int b = 0; b < 4; ++b)
      TSR_ASSERT_OK(
          tsr_buffer_allocate(devices[r], sizes[b], TSR_MEMORY_DEVICE_LOCAL, &buffers[r][b]));
    TSR_EXPECT_OK(tsr_stream_copy_h2d(streams[r], sums[r].data(), buffers[r][0], 0, kCount * 4));
    TSR_EXPECT_OK(tsr_stream_copy_h2d(streams[r], halves[r].data(), buffers[r][2], 0, kCount * 2));
  }
  for (uint32_t r = 0; r < n; ++r) {
    TSR_EXPECT_OK(tsr_comm_all_reduce(comms[r], streams[r], buffers[r][0], 0, buffers[r][1], 0,
                                      kCount, TSR_TYPE_F32, TSR_REDUCE_SUM));
    TSR_EXPECT_OK(tsr_comm_all_gather(comms[r], streams[r], buffers[r][2], 0, buffers[r][3], 0,
                                      kCount, TSR_TYPE_I16));
  }
  Bytes gathered;
  for (const Bytes &b : halves)
    gathered.insert(gathered.end(), b.begin(), b.end());
  for (uint32_t r = 0; r < n; ++r) {
    Bytes sum(kCount * 4), all(kCount * 2 * n);
    TSR_EXPECT_OK(tsr_stream_copy_d2h(streams[r], buffers[r][1], 0, sum.data(), sum.size()));
    TSR_EXPECT_OK(tsr_stream_copy_d2h(streams[r], buffers[r][3], 0, all.data(), all.size()));
    TSR_EXPECT_OK(tsr_stream_synchronize(streams[r]));
    EXPECT_EQ(sum, reference(TSR_TYPE_F32, TSR_REDUCE_SUM, sums, 0, kCount)) << "rank " << r;
    EXPECT_EQ(all, gathered) << "rank " << r;
  }
  for (uint32_t r = 0; r < n; ++r) {
    for (tsr_buffer_t buffer : buffers[r])
      tsr_buffer_release(buffer);
    tsr_stream_release(streams[r]);
    tsr_comm_release(comms[r]);
    tsr_device_release(devices[r]);
  }
  tsr_registry_release(registry);
}

TEST(RocmRcclHal, ThePublicCallsGoThroughTheChannel) {
  UseFakes fakes;
  publicCollectives("native");
  const char *last = fakeSymbol<char>(TSR_FAKE_RCCL_PATH, "fake_nccl_last_call");
  EXPECT_EQ(std::string(last ? last : "").rfind("ncclAllGather", 0), 0u) << last;
  int *live = fakeSymbol<int>(TSR_FAKE_RCCL_PATH, "fake_nccl_live_comms");
  EXPECT_EQ(live ? *live : -1, 0) << "tsr_comm_release left a communicator";
}

TEST(RocmRcclHal, WithoutRcclTheHalsOwnPathTakesOver) {
  UseFakes fakes;
  ScopedEnv rccl("TESSERA_RCCL_LIBRARY", "/nonexistent/librccl.so.1");
  publicCollectives("local");
}

} // namespace
} // namespace tessera::rocm::testing
