// The C++ face of the HAL: move-only RAII handles over the C ABI, `Status` (code + message)
// and `Expected<T>` (a value or a Status). Header-only and exception-free.
//
// Every method is a thin forward to one C call of hal.h, which does the validation; this
// header must never add behaviour of its own beyond ownership and error conversion.
#pragma once

#include "tessera/hal.h"

#include <cassert>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace tessera::hal {

/// A status: TSR_OK, or a code and a message.
class Status {
public:
  Status() = default;
  Status(tsr_status_code_t code, std::string message) : code_(code), message_(std::move(message)) {}

  /// Takes a C status over (and frees it).
  static Status fromC(tsr_status_t status) {
    if (!status)
      return Status();
    Status result(tsr_status_code(status), tsr_status_message(status));
    tsr_status_free(status);
    return result;
  }

  bool ok() const { return code_ == TSR_OK; }
  tsr_status_code_t code() const { return code_; }
  const std::string &message() const { return message_; }
  /// "OK" or "INVALID_ARGUMENT: tsr_buffer_allocate: size is 0 ...".
  std::string toString() const {
    if (ok())
      return "OK";
    return std::string(tsr_status_code_name(code_)) + ": " + message_;
  }

private:
  tsr_status_code_t code_ = TSR_OK;
  std::string message_;
};

/// A value of type T or the Status that explains why there is none.
template <typename T> class [[nodiscard]] Expected {
public:
  Expected(T value) : value_(std::move(value)) {}
  Expected(Status status) : status_(std::move(status)) {
    assert(!status_.ok() && "an Expected without a value must hold an error");
  }

  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Status &status() const { return status_; }

  T &value() & {
    assert(ok() && "value() of an Expected that holds an error");
    return *value_;
  }
  const T &value() const & {
    assert(ok() && "value() of an Expected that holds an error");
    return *value_;
  }
  T &&value() && {
    assert(ok() && "value() of an Expected that holds an error");
    return std::move(*value_);
  }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }
  T &operator*() & { return value(); }

private:
  std::optional<T> value_;
  Status status_;
};

