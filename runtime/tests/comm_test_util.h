// Test support for the collectives tests: a registry with TESSERA_CPU_DEVICES=4 logical CPU
// devices (set before the registry is made), and a Group: one communicator per device with
// a stream and a mapped send and recv buffer per rank.
#pragma once

#include "backends/builtin_drivers.h"
#include "hal/tests/hal_test_util.h"
#include "tessera/hal.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace tessera::testing {

/// cpu:0..cpu:3 for every test of the suite.
class CpuDevices : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    ::setenv("TESSERA_CPU_DEVICES", "4", 1);
    ASSERT_EQ(tsr_registry_create(&registry_), nullptr);
    if (tsr_status_t st = tsr_registry_register_builtin_drivers(registry_))
      tsr_status_free(st); // unavailable backends are recorded, not errors
    for (int i = 0; i < 4; ++i) {
      std::string name = "cpu:" + std::to_string(i);
      TSR_ASSERT_OK(tsr_registry_open_device(registry_, name.c_str(), &devices_[i]));
    }
  }
  static void TearDownTestSuite() {
    for (tsr_device_t &d : devices_) {
      tsr_device_release(d);
      d = nullptr;
    }
    tsr_registry_release(registry_);
    registry_ = nullptr;
  }
  static std::vector<tsr_device_t> devices(uint32_t n) {
    return std::vector<tsr_device_t>(devices_, devices_ + n);
  }
  /// Opens `name` from the suite's registry (NULL when it is not here).
  static tsr_device_t open(const char *name) {
    tsr_device_t d = nullptr;
    if (tsr_status_t st = tsr_registry_open_device(registry_, name, &d)) {
      tsr_status_free(st);
      return nullptr;
    }
    return d;
  }

  static inline tsr_registry_t registry_ = nullptr;
  static inline tsr_device_t devices_[4] = {};
};

struct Rank {
  tsr_device_t device = nullptr;
  tsr_comm_t comm = nullptr;
  tsr_stream_t stream = nullptr;
  tsr_buffer_t send = nullptr, recv = nullptr;
  void *sendPtr = nullptr, *recvPtr = nullptr;
  uint64_t bytes = 0;
};

/// One communicator per device, with a stream each; buffers made by resize().
class Group {
public:
  explicit Group(const std::vector<tsr_device_t> &devices,
                 tsr_memory_kind_t kind = TSR_MEMORY_DEVICE_LOCAL | TSR_MEMORY_HOST_VISIBLE)
      : kind_(kind), ranks(devices.size()) {
    std::vector<tsr_comm_t> comms(devices.size());
    EXPECT_EQ(hal::testing::consume(
                  tsr_comm_create_local(uint32_t(devices.size()), devices.data(), comms.data())),
              "");
    for (size_t r = 0; r < devices.size(); ++r) {
      ranks[r].device = devices[r];
      ranks[r].comm = comms[r];
      EXPECT_EQ(hal::testing::consume(tsr_stream_create(devices[r], &ranks[r].stream)), "");
    }
  }
  Group(const Group &) = delete;
  ~Group() {
    freeBuffers();
    for (Rank &r : ranks) {
      tsr_stream_release(r.stream);
      tsr_comm_release(r.comm);
    }
  }
  /// Send and recv buffers of `bytes` on every rank (mapped when host-visible).
  void resize(uint64_t bytes) {
    if (!ranks.empty() && ranks[0].bytes >= bytes)
      return;
    freeBuffers();
    for (Rank &r : ranks) {
      r.bytes = bytes;
      EXPECT_EQ(hal::testing::consume(tsr_buffer_allocate(r.device, bytes, kind_, &r.send)), "");
      EXPECT_EQ(hal::testing::consume(tsr_buffer_allocate(r.device, bytes, kind_, &r.recv)), "");
      if (kind_ & TSR_MEMORY_HOST_VISIBLE) {
        EXPECT_EQ(hal::testing::consume(tsr_buffer_map(r.send, 0, bytes, &r.sendPtr)), "");
        EXPECT_EQ(hal::testing::consume(tsr_buffer_map(r.recv, 0, bytes, &r.recvPtr)), "");
      }
    }
  }

private:
  void freeBuffers() {
    for (Rank &r : ranks) {
      if (r.sendPtr)
        tsr_status_free(tsr_buffer_unmap(r.send));
      if (r.recvPtr)
        tsr_status_free(tsr_buffer_unmap(r.recv));
      tsr_buffer_release(r.send);
      tsr_buffer_release(r.recv);
      r = Rank{r.device, r.comm, r.stream};
    }
  }
  tsr_memory_kind_t kind_;

public:
  std::vector<Rank> ranks;
};

} // namespace tessera::testing
