// The Level Zero driver without kernels: its table; registration on a system without Level
// Zero (the real loader, which finds no driver here: zeInit's result, named), a missing or
// wrong library, zeInit failing and no device (through the fake loader); and on the fake GPU
// the device description, capability record, allocation kinds, copies and fills, events
// across streams, accounting, and each failing ze call as a status naming it. Expected values
// are written out here (what fake_libze.c reports, and naive host loops).
#include "backends/levelzero/runtime/tests/levelzero_test_support.h"
#include "hal/tests/driver_registration_check.h"
#include "hal/tests/memory_accounting_check.h"

#include "tessera/hal_driver.h"

#include <atomic>
#include <cstring>
#include <numeric>
#include <thread>

namespace tessera::levelzero::testing {
namespace {

void expectUnavailable(const std::string &reason) {
  hal::testing::expectDriverUnavailable(tsr_levelzero_driver(), "levelzero", reason);
}

TEST(LevelZeroDriverTable, HeaderAndEveryEntryArePresent) {
  // Every entry up to the capability record (ABI 1.3); no native collective channel.
  hal::testing::expectDriverTable(tsr_levelzero_driver(), "levelzero",
                                  offsetof(tsr_driver_v1, channel_unique_id));
}

TEST(LevelZeroDriverRegistration, SystemLoaderWithoutADriverIsUnavailable) {
  ScopedEnv library("TESSERA_LEVELZERO_LIBRARY", std::nullopt);
  if (!dlopen("libze_loader.so.1", RTLD_NOW | RTLD_LOCAL))
    GTEST_SKIP() << "libze_loader.so.1 (Debian libze1) is not installed";
  tsr_status_t status = nullptr;
  tsr_registry_t registry = registryWithLevelZero(&status);
  bool present = status == nullptr;
  tsr_status_free(status);
  tsr_registry_release(registry);
  if (present)
    GTEST_SKIP() << "a Level Zero driver and GPU are installed here";
  expectUnavailable("levelzero driver: zeInit failed: ZE_RESULT_ERROR_UNINITIALIZED (0x78000001): "
                    "no Level Zero driver is installed");
}

TEST(LevelZeroDriverRegistration, LibraryPathFromTheEnvironment) {
  ScopedEnv library("TESSERA_LEVELZERO_LIBRARY", "/nonexistent/libze_loader.so.1");
  expectUnavailable("dlopen failed: /nonexistent/libze_loader.so.1: cannot open shared object");
}

TEST(LevelZeroDriverRegistration, LibraryWithoutTheEntryPointsNamesTheSymbol) {
  ScopedEnv library("TESSERA_LEVELZERO_LIBRARY", "libm.so.6");
  expectUnavailable("the Level Zero loader lacks an entry point (loader too old?): libm.so.6: "
                    "symbol zeInit not found");
}

TEST(LevelZeroDriverRegistration, ZeInitFailureNamesTheResult) {
  UseFakeZe fake("init_error");
  expectUnavailable("levelzero driver: zeInit failed: ZE_RESULT_ERROR_UNSUPPORTED_VERSION "
                    "(0x78000002)");
}

TEST(LevelZeroDriverRegistration, NoDeviceIsUnavailable) {
  UseFakeZe fake("no_device");
  expectUnavailable("levelzero driver: no Level Zero GPU (zeDriverGet found 1 drivers, no device)");
}

TEST(LevelZeroDriverRegistration, FailingDiscoveryCallsAreNamed) {
  UseFakeZe fake;
  for (const char *call : {"zeContextCreate", "zeDeviceGetProperties"}) {
    ScopedEnv fail("TESSERA_FAKE_ZE_FAIL", call);
    expectUnavailable(std::string("levelzero driver: ") + call +
                      " failed: ZE_RESULT_ERROR_DEVICE_LOST (0x70000001)");
  }
}

TEST(LevelZeroDevice, InfoIsTheFakesProperties) {
  UseFakeZe fake;
  tsr_status_t status = nullptr;
  tsr_registry_t registry = registryWithLevelZero(&status);
  TSR_ASSERT_OK(status);
  uint32_t count = 0;
  TSR_ASSERT_OK(tsr_registry_device_count(registry, &count));
  ASSERT_EQ(count, 1u);
  tsr_device_info_t info = {};
  info.struct_size = sizeof(info);
  TSR_ASSERT_OK(tsr_registry_device_info(registry, 0, &info));
  EXPECT_STREQ(info.name, "levelzero:0");
  EXPECT_STREQ(info.backend, "levelzero");
  EXPECT_STREQ(info.vendor, "Intel");
  EXPECT_STREQ(info.architecture, "Fake Level Zero GPU (0x0bd5)");
  EXPECT_EQ(info.total_memory, uint64_t(1) << 30);
  EXPECT_EQ(info.compute_units, 2u * 4u * 8u);
  EXPECT_EQ(info.max_workgroup_total, 1024u);
  EXPECT_EQ(info.max_workgroup_size[0], 1024u);
  EXPECT_EQ(info.max_workgroup_size[2], 1024u); // x*y*z is dispatched as one dimension
  EXPECT_EQ(info.max_grid_size[0], 0x7fffffffu);
  EXPECT_EQ(info.max_grid_size[1], 65535u);
  EXPECT_EQ(info.max_shared_memory, 65536u);
  EXPECT_EQ(info.subgroup_size, 32u);
  EXPECT_EQ(info.buffer_offset_alignment, 8u);
  EXPECT_EQ(info.features, uint64_t(TSR_FEATURE_FP16 | TSR_FEATURE_FP64 | TSR_FEATURE_INT8 |
                                    TSR_FEATURE_INT16 | TSR_FEATURE_INT64 | TSR_FEATURE_SUBGROUPS |
                                    TSR_FEATURE_FLOAT_PRESERVE | TSR_FEATURE_DENORM_PRESERVE));
  tsr_registry_release(registry);
}

std::string capsOf(tsr_device_t device, tsr_device_info_t *info) {
  info->struct_size = sizeof(*info);
  EXPECT_EQ(hal::testing::consume(tsr_device_info(device, info)), "");
  char buffer[512] = {};
  size_t len = 0;
  EXPECT_EQ(hal::testing::consume(tsr_device_compiler_caps(device, buffer, sizeof buffer, &len)),
            "");
  return std::string(buffer, len);
}

TEST(LevelZeroDevice, CapabilityRecordFollowsTheDevice) {
  UseFakeZe fake;
  tsr_device_info_t info = {};
  {
    FakeDevice device;
    EXPECT_EQ(capsOf(device.get(), &info),
              "version=1\nlevelzero.fp64=1\nlevelzero.fp16=1\nlevelzero.int64Atomics=1\n"
              "levelzero.subgroupSize=32\nlevelzero.maxSharedBytes=65536\n");
  }
  // The largest subgroup size <= 32, the same in the record and the device info.
  ScopedEnv sizes("TESSERA_FAKE_ZE_SUBGROUPS", "8,16,64");
  ScopedEnv noFp64("TESSERA_FAKE_ZE_NO_FP64", "1");
  ScopedEnv integrated("TESSERA_FAKE_ZE_INTEGRATED", "1");
  {
    FakeDevice device;
    EXPECT_EQ(capsOf(device.get(), &info),
              "version=1\nlevelzero.fp64=0\nlevelzero.fp16=1\nlevelzero.int64Atomics=0\n"
              "levelzero.subgroupSize=16\nlevelzero.maxSharedBytes=65536\n");
    EXPECT_EQ(info.subgroup_size, 16u);
    EXPECT_FALSE(info.features & TSR_FEATURE_FP64);
    EXPECT_TRUE(info.features & TSR_FEATURE_UNIFIED_MEMORY);
  }
  ScopedEnv wide("TESSERA_FAKE_ZE_SUBGROUPS", "64");
  FakeDevice device;
  EXPECT_NE(capsOf(device.get(), &info).find("levelzero.subgroupSize=1\n"), std::string::npos);
  EXPECT_EQ(info.subgroup_size, 1u);
  EXPECT_FALSE(info.features & TSR_FEATURE_SUBGROUPS);
}

TEST(LevelZeroMemory, EachKindUsesItsAllocator) {
  UseFakeZe fake;
  FakeDevice device;
  const int device0 = fakeGlobal("fake_ze_device_allocs"),
            host0 = fakeGlobal("fake_ze_host_allocs"),
            shared0 = fakeGlobal("fake_ze_shared_allocs");
  tsr_buffer_t d = nullptr, h = nullptr, s = nullptr;
  TSR_ASSERT_OK(tsr_buffer_allocate(device.get(), 256, TSR_MEMORY_DEVICE_LOCAL, &d));
  TSR_ASSERT_OK(tsr_buffer_allocate(device.get(), 256, TSR_MEMORY_HOST_VISIBLE, &h));
  TSR_ASSERT_OK(tsr_buffer_allocate(device.get(), 256,
                                    TSR_MEMORY_DEVICE_LOCAL | TSR_MEMORY_HOST_VISIBLE, &s));
  EXPECT_EQ(fakeGlobal("fake_ze_device_allocs"), device0 + 1);
  EXPECT_EQ(fakeGlobal("fake_ze_host_allocs"), host0 + 1);
  EXPECT_EQ(fakeGlobal("fake_ze_shared_allocs"), shared0 + 1);
  // Host-visible memory maps; what the host writes there a copy reads.
  for (tsr_buffer_t b : {h, s}) {
    void *ptr = nullptr;
    TSR_ASSERT_OK(tsr_buffer_map(b, 0, 256, &ptr));
    std::memset(ptr, 0x5a, 256);
    TSR_EXPECT_OK(tsr_buffer_unmap(b));
  }
  tsr_stream_t stream = nullptr;
  TSR_ASSERT_OK(tsr_stream_create(device.get(), &stream));
  TSR_EXPECT_OK(tsr_stream_copy_d2d(stream, h, 0, d, 0, 256));
  std::vector<unsigned char> out(256);
  TSR_EXPECT_OK(tsr_stream_copy_d2h(stream, d, 0, out.data(), 256));
  TSR_EXPECT_OK(tsr_stream_synchronize(stream));
  EXPECT_EQ(out, std::vector<unsigned char>(256, 0x5a));
  tsr_stream_release(stream);
  for (tsr_buffer_t b : {d, h, s})
    tsr_buffer_release(b);
}

TEST(LevelZeroMemory, CopiesAndFillsMatchAHostModel) {
  UseFakeZe fake;
  FakeDevice device;
  tsr_buffer_t a = nullptr, b = nullptr;
  TSR_ASSERT_OK(tsr_buffer_allocate(device.get(), 1024, TSR_MEMORY_DEVICE_LOCAL, &a));
  TSR_ASSERT_OK(tsr_buffer_allocate(device.get(), 1024, TSR_MEMORY_DEVICE_LOCAL, &b));
  tsr_stream_t stream = nullptr;
  TSR_ASSERT_OK(tsr_stream_create(device.get(), &stream));
  std::vector<unsigned char> src(1024), model(1024);
  std::iota(src.begin(), src.end(), 0);
  TSR_EXPECT_OK(tsr_stream_copy_h2d(stream, src.data(), a, 0, 1024));
  model = src;
  const uint8_t p1 = 0xab;
  const uint16_t p2 = 0x1234;
  const uint32_t p4 = 0xdeadbeef;
  TSR_EXPECT_OK(tsr_stream_fill(stream, a, 3, 5, &p1, 1));
  TSR_EXPECT_OK(tsr_stream_fill(stream, a, 100, 8, &p2, 2));
  TSR_EXPECT_OK(tsr_stream_fill(stream, a, 200, 16, &p4, 4));
  for (size_t i = 3; i < 8; ++i)
    model[i] = p1;
  for (size_t i = 100; i < 108; i += 2)
    std::memcpy(&model[i], &p2, 2);
  for (size_t i = 200; i < 216; i += 4)
    std::memcpy(&model[i], &p4, 4);
  TSR_EXPECT_OK(tsr_stream_copy_d2d(stream, a, 0, b, 512, 512)); // b[512..] = a[0..512)
  TSR_EXPECT_OK(tsr_stream_copy_d2d(stream, a, 512, b, 0, 512));
  std::vector<unsigned char> out(1024);
  TSR_EXPECT_OK(tsr_stream_copy_d2h(stream, b, 0, out.data(), 1024));
  TSR_EXPECT_OK(tsr_stream_synchronize(stream));
  std::vector<unsigned char> expected(model.begin() + 512, model.end());
  expected.insert(expected.end(), model.begin(), model.begin() + 512);
  EXPECT_EQ(out, expected);
  bool idle = false;
  TSR_EXPECT_OK(tsr_stream_query(stream, &idle));
  EXPECT_TRUE(idle);
  tsr_stream_release(stream);
  tsr_buffer_release(a);
  tsr_buffer_release(b);
}

TEST(LevelZeroStreams, EventsOrderWorkAcrossStreams) {
  UseFakeZe fake;
  FakeDevice device;
  tsr_buffer_t a = nullptr, b = nullptr;
  TSR_ASSERT_OK(tsr_buffer_allocate(device.get(), 64, TSR_MEMORY_DEVICE_LOCAL, &a));
  TSR_ASSERT_OK(tsr_buffer_allocate(device.get(), 64, TSR_MEMORY_DEVICE_LOCAL, &b));
  tsr_stream_t s1 = nullptr, s2 = nullptr;
  TSR_ASSERT_OK(tsr_stream_create(device.get(), &s1));
  TSR_ASSERT_OK(tsr_stream_create(device.get(), &s2));
  tsr_event_t event = nullptr;
  TSR_ASSERT_OK(tsr_event_create(device.get(), &event));
  bool ready = false;
  TSR_EXPECT_OK(tsr_event_query(event, &ready)); // never recorded: ready
  EXPECT_TRUE(ready);
  TSR_EXPECT_OK(tsr_stream_wait_event(s2, event)); // never recorded: no wait
  std::vector<uint32_t> src(16), out(16, 0);
  std::iota(src.begin(), src.end(), 7u);
  for (int round = 0; round < 3; ++round) { // re-recording takes a fresh Level Zero event
    for (uint32_t &v : src)
      v += 100;
    TSR_EXPECT_OK(tsr_stream_copy_h2d(s1, src.data(), a, 0, 64));
    TSR_EXPECT_OK(tsr_stream_record_event(s1, event));
    TSR_EXPECT_OK(tsr_stream_wait_event(s2, event));
    TSR_EXPECT_OK(tsr_stream_copy_d2d(s2, a, 0, b, 0, 64));
    TSR_EXPECT_OK(tsr_stream_copy_d2h(s2, b, 0, out.data(), 64));
    TSR_EXPECT_OK(tsr_stream_synchronize(s2));
    EXPECT_EQ(out, src) << "round " << round;
    TSR_EXPECT_OK(tsr_event_synchronize(event));
    TSR_EXPECT_OK(tsr_event_query(event, &ready));
    EXPECT_TRUE(ready);
  }
  TSR_EXPECT_OK(tsr_stream_synchronize(s1));
  tsr_event_release(event);
  tsr_stream_release(s1);
  tsr_stream_release(s2);
  tsr_buffer_release(a);
  tsr_buffer_release(b);
}

TEST(LevelZeroStreams, PollingAnUnchangedStreamTakesNoNewEvents) {
  UseFakeZe fake;
  FakeDevice device;
  tsr_stream_t stream = nullptr;
  TSR_ASSERT_OK(tsr_stream_create(device.get(), &stream));
  bool idle = false;
  TSR_EXPECT_OK(tsr_stream_query(stream, &idle));
  const int live = fakeGlobal("fake_ze_live_objects");
  for (int i = 0; i < 200; ++i) { // more than one pool of events if each query took one
    TSR_EXPECT_OK(tsr_stream_query(stream, &idle));
    EXPECT_TRUE(idle);
  }
  EXPECT_EQ(fakeGlobal("fake_ze_live_objects"), live);
  tsr_stream_release(stream);
}

// hal_driver.h lets query and synchronize overlap the enqueues of the stream they look at.
TEST(LevelZeroStreams, QueriesMayOverlapEnqueues) {
  UseFakeZe fake;
  FakeDevice device;
  tsr_stream_t stream = nullptr;
  TSR_ASSERT_OK(tsr_stream_create(device.get(), &stream));
  tsr_buffer_t buffer = nullptr;
  TSR_ASSERT_OK(tsr_buffer_allocate(device.get(), 4 * 256, TSR_MEMORY_DEVICE_LOCAL, &buffer));
  std::atomic<bool> done{false};
  std::thread poller([&] {
    bool idle = false;
    while (!done.load())
      EXPECT_EQ(hal::testing::consume(tsr_stream_query(stream, &idle)), "");
  });
  std::vector<uint32_t> out(256);
  for (uint32_t round = 1; round <= 200; ++round)
    TSR_EXPECT_OK(tsr_stream_fill(stream, buffer, 4 * (round % 256), 4, &round, 4));
  TSR_EXPECT_OK(tsr_stream_copy_d2h(stream, buffer, 0, out.data(), 4 * 256));
  TSR_EXPECT_OK(tsr_stream_synchronize(stream));
  done = true;
  poller.join();
  for (uint32_t i = 1; i <= 200; ++i) // the last fill of each word wins (in order)
    EXPECT_EQ(out[i % 256], i) << i;
  tsr_buffer_release(buffer);
  tsr_stream_release(stream);
}

// Memory is accounted in total against what the device reports, refused before zeMemAlloc*.
TEST(LevelZeroMemory, AllocationsAreAccountedInTotal) {
  UseFakeZe fake;
  ScopedEnv limit("TESSERA_MEMORY_LIMIT_BYTES", std::to_string(hal::testing::kAccountingTestLimit));
  FakeDevice device;
  hal::testing::expectMemoryAccountedInTotal(device.get(),
                                             "levelzero driver: out of memory on levelzero:0: ");
}

TEST(LevelZeroErrors, FailingAllocationsAreNamedAndGiveTheirBytesBack) {
  UseFakeZe fake;
  ScopedEnv limit("TESSERA_MEMORY_LIMIT_BYTES", "4096");
  FakeDevice device;
  struct Case {
    const char *call;
    tsr_memory_kind_t kind;
    const char *result;
  } cases[] = {
      {"zeMemAllocDevice", TSR_MEMORY_DEVICE_LOCAL,
       "ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY (0x70000003)"},
      {"zeMemAllocHost", TSR_MEMORY_HOST_VISIBLE,
       "ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY (0x70000002)"},
      {"zeMemAllocShared", TSR_MEMORY_DEVICE_LOCAL | TSR_MEMORY_HOST_VISIBLE,
       "ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY (0x70000003)"},
  };
  for (const Case &c : cases) {
    tsr_buffer_t buffer = nullptr;
    {
      ScopedEnv fail("TESSERA_FAKE_ZE_FAIL", c.call);
      TSR_EXPECT_ERROR(tsr_buffer_allocate(device.get(), 4096, c.kind, &buffer),
                       TSR_RESOURCE_EXHAUSTED,
                       std::string("levelzero driver: ") + c.call + " failed: " + c.result);
      EXPECT_EQ(buffer, nullptr);
    }
    // The refused bytes went back to the budget: the whole device still fits.
    TSR_EXPECT_OK(tsr_buffer_allocate(device.get(), 4096, c.kind, &buffer));
    tsr_buffer_release(buffer);
  }
}

TEST(LevelZeroErrors, FailingStreamCallsAreNamed) {
  UseFakeZe fake;
  FakeDevice device;
  tsr_stream_t stream = nullptr;
  {
    ScopedEnv fail("TESSERA_FAKE_ZE_FAIL", "zeCommandListCreateImmediate");
    TSR_EXPECT_ERROR(tsr_stream_create(device.get(), &stream), TSR_INTERNAL,
                     "levelzero driver: zeCommandListCreateImmediate failed: "
                     "ZE_RESULT_ERROR_DEVICE_LOST (0x70000001)");
  }
  TSR_ASSERT_OK(tsr_stream_create(device.get(), &stream));
  tsr_buffer_t buffer = nullptr;
  TSR_ASSERT_OK(tsr_buffer_allocate(device.get(), 64, TSR_MEMORY_DEVICE_LOCAL, &buffer));
  std::vector<char> host(64);
  const uint32_t pattern = 1;
  tsr_event_t event = nullptr;
  TSR_ASSERT_OK(tsr_event_create(device.get(), &event));
  const std::string lost = " failed: ZE_RESULT_ERROR_DEVICE_LOST (0x70000001)";
  {
    ScopedEnv fail("TESSERA_FAKE_ZE_FAIL", "zeCommandListAppendMemoryFill");
    TSR_EXPECT_ERROR(tsr_stream_fill(stream, buffer, 0, 64, &pattern, 4), TSR_INTERNAL,
                     "zeCommandListAppendMemoryFill" + lost);
  }
  {
    ScopedEnv fail("TESSERA_FAKE_ZE_FAIL", "zeCommandListAppendMemoryCopy");
    TSR_EXPECT_ERROR(tsr_stream_copy_h2d(stream, host.data(), buffer, 0, 64), TSR_INTERNAL,
                     "zeCommandListAppendMemoryCopy" + lost);
  }
  {
    ScopedEnv fail("TESSERA_FAKE_ZE_FAIL", "zeEventPoolCreate");
    TSR_EXPECT_ERROR(tsr_stream_record_event(stream, event), TSR_RESOURCE_EXHAUSTED,
                     "zeEventPoolCreate failed: ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY (0x70000002)");
  }
  {
    ScopedEnv fail("TESSERA_FAKE_ZE_FAIL", "zeEventHostSynchronize");
    TSR_EXPECT_ERROR(tsr_stream_synchronize(stream), TSR_INTERNAL, "zeEventHostSynchronize" + lost);
  }
  {
    ScopedEnv fail("TESSERA_FAKE_ZE_FAIL", "zeEventQueryStatus");
    bool idle = false;
    TSR_EXPECT_ERROR(tsr_stream_query(stream, &idle), TSR_INTERNAL, "zeEventQueryStatus" + lost);
  }
  {
    ScopedEnv fail("TESSERA_FAKE_ZE_FAIL", "zeCommandListAppendBarrier");
    TSR_EXPECT_ERROR(tsr_stream_synchronize(stream), TSR_INTERNAL,
                     "zeCommandListAppendBarrier" + lost);
  }
  // After the failures the stream still works.
  TSR_EXPECT_OK(tsr_stream_fill(stream, buffer, 0, 64, &pattern, 4));
  TSR_EXPECT_OK(tsr_stream_copy_d2h(stream, buffer, 0, host.data(), 64));
  TSR_EXPECT_OK(tsr_stream_synchronize(stream));
  EXPECT_EQ(host[0], 1);
  EXPECT_EQ(host[4], 1);
  tsr_event_release(event);
  tsr_stream_release(stream);
  tsr_buffer_release(buffer);
}

TEST(LevelZeroDriver, EverythingIsReleased) {
  UseFakeZe fake;
  void *keep = dlopen(TSR_FAKE_ZE_PATH, RTLD_NOW | RTLD_LOCAL); // keeps the counters readable
  ASSERT_NE(keep, nullptr);
  {
    FakeDevice device;
    tsr_buffer_t buffer = nullptr;
    TSR_ASSERT_OK(tsr_buffer_allocate(device.get(), 64, TSR_MEMORY_HOST_VISIBLE, &buffer));
    tsr_stream_t stream = nullptr;
    TSR_ASSERT_OK(tsr_stream_create(device.get(), &stream));
    tsr_event_t event = nullptr;
    TSR_ASSERT_OK(tsr_event_create(device.get(), &event));
    TSR_EXPECT_OK(tsr_stream_record_event(stream, event));
    TestModule module;
    tsr_executable_t exe = nullptr;
    TSR_ASSERT_OK(module.create(device.get(), &exe));
    tsr_kernel_t kernel = nullptr;
    TSR_ASSERT_OK(tsr_executable_kernel(exe, "vadd", &kernel));
    tsr_arg_t args[4] = {tsr_arg_buffer(buffer, 0), tsr_arg_buffer(buffer, 0),
                         tsr_arg_buffer(buffer, 0), tsr_arg_i32(16)};
    const uint32_t one[3] = {1, 1, 1}, sixteen[3] = {16, 1, 1};
    TSR_EXPECT_OK(tsr_stream_launch(stream, kernel, one, sixteen, args, 4)); // a control block
    TSR_EXPECT_OK(tsr_stream_synchronize(stream));
    EXPECT_GT(fakeGlobal("fake_ze_live_objects"), 0);
    tsr_kernel_release(kernel);
    tsr_executable_release(exe);
    tsr_event_release(event);
    tsr_stream_release(stream);
    tsr_buffer_release(buffer);
  }
  EXPECT_EQ(fakeGlobal("fake_ze_live_objects"), 0);
  dlclose(keep);
}

} // namespace
} // namespace tessera::levelzero::testing
