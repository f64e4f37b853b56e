// The registry and driver contract with in-test fake drivers: table validation, ABI
// versioning (major refused, struct_size truncation treated as absent), unavailable
// records, device enumeration and naming, open by name, caller-sized info structs, and
// the lifetime of registry, drivers and devices. Expected values are written out here.
#include "hal/tests/hal_test_util.h"
#include "tessera/hal_driver.h"

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>

namespace tessera::hal {
namespace {

std::atomic<int> gOpens{0}, gCloses{0}, gDeviceCloses{0};
char gTag;

tsr_status_t fakeOpen(tsr_drv_driver_t *out) {
  ++gOpens;
  *out = reinterpret_cast<tsr_drv_driver_t>(&gTag);
  return nullptr;
}
void fakeClose(tsr_drv_driver_t) { ++gCloses; }
tsr_status_t twoDevices(tsr_drv_driver_t, uint32_t *out) {
  *out = 2;
  return nullptr;
}
tsr_status_t fakeInfo(tsr_drv_driver_t, uint32_t index, tsr_device_info_t *info) {
  std::snprintf(info->vendor, sizeof(info->vendor), "Fake Inc.");
  std::snprintf(info->architecture, sizeof(info->architecture), "fake%u", index);
  info->total_memory = 1000 + index;
  return nullptr;
}
tsr_status_t fakeDeviceOpen(tsr_drv_driver_t, uint32_t, tsr_drv_device_t *out) {
  *out = reinterpret_cast<tsr_drv_device_t>(&gTag);
  return nullptr;
}
void fakeDeviceClose(tsr_drv_device_t) { ++gDeviceCloses; }
tsr_status_t absentOpen(tsr_drv_driver_t *) {
  return tsr_status_make(TSR_UNAVAILABLE, "libfake.so.1: cannot open shared object file");
}
tsr_status_t allocNoFree(tsr_drv_device_t, uint64_t, tsr_memory_kind_t, tsr_drv_buffer_t *) {
  return nullptr;
}

/// A driver with only the required section (an ABI 1.x table of minimum size).
tsr_driver_v1 fakeDriver(const char *name) {
  tsr_driver_v1 t = {};
  t.struct_size = sizeof(tsr_driver_v1);
  t.abi_major = TSR_DRIVER_ABI_MAJOR;
  t.abi_minor = TSR_DRIVER_ABI_MINOR;
  t.name = name;
  t.driver_open = fakeOpen;
  t.driver_close = fakeClose;
  t.device_count = twoDevices;
  t.device_info = fakeInfo;
  t.device_open = fakeDeviceOpen;
  t.device_close = fakeDeviceClose;
  return t;
}

class Registry : public ::testing::Test {
protected:
  void SetUp() override { TSR_ASSERT_OK(tsr_registry_create(&registry_)); }
  void TearDown() override { tsr_registry_release(registry_); }

  std::string unavailable(uint32_t index) {
    tsr_unavailable_t record = {};
    TSR_EXPECT_OK(tsr_registry_unavailable(registry_, index, &record));
    return std::string(record.backend ? record.backend : "?") + ": " +
           (record.reason ? record.reason : "?");
  }

