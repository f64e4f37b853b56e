// The native collective channel's tests, shared by the cuda (NCCL) and rocm (RCCL) drivers:
// a rig that opens a driver over its fake runtime and fake collective library
// (fake_libnccl.c), gives each rank a device, a stream and a channel, and moves bytes in
// and out with the driver's own copies; and the reference each result is checked against,
// computed here from hal.h's words (not from NCCL's), so a wrong mapping of a type or an
// operator shows as a wrong value.
//
// Calls the driver table directly: the HAL's use of the channel is the comm engine's, tested
// there. Test-only; environment changes are made before any thread starts.
#pragma once

#include "hal/tests/hal_test_util.h"
#include "tessera/hal_driver.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace tessera::simt::testing {

using Bytes = std::vector<unsigned char>;

enum Kind : uint32_t {
  kAllReduce = 1,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kAllToAll,
  kSend,
  kRecv
};

inline const tsr_type_t kAllTypes[] = {TSR_TYPE_I8,  TSR_TYPE_I16,  TSR_TYPE_I32, TSR_TYPE_I64,
                                       TSR_TYPE_F16, TSR_TYPE_BF16, TSR_TYPE_F32, TSR_TYPE_F64};
inline const tsr_reduce_op_t kAllOps[] = {TSR_REDUCE_SUM, TSR_REDUCE_PROD, TSR_REDUCE_MIN,
                                          TSR_REDUCE_MAX, TSR_REDUCE_AVG,  TSR_REDUCE_UMIN,
                                          TSR_REDUCE_UMAX};

inline bool isFloat(tsr_type_t type) { return type >= TSR_TYPE_F16; }

// ---- element values, by hal.h's rules ------------------------------------------------------

/// An integer element's bits (zero-extended) and its signed value.
inline uint64_t bitsAt(const Bytes &b, tsr_type_t type, size_t i) {
  uint64_t v = 0;
  std::memcpy(&v, b.data() + i * tsr_type_size(type), tsr_type_size(type));
  return v;
}
inline int64_t signedOf(tsr_type_t type, uint64_t bits) {
  int shift = 64 - 8 * int(tsr_type_size(type));
  return shift ? int64_t(bits << shift) >> shift : int64_t(bits);
}

/// f16 and bf16 of the exact values the tests use (small integers: no rounding).
inline uint16_t halfOf(double v) {
  if (v == 0)
    return 0;
  int exponent = 0;
  double mantissa = std::frexp(std::fabs(v), &exponent); // v = m * 2^e, m in [0.5, 1)
  uint16_t bits = uint16_t((exponent - 1 + 15) << 10) | uint16_t((mantissa * 2 - 1) * 1024);
  return v < 0 ? uint16_t(bits | 0x8000) : bits;
}
inline double fromHalf(uint16_t h) {
  int exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  double magnitude =
      exponent ? std::ldexp(1024 + mantissa, exponent - 25) : std::ldexp(mantissa, -24);
  return h & 0x8000 ? -magnitude : magnitude;
}

