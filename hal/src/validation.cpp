// The checks every public entry point runs before a driver sees a call (see validation.h).
//
// Must never call a driver, change an object or let a bad argument through: anything that
// reaches a driver has passed here. Messages: "<call>: <argument> <what is wrong>".
#include "hal/src/validation.h"

#include "hal/src/buffer.h"
#include "hal/src/device.h"
#include "hal/src/executable.h"
#include "hal/src/stream.h"

#include <cinttypes>
#include <cstring>
#include <string>

namespace tessera::hal {
namespace {

bool isKnownMagic(uint32_t magic) {
  switch (ObjectKind(magic)) {
  case ObjectKind::Registry:
  case ObjectKind::Device:
  case ObjectKind::Buffer:
  case ObjectKind::Stream:
  case ObjectKind::Event:
  case ObjectKind::Executable:
  case ObjectKind::Kernel:
  case ObjectKind::Comm:
    return true;
  }
  return false;
}

const char kDims[] = "xyz";

// "args[2] ('n')" or "args[2]".
std::string argLabel(uint32_t index, const tsr_kernel_param_t &param) {
  std::string label = "args[" + std::to_string(index) + "]";
  if (param.name && *param.name)
    label += std::string(" ('") + param.name + "')";
  return label;
}

tsr_status_t checkDims(const char *call, const tsr_device_info_t &info, const KernelEntry &k,
                       const uint32_t grid[3], const uint32_t workgroup[3]) {
  for (int d = 0; d < 3; ++d) {
    if (grid[d] == 0)
      return TSR_FAIL(TSR_INVALID_ARGUMENT, "%s: grid[%d] (%c) is 0; every dimension must be >= 1",
                      call, d, kDims[d]);
    if (workgroup[d] == 0)
      return TSR_FAIL(TSR_INVALID_ARGUMENT,
                      "%s: workgroup[%d] (%c) is 0; every dimension must be >= 1", call, d,
                      kDims[d]);
  }
  for (int d = 0; d < 3; ++d) {
    if (workgroup[d] > info.max_workgroup_size[d])
      return TSR_FAIL(TSR_OUT_OF_RANGE,
                      "%s: workgroup[%d] (%c) = %u exceeds the limit %u of device '%s'", call, d,
                      kDims[d], workgroup[d], info.max_workgroup_size[d], info.name);
    if (grid[d] > info.max_grid_size[d])
      return TSR_FAIL(TSR_OUT_OF_RANGE,
                      "%s: grid[%d] (%c) = %u exceeds the limit %u of device '%s'", call, d,
                      kDims[d], grid[d], info.max_grid_size[d], info.name);
  }
  uint64_t total = uint64_t(workgroup[0]) * workgroup[1] * workgroup[2];
  if (total > info.max_workgroup_total)
    return TSR_FAIL(
        TSR_OUT_OF_RANGE,
        "%s: workgroup %ux%ux%u has %" PRIu64 " work-items, more than the limit %u of device '%s'",
        call, workgroup[0], workgroup[1], workgroup[2], total, info.max_workgroup_total, info.name);
  const uint32_t *req = k.info.required_workgroup_size;
  bool hasRequired = req[0] || req[1] || req[2];
  if (hasRequired && (req[0] != workgroup[0] || req[1] != workgroup[1] || req[2] != workgroup[2]))
    return TSR_FAIL(
        TSR_INVALID_ARGUMENT, "%s: kernel '%s' requires workgroup %ux%ux%u, got %ux%ux%u", call,
        k.name.c_str(), req[0], req[1], req[2], workgroup[0], workgroup[1], workgroup[2]);
  return nullptr;
}

tsr_status_t checkBufferArg(const char *call, const std::string &label, const tsr_arg_t &arg,
                            const tsr_stream_s *stream, tsr_drv_arg_t &out,
                            std::vector<Object *> &used) {
  const tsr_buffer_s *buffer = arg.value.buffer.buf;
  TSR_RETURN_IF_ERROR(checkHandle(call, label.c_str(), buffer));
  TSR_RETURN_IF_ERROR(checkSameDevice(call, label.c_str(), buffer->device, stream->device));
  uint64_t offset = arg.value.buffer.offset;
  if (offset >= buffer->size)
    return TSR_FAIL(TSR_OUT_OF_RANGE,
                    "%s: %s offset %" PRIu64 " is not inside its buffer of size %" PRIu64, call,
                    label.c_str(), offset, buffer->size);
  uint64_t absolute = buffer->offset + offset;
  uint32_t alignment = stream->device->info.buffer_offset_alignment;
  if (alignment > 1 && absolute % alignment != 0)
    return TSR_FAIL(TSR_INVALID_ARGUMENT,
                    "%s: %s offset %" PRIu64 " (%" PRIu64
                    " within its allocation) is not a multiple of the buffer_offset_alignment %u "
                    "of device '%s'",
                    call, label.c_str(), offset, absolute, alignment, stream->device->info.name);
  out.value.buffer.buf = buffer->root->handle;
  out.value.buffer.offset = absolute;
  out.value.buffer.length = buffer->size - offset;
  used.push_back(const_cast<tsr_buffer_s *>(buffer));
  return nullptr;
}

void copyScalar(const tsr_arg_t &arg, tsr_drv_arg_t &out) {
  switch (arg.kind) {
  case TSR_TYPE_I8:
    out.value.i8 = arg.value.i8;
    return;
  case TSR_TYPE_I16:
    out.value.i16 = arg.value.i16;
    return;
  case TSR_TYPE_I32:
    out.value.i32 = arg.value.i32;
    return;
  case TSR_TYPE_I64:
    out.value.i64 = arg.value.i64;
    return;
  case TSR_TYPE_F16:
    out.value.f16_bits = arg.value.f16_bits;
    return;
  case TSR_TYPE_BF16:
    out.value.bf16_bits = arg.value.bf16_bits;
    return;
  case TSR_TYPE_F32:
    out.value.f32 = arg.value.f32;
    return;
  case TSR_TYPE_F64:
    out.value.f64 = arg.value.f64;
    return;
  case TSR_TYPE_BUFFER:
    break;
  }
}

} // namespace

tsr_status_t checkObject(const char *call, const char *what, const Object *object,
                         ObjectKind kind) {
  if (!object)
    return TSR_FAIL(TSR_INVALID_ARGUMENT, "%s: %s is NULL", call, what);
  uint32_t magic = object->magic();
  if (magic == uint32_t(kind))
    return nullptr;
  if (magic == kReleasedMagic || magic == kDestroyedMagic) {
    if (object->kind() == kind)
      return TSR_FAIL(TSR_INVALID_ARGUMENT, "%s: %s is a %s handle that was already released", call,
                      what, kindName(kind));
    return TSR_FAIL(TSR_INVALID_ARGUMENT, "%s: %s is a released %s handle, expected a %s", call,
                    what, kindName(object->kind()), kindName(kind));
  }
  if (isKnownMagic(magic))
    return TSR_FAIL(TSR_INVALID_ARGUMENT, "%s: %s is a %s handle, expected a %s", call, what,
                    kindName(ObjectKind(magic)), kindName(kind));
  return TSR_FAIL(TSR_INVALID_ARGUMENT, "%s: %s is not a valid %s handle", call, what,
                  kindName(kind));
}

tsr_status_t checkPointer(const char *call, const char *what, const void *pointer) {
  if (pointer)
    return nullptr;
  return TSR_FAIL(TSR_INVALID_ARGUMENT, "%s: %s is NULL", call, what);
}

tsr_status_t checkRange(const char *call, const char *what, uint64_t offset, uint64_t length,
                        uint64_t size) {
  if (offset > UINT64_MAX - length)
    return TSR_FAIL(TSR_OUT_OF_RANGE,
                    "%s: %s range [%" PRIu64 ", %" PRIu64 " + %" PRIu64
                    ") overflows 64 bits (buffer size %" PRIu64 ")",
                    call, what, offset, offset, length, size);
  if (offset + length > size)
    return TSR_FAIL(TSR_OUT_OF_RANGE,
                    "%s: %s range [%" PRIu64 ", %" PRIu64 ") exceeds buffer size %" PRIu64, call,
                    what, offset, offset + length, size);
  return nullptr;
}

tsr_status_t checkSameDevice(const char *call, const char *what, const tsr_device_s *object_device,
                             const tsr_device_s *device) {
  if (object_device == device)
    return nullptr;
  const char *same = std::strcmp(object_device->info.name, device->info.name) == 0
                         ? " (opened separately: objects of one open are not usable with another)"
                         : "";
  return TSR_FAIL(TSR_INVALID_ARGUMENT, "%s: %s belongs to device '%s', not to device '%s'%s", call,
                  what, object_device->info.name, device->info.name, same);
}

tsr_status_t checkStructSize(const char *call, const char *what, uint32_t struct_size,
                             size_t minimum, size_t current) {
  if (struct_size >= minimum)
    return nullptr;
  return TSR_FAIL(TSR_INVALID_ARGUMENT,
                  "%s: %s->struct_size is %u, smaller than the smallest known layout (%zu "
                  "bytes); set it to sizeof (%zu)",
                  call, what, struct_size, minimum, current);
}

tsr_status_t checkLaunch(const char *call, const tsr_stream_s *stream, const tsr_kernel_s *kernel,
                         const uint32_t grid[3], const uint32_t workgroup[3], const tsr_arg_t *args,
                         uint32_t arg_count, std::vector<tsr_drv_arg_t> &driver_args,
                         std::vector<Object *> &used_buffers) {
  TSR_RETURN_IF_ERROR(checkPointer(call, "grid", grid));
  TSR_RETURN_IF_ERROR(checkPointer(call, "workgroup", workgroup));
  const KernelEntry &k = *kernel->entry;
  TSR_RETURN_IF_ERROR(checkDims(call, stream->device->info, k, grid, workgroup));
  if (arg_count != k.params.size())
    return TSR_FAIL(TSR_INVALID_ARGUMENT, "%s: kernel '%s' takes %zu arguments, got arg_count %u",
                    call, k.name.c_str(), k.params.size(), arg_count);
  if (arg_count > 0)
    TSR_RETURN_IF_ERROR(checkPointer(call, "args", args));
  driver_args.assign(arg_count, tsr_drv_arg_t{});
  for (uint32_t i = 0; i < arg_count; ++i) {
    const tsr_kernel_param_t &param = k.params[i];
    std::string label = argLabel(i, param);
    if (args[i].kind != param.kind)
      return TSR_FAIL(TSR_INVALID_ARGUMENT, "%s: %s has kind %s (%d), kernel '%s' expects %s", call,
                      label.c_str(), tsr_type_name(args[i].kind), int(args[i].kind), k.name.c_str(),
                      tsr_type_name(param.kind));
    driver_args[i].kind = param.kind;
    if (param.kind == TSR_TYPE_BUFFER)
      TSR_RETURN_IF_ERROR(
          checkBufferArg(call, label, args[i], stream, driver_args[i], used_buffers));
    else
      copyScalar(args[i], driver_args[i]);
  }
  return nullptr;
}

tsr_status_t annotate(const char *call, tsr_status_t status) {
  if (!status)
    return nullptr;
  // Already starts with the call ("call: ..." or "call (rank 0 of 2): ..."): once is enough.
  const char *message = tsr_status_message(status);
  const size_t n = std::strlen(call);
  if (std::strncmp(message, call, n) == 0 && (message[n] == ':' || message[n] == ' '))
    return status;
  tsr_status_t annotated =
      tsr_status_make(tsr_status_code(status), "%s: %s", call, tsr_status_message(status));
  tsr_status_free(status);
  return annotated;
}

} // namespace tessera::hal