  tsr_registry_t registry_ = nullptr;
};

TEST_F(Registry, EnumeratesDevicesAsBackendColonIndex) {
  tsr_driver_v1 fake = fakeDriver("fake");
  tsr_driver_v1 other = fakeDriver("other_2");
  TSR_ASSERT_OK(tsr_registry_register_driver(registry_, &fake));
  TSR_ASSERT_OK(tsr_registry_register_driver(registry_, &other));
  uint32_t count = 0;
  TSR_ASSERT_OK(tsr_registry_device_count(registry_, &count));
  ASSERT_EQ(count, 4u);
  const char *names[] = {"fake:0", "fake:1", "other_2:0", "other_2:1"};
  for (uint32_t i = 0; i < count; ++i) {
    tsr_device_info_t info = {};
    info.struct_size = sizeof(info);
    TSR_ASSERT_OK(tsr_registry_device_info(registry_, i, &info));
    EXPECT_STREQ(info.name, names[i]);
    EXPECT_STREQ(info.vendor, "Fake Inc.");
    EXPECT_EQ(info.total_memory, 1000u + i % 2);
  }
}

TEST_F(Registry, OpensByNameAndListsKnownNamesWhenNotFound) {
  tsr_driver_v1 fake = fakeDriver("fake");
  tsr_driver_v1 absent = fakeDriver("cuda");
  absent.driver_open = absentOpen;
  TSR_ASSERT_OK(tsr_registry_register_driver(registry_, &fake));
  TSR_EXPECT_ERROR(tsr_registry_register_driver(registry_, &absent), TSR_UNAVAILABLE,
                   "tsr_registry_register_driver: libfake.so.1: cannot open");
  tsr_device_t device = nullptr;
  TSR_ASSERT_OK(tsr_registry_open_device(registry_, "fake:1", &device));
  tsr_device_info_t info = {};
  info.struct_size = sizeof(info);
  TSR_ASSERT_OK(tsr_device_info(device, &info));
  EXPECT_STREQ(info.name, "fake:1");
  EXPECT_STREQ(info.backend, "fake");
  EXPECT_STREQ(info.architecture, "fake1");
  tsr_device_release(device);
  TSR_EXPECT_ERROR(tsr_registry_open_device(registry_, "cuda:0", &device), TSR_NOT_FOUND,
                   "no device named 'cuda:0'; known devices: fake:0, fake:1; unavailable: cuda "
                   "(libfake.so.1: cannot open shared object file)");
  EXPECT_EQ(device, nullptr);
  TSR_EXPECT_ERROR(tsr_registry_open_device(registry_, nullptr, &device), TSR_INVALID_ARGUMENT,
                   "name is NULL");
}

TEST_F(Registry, RejectsMalformedTables) {
  TSR_EXPECT_ERROR(tsr_registry_register_driver(registry_, nullptr), TSR_INVALID_ARGUMENT,
                   "tsr_registry_register_driver: driver is NULL");
  tsr_driver_v1 t = fakeDriver("fake");
  t.struct_size = 8;
  TSR_EXPECT_ERROR(tsr_registry_register_driver(registry_, &t), TSR_INVALID_ARGUMENT,
                   "driver table struct_size 8 is smaller than the minimum");
  t = fakeDriver("Bad-Name");
  TSR_EXPECT_ERROR(tsr_registry_register_driver(registry_, &t), TSR_INVALID_ARGUMENT,
                   "driver name 'Bad-Name' is not a backend name");
  t = fakeDriver("fake");
  t.device_open = nullptr;
  TSR_EXPECT_ERROR(tsr_registry_register_driver(registry_, &t), TSR_INVALID_ARGUMENT,
                   "driver 'fake' lacks the required entry point device_open");
  t = fakeDriver("fake");
  t.buffer_allocate = allocNoFree;
  TSR_EXPECT_ERROR(tsr_registry_register_driver(registry_, &t), TSR_INVALID_ARGUMENT,
                   "driver 'fake' provides buffer_allocate but not buffer_free");
  t = fakeDriver("fake");
  TSR_ASSERT_OK(tsr_registry_register_driver(registry_, &t));
  TSR_EXPECT_ERROR(tsr_registry_register_driver(registry_, &t), TSR_INVALID_ARGUMENT,
                   "backend 'fake' is already registered (by built-in)");
  uint32_t count = 0;
  TSR_ASSERT_OK(tsr_registry_unavailable_count(registry_, &count));
  EXPECT_EQ(count, 0u) << "malformed tables are errors, not unavailable backends";
}

TEST_F(Registry, RefusesAnotherMajorVersionWithAReason) {
  tsr_driver_v1 t = fakeDriver("future");
  t.abi_major = TSR_DRIVER_ABI_MAJOR + 1;
  t.abi_minor = 0;
  int opensBefore = gOpens.load();
  TSR_EXPECT_ERROR(tsr_registry_register_driver(registry_, &t), TSR_UNAVAILABLE,
                   "driver 'future' was built for driver ABI 2.0 but this HAL speaks 1.6");
  EXPECT_EQ(gOpens.load(), opensBefore) << "a refused driver is never opened";
  uint32_t count = 0;
  TSR_ASSERT_OK(tsr_registry_unavailable_count(registry_, &count));
  ASSERT_EQ(count, 1u);
  EXPECT_EQ(unavailable(0), "future: driver 'future' was built for driver ABI 2.0 but this HAL "
                            "speaks 1.6; major versions must match (rebuild the driver)");
}

TEST_F(Registry, FieldsBeyondStructSizeAreAbsent) {
  // An ABI 1.0 driver whose table memory happens to hold a pointer where 1.1 put
  // stream_query: the HAL must not read it. And a minimum-size table has no memory section.
  tsr_driver_v1 t = fakeDriver("small");
  t.struct_size = uint32_t(TSR_DRIVER_V1_MIN_SIZE);
  t.abi_minor = 0;
  t.buffer_allocate = allocNoFree; // beyond struct_size: ignored, so no pairing error either
  TSR_ASSERT_OK(tsr_registry_register_driver(registry_, &t));
  tsr_device_t device = nullptr;
  TSR_ASSERT_OK(tsr_registry_open_device(registry_, "small:0", &device));
  tsr_buffer_t buffer = nullptr;
  TSR_EXPECT_ERROR(tsr_buffer_allocate(device, 16, TSR_MEMORY_DEVICE_LOCAL, &buffer),
                   TSR_UNIMPLEMENTED,
                   "tsr_buffer_allocate: driver 'small' (ABI 1.0) does not implement "
                   "buffer_allocate");
  tsr_stream_t stream = nullptr;
  TSR_EXPECT_ERROR(tsr_stream_create(device, &stream), TSR_UNIMPLEMENTED,
                   "does not implement stream_create");
  tsr_event_t event = nullptr;
  TSR_EXPECT_ERROR(tsr_event_create(device, &event), TSR_UNIMPLEMENTED,
                   "does not implement event_create");
  tsr_executable_t exe = nullptr;
  TSR_EXPECT_ERROR(tsr_executable_create(device, "x", "x", 1, &exe), TSR_UNIMPLEMENTED,
                   "does not implement executable_create");
  tsr_device_release(device);
}

TEST_F(Registry, CallerSizedInfoStructs) {
  tsr_driver_v1 t = fakeDriver("fake");
  TSR_ASSERT_OK(tsr_registry_register_driver(registry_, &t));
  tsr_device_info_t info = {};
  TSR_EXPECT_ERROR(tsr_registry_device_info(registry_, 0, &info), TSR_INVALID_ARGUMENT,
                   "out_info->struct_size is 0, smaller than the smallest known layout");
  // A caller built against a newer header (a larger struct) gets this HAL's size back.
  struct Newer {
    tsr_device_info_t base;
    uint64_t future[4];
  } newer = {};
  newer.base.struct_size = sizeof(Newer);
  newer.future[0] = 0x5555;
  TSR_ASSERT_OK(tsr_registry_device_info(registry_, 0, &newer.base));
  EXPECT_EQ(newer.base.struct_size, sizeof(tsr_device_info_t));
  EXPECT_STREQ(newer.base.name, "fake:0");
  EXPECT_EQ(newer.future[0], 0x5555u) << "nothing is written past this HAL's layout";
}

TEST_F(Registry, DevicesKeepTheRegistryAndDriverAlive) {
  tsr_driver_v1 t = fakeDriver("fake");
  TSR_ASSERT_OK(tsr_registry_register_driver(registry_, &t));
  tsr_device_t device = nullptr;
  TSR_ASSERT_OK(tsr_registry_open_device(registry_, "fake:0", &device));
  int closes = gCloses.load(), deviceCloses = gDeviceCloses.load();
  tsr_registry_release(registry_);
  registry_ = nullptr;
  EXPECT_EQ(gCloses.load(), closes) << "the open device still holds the driver";
  tsr_device_info_t info = {};
  info.struct_size = sizeof(info);
  TSR_EXPECT_OK(tsr_device_info(device, &info));
  tsr_device_release(device);
  EXPECT_EQ(gDeviceCloses.load(), deviceCloses + 1);
  EXPECT_EQ(gCloses.load(), closes + 1);
}

TEST_F(Registry, ReleasedAndForeignHandlesAreReported) {
  tsr_registry_t dead = nullptr;
  TSR_ASSERT_OK(tsr_registry_create(&dead));
  tsr_registry_release(dead);
  uint32_t count = 7;
  TSR_EXPECT_ERROR(tsr_registry_device_count(dead, &count), TSR_INVALID_ARGUMENT,
                   "tsr_registry_device_count: registry is a registry handle that was already "
                   "released");
  EXPECT_EQ(count, 0u);
  tsr_registry_retain(nullptr); // NULL is a no-op, as free(NULL)
  tsr_registry_release(nullptr);
  uint64_t notAHandle[8] = {};
  TSR_EXPECT_ERROR(tsr_registry_device_count(reinterpret_cast<tsr_registry_t>(notAHandle), &count),
                   TSR_INVALID_ARGUMENT, "registry is not a valid registry handle");
  TSR_EXPECT_ERROR(tsr_registry_unavailable(registry_, 0, nullptr), TSR_INVALID_ARGUMENT,
                   "out_record is NULL");
  tsr_unavailable_t record = {};
  TSR_EXPECT_ERROR(tsr_registry_unavailable(registry_, 0, &record), TSR_OUT_OF_RANGE,
                   "index 0 is not below the unavailable count 0");
}

// ---- stream deadlines (ABI 1.2) ----------------------------------------------------------
std::atomic<uint64_t> gLastTimeout{0};
std::atomic<int> gTimeoutCalls{0};
tsr_status_t fakeStreamCreate(tsr_drv_device_t, tsr_drv_stream_t *out) {
  *out = reinterpret_cast<tsr_drv_stream_t>(&gTag);
  return nullptr;
}
void fakeStreamDestroy(tsr_drv_device_t, tsr_drv_stream_t) {}
tsr_status_t fakeStreamSync(tsr_drv_device_t, tsr_drv_stream_t) { return nullptr; }
tsr_status_t fakeSetTimeout(tsr_drv_device_t, tsr_drv_stream_t, uint64_t ns) {
  ++gTimeoutCalls;
  gLastTimeout = ns;
  return nullptr;
}

tsr_driver_v1 driverWithStreams(const char *name) {
  tsr_driver_v1 t = fakeDriver(name);
  t.stream_create = fakeStreamCreate;
  t.stream_destroy = fakeStreamDestroy;
  t.stream_synchronize = fakeStreamSync;
  t.stream_set_timeout = fakeSetTimeout;
  return t;
}

TEST_F(Registry, NewStreamsGetTheDefaultDeadlineAndSetTimeoutReachesTheDriver) {
  tsr_driver_v1 t = driverWithStreams("deadline");
  TSR_ASSERT_OK(tsr_registry_register_driver(registry_, &t));
  tsr_device_t device = nullptr;
  TSR_ASSERT_OK(tsr_registry_open_device(registry_, "deadline:0", &device));
  struct Case {
    const char *env; // null: unset
    uint64_t ns;
  } cases[] = {{nullptr, 60000ull * 1000000},
               {"1234", 1234ull * 1000000},
               {"0", 0},
               {"12ms", 60000ull * 1000000}, // malformed: the default, with a warning
               {"-5", 60000ull * 1000000}};
  for (const Case &c : cases) {
    if (c.env)
      setenv("TESSERA_KERNEL_TIMEOUT_MS", c.env, 1);
    else
      unsetenv("TESSERA_KERNEL_TIMEOUT_MS");
    gLastTimeout = 1;
    tsr_stream_t stream = nullptr;
    TSR_ASSERT_OK(tsr_stream_create(device, &stream));
    EXPECT_EQ(gLastTimeout.load(), c.ns) << (c.env ? c.env : "(unset)");
    TSR_EXPECT_OK(tsr_stream_set_timeout(stream, 42));
    EXPECT_EQ(gLastTimeout.load(), 42u);
    tsr_stream_release(stream);
  }
  unsetenv("TESSERA_KERNEL_TIMEOUT_MS");
  TSR_EXPECT_ERROR(tsr_stream_set_timeout(nullptr, 1), TSR_INVALID_ARGUMENT,
                   "tsr_stream_set_timeout: stream is NULL");
  tsr_device_release(device);
}

std::atomic<int> gDeferredCalls{0};
std::atomic<bool> gLastDeferred{false};
tsr_status_t fakeSetDeferred(tsr_drv_device_t, tsr_drv_stream_t, bool deferred) {
  ++gDeferredCalls;
  gLastDeferred = deferred;
  return nullptr;
}

// tsr_stream_set_deferred is a hint: it reaches a driver with the entry (ABI 1.6), and is OK and
// never called beyond struct_size (ABI 1.5) or when the entry is NULL.
TEST_F(Registry, SetDeferredReachesAnAbi16DriverAndIsIgnoredByOthers) {
  tsr_driver_v1 with = driverWithStreams("deferring");
  with.stream_set_deferred = fakeSetDeferred;
  tsr_driver_v1 old = driverWithStreams("old15");
  old.stream_set_deferred = fakeSetDeferred; // beyond struct_size: never called
  old.struct_size = uint32_t(TSR_DRIVER_V1_5_SIZE);
  old.abi_minor = 5;
  tsr_driver_v1 none = driverWithStreams("nodefer"); // the entry NULL
  for (tsr_driver_v1 *t : {&with, &old, &none})
    TSR_ASSERT_OK(tsr_registry_register_driver(registry_, t));
  for (const char *name : {"deferring:0", "old15:0", "nodefer:0"}) {
    tsr_device_t device = nullptr;
    TSR_ASSERT_OK(tsr_registry_open_device(registry_, name, &device));
    tsr_stream_t stream = nullptr;
    TSR_ASSERT_OK(tsr_stream_create(device, &stream));
    int before = gDeferredCalls.load();
    TSR_EXPECT_OK(tsr_stream_set_deferred(stream, true));
    EXPECT_EQ(gLastDeferred.load(), std::string(name) == "deferring:0") << name;
    TSR_EXPECT_OK(tsr_stream_set_deferred(stream, false));
    EXPECT_FALSE(gLastDeferred.load());
    EXPECT_EQ(gDeferredCalls.load() - before, std::string(name) == "deferring:0" ? 2 : 0) << name;
    tsr_stream_release(stream);
    tsr_device_release(device);
  }
  TSR_EXPECT_ERROR(tsr_stream_set_deferred(nullptr, true), TSR_INVALID_ARGUMENT,
                   "tsr_stream_set_deferred: stream is NULL");
}

TEST_F(Registry, AnAbi11DriverHasNoDeadlines) {
  tsr_driver_v1 t = driverWithStreams("old11");
  t.struct_size = uint32_t(TSR_DRIVER_V1_1_SIZE); // stream_set_timeout lies beyond it
  t.abi_minor = 1;
  TSR_ASSERT_OK(tsr_registry_register_driver(registry_, &t));
  tsr_device_t device = nullptr;
  TSR_ASSERT_OK(tsr_registry_open_device(registry_, "old11:0", &device));
  int callsBefore = gTimeoutCalls.load();
  tsr_stream_t stream = nullptr;
  TSR_ASSERT_OK(tsr_stream_create(device, &stream));
  TSR_EXPECT_ERROR(tsr_stream_set_timeout(stream, 1000), TSR_UNIMPLEMENTED,
                   "tsr_stream_set_timeout: driver 'old11' (ABI 1.1) does not implement "
                   "stream_set_timeout");
  EXPECT_EQ(gTimeoutCalls.load(), callsBefore) << "an entry beyond struct_size is never called";
  tsr_stream_release(stream);
  tsr_device_release(device);
}

} // namespace
} // namespace tessera::hal

