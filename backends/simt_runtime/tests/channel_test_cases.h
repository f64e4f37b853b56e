// The cases every native collective channel passes (cuda over NCCL, rocm over RCCL), each
// on a ChannelRig of 1 to 4 ranks: every reduction of every type and operator, every
// movement of every type, in-place calls, NCCL errors as statuses, and abort. Each result
// is compared with channel_test_support.h's reference, byte for byte.
//
// Test-only. `fakeLibrary` is the path of the fake collective library the rig's driver
// loaded (its counters are read through dlsym).
#pragma once

#include "backends/simt_runtime/tests/channel_test_support.h"

#include <cstdlib>
#include <optional>

namespace tessera::simt::testing {

constexpr size_t kCount = 5; // elements per rank (per block for the gathers and scatters)

/// all_reduce, reduce_scatter and reduce (every root) of every type and valid operator.
inline void checkReductions(ChannelRig &rig) {
  const uint32_t n = rig.ranks();
  for (tsr_type_t type : kAllTypes)
    for (tsr_reduce_op_t reduce : kAllOps) {
      if (!validOp(type, reduce))
        continue;
      SCOPED_TRACE(std::string(tsr_type_name(type)) + " op " + std::to_string(reduce));
      const size_t es = tsr_type_size(type);
      std::vector<Bytes> in, scatterIn;
      for (uint32_t r = 0; r < n; ++r) {
        in.push_back(inputs(type, kCount, n, r, 1));
        scatterIn.push_back(inputs(type, kCount * n, n, r, 2));
      }
      std::vector<tsr_drv_buffer_t> send(n), recv(n), scatterSend(n), scatterRecv(n);
      for (uint32_t r = 0; r < n; ++r) {
        send[r] = rig.upload(r, in[r]);
        recv[r] = rig.upload(r, {}, kCount * es);
        scatterSend[r] = rig.upload(r, scatterIn[r]);
        scatterRecv[r] = rig.upload(r, {}, kCount * es);
      }
      bool ncclHasType = type != TSR_TYPE_I16;
      for (uint32_t r = 0; r < n; ++r) {
        tsr_status_t status =
            rig.collective(r, op(kAllReduce, type, kCount, send[r], recv[r], reduce));
        if (!ncclHasType) { // NCCL has no 16-bit integer: the HAL reduces those itself
          TSR_EXPECT_ERROR(status, TSR_UNIMPLEMENTED, "all_reduce of i16");
          continue;
        }
        TSR_EXPECT_OK(status);
        TSR_EXPECT_OK(rig.collective(
            r, op(kReduceScatter, type, kCount, scatterSend[r], scatterRecv[r], reduce)));
      }
      if (!ncclHasType)
        continue;
      for (uint32_t r = 0; r < n; ++r) {
        EXPECT_EQ(rig.download(r, recv[r], kCount * es), reference(type, reduce, in, 0, kCount))
            << "all_reduce, rank " << r;
        EXPECT_EQ(rig.download(r, scatterRecv[r], kCount * es),
                  reference(type, reduce, scatterIn, r * kCount, kCount))
            << "reduce_scatter, rank " << r;
      }
      for (uint32_t root = 0; root < n; ++root) {
        Bytes before = rig.download(root, recv[root], kCount * es);
        for (uint32_t r = 0; r < n; ++r) // recv is unused (NULL) off the root
          TSR_EXPECT_OK(rig.collective(
              r, op(kReduce, type, kCount, send[r], r == root ? recv[r] : nullptr, reduce, root)));
        EXPECT_EQ(rig.download(root, recv[root], kCount * es),
                  reference(type, reduce, in, 0, kCount))
            << "reduce to root " << root;
      }
    }
}

/// all_gather, broadcast (every root), all_to_all and (unless !ring) a ring of send/recv of
/// every type: the bytes arrive unchanged where hal.h says. A real NCCL deadlocks on a send
/// to itself that is not grouped with its receive, so a one-rank real test leaves the ring out.
inline void checkMovements(ChannelRig &rig, bool ring = true) {
  const uint32_t n = rig.ranks();
  for (tsr_type_t type : kAllTypes) {
    SCOPED_TRACE(tsr_type_name(type));
    const size_t block = kCount * tsr_type_size(type);
    std::vector<Bytes> in, wide;
    std::vector<tsr_drv_buffer_t> send(n), wideSend(n), recv(n), wideRecv(n);
    for (uint32_t r = 0; r < n; ++r) {
      in.push_back(inputs(type, kCount, n, r, 3));
      wide.push_back(inputs(type, kCount * n, n, r, 4));
      send[r] = rig.upload(r, in[r]);
      wideSend[r] = rig.upload(r, wide[r]);
      recv[r] = rig.upload(r, {}, block);
      wideRecv[r] = rig.upload(r, {}, block * n);
    }
    for (uint32_t r = 0; r < n; ++r)
      TSR_EXPECT_OK(rig.collective(r, op(kAllGather, type, kCount, send[r], wideRecv[r])));
    for (uint32_t r = 0; r < n; ++r) {
      Bytes gathered = rig.download(r, wideRecv[r], block * n);
      for (uint32_t k = 0; k < n; ++k)
        EXPECT_EQ(Bytes(gathered.begin() + k * block, gathered.begin() + (k + 1) * block), in[k])
            << "all_gather: rank " << r << " block " << k;
    }
    for (uint32_t root = 0; root < n; ++root) {
      for (uint32_t r = 0; r < n; ++r) // send is only read on the root (NULL elsewhere)
        TSR_EXPECT_OK(rig.collective(r, op(kBroadcast, type, kCount, r == root ? send[r] : nullptr,
                                           recv[r], TSR_REDUCE_SUM, root)));
      for (uint32_t r = 0; r < n; ++r)
        EXPECT_EQ(rig.download(r, recv[r], block), in[root]) << "broadcast " << root << " -> " << r;
    }
    for (uint32_t r = 0; r < n; ++r)
      TSR_EXPECT_OK(rig.collective(r, op(kAllToAll, type, kCount, wideSend[r], wideRecv[r])));
    for (uint32_t r = 0; r < n; ++r) {
      Bytes got = rig.download(r, wideRecv[r], block * n);
      for (uint32_t k = 0; k < n; ++k) // recv block k = send block r of rank k
        EXPECT_EQ(Bytes(got.begin() + k * block, got.begin() + (k + 1) * block),
                  Bytes(wide[k].begin() + r * block, wide[k].begin() + (r + 1) * block))
            << "all_to_all: rank " << r << " block " << k;
    }
    if (!ring)
      continue;
    for (uint32_t r = 0; r < n; ++r) { // a ring: r sends to r + 1, receives from r - 1
      TSR_EXPECT_OK(rig.collective(
          r, op(kSend, type, kCount, send[r], nullptr, TSR_REDUCE_SUM, (r + 1) % n)));
      TSR_EXPECT_OK(rig.collective(
          r, op(kRecv, type, kCount, nullptr, recv[r], TSR_REDUCE_SUM, (r + n - 1) % n)));
    }
    for (uint32_t r = 0; r < n; ++r)
      EXPECT_EQ(rig.download(r, recv[r], block), in[(r + n - 1) % n]) << "recv on rank " << r;
  }
}

/// In place as hal.h defines it: all_reduce with send == recv; all_gather with send at the
/// rank's own block of recv (a non-zero absolute offset).
inline void checkInPlace(ChannelRig &rig) {
  const uint32_t n = rig.ranks();
  const tsr_type_t type = TSR_TYPE_I32;
  const size_t block = kCount * tsr_type_size(type);
  std::vector<Bytes> in;
  std::vector<tsr_drv_buffer_t> buffer(n), gather(n);
  for (uint32_t r = 0; r < n; ++r) {
    in.push_back(inputs(type, kCount, n, r, 5));
    buffer[r] = rig.upload(r, in[r]);
    Bytes wide(block * n, 0xee);
    std::copy(in[r].begin(), in[r].end(), wide.begin() + r * block);
    gather[r] = rig.upload(r, wide);
  }
  for (uint32_t r = 0; r < n; ++r) {
    TSR_EXPECT_OK(
        rig.collective(r, op(kAllReduce, type, kCount, buffer[r], buffer[r], TSR_REDUCE_MIN)));
    tsr_drv_collective_t g = op(kAllGather, type, kCount, gather[r], gather[r]);
    g.send_offset = r * block;
    TSR_EXPECT_OK(rig.collective(r, g));
  }
  Bytes gathered;
  for (const Bytes &b : in)
    gathered.insert(gathered.end(), b.begin(), b.end());
  for (uint32_t r = 0; r < n; ++r) {
    EXPECT_EQ(rig.download(r, buffer[r], block), reference(type, TSR_REDUCE_MIN, in, 0, kCount));
    EXPECT_EQ(rig.download(r, gather[r], block * n), gathered);
  }
}

/// Sets an environment variable for the scope (made before the calls it affects).
class FakeFailure {
public:
  explicit FakeFailure(const std::string &spec) {
    setenv("TESSERA_FAKE_NCCL_FAIL", spec.c_str(), 1);
  }
  ~FakeFailure() { unsetenv("TESSERA_FAKE_NCCL_FAIL"); }
  FakeFailure(const FakeFailure &) = delete;
  FakeFailure &operator=(const FakeFailure &) = delete;
};

/// Every NCCL result a call can fail with becomes the status hal_driver.h documents, naming
/// the driver, the NCCL call, NCCL's name of the result and its last-error text; all_to_all
/// closes its group even when a send inside it failed.
inline void checkErrors(ChannelRig &rig, const std::string &driverName, const char *fakeLibrary) {
  tsr_drv_buffer_t a = rig.upload(0, Bytes(64, 1)), b = rig.upload(0, {}, 64);
  const struct {
    const char *spec;
    tsr_drv_collective_t op;
    tsr_status_code_t code;
    const char *message;
  } cases[] = {
      {"ncclAllReduce=4", op(kAllReduce, TSR_TYPE_F32, 4, a, b), TSR_INVALID_ARGUMENT,
       ": ncclAllReduce: ncclInvalidArgument (invalid argument): fake failure injected in "
       "ncclAllReduce"},
      {"ncclAllGather=5", op(kAllGather, TSR_TYPE_I8, 4, a, b), TSR_FAILED_PRECONDITION,
       ": ncclAllGather: ncclInvalidUsage (invalid usage)"},
      {"ncclBroadcast=6", op(kBroadcast, TSR_TYPE_I8, 4, a, b), TSR_ABORTED,
       ": ncclBroadcast: ncclRemoteError"},
      {"ncclReduce=1", op(kReduce, TSR_TYPE_I64, 4, a, b), TSR_INTERNAL,
       ": ncclReduce: ncclUnhandledCudaError"},
      {"ncclReduceScatter=3", op(kReduceScatter, TSR_TYPE_F64, 1, a, b), TSR_INTERNAL,
       ": ncclReduceScatter: ncclInternalError (internal error)"},
      {"ncclSend=2", op(kAllToAll, TSR_TYPE_I8, 1, a, b), TSR_INTERNAL,
       ": ncclSend: ncclSystemError (unhandled system error)"},
      {"ncclGroupEnd=3", op(kAllToAll, TSR_TYPE_I8, 1, a, b), TSR_INTERNAL,
       ": ncclGroupEnd: ncclInternalError"},
      {"ncclRecv=4", op(kRecv, TSR_TYPE_I8, 1, nullptr, b, TSR_REDUCE_SUM, 0), TSR_INVALID_ARGUMENT,
       ": ncclRecv: ncclInvalidArgument"},
  };
  for (const auto &c : cases) {
    SCOPED_TRACE(c.spec);
    int *ungrouped = fakeSymbol<int>(fakeLibrary, "fake_nccl_ungrouped_p2p");
    int before = ungrouped ? *ungrouped : 0;
    {
      FakeFailure failure(c.spec);
      TSR_EXPECT_ERROR(rig.collective(0, c.op), c.code, driverName + c.message);
    }
    if (c.op.kind == kAllToAll) // the group was closed: a later send is outside any group
      TSR_EXPECT_OK(rig.collective(0, op(kSend, TSR_TYPE_I8, 1, a, nullptr, TSR_REDUCE_SUM, 0)));
    if (c.op.kind == kAllToAll && ungrouped)
      EXPECT_EQ(*ungrouped, before + 1) << "ncclGroupEnd was not called after the failure";
    if (c.op.kind == kAllToAll) // drain the send just posted
      TSR_EXPECT_OK(rig.collective(0, op(kRecv, TSR_TYPE_I8, 1, nullptr, b, TSR_REDUCE_SUM, 0)));
  }
  // Invalid descriptors the HAL never sends still fail cleanly, naming what was wrong.
  TSR_EXPECT_ERROR(rig.collective(0, op(99, TSR_TYPE_I8, 1, a, b)), TSR_INVALID_ARGUMENT,
                   "unknown collective kind 99");
  TSR_EXPECT_ERROR(rig.collective(0, op(kAllReduce, TSR_TYPE_F32, 1, a, b, TSR_REDUCE_UMIN)),
                   TSR_INVALID_ARGUMENT, "umin is only defined for integers, not f32");
  TSR_EXPECT_ERROR(rig.collective(0, op(kSend, TSR_TYPE_I8, 1, nullptr, b)), TSR_INVALID_ARGUMENT,
                   "send: no send buffer");
}

/// An aborted channel fails its later work with ABORTED (never touching the freed NCCL
/// communicator), its peers' NCCL reports the abort, and the rig's destroy of the aborted
/// channel does not call ncclCommDestroy on it (the fake counts calls on dead handles).
inline void checkAbort(ChannelRig &rig, const char *fakeLibrary) {
  const uint32_t n = rig.ranks();
  int *badHandles = fakeSymbol<int>(fakeLibrary, "fake_nccl_bad_handles");
  int bad = badHandles ? *badHandles : 0;
  std::vector<tsr_drv_buffer_t> buffer(n);
  for (uint32_t r = 0; r < n; ++r)
    buffer[r] = rig.upload(r, Bytes(16, 2));
  rig.abort(0);
  rig.abort(0); // twice is harmless
  TSR_EXPECT_ERROR(rig.collective(0, op(kAllReduce, TSR_TYPE_I32, 4, buffer[0], buffer[0])),
                   TSR_ABORTED, "all_reduce: the channel was aborted");
  if (n > 1)
    TSR_EXPECT_ERROR(rig.collective(1, op(kAllReduce, TSR_TYPE_I32, 4, buffer[1], buffer[1])),
                     TSR_ABORTED, "ncclAllReduce: ncclRemoteError");
  if (badHandles)
    EXPECT_EQ(*badHandles, bad);
}

/// A test of GetParam() ranks over `devices` devices of a driver whose fakes the derived
/// fixture's members point it at (they are set before SetUp), checking afterwards that no
/// communicator was left behind and no call reached a destroyed or aborted one.
class ChannelTest : public ::testing::TestWithParam<uint32_t> {
protected:
  ChannelTest(const tsr_driver_v1 *table, uint32_t devices, const char *fakeLibrary)
      : table_(table), devices_(devices), fakeLibrary_(fakeLibrary) {}
  void SetUp() override {
    rig_.emplace(table_, GetParam(), devices_);
    ASSERT_TRUE(rig_->ok());
  }
  void TearDown() override {
    rig_.reset();
    int *live = fakeSymbol<int>(fakeLibrary_, "fake_nccl_live_comms");
    int *bad = fakeSymbol<int>(fakeLibrary_, "fake_nccl_bad_handles");
    EXPECT_EQ(live ? *live : -1, 0) << "a communicator was not destroyed";
    EXPECT_EQ(bad ? *bad : -1, 0) << "a call on a destroyed or aborted communicator";
  }
  ChannelRig &rig() { return *rig_; }
  const char *fakeLibrary() const { return fakeLibrary_; }

private:
  const tsr_driver_v1 *table_;
  uint32_t devices_;
  const char *fakeLibrary_;
  std::optional<ChannelRig> rig_;
};

} // namespace tessera::simt::testing
