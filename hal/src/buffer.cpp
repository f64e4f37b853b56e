// Buffers: allocation (cuMemAlloc), import of host memory (cuMemHostRegister), views, size,
// and host mapping (vkMapMemory).
//
// Maps are counted per allocation, so a driver maps each allocation at most once however
// many views map it. Must never hand a driver a view, a zero size or a size above the
// device's memory.
#include "hal/src/buffer.h"

#include "hal/src/validation.h"

#include <cinttypes>

using namespace tessera::hal;

namespace {

constexpr tsr_memory_kind_t kAllMemoryKinds = TSR_MEMORY_DEVICE_LOCAL | TSR_MEMORY_HOST_VISIBLE;

// Drops one map of the allocation behind `buffer` (the caller cleared buffer->mapped).
void unmapRoot(tsr_buffer_s *buffer) {
  tsr_buffer_s *root = buffer->root;
  std::lock_guard<std::mutex> lock(root->mapMutex);
  if (--root->mapCount != 0)
    return;
  root->device->table().buffer_unmap(root->device->handle, root->handle);
  root->mapBase = nullptr;
}

// The root object of a new driver allocation (or import) `handle`.
tsr_buffer_s *newRoot(tsr_device_t device, uint64_t size, tsr_memory_kind_t kind,
                      tsr_drv_buffer_t handle) {
  auto *buffer = new tsr_buffer_s;
  buffer->device = device;
  device->retainInternal();
  buffer->root = buffer;
  buffer->size = size;
  buffer->kind = kind;
  buffer->handle = handle;
  return buffer;
}

} // namespace

void tsr_buffer_s::destroy() {
  if (mapped.exchange(false))
    unmapRoot(this);
  if (parent) {
    parent->releaseInternal();
  } else {
    device->table().buffer_free(device->handle, handle);
    if (release)
      release(releaseData);
  }
  device->releaseInternal();
}

extern "C" {

tsr_status_t tsr_buffer_allocate(tsr_device_t device, uint64_t size, tsr_memory_kind_t kind,
                                 tsr_buffer_t *out_buffer) {
  static const char *kCall = "tsr_buffer_allocate";
  TSR_RETURN_IF_ERROR(checkPointer(kCall, "out_buffer", out_buffer));
  *out_buffer = nullptr;
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "device", device));
  if (size == 0)
    return TSR_FAIL(TSR_INVALID_ARGUMENT, "%s: size is 0; a buffer must hold at least one byte",
                    kCall);
  if (kind == 0 || (kind & ~kAllMemoryKinds) != 0)
    return TSR_FAIL(TSR_INVALID_ARGUMENT,
                    "%s: kind 0x%x is not a non-empty combination of TSR_MEMORY_DEVICE_LOCAL "
                    "and TSR_MEMORY_HOST_VISIBLE",
                    kCall, kind);
  if (size > device->info.total_memory)
    return TSR_FAIL(TSR_RESOURCE_EXHAUSTED,
                    "%s: size %" PRIu64 " exceeds the total memory %" PRIu64 " of device '%s'",
                    kCall, size, device->info.total_memory, device->info.name);
  tsr_drv_buffer_t handle = nullptr;
  TSR_RETURN_IF_ERROR(TSR_CALL_DRIVER(kCall, *device->driver, buffer_allocate, device->handle, size,
                                      kind, &handle));
  *out_buffer = newRoot(device, size, kind, handle);
  return nullptr;
}

tsr_status_t tsr_buffer_import_host(tsr_device_t device, void *ptr, uint64_t size,
                                    tsr_buffer_t *out_buffer) {
  return tsr_buffer_import_host_with_release(device, ptr, size, nullptr, nullptr, out_buffer);
}

tsr_status_t tsr_buffer_import_host_with_release(tsr_device_t device, void *ptr, uint64_t size,
                                                 tsr_buffer_release_fn release, void *user_data,
                                                 tsr_buffer_t *out_buffer) {
  // One name in every message: the plain call is this one without a callback.
  static const char *kCall = "tsr_buffer_import_host";
  TSR_RETURN_IF_ERROR(checkPointer(kCall, "out_buffer", out_buffer));
  *out_buffer = nullptr;
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "device", device));
  if (size == 0)
    return TSR_FAIL(TSR_INVALID_ARGUMENT, "%s: size is 0; a buffer must hold at least one byte",
                    kCall);
  if (!ptr)
    return TSR_FAIL(TSR_INVALID_ARGUMENT, "%s: ptr is NULL for a size of %" PRIu64 " bytes", kCall,
                    size);
  // Launch offsets must be multiples of buffer_offset_alignment from the allocation's start;
  // an import whose start is not would make every kernel's view of it misaligned.
  uint64_t align = device->info.buffer_offset_alignment ? device->info.buffer_offset_alignment : 1;
  if (reinterpret_cast<uintptr_t>(ptr) % align != 0)
    return TSR_FAIL(TSR_INVALID_ARGUMENT,
                    "%s: ptr %p is not aligned to %" PRIu64
                    " bytes, the buffer_offset_alignment device '%s' requires",
                    kCall, ptr, align, device->info.name);
  if (uint64_t(uintptr_t(ptr)) + size < uint64_t(uintptr_t(ptr)))
    return TSR_FAIL(TSR_OUT_OF_RANGE, "%s: [ptr, ptr + %" PRIu64 ") wraps the address space", kCall,
                    size);
  tsr_drv_buffer_t handle = nullptr;
  TSR_RETURN_IF_ERROR(TSR_CALL_DRIVER(kCall, *device->driver, buffer_import_host, device->handle,
                                      ptr, size, &handle));
  tsr_buffer_s *buffer = newRoot(device, size, TSR_MEMORY_HOST_VISIBLE, handle);
  buffer->release = release;
  buffer->releaseData = user_data;
  *out_buffer = buffer;
  return nullptr;
}