namespace tessera::hal {
namespace {

std::atomic<int> gImportCalls{0};
std::atomic<int> gImportFrees{0};
void *gImportedPtr = nullptr;

tsr_status_t fakeImport(tsr_drv_device_t, void *ptr, uint64_t, tsr_drv_buffer_t *out) {
  ++gImportCalls;
  gImportedPtr = ptr;
  *out = reinterpret_cast<tsr_drv_buffer_t>(ptr);
  return nullptr;
}
tsr_status_t refuseImport(tsr_drv_device_t, void *, uint64_t, tsr_drv_buffer_t *) {
  return tsr_status_make(TSR_UNIMPLEMENTED, "driver 'refuser' cannot use pageable host memory");
}
void fakeImportFree(tsr_drv_device_t, tsr_drv_buffer_t) { ++gImportFrees; }

TEST_F(Registry, HostImportReachesTheDriverAndFreesThroughIt) {
  tsr_driver_v1 t = fakeDriver("importer");
  t.buffer_import_host = fakeImport;
  t.buffer_free = fakeImportFree;
  TSR_ASSERT_OK(tsr_registry_register_driver(registry_, &t));
  tsr_device_t device = nullptr;
  TSR_ASSERT_OK(tsr_registry_open_device(registry_, "importer:0", &device));
  alignas(64) static char host[256];
  tsr_buffer_t b = nullptr;
  int calls = gImportCalls.load(), frees = gImportFrees.load();
  TSR_ASSERT_OK(tsr_buffer_import_host(device, host, sizeof host, &b));
  EXPECT_EQ(gImportCalls.load(), calls + 1);
  EXPECT_EQ(gImportedPtr, static_cast<void *>(host));
  uint64_t size = 0;
  TSR_ASSERT_OK(tsr_buffer_size(b, &size));
  EXPECT_EQ(size, sizeof host);
  tsr_buffer_release(b);
  EXPECT_EQ(gImportFrees.load(), frees + 1) << "the driver's buffer_free ends an import";

  // The callback form: release runs once, after buffer_free, when the last handle goes.
  struct Seen {
    int calls = 0;
    int freesAtCall = -1;
  } seen;
  tsr_buffer_t view = nullptr;
  TSR_ASSERT_OK(tsr_buffer_import_host_with_release(
      device, host, sizeof host,
      [](void *p) {
        auto *s = static_cast<Seen *>(p);
        ++s->calls;
        s->freesAtCall = gImportFrees.load();
      },
      &seen, &b));
  TSR_ASSERT_OK(tsr_buffer_create_view(b, 64, 64, &view));
  tsr_buffer_release(b);
  EXPECT_EQ(seen.calls, 0) << "the view still holds the import";
  tsr_buffer_release(view);
  EXPECT_EQ(seen.calls, 1);
  EXPECT_EQ(seen.freesAtCall, frees + 2) << "after the driver let go of the memory";
  tsr_device_release(device);
}

TEST_F(Registry, AnAbi14DriverCannotImportHostMemory) {
  tsr_driver_v1 t = fakeDriver("old14");
  t.buffer_import_host = fakeImport; // beyond struct_size: never called
  t.struct_size = uint32_t(TSR_DRIVER_V1_4_SIZE);
  t.abi_minor = 4;
  TSR_ASSERT_OK(tsr_registry_register_driver(registry_, &t));
  tsr_device_t device = nullptr;
  TSR_ASSERT_OK(tsr_registry_open_device(registry_, "old14:0", &device));
  alignas(64) static char host[64];
  tsr_buffer_t b = nullptr;
  int calls = gImportCalls.load();
  TSR_EXPECT_ERROR(tsr_buffer_import_host(device, host, sizeof host, &b), TSR_UNIMPLEMENTED,
                   "tsr_buffer_import_host: driver 'old14' (ABI 1.4) does not implement "
                   "buffer_import_host");
  EXPECT_EQ(b, nullptr);
  EXPECT_EQ(gImportCalls.load(), calls) << "an entry beyond struct_size is never called";
  tsr_device_release(device);
}

TEST_F(Registry, ADriverMayRefuseAnImport) {
  tsr_driver_v1 t = fakeDriver("refuser");
  t.buffer_import_host = refuseImport;
  TSR_ASSERT_OK(tsr_registry_register_driver(registry_, &t));
  tsr_device_t device = nullptr;
  TSR_ASSERT_OK(tsr_registry_open_device(registry_, "refuser:0", &device));
  alignas(64) static char host[64];
  tsr_buffer_t b = nullptr;
  TSR_EXPECT_ERROR(tsr_buffer_import_host(device, host, sizeof host, &b), TSR_UNIMPLEMENTED,
                   "tsr_buffer_import_host: driver 'refuser' cannot use pageable host memory");
  EXPECT_EQ(b, nullptr);
  tsr_device_release(device);
}

} // namespace
} // namespace tessera::hal
