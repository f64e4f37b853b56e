// tessera.Buffer and DLPack both ways.
//
// Import (`from_dlpack`, graph inputs) reads any host tensor nanobind's ndarray caster accepts
// (torch CPU tensors, numpy arrays, anything with __dlpack__). `from_dlpack` onto a device
// whose memory is the host's (cpu:0) aliases the producer's memory (tsr_buffer_import_host):
// the HAL buffer holds the producer's DLPack reference until its last use retires, so the
// memory outlives in-flight work even when Python drops everything. Elsewhere, and for views
// that are not contiguous or not aligned to the device's buffer_offset_alignment, it copies
// into a contiguous buffer on the device.
// Export (`__dlpack__`) of host-visible storage (cpu:0, unified-memory devices) aliases the
// device memory: the capsule's owner is the Buffer object, which keeps the storage, and its
// mapping, alive until the consumer drops the tensor. Device-local storage is exported as a
// host copy (documented in README "Python / torch.compile"): DLPack has no device type for
// Vulkan memory that torch could use.
#include "common.h"

#include "tessera/graph_exec.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstring>

namespace tessera::py {

namespace dl = nb::dlpack;

graph::DType parseDtype(const std::string &name) {
  graph::DType t;
  if (!graph::parseDType(name, &t))
    raise(TSR_INVALID_ARGUMENT,
          "unknown dtype '" + name + "' (bool, i32, i64, f16, bf16, f32 or f64)");
  return t;
}

std::vector<int64_t> contiguousStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;)
    s[i - 1] = s[i] * std::max<int64_t>(shape[i], 1);
  return s;
}

dl::dtype toDl(graph::DType t) {
  using C = dl::dtype_code;
  auto mk = [](C c, int bits) {
    return dl::dtype{static_cast<uint8_t>(c), static_cast<uint8_t>(bits), 1};
  };
  switch (t) {
  case graph::DType::Bool:
    return mk(C::Bool, 8);
  case graph::DType::I32:
    return mk(C::Int, 32);
  case graph::DType::I64:
    return mk(C::Int, 64);
  case graph::DType::F16:
    return mk(C::Float, 16);
  case graph::DType::BF16:
    return mk(C::Bfloat, 16);
  case graph::DType::F32:
    return mk(C::Float, 32);
  case graph::DType::F64:
    return mk(C::Float, 64);
  }
  return mk(C::Float, 32);
}

namespace {

graph::DType fromDl(dl::dtype d) {
  for (graph::DType t :
       {graph::DType::Bool, graph::DType::I32, graph::DType::I64, graph::DType::F16,
        graph::DType::BF16, graph::DType::F32, graph::DType::F64})
    if (toDl(t) == d)
      return t;
  raise(TSR_UNIMPLEMENTED, "DLPack dtype (code " + std::to_string(d.code) + ", " +
                               std::to_string(d.bits) + " bits, " + std::to_string(d.lanes) +
                               " lanes) has no tessera dtype (bool, i32, i64, f16, bf16, f32, "
                               "f64)");
}

/// The shape, refused when an extent is negative or its bytes (`elemBytes` each) do not fit
/// in 63 bits: a wrapped size would allocate a few bytes under a huge shape.
std::vector<int64_t> checkedShape(const std::vector<int64_t> &shape, int64_t elemBytes) {
  int64_t bytes = elemBytes;
  bool overflow = false, empty = false;
  std::string text;
  for (int64_t d : shape) {
    if (d < 0)
      raise(TSR_INVALID_ARGUMENT, "negative extent " + std::to_string(d) + " in a shape");
    text += (text.empty() ? "" : ", ") + std::to_string(d);
    empty = empty || d == 0;
    overflow = overflow || __builtin_mul_overflow(bytes, d, &bytes);
  }
  if (overflow && !empty) // an empty extent makes any shape empty
    raise(TSR_OUT_OF_RANGE, "shape [" + text + "] holds more than 2^63 bytes");
  return shape;
}

/// A fresh, contiguous buffer on `device`.
Buffer emptyBuffer(const std::vector<int64_t> &shape, graph::DType dtype,
                   const std::string &device) {
  Buffer b;
  b.shape = checkedShape(shape, graph::dtypeBytes(dtype));
  b.dtype = dtype;
  b.strides = contiguousStrides(b.shape);
  b.storage = allocateStorage(Runtime::get().device(device), b.spanBytes());
  return b;
}

/// Makes host reads and writes of `b` safe: the device's default stream carries the copies
/// and default launches that may touch it.
void settle(const Buffer &b) {
  nb::gil_scoped_release nogil;
  check(b.storage->device->stream.synchronize());
}

} // namespace