namespace detail {

/// Owns one reference to a C handle.
template <typename Handle, void (*Retain)(Handle), void (*Release)(Handle)> class Ref {
public:
  Ref() = default;
  /// Adopts a reference the caller owned.
  explicit Ref(Handle handle) : handle_(handle) {}
  ~Ref() { Release(handle_); }
  Ref(Ref &&other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Ref &operator=(Ref &&other) noexcept {
    if (this != &other) {
      Release(handle_);
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  Ref(const Ref &) = delete;
  Ref &operator=(const Ref &) = delete;

  Handle get() const { return handle_; }
  explicit operator bool() const { return handle_ != nullptr; }
  /// Gives the reference up to the caller (who must release it).
  Handle detach() { return std::exchange(handle_, nullptr); }

protected:
  /// A second owning reference to the same object.
  Handle retained() const {
    Retain(handle_);
    return handle_;
  }

private:
  Handle handle_ = nullptr;
};

/// Runs a C creation call into `out` and wraps the result.
template <typename Wrapper, typename Handle, typename Call> Expected<Wrapper> make(Call &&call) {
  Handle handle = nullptr;
  Status status = Status::fromC(call(&handle));
  if (!status.ok())
    return status;
  return Wrapper(handle);
}

} // namespace detail

/// Workgroup or grid extent; unspecified dimensions are 1.
struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
};

class Buffer : public detail::Ref<tsr_buffer_t, tsr_buffer_retain, tsr_buffer_release> {
public:
  using Ref::Ref;
  Buffer share() const { return Buffer(retained()); }

  Expected<uint64_t> size() const {
    uint64_t size = 0;
    Status status = Status::fromC(tsr_buffer_size(get(), &size));
    if (!status.ok())
      return status;
    return size;
  }
  /// A view of [offset, offset+length) that keeps this buffer alive.
  Expected<Buffer> view(uint64_t offset, uint64_t length) const {
    return detail::make<Buffer, tsr_buffer_t>(
        [&](tsr_buffer_t *out) { return tsr_buffer_create_view(get(), offset, length, out); });
  }
  Expected<void *> map(uint64_t offset, uint64_t length) {
    void *pointer = nullptr;
    Status status = Status::fromC(tsr_buffer_map(get(), offset, length, &pointer));
    if (!status.ok())
      return status;
    return pointer;
  }
  Status unmap() { return Status::fromC(tsr_buffer_unmap(get())); }
};

/// Launch-argument helpers (scalars: the tsr_arg_* functions of hal.h).
inline tsr_arg_t bufferArg(const Buffer &buffer, uint64_t offset = 0) {
  return tsr_arg_buffer(buffer.get(), offset);
}

class Kernel : public detail::Ref<tsr_kernel_t, tsr_kernel_retain, tsr_kernel_release> {
public:
  using Ref::Ref;
  Kernel share() const { return Kernel(retained()); }

  /// The pointers inside stay valid while this kernel lives.
  Expected<tsr_kernel_info_t> info() const {
    tsr_kernel_info_t info = {};
    info.struct_size = sizeof(info);
    Status status = Status::fromC(tsr_kernel_info(get(), &info));
    if (!status.ok())
      return status;
    return info;
  }
};

class Executable
    : public detail::Ref<tsr_executable_t, tsr_executable_retain, tsr_executable_release> {
public:
  using Ref::Ref;
  Executable share() const { return Executable(retained()); }

  Expected<Kernel> kernel(const char *name) const {
    return detail::make<Kernel, tsr_kernel_t>(
        [&](tsr_kernel_t *out) { return tsr_executable_kernel(get(), name, out); });
  }
  Expected<uint32_t> kernelCount() const {
    uint32_t count = 0;
    Status status = Status::fromC(tsr_executable_kernel_count(get(), &count));
    if (!status.ok())
      return status;
    return count;
  }
};

class Event : public detail::Ref<tsr_event_t, tsr_event_retain, tsr_event_release> {
public:
  using Ref::Ref;
  Event share() const { return Event(retained()); }

  Status synchronize() { return Status::fromC(tsr_event_synchronize(get())); }
  Expected<bool> query() const {
    bool ready = false;
    Status status = Status::fromC(tsr_event_query(get(), &ready));
    if (!status.ok())
      return status;
    return ready;
  }
};

class Stream : public detail::Ref<tsr_stream_t, tsr_stream_retain, tsr_stream_release> {
public:
  using Ref::Ref;
  Stream share() const { return Stream(retained()); }

  /// Fills with a 1, 2 or 4 byte value (uint8_t, uint16_t, uint32_t, float...).
  template <typename T>
  Status fill(const Buffer &buffer, uint64_t offset, uint64_t length, T pattern) {
    static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4,
                  "fill patterns are 1, 2 or 4 bytes");
    return Status::fromC(
        tsr_stream_fill(get(), buffer.get(), offset, length, &pattern, uint32_t(sizeof(T))));
  }
  Status copyToDevice(const void *src, const Buffer &dst, uint64_t dstOffset, uint64_t length) {
    return Status::fromC(tsr_stream_copy_h2d(get(), src, dst.get(), dstOffset, length));
  }
  Status copyToHost(const Buffer &src, uint64_t srcOffset, void *dst, uint64_t length) {
    return Status::fromC(tsr_stream_copy_d2h(get(), src.get(), srcOffset, dst, length));
  }
  Status copy(const Buffer &src, uint64_t srcOffset, const Buffer &dst, uint64_t dstOffset,
              uint64_t length) {
    return Status::fromC(
        tsr_stream_copy_d2d(get(), src.get(), srcOffset, dst.get(), dstOffset, length));
  }
  Status launch(const Kernel &kernel, Dim3 grid, Dim3 workgroup, std::span<const tsr_arg_t> args) {
    const uint32_t g[3] = {grid.x, grid.y, grid.z};
    const uint32_t w[3] = {workgroup.x, workgroup.y, workgroup.z};
    return Status::fromC(
        tsr_stream_launch(get(), kernel.get(), g, w, args.data(), uint32_t(args.size())));
  }
  Status launch(const Kernel &kernel, Dim3 grid, Dim3 workgroup,
                std::initializer_list<tsr_arg_t> args) {
    return launch(kernel, grid, workgroup, std::span<const tsr_arg_t>(args.begin(), args.size()));
  }
  Status record(const Event &event) {
    return Status::fromC(tsr_stream_record_event(get(), event.get()));
  }
  Status wait(const Event &event) {
    return Status::fromC(tsr_stream_wait_event(get(), event.get()));
  }
  Status synchronize() { return Status::fromC(tsr_stream_synchronize(get())); }
  /// Deadline of the launches enqueued from now on (0: none); see tsr_stream_set_timeout.
  Status setTimeout(uint64_t timeoutNs) {
    return Status::fromC(tsr_stream_set_timeout(get(), timeoutNs));
  }
  Expected<bool> query() const {
    bool idle = false;
    Status status = Status::fromC(tsr_stream_query(get(), &idle));
    if (!status.ok())
      return status;
    return idle;
  }
};

class Device : public detail::Ref<tsr_device_t, tsr_device_retain, tsr_device_release> {
public:
  using Ref::Ref;
  Device share() const { return Device(retained()); }