tsr_status_t tsr_buffer_create_view(tsr_buffer_t parent, uint64_t offset, uint64_t length,
                                    tsr_buffer_t *out_view) {
  static const char *kCall = "tsr_buffer_create_view";
  TSR_RETURN_IF_ERROR(checkPointer(kCall, "out_view", out_view));
  *out_view = nullptr;
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "parent", parent));
  if (length == 0)
    return TSR_FAIL(TSR_INVALID_ARGUMENT, "%s: length is 0; a view must hold at least one byte",
                    kCall);
  TSR_RETURN_IF_ERROR(checkRange(kCall, "view", offset, length, parent->size));
  auto *view = new tsr_buffer_s;
  view->device = parent->device;
  view->device->retainInternal();
  view->parent = parent;
  parent->retainInternal();
  view->root = parent->root;
  view->offset = parent->offset + offset;
  view->size = length;
  view->kind = parent->kind;
  view->handle = parent->handle;
  *out_view = view;
  return nullptr;
}

void tsr_buffer_retain(tsr_buffer_t buffer) {
  retainHandle(buffer, ObjectKind::Buffer, "tsr_buffer_retain");
}

void tsr_buffer_release(tsr_buffer_t buffer) {
  releaseHandle(buffer, ObjectKind::Buffer, "tsr_buffer_release");
}

tsr_status_t tsr_buffer_size(tsr_buffer_t buffer, uint64_t *out_size) {
  static const char *kCall = "tsr_buffer_size";
  TSR_RETURN_IF_ERROR(checkPointer(kCall, "out_size", out_size));
  *out_size = 0;
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "buffer", buffer));
  *out_size = buffer->size;
  return nullptr;
}

tsr_status_t tsr_buffer_map(tsr_buffer_t buffer, uint64_t offset, uint64_t length, void **out_ptr) {
  static const char *kCall = "tsr_buffer_map";
  TSR_RETURN_IF_ERROR(checkPointer(kCall, "out_ptr", out_ptr));
  *out_ptr = nullptr;
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "buffer", buffer));
  if (!(buffer->kind & TSR_MEMORY_HOST_VISIBLE))
    return TSR_FAIL(TSR_FAILED_PRECONDITION,
                    "%s: buffer is not TSR_MEMORY_HOST_VISIBLE (kind 0x%x); copy it with "
                    "tsr_stream_copy_d2h instead",
                    kCall, buffer->kind);
  if (length == 0)
    return TSR_FAIL(TSR_INVALID_ARGUMENT, "%s: length is 0", kCall);
  TSR_RETURN_IF_ERROR(checkRange(kCall, "map", offset, length, buffer->size));
  if (buffer->mapped.exchange(true))
    return TSR_FAIL(TSR_FAILED_PRECONDITION,
                    "%s: buffer is already mapped through this handle (unmap it first)", kCall);
  tsr_buffer_s *root = buffer->root;
  std::lock_guard<std::mutex> lock(root->mapMutex);
  if (root->mapCount == 0) {
    void *base = nullptr;
    tsr_status_t status = TSR_CALL_DRIVER(kCall, *root->device->driver, buffer_map,
                                          root->device->handle, root->handle, &base);
    if (status) {
      buffer->mapped.store(false);
      return status;
    }
    root->mapBase = base;
  }
  ++root->mapCount;
  *out_ptr = static_cast<char *>(root->mapBase) + buffer->offset + offset;
  return nullptr;
}

tsr_status_t tsr_buffer_unmap(tsr_buffer_t buffer) {
  static const char *kCall = "tsr_buffer_unmap";
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "buffer", buffer));
  if (!buffer->mapped.exchange(false))
    return TSR_FAIL(TSR_FAILED_PRECONDITION, "%s: buffer is not mapped through this handle", kCall);
  unmapRoot(buffer);
  return nullptr;
}

} // extern "C"