Storage::~Storage() {
  if (mapped)
    (void)buffer.unmap();
}

void *Storage::host() {
  if (!device->hostVisible())
    return nullptr;
  if (!mapped)
    mapped = take(buffer.map(0, bytes));
  return mapped;
}

StoragePtr allocateStorage(const DevicePtr &device, uint64_t bytes) {
  auto s = std::make_shared<Storage>();
  s->device = device;
  s->bytes = std::max<uint64_t>(bytes, 1);
  s->buffer = take(device->device.allocate(s->bytes, device->memoryKind));
  return s;
}

int64_t Buffer::numel() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

uint64_t Buffer::spanBytes() const {
  int64_t span = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0)
      return 0;
    span += (shape[i] - 1) * strides[i];
  }
  return static_cast<uint64_t>(span) * graph::dtypeBytes(dtype);
}

bool Buffer::contiguous() const {
  std::vector<int64_t> c = contiguousStrides(shape);
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] > 1 && strides[i] != c[i])
      return false;
  return true;
}

/// Shape, strides, dtype and data of `a` (either ndarray flavour) into `v`.
template <typename Array> void fillHostView(const Array &a, HostView &v) {
  if (a.device_type() != nb::device::cpu::value)
    raise(TSR_UNIMPLEMENTED, "a tensor on DLPack device type " + std::to_string(a.device_type()) +
                                 " (only host memory is read here; copy it to the CPU first)");
  v.dtype = fromDl(a.dtype());
  for (size_t i = 0; i < a.ndim(); ++i) {
    v.shape.push_back(static_cast<int64_t>(a.shape(i)));
    int64_t s = a.stride(i);
    if (s < 0)
      raise(TSR_UNIMPLEMENTED, "negative strides (make the array contiguous first)");
    v.strides.push_back(s);
  }
  v.data = static_cast<const char *>(a.data_handle()) + a.byte_offset();
}

HostView hostView(nb::handle obj) {
  HostView v;
  // Torch tensors that require grad refuse DLPack export; only their values are read here
  // (the ndarray keeps the detached tensor's memory alive).
  nb::object detached;
  if (!PyCapsule_CheckExact(obj.ptr()) && nb::hasattr(obj, "requires_grad") &&
      nb::hasattr(obj, "detach") && nb::cast<bool>(obj.attr("requires_grad"))) {
    detached = obj.attr("detach")();
    obj = detached;
  }
  // Read-only arrays (setflags(write=False), np.broadcast_to) are read too; they are copied,
  // never imported in place, where a kernel could write them. The read-only cast is tried
  // second, and never on a DLPack capsule (a capsule is consumed by the first cast).
  if (nb::try_cast<nb::ndarray<>>(obj, v.array)) {
    fillHostView(v.array, v);
  } else if (!PyCapsule_CheckExact(obj.ptr()) &&
             nb::try_cast<nb::ndarray<nb::ro>>(obj, v.readOnly)) {
    v.writable = false;
    fillHostView(v.readOnly, v);
  } else {
    raise(TSR_INVALID_ARGUMENT, std::string("expected a DLPack-capable host tensor (torch, "
                                            "numpy) or a tessera.Buffer, got ") +
                                    nb::type_name(obj.type()).c_str());
  }
  return v;
}

void copyHostToBuffer(const HostView &src, Buffer &dst) {
  size_t elem = static_cast<size_t>(graph::dtypeBytes(dst.dtype));
  if (void *base = dst.storage->host()) {
    settle(dst);
    copyStridedHost(static_cast<const char *>(src.data), src.strides,
                    static_cast<char *>(base) + dst.offset * int64_t(elem), dst.strides, dst.shape,
                    elem);
    return;
  }
  if (!dst.contiguous())
    raise(TSR_UNIMPLEMENTED, "copying into a non-contiguous view of device-local memory");
  std::vector<char> stage(dst.spanBytes());
  copyStridedHost(static_cast<const char *>(src.data), src.strides, stage.data(), dst.strides,
                  dst.shape, elem);
  hal::Stream &s = dst.storage->device->stream;
  check(
      s.copyToDevice(stage.data(), dst.storage->buffer, uint64_t(dst.offset) * elem, stage.size()));
  settle(dst); // `stage` dies here
}