inline double floatAt(const Bytes &b, tsr_type_t type, size_t i) {
  const unsigned char *p = b.data() + i * tsr_type_size(type);
  uint16_t h = 0;
  float f = 0;
  double d = 0;
  switch (type) {
  case TSR_TYPE_F16:
    std::memcpy(&h, p, 2);
    return fromHalf(h);
  case TSR_TYPE_BF16: {
    std::memcpy(&h, p, 2);
    uint32_t bits = uint32_t(h) << 16;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  case TSR_TYPE_F32:
    std::memcpy(&f, p, 4);
    return f;
  default:
    std::memcpy(&d, p, 8);
    return d;
  }
}

inline void setFloat(Bytes &b, tsr_type_t type, size_t i, double v) {
  unsigned char *p = b.data() + i * tsr_type_size(type);
  float f = float(v);
  uint32_t bits = 0;
  uint16_t h = 0;
  switch (type) {
  case TSR_TYPE_F16:
    h = halfOf(v);
    std::memcpy(p, &h, 2);
    return;
  case TSR_TYPE_BF16:
    std::memcpy(&bits, &f, 4);
    h = uint16_t(bits >> 16);
    std::memcpy(p, &h, 2);
    return;
  case TSR_TYPE_F32:
    std::memcpy(p, &f, 4);
    return;
  default:
    std::memcpy(p, &v, 8);
  }
}

inline bool validOp(tsr_type_t type, tsr_reduce_op_t op) {
  return !isFloat(type) || (op != TSR_REDUCE_UMIN && op != TSR_REDUCE_UMAX);
}

/// Rank r's `count` inputs. Integers: any bits (wrapping and signedness show). Floats:
/// n * k, k in [-2, 2], so every sum, product (at most 8^4) and average (an integer) is
/// exact in every float type and no rounding rule matters.
inline Bytes inputs(tsr_type_t type, size_t count, uint32_t ranks, uint32_t rank, uint32_t salt) {
  std::mt19937_64 random(salt * 131 + rank * 7 + uint32_t(type));
  Bytes b(count * tsr_type_size(type));
  for (size_t i = 0; i < count; ++i) {
    if (!isFloat(type)) {
      uint64_t v = random();
      std::memcpy(b.data() + i * tsr_type_size(type), &v, tsr_type_size(type));
      continue;
    }
    int k = int(random() % 5) - 2;
    setFloat(b, type, i, double(int(ranks) * k));
  }
  return b;
}

/// hal.h's fold of element `offset + i` over ranks in rank order, `count` elements.
inline Bytes reference(tsr_type_t type, tsr_reduce_op_t op, const std::vector<Bytes> &in,
                       size_t offset, size_t count) {
  Bytes out(count * tsr_type_size(type));
  uint32_t n = uint32_t(in.size());
  for (size_t i = 0; i < count; ++i) {
    size_t e = offset + i;
    if (isFloat(type)) {
      double acc = floatAt(in[0], type, e);
      for (uint32_t r = 1; r < n; ++r) {
        double x = floatAt(in[r], type, e);
        acc = op == TSR_REDUCE_SUM || op == TSR_REDUCE_AVG ? acc + x
              : op == TSR_REDUCE_PROD                      ? acc * x
              : op == TSR_REDUCE_MIN                       ? std::min(acc, x)
                                                           : std::max(acc, x);
      }
      setFloat(out, type, i, op == TSR_REDUCE_AVG ? acc / n : acc);
      continue;
    }
    // acc holds the type's bits, zero-extended: wrapping keeps the low bytes only.
    uint64_t mask =
        tsr_type_size(type) == 8 ? ~uint64_t(0) : (uint64_t(1) << 8 * tsr_type_size(type)) - 1;
    uint64_t acc = bitsAt(in[0], type, e);
    for (uint32_t r = 1; r < n; ++r) {
      uint64_t x = bitsAt(in[r], type, e);
      bool signedLess = signedOf(type, x) < signedOf(type, acc);
      bool signedMore = signedOf(type, x) > signedOf(type, acc);
      switch (op) {
      case TSR_REDUCE_SUM:
      case TSR_REDUCE_AVG:
        acc = (acc + x) & mask;
        break;
      case TSR_REDUCE_PROD:
        acc = (acc * x) & mask;
        break;
      case TSR_REDUCE_MIN:
        acc = signedLess ? x : acc;
        break;
      case TSR_REDUCE_MAX:
        acc = signedMore ? x : acc;
        break;
      case TSR_REDUCE_UMIN:
        acc = std::min(acc, x);
        break;
      default: // UMAX
        acc = std::max(acc, x);
      }
    }
    uint64_t low = acc;
    if (op == TSR_REDUCE_AVG) // the wrapped sum as a signed value, divided toward zero
      low = uint64_t(signedOf(type, acc) / int64_t(n));
    std::memcpy(out.data() + i * tsr_type_size(type), &low, tsr_type_size(type));
  }
  return out;
}

// ---- the rig -------------------------------------------------------------------------------

/// An opened driver with `ranks` channels, rank r on device r % devices, one stream each.
class ChannelRig {
public:
  ChannelRig(const tsr_driver_v1 *table, uint32_t ranks, uint32_t devices) : t_(table) {
    open(ranks, devices);
    ok_ = !::testing::Test::HasFailure();
  }
  ~ChannelRig() {
    for (auto &[rank, buffer] : buffers_)
      t_->buffer_free(device(rank), buffer);
    for (uint32_t r = 0; r < streams_.size(); ++r) {
      if (streams_[r])
        t_->stream_destroy(device(r), streams_[r]);
      if (channels_[r])
        t_->channel_destroy(device(r), channels_[r]);
    }
    for (tsr_drv_device_t d : devices_)
      if (d)
        t_->device_close(d);
    if (driver_)
      t_->driver_close(driver_);
  }
  ChannelRig(const ChannelRig &) = delete;
  ChannelRig &operator=(const ChannelRig &) = delete;

  bool ok() const { return ok_; }
  uint32_t ranks() const { return uint32_t(channels_.size()); }
  tsr_drv_device_t device(uint32_t rank) const { return devices_[rank % devices_.size()]; }
  tsr_drv_channel_t channel(uint32_t rank) const { return channels_[rank]; }

  /// A device buffer of rank r holding `content` (at least 1 byte).
  tsr_drv_buffer_t upload(uint32_t rank, const Bytes &content, size_t size = 0) {
    size = std::max<size_t>({size, content.size(), 1});
    tsr_drv_buffer_t buffer = nullptr;
    EXPECT_EQ(hal::testing::consume(
                  t_->buffer_allocate(device(rank), size, TSR_MEMORY_DEVICE_LOCAL, &buffer)),
              "");
    buffers_.emplace_back(rank, buffer);
    if (!content.empty())
      EXPECT_EQ(hal::testing::consume(t_->stream_copy_h2d(
                    device(rank), streams_[rank], content.data(), buffer, 0, content.size())),
                "");
    return buffer;
  }

  /// `size` bytes of rank r's buffer, after its stream's work.
  Bytes download(uint32_t rank, tsr_drv_buffer_t buffer, size_t size, size_t offset = 0) {
    Bytes out(size);
    EXPECT_EQ(hal::testing::consume(t_->stream_copy_d2h(device(rank), streams_[rank], buffer,
                                                        offset, out.data(), size)),
              "");
    EXPECT_EQ(hal::testing::consume(t_->stream_synchronize(device(rank), streams_[rank])), "");
    return out;
  }

  tsr_status_t collective(uint32_t rank, const tsr_drv_collective_t &op) {
    return t_->stream_collective(device(rank), streams_[rank], channels_[rank], &op);
  }

  void abort(uint32_t rank) { t_->channel_abort(device(rank), channels_[rank]); }

private:
  void open(uint32_t ranks, uint32_t devices) {
    TSR_ASSERT_OK(t_->driver_open(&driver_));
    devices_.resize(devices);
    for (uint32_t d = 0; d < devices; ++d)
      TSR_ASSERT_OK(t_->device_open(driver_, d, &devices_[d]));
    TSR_ASSERT_OK(t_->channel_unique_id(driver_, &id_));
    channels_.resize(ranks);
    streams_.resize(ranks);
    std::vector<std::string> errors(ranks);
    std::vector<std::thread> threads; // channel_create blocks until every rank joined
    for (uint32_t r = 0; r < ranks; ++r)
      threads.emplace_back([&, r] {
        errors[r] =
            hal::testing::consume(t_->channel_create(device(r), &id_, ranks, r, &channels_[r]));
      });
    for (std::thread &thread : threads)
      thread.join();
    for (uint32_t r = 0; r < ranks; ++r) {
      EXPECT_EQ(errors[r], "") << "rank " << r;
      TSR_ASSERT_OK(t_->stream_create(device(r), &streams_[r]));
    }
  }

  const tsr_driver_v1 *t_;
  tsr_drv_driver_t driver_ = nullptr;
  std::vector<tsr_drv_device_t> devices_;
  tsr_comm_unique_id_t id_ = {};
  std::vector<tsr_drv_channel_t> channels_;
  std::vector<tsr_drv_stream_t> streams_;
  std::vector<std::pair<uint32_t, tsr_drv_buffer_t>> buffers_;
  bool ok_ = false;
};

/// A collective descriptor (hal_driver.h) with absolute offsets 0.
inline tsr_drv_collective_t op(uint32_t kind, tsr_type_t type, uint64_t count,
                               tsr_drv_buffer_t send, tsr_drv_buffer_t recv,
                               tsr_reduce_op_t reduce = TSR_REDUCE_SUM, uint32_t root = 0) {
  return {kind, type, reduce, root, count, send, 0, recv, 0};
}

/// A counter or string the fake collective library exports (it must be loaded).
template <typename T> T *fakeSymbol(const char *library, const char *name) {
  void *handle = dlopen(library, RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(handle, nullptr) << library << " is not loaded";
  T *value = handle ? static_cast<T *>(dlsym(handle, name)) : nullptr;
  EXPECT_NE(value, nullptr) << name;
  return value;
}

/// A driver and its device `index`, opened for a test and closed at the end of the scope.
struct OpenedDevice {
  OpenedDevice(const tsr_driver_v1 *table, uint32_t index) : t(table) {
    EXPECT_EQ(hal::testing::consume(t->driver_open(&driver)), "");
    if (driver)
      EXPECT_EQ(hal::testing::consume(t->device_open(driver, index, &device)), "");
  }
  ~OpenedDevice() {
    if (device)
      t->device_close(device);
    if (driver)
      t->driver_close(driver);
  }
  OpenedDevice(const OpenedDevice &) = delete;
  OpenedDevice &operator=(const OpenedDevice &) = delete;

  const tsr_driver_v1 *t;
  tsr_drv_driver_t driver = nullptr;
  tsr_drv_device_t device = nullptr;
};

} // namespace tessera::simt::testing
