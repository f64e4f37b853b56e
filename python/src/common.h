// Shared pieces of the `tessera._C` module: HAL statuses turned into Python exceptions, the
// process-wide registry with its opened devices, and buffer storage.
//
// Every binding checks its arguments and turns a HAL status into tessera.TesseraError (code +
// message): nothing here may crash the interpreter. No LLVM or backend header is included.
#pragma once

#include "ir/graph/graph.h"
#include "tessera/compile_cache.h"
#include "tessera/hal.hpp"
#include "tessera/program.h"

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace tessera::py {

namespace nb = nanobind;

/// Thrown by bindings; becomes tessera.TesseraError(code, message) (module.cpp).
struct Error {
  std::string code; // "INVALID_ARGUMENT", ...
  std::string message;
};

[[noreturn]] void raise(tsr_status_code_t code, const std::string &message);
inline void check(const hal::Status &st) {
  if (!st.ok())
    raise(st.code(), st.message());
}
inline void checkC(tsr_status_t st) { check(hal::Status::fromC(st)); }
template <typename T> T take(hal::Expected<T> &&e) {
  check(e.status());
  return std::move(e).value();
}

/// An opened device, shared by everything created on it: one HAL device object per name, since
/// objects of one device object cannot be used with another.
struct DeviceObj {
  std::string name;
  hal::Device device;
  tsr_device_info_t info{};
  tsr_memory_kind_t memoryKind = TSR_MEMORY_DEVICE_LOCAL; // preferredMemoryKind
  hal::Stream stream; // the default stream: buffers' copies, launches without a stream
  bool hostVisible() const { return memoryKind & TSR_MEMORY_HOST_VISIBLE; }
};
using DevicePtr = std::shared_ptr<DeviceObj>;

/// The registry (built-in drivers + TESSERA_DRIVER_PATH plugins) and the devices opened so far.
class Runtime {
public:
  static Runtime &get();
  hal::Registry &registry();
  /// The device named `name` ("cpu:0"), opened on first use; NOT_FOUND lists the names.
  DevicePtr device(const std::string &name);

private:
  std::mutex mu_;
  hal::Registry registry_;
  bool opened_ = false;
  std::map<std::string, DevicePtr> devices_;
};

/// One HAL buffer. Host-visible storage is mapped once, for its whole life, so that DLPack
/// exports of it alias device memory (zero-copy) for as long as any of them lives.
struct Storage {
  DevicePtr device;
  hal::Buffer buffer;
  uint64_t bytes = 0;
  void *mapped = nullptr;
  ~Storage();
  /// The host address of byte 0 (host-visible storage only), mapping on first use.
  void *host();
};
using StoragePtr = std::shared_ptr<Storage>;

/// Allocates `bytes` (at least 1: the HAL has no empty buffers) of the device's preferred kind.
StoragePtr allocateStorage(const DevicePtr &device, uint64_t bytes);

/// tessera.Buffer: a strided view (elements) of a Storage.
struct Buffer {
  StoragePtr storage;
  graph::DType dtype = graph::DType::F32;
  std::vector<int64_t> shape, strides;
  int64_t offset = 0;
  int64_t numel() const;
  /// Bytes from the first element to one past the last one reachable (0 when empty).
  uint64_t spanBytes() const;
  bool contiguous() const;
};

graph::DType parseDtype(const std::string &name);
std::vector<int64_t> contiguousStrides(const std::vector<int64_t> &shape);

/// The process-wide compile cache (memory + $TESSERA_CACHE_DIR or the XDG default).
CompileCache &compileCache();

/// "compiled", "memory-cache", "disk-cache" (program.cpp).
const char *sourceName(ProgramStats::Source s);

// Binders, one per source file (module.cpp calls them in this order).
void bindDevices(nb::module_ &m);
void bindBuffers(nb::module_ &m);
void bindPrograms(nb::module_ &m);
void bindGraphs(nb::module_ &m);

/// Host memory holding a tensor: what a DLPack-capable object exposes (buffer.cpp).
struct HostView {
  const void *data = nullptr; // the element at index 0
  graph::DType dtype = graph::DType::F32;
  std::vector<int64_t> shape, strides; // elements
  nb::ndarray<> array;                 // keeps the producer's memory alive (may be empty)
  nb::ndarray<nb::ro> readOnly;        // the same, for a read-only array (never imported)
  bool writable = true;
};
/// The host view of a DLPack-capable object (numpy, torch CPU tensors ...) or a DLPack capsule.
HostView hostView(nb::handle obj);
/// The DLPack dtype of a graph dtype.
nb::dlpack::dtype toDl(graph::DType t);
/// Copies a view of host memory into a view of a Buffer's host-visible or device memory.
void copyHostToBuffer(const HostView &src, Buffer &dst);
/// A fresh contiguous Buffer on `device` holding a copy of `v`.
Buffer bufferFromHost(const HostView &v, const std::string &device);
/// The HAL stream of a tessera.Stream argument (None: the device's default stream), checked to
/// belong to `device` (module.cpp).
tsr_stream_t streamArg(nb::handle stream, const DevicePtr &device);
/// Copies `src` (any layout) into host memory laid out with `dstStrides`.
void copyBufferToHost(const Buffer &src, void *dst, const std::vector<int64_t> &dstStrides);

} // namespace tessera::py