void copyBufferToHost(const Buffer &src, void *dst, const std::vector<int64_t> &dstStrides) {
  size_t elem = static_cast<size_t>(graph::dtypeBytes(src.dtype));
  settle(src);
  if (void *base = src.storage->host()) {
    copyStridedHost(static_cast<const char *>(base) + src.offset * int64_t(elem), src.strides,
                    static_cast<char *>(dst), dstStrides, src.shape, elem);
    return;
  }
  std::vector<char> stage(src.spanBytes());
  hal::Stream &s = src.storage->device->stream;
  check(s.copyToHost(src.storage->buffer, uint64_t(src.offset) * elem, stage.data(), stage.size()));
  settle(src);
  copyStridedHost(stage.data(), src.strides, static_cast<char *>(dst), dstStrides, src.shape, elem);
}

namespace {

/// `v` as a Buffer over the producer's own memory, or false when the device cannot alias it
/// (not host-visible, no import in its driver, not contiguous, misaligned, empty).
bool importInPlace(const HostView &v, const DevicePtr &device, Buffer *out) {
  if (!device->hostVisible() || !v.writable)
    return false;
  Buffer b;
  b.shape = v.shape;
  b.strides = v.strides;
  b.dtype = v.dtype;
  // Only dense row-major views: from_dlpack's Buffers stay contiguous whichever way they
  // were made (a graph takes a device buffer only in its parameter's layout).
  if (!b.contiguous())
    return false;
  uint64_t span = b.spanBytes();
  uint64_t align = std::max<uint32_t>(1, device->info.buffer_offset_alignment);
  if (span == 0 || reinterpret_cast<uintptr_t>(v.data) % align != 0)
    return false;
  // Released by the HAL after the buffer's last use (any thread: nanobind takes the GIL).
  auto *producer = new nb::ndarray<>(v.array);
  auto release = [](void *p) { delete static_cast<nb::ndarray<> *>(p); };
  auto imported = device->device.importHost(const_cast<void *>(v.data), span, release, producer);
  if (!imported.ok()) {
    delete producer; // a failed import never calls release
    if (imported.status().code() == TSR_UNIMPLEMENTED)
      return false;
    check(imported.status());
  }
  b.storage = std::make_shared<Storage>();
  b.storage->device = device;
  b.storage->bytes = span;
  b.storage->buffer = std::move(imported.value());
  *out = std::move(b);
  return true;
}

} // namespace

Buffer bufferFromHost(const HostView &v, const std::string &device) {
  Buffer b = emptyBuffer(v.shape, v.dtype, device);
  copyHostToBuffer(v, b);
  return b;
}

namespace {

/// The DLPack capsule of `self` (see the file comment for what aliases and what copies).
nb::object exportDlpack(nb::handle self, nb::handle stream, nb::kwargs kwargs) {
  // The memory is host memory: there is no producer stream to order with (DLPack: CPU
  // consumers pass None). Work of the default stream is waited for below.
  (void)stream;
  Buffer &b = nb::cast<Buffer &>(self);
  size_t elem = static_cast<size_t>(graph::dtypeBytes(b.dtype));
  std::vector<size_t> shape(b.shape.begin(), b.shape.end());
  const char *data = nullptr;
  std::vector<int64_t> strides = b.strides;
  nb::object owner;
  if (void *base = b.storage->host()) {
    settle(b);
    data = static_cast<const char *>(base) + b.offset * int64_t(elem);
    owner = nb::borrow(self);
  } else {
    // A host copy, contiguous, owned by a capsule.
    strides = contiguousStrides(b.shape);
    auto *copy = new std::vector<char>(static_cast<size_t>(b.numel()) * elem);
    owner = nb::capsule(copy, [](void *p) noexcept { delete static_cast<std::vector<char> *>(p); });
    copyBufferToHost(b, copy->data(), strides);
    data = copy->data();
  }
  nb::ndarray<nb::array_api> arr(const_cast<char *>(data), shape.size(), shape.data(), owner,
                                 strides.data(), toDl(b.dtype), nb::device::cpu::value, 0);
  nb::object wrapped = nb::cast(arr, nb::rv_policy::reference);
  return wrapped.attr("__dlpack__")(**kwargs);
}

} // namespace