  Expected<tsr_device_info_t> info() const {
    tsr_device_info_t info = {};
    info.struct_size = sizeof(info);
    Status status = Status::fromC(tsr_device_info(get(), &info));
    if (!status.ok())
      return status;
    return info;
  }
  Expected<Buffer> allocate(uint64_t size, tsr_memory_kind_t kind = TSR_MEMORY_DEVICE_LOCAL) {
    return detail::make<Buffer, tsr_buffer_t>(
        [&](tsr_buffer_t *out) { return tsr_buffer_allocate(get(), size, kind, out); });
  }
  /// tsr_buffer_import_host: a buffer aliasing caller-owned host memory (no copy). Keep
  /// [ptr, ptr+size) alive and untouched by others until the device is done with it, or pass
  /// `release`, which the HAL calls once the memory is free again.
  Expected<Buffer> importHost(void *ptr, uint64_t size, tsr_buffer_release_fn release = nullptr,
                              void *user_data = nullptr) {
    return detail::make<Buffer, tsr_buffer_t>([&](tsr_buffer_t *out) {
      return tsr_buffer_import_host_with_release(get(), ptr, size, release, user_data, out);
    });
  }
  Expected<Stream> createStream() {
    return detail::make<Stream, tsr_stream_t>(
        [&](tsr_stream_t *out) { return tsr_stream_create(get(), out); });
  }
  Expected<Event> createEvent() {
    return detail::make<Event, tsr_event_t>(
        [&](tsr_event_t *out) { return tsr_event_create(get(), out); });
  }
  Expected<Executable> loadExecutable(const char *format, const void *data, size_t size) {
    return detail::make<Executable, tsr_executable_t>([&](tsr_executable_t *out) {
      return tsr_executable_create(get(), format, data, size, out);
    });
  }
};

/// One rank of a communicator (tsr_comm_*; docs/hal.md "Collectives"). Operations enqueue
/// on `stream` and report later errors through its synchronize.
class Comm : public detail::Ref<tsr_comm_t, tsr_comm_retain, tsr_comm_release> {
public:
  using Ref::Ref;
  Comm share() const { return Comm(retained()); }

  /// ncclCommInitAll: rank i on devices[i].
  static Expected<std::vector<Comm>> createLocal(std::span<const Device> devices) {
    std::vector<tsr_device_t> handles;
    for (const Device &d : devices)
      handles.push_back(d.get());
    std::vector<tsr_comm_t> raw(handles.size(), nullptr);
    Status status =
        Status::fromC(tsr_comm_create_local(uint32_t(handles.size()), handles.data(), raw.data()));
    if (!status.ok())
      return status;
    std::vector<Comm> comms;
    for (tsr_comm_t c : raw)
      comms.emplace_back(c);
    return comms;
  }
  static Expected<Comm> createRank(const Device &device, const tsr_comm_unique_id_t &id,
                                   uint32_t size, uint32_t rank) {
    return detail::make<Comm, tsr_comm_t>(
        [&](tsr_comm_t *out) { return tsr_comm_create_rank(device.get(), &id, size, rank, out); });
  }
  /// An empty Comm (no error) for TSR_COMM_SPLIT_NOCOLOR.
  Expected<Comm> split(int32_t color, int32_t key) {
    return detail::make<Comm, tsr_comm_t>(
        [&](tsr_comm_t *out) { return tsr_comm_split(get(), color, key, out); });
  }
  Expected<uint32_t> rank() const { return query<uint32_t>(tsr_comm_rank); }
  Expected<uint32_t> size() const { return query<uint32_t>(tsr_comm_size); }
  Expected<std::string> transportName() const {
    const char *name = nullptr;
    Status status = Status::fromC(tsr_comm_transport_name(get(), &name));
    if (!status.ok())
      return status;
    return std::string(name);
  }
  Status setTimeout(uint64_t timeoutNs) {
    return Status::fromC(tsr_comm_set_timeout(get(), timeoutNs));
  }
  Status abort() { return Status::fromC(tsr_comm_abort(get())); }

  Status allReduce(Stream &stream, const Buffer &send, uint64_t sendOffset, const Buffer &recv,
                   uint64_t recvOffset, uint64_t count, tsr_type_t type, tsr_reduce_op_t op) {
    return Status::fromC(tsr_comm_all_reduce(get(), stream.get(), send.get(), sendOffset,
                                             recv.get(), recvOffset, count, type, op));
  }
  Status allGather(Stream &stream, const Buffer &send, uint64_t sendOffset, const Buffer &recv,
                   uint64_t recvOffset, uint64_t count, tsr_type_t type) {
    return Status::fromC(tsr_comm_all_gather(get(), stream.get(), send.get(), sendOffset,
                                             recv.get(), recvOffset, count, type));
  }
  Status reduceScatter(Stream &stream, const Buffer &send, uint64_t sendOffset, const Buffer &recv,
                       uint64_t recvOffset, uint64_t count, tsr_type_t type, tsr_reduce_op_t op) {
    return Status::fromC(tsr_comm_reduce_scatter(get(), stream.get(), send.get(), sendOffset,
                                                 recv.get(), recvOffset, count, type, op));
  }
  /// `send` is only read on the root (an empty Buffer elsewhere).
  Status broadcast(Stream &stream, const Buffer &send, uint64_t sendOffset, const Buffer &recv,
                   uint64_t recvOffset, uint64_t count, tsr_type_t type, uint32_t root) {
    return Status::fromC(tsr_comm_broadcast(get(), stream.get(), send.get(), sendOffset, recv.get(),
                                            recvOffset, count, type, root));
  }
  /// `recv` is only written on the root (an empty Buffer elsewhere).
  Status reduce(Stream &stream, const Buffer &send, uint64_t sendOffset, const Buffer &recv,
                uint64_t recvOffset, uint64_t count, tsr_type_t type, tsr_reduce_op_t op,
                uint32_t root) {
    return Status::fromC(tsr_comm_reduce(get(), stream.get(), send.get(), sendOffset, recv.get(),
                                         recvOffset, count, type, op, root));
  }
  Status allToAll(Stream &stream, const Buffer &send, uint64_t sendOffset, const Buffer &recv,
                  uint64_t recvOffset, uint64_t count, tsr_type_t type) {
    return Status::fromC(tsr_comm_all_to_all(get(), stream.get(), send.get(), sendOffset,
                                             recv.get(), recvOffset, count, type));
  }
  Status send(Stream &stream, const Buffer &buffer, uint64_t offset, uint64_t count,
              tsr_type_t type, uint32_t peer) {
    return Status::fromC(
        tsr_comm_send(get(), stream.get(), buffer.get(), offset, count, type, peer));
  }
  Status recv(Stream &stream, const Buffer &buffer, uint64_t offset, uint64_t count,
              tsr_type_t type, uint32_t peer) {
    return Status::fromC(
        tsr_comm_recv(get(), stream.get(), buffer.get(), offset, count, type, peer));
  }

private:
  template <typename T, typename Fn> Expected<T> query(Fn fn) const {
    T value{};
    Status status = Status::fromC(fn(get(), &value));
    if (!status.ok())
      return status;
    return value;
  }
};

struct Unavailable {
  std::string backend;
  std::string reason;
};

class Registry : public detail::Ref<tsr_registry_t, tsr_registry_retain, tsr_registry_release> {
public:
  using Ref::Ref;
  Registry share() const { return Registry(retained()); }

  static Expected<Registry> create() {
    return detail::make<Registry, tsr_registry_t>(
        [](tsr_registry_t *out) { return tsr_registry_create(out); });
  }
  Status registerDriver(const tsr_driver_v1 *driver) {
    return Status::fromC(tsr_registry_register_driver(get(), driver));
  }
  /// NULL: TESSERA_DRIVER_PATH.
  Status loadPlugins(const char *searchPath = nullptr) {
    return Status::fromC(tsr_registry_load_plugins(get(), searchPath));
  }
  Expected<std::vector<tsr_device_info_t>> devices() const {
    uint32_t count = 0;
    Status status = Status::fromC(tsr_registry_device_count(get(), &count));
    std::vector<tsr_device_info_t> infos(count);
    for (uint32_t i = 0; i < count && status.ok(); ++i) {
      infos[i].struct_size = sizeof(tsr_device_info_t);
      status = Status::fromC(tsr_registry_device_info(get(), i, &infos[i]));
    }
    if (!status.ok())
      return status;
    return infos;
  }
  Expected<std::vector<Unavailable>> unavailable() const {
    uint32_t count = 0;
    Status status = Status::fromC(tsr_registry_unavailable_count(get(), &count));
    std::vector<Unavailable> records;
    for (uint32_t i = 0; i < count && status.ok(); ++i) {
      tsr_unavailable_t record = {};
      status = Status::fromC(tsr_registry_unavailable(get(), i, &record));
      if (status.ok())
        records.push_back({record.backend, record.reason});
    }
    if (!status.ok())
      return status;
    return records;
  }
  Expected<Device> openDevice(const char *name) {
    return detail::make<Device, tsr_device_t>(
        [&](tsr_device_t *out) { return tsr_registry_open_device(get(), name, out); });
  }
};

} // namespace tessera::hal