void bindBuffers(nb::module_ &m) {
  nb::class_<Buffer>(m, "Buffer")
      .def_ro("shape", &Buffer::shape)
      .def_ro("strides", &Buffer::strides, "Strides in elements.")
      .def_ro("offset", &Buffer::offset, "Elements from the start of the storage.")
      .def_prop_ro("dtype", [](const Buffer &b) { return std::string(graph::dtypeName(b.dtype)); })
      .def_prop_ro("device", [](const Buffer &b) { return b.storage->device->name; })
      .def_prop_ro("nbytes", [](const Buffer &b) { return b.numel() * graph::dtypeBytes(b.dtype); })
      .def_prop_ro("host_visible", [](const Buffer &b) { return b.storage->device->hostVisible(); })
      .def("__dlpack__", &exportDlpack, nb::arg("stream") = nb::none(), nb::arg("kwargs"),
           "DLPack export: zero-copy from host-visible memory.")
      .def("__dlpack_device__",
           [](const Buffer &) { return std::make_tuple(int(nb::device::cpu::value), 0); })
      .def(
          "numpy",
          [](nb::handle self) {
            if (nb::cast<Buffer &>(self).dtype == graph::DType::BF16)
              raise(TSR_UNIMPLEMENTED, "numpy has no bfloat16: use torch.from_dlpack(buffer)");
            return nb::module_::import_("numpy").attr("from_dlpack")(self).attr("copy")();
          },
          "A numpy copy of the values.")
      .def(
          "copy_from",
          [](Buffer &b, nb::handle src) {
            HostView v = hostView(src);
            if (v.shape != b.shape || v.dtype != b.dtype)
              raise(TSR_INVALID_ARGUMENT, "copy_from: the source's dtype or shape differs");
            copyHostToBuffer(v, b);
          },
          "Copies a host tensor of the same dtype and shape into this buffer.")
      .def("__repr__", [](const Buffer &b) {
        std::string s = "tessera.Buffer(shape=[";
        for (size_t i = 0; i < b.shape.size(); ++i)
          s += (i ? ", " : "") + std::to_string(b.shape[i]);
        return s + "], dtype=" + graph::dtypeName(b.dtype) + ", device=" + b.storage->device->name +
               ")";
      });

  m.def(
      "empty",
      [](const std::vector<int64_t> &shape, const std::string &dtype, const std::string &device) {
        return emptyBuffer(shape, parseDtype(dtype), device);
      },
      nb::arg("shape"), nb::arg("dtype") = "f32", nb::arg("device") = "cpu:0",
      "An uninitialised contiguous buffer.");
  m.def(
      "from_dlpack",
      [](nb::handle obj, nb::handle device) {
        std::string dev = device.is_none() ? "cpu:0" : nb::cast<std::string>(device);
        if (Buffer *b = nullptr; nb::try_cast<Buffer *>(obj, b) && b) {
          // tessera -> tessera (perhaps another device): through the host.
          Buffer out = emptyBuffer(b->shape, b->dtype, dev);
          std::vector<char> stage(static_cast<size_t>(b->numel()) * graph::dtypeBytes(b->dtype));
          copyBufferToHost(*b, stage.data(), out.strides);
          HostView v;
          v.data = stage.data();
          v.dtype = b->dtype;
          v.shape = b->shape;
          v.strides = out.strides;
          copyHostToBuffer(v, out);
          return out;
        }
        HostView v = hostView(obj);
        if (Buffer in; importInPlace(v, Runtime::get().device(dev), &in))
          return in;
        return bufferFromHost(v, dev);
      },
      nb::arg("obj"), nb::arg("device") = nb::none(),
      "A DLPack-capable host tensor (or a Buffer) on `device` (default cpu:0): zero-copy, "
      "sharing the tensor's memory, on devices whose memory is the host's (cpu:0) when the "
      "data is contiguous and aligned to the device's buffer_offset_alignment; a contiguous "
      "copy otherwise.");
}

} // namespace tessera::py
