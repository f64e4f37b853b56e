// The registry: registering drivers (built-in tables and, via loader.cpp, plugins),
// enumerating their devices, recording unavailable backends, and opening devices by name.
//
// Must never refuse to start because a backend is missing: an absent backend is a record
// in `unavailable`, not an error. Must never keep a pointer into a caller's driver table.
#include "hal/src/registry.h"

#include "hal/src/device.h"

#include <cstdio>
#include <cstring>
#include <string>

using namespace tessera::hal;

namespace tessera::hal {
namespace {

constexpr size_t kMaxBackendName = 32;

bool validBackendName(const char *name) {
  size_t length = std::strlen(name);
  if (length == 0 || length > kMaxBackendName)
    return false;
  for (size_t i = 0; i < length; ++i) {
    char c = name[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
      return false;
  }
  return true;
}

// The driver section must be present in every table.
tsr_status_t checkRequiredEntries(const char *call, const tsr_driver_v1 &t) {
  struct Required {
    const void *fn;
    const char *name;
  };
  const Required required[] = {
      {reinterpret_cast<const void *>(t.driver_open), "driver_open"},
      {reinterpret_cast<const void *>(t.driver_close), "driver_close"},
      {reinterpret_cast<const void *>(t.device_count), "device_count"},
      {reinterpret_cast<const void *>(t.device_info), "device_info"},
      {reinterpret_cast<const void *>(t.device_open), "device_open"},
      {reinterpret_cast<const void *>(t.device_close), "device_close"},
  };
  for (const Required &r : required)
    if (!r.fn)
      return TSR_FAIL(TSR_INVALID_ARGUMENT, "%s: driver '%s' lacks the required entry point %s",
                      call, t.name, r.name);
  // Optional entries come in groups: a driver that can create an object must be able to
  // use and destroy it, or the HAL could not tear it down.
  struct Group {
    const void *creator;
    const void *needed;
    const char *creatorName;
    const char *neededName;
  };
  auto fn = [](auto f) { return reinterpret_cast<const void *>(f); };
  const Group groups[] = {
      {fn(t.buffer_allocate), fn(t.buffer_free), "buffer_allocate", "buffer_free"},
      {fn(t.buffer_map), fn(t.buffer_unmap), "buffer_map", "buffer_unmap"},
      {fn(t.stream_create), fn(t.stream_destroy), "stream_create", "stream_destroy"},
      {fn(t.stream_create), fn(t.stream_synchronize), "stream_create", "stream_synchronize"},
      {fn(t.event_create), fn(t.event_destroy), "event_create", "event_destroy"},
      {fn(t.executable_create), fn(t.executable_destroy), "executable_create",
       "executable_destroy"},
      {fn(t.executable_create), fn(t.executable_kernel_count), "executable_create",
       "executable_kernel_count"},
      {fn(t.executable_create), fn(t.executable_kernel), "executable_create", "executable_kernel"},
  };
  for (const Group &g : groups)
    if (g.creator && !g.needed)
      return TSR_FAIL(TSR_INVALID_ARGUMENT, "%s: driver '%s' provides %s but not %s", call, t.name,
                      g.creatorName, g.neededName);
  return nullptr;
}

// Copies the table, treating everything past the driver's struct_size as absent.
void copyTable(const tsr_driver_v1 *table, DriverRecord &record) {
  std::memset(&record.table, 0, sizeof(record.table));
  size_t size =
      table->struct_size < sizeof(tsr_driver_v1) ? table->struct_size : sizeof(tsr_driver_v1);
  std::memcpy(&record.table, table, size);
  record.declaredSize = table->struct_size;
  record.table.struct_size = uint32_t(sizeof(tsr_driver_v1));
}

// Asks the opened driver for its devices.
tsr_status_t enumerate(DriverRecord &record, std::vector<DeviceRecord> &out) {
  uint32_t count = 0;
  if (tsr_status_t s = record.table.device_count(record.handle, &count))
    return s;
  for (uint32_t i = 0; i < count; ++i) {
    DeviceRecord device = {&record, i, {}};
    device.info.struct_size = sizeof(tsr_device_info_t);
    if (tsr_status_t s = record.table.device_info(record.handle, i, &device.info))
      return s;
    device.info.struct_size = sizeof(tsr_device_info_t);
    std::snprintf(device.info.name, sizeof(device.info.name), "%s:%u", record.name.c_str(), i);
    std::snprintf(device.info.backend, sizeof(device.info.backend), "%s", record.name.c_str());
    out.push_back(device);
  }
  return nullptr;
}

// Records `status` as the reason, without the "call: " prefix the caller sees.
void setReason(std::string *reason_out, const char *call, tsr_status_t status) {
  if (!reason_out)
    return;
  const char *message = tsr_status_message(status);
  size_t prefix = std::strlen(call);
  if (std::strncmp(message, call, prefix) == 0 && std::strncmp(message + prefix, ": ", 2) == 0)
    message += prefix + 2;
  *reason_out = message;
}

} // namespace

tsr_status_t absentEntry(const char *call, const DriverRecord &driver, const char *entry) {
  return TSR_FAIL(TSR_UNIMPLEMENTED, "%s: driver '%s' (ABI %u.%u) does not implement %s", call,
                  driver.name.c_str(), unsigned(driver.table.abi_major),
                  unsigned(driver.table.abi_minor), entry);
}

void addUnavailable(tsr_registry_s *registry, std::string backend, std::string reason) {
  std::lock_guard<std::mutex> lock(registry->mutex);
  registry->unavailable.push_back({std::move(backend), std::move(reason)});
}

tsr_status_t registerDriver(tsr_registry_s *registry, const tsr_driver_v1 *table,
                            const std::string &origin, const char *call, std::string *backend_out,
                            std::string *reason_out) {
  tsr_status_t status = [&]() -> tsr_status_t {
    TSR_RETURN_IF_ERROR(checkPointer(call, "driver", table));
    if (table->struct_size < TSR_DRIVER_V1_MIN_SIZE)
      return TSR_FAIL(TSR_INVALID_ARGUMENT,
                      "%s: driver table struct_size %u is smaller than the minimum %zu", call,
                      table->struct_size, size_t(TSR_DRIVER_V1_MIN_SIZE));
    if (!table->name || !validBackendName(table->name))
      return TSR_FAIL(TSR_INVALID_ARGUMENT,
                      "%s: driver name '%s' is not a backend name ([a-z0-9_]{1,%zu})", call,
                      table->name ? table->name : "(null)", kMaxBackendName);
    if (backend_out)
      *backend_out = table->name;
    if (table->abi_major != TSR_DRIVER_ABI_MAJOR)
      return TSR_FAIL(TSR_UNAVAILABLE,
                      "%s: driver '%s' was built for driver ABI %u.%u but this HAL speaks "
                      "%u.%u; major versions must match (rebuild the driver)",
                      call, table->name, unsigned(table->abi_major), unsigned(table->abi_minor),
                      unsigned(TSR_DRIVER_ABI_MAJOR), unsigned(TSR_DRIVER_ABI_MINOR));
    return nullptr;
  }();
  if (status) {
    setReason(reason_out, call, status);
    return status;
  }

  std::lock_guard<std::mutex> lock(registry->mutex);
  for (const auto &existing : registry->drivers) {
    if (existing->name != table->name)
      continue;
    status = TSR_FAIL(TSR_INVALID_ARGUMENT, "%s: backend '%s' is already registered (by %s)", call,
                      table->name, existing->origin.c_str());
    setReason(reason_out, call, status);
    return status;
  }
  auto record = std::make_unique<DriverRecord>();
  copyTable(table, *record);
  record->name = table->name;
  record->origin = origin;
  status = checkRequiredEntries(call, record->table);
  if (status) {
    setReason(reason_out, call, status);
    return status;
  }
  status = record->table.driver_open(&record->handle);
  std::vector<DeviceRecord> devices;
  if (!status) {
    status = enumerate(*record, devices);
    if (status)
      record->table.driver_close(record->handle);
  }
  if (status) {
    setReason(reason_out, call, status);
    tsr_status_t annotated = annotate(call, status);
    return annotated;
  }
  registry->devices.insert(registry->devices.end(), devices.begin(), devices.end());
  registry->drivers.push_back(std::move(record));
  return nullptr;
}

} // namespace tessera::hal

void tsr_registry_s::destroy() {
  // Every device holds the registry, so all of them are closed by now.
  for (auto &driver : drivers)
    driver->table.driver_close(driver->handle);
  // Plugin libraries stay loaded: unloading code that may have registered thread-exit or
  // atexit handlers is unsafe, and PJRT plugins are never unloaded either.
}

extern "C" {

tsr_status_t tsr_registry_create(tsr_registry_t *out_registry) {
  static const char *kCall = "tsr_registry_create";
  TSR_RETURN_IF_ERROR(checkPointer(kCall, "out_registry", out_registry));
  *out_registry = nullptr;
  *out_registry = new tsr_registry_s;
  return nullptr;
}

void tsr_registry_retain(tsr_registry_t registry) {
  retainHandle(registry, ObjectKind::Registry, "tsr_registry_retain");
}

void tsr_registry_release(tsr_registry_t registry) {
  releaseHandle(registry, ObjectKind::Registry, "tsr_registry_release");
}

tsr_status_t tsr_registry_register_driver(tsr_registry_t registry, const tsr_driver_v1 *driver) {
  static const char *kCall = "tsr_registry_register_driver";
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "registry", registry));
  std::string backend, reason;
  tsr_status_t status = registerDriver(registry, driver, "built-in", kCall, &backend, &reason);
  if (tsr_status_code(status) == TSR_UNAVAILABLE)
    addUnavailable(registry, backend, reason);
  return status;
}

tsr_status_t tsr_registry_device_count(tsr_registry_t registry, uint32_t *out_count) {
  static const char *kCall = "tsr_registry_device_count";
  TSR_RETURN_IF_ERROR(checkPointer(kCall, "out_count", out_count));
  *out_count = 0;
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "registry", registry));
  std::lock_guard<std::mutex> lock(registry->mutex);
  *out_count = uint32_t(registry->devices.size());
  return nullptr;
}

tsr_status_t tsr_registry_device_info(tsr_registry_t registry, uint32_t index,
                                      tsr_device_info_t *out_info) {
  static const char *kCall = "tsr_registry_device_info";
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "registry", registry));
  TSR_RETURN_IF_ERROR(checkPointer(kCall, "out_info", out_info));
  TSR_RETURN_IF_ERROR(checkStructSize(kCall, "out_info", out_info->struct_size, kDeviceInfoV1Size,
                                      sizeof(tsr_device_info_t)));
  std::lock_guard<std::mutex> lock(registry->mutex);
  if (index >= registry->devices.size())
    return TSR_FAIL(TSR_OUT_OF_RANGE, "%s: index %u is not below the device count %zu", kCall,
                    index, registry->devices.size());
  copyDeviceInfo(registry->devices[index].info, out_info);
  return nullptr;
}

tsr_status_t tsr_registry_unavailable_count(tsr_registry_t registry, uint32_t *out_count) {
  static const char *kCall = "tsr_registry_unavailable_count";
  TSR_RETURN_IF_ERROR(checkPointer(kCall, "out_count", out_count));
  *out_count = 0;
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "registry", registry));
  std::lock_guard<std::mutex> lock(registry->mutex);
  *out_count = uint32_t(registry->unavailable.size());
  return nullptr;
}

tsr_status_t tsr_registry_unavailable(tsr_registry_t registry, uint32_t index,
                                      tsr_unavailable_t *out_record) {
  static const char *kCall = "tsr_registry_unavailable";
  TSR_RETURN_IF_ERROR(checkPointer(kCall, "out_record", out_record));
  *out_record = {};
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "registry", registry));
  std::lock_guard<std::mutex> lock(registry->mutex);
  if (index >= registry->unavailable.size())
    return TSR_FAIL(TSR_OUT_OF_RANGE, "%s: index %u is not below the unavailable count %zu", kCall,
                    index, registry->unavailable.size());
  out_record->backend = registry->unavailable[index].backend.c_str();
  out_record->reason = registry->unavailable[index].reason.c_str();
  return nullptr;
}

tsr_status_t tsr_registry_open_device(tsr_registry_t registry, const char *name,
                                      tsr_device_t *out_device) {
  static const char *kCall = "tsr_registry_open_device";
  TSR_RETURN_IF_ERROR(checkPointer(kCall, "out_device", out_device));
  *out_device = nullptr;
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "registry", registry));
  TSR_RETURN_IF_ERROR(checkPointer(kCall, "name", name));
  DeviceRecord found = {};
  {
    std::lock_guard<std::mutex> lock(registry->mutex);
    std::string known, absent;
    for (const DeviceRecord &d : registry->devices) {
      if (std::strcmp(d.info.name, name) == 0) {
        found = d;
        break;
      }
      known += (known.empty() ? "" : ", ") + std::string(d.info.name);
    }
    if (!found.driver) {
      for (const UnavailableRecord &u : registry->unavailable)
        absent += (absent.empty() ? "" : "; ") + u.backend + " (" + u.reason + ")";
      return TSR_FAIL(TSR_NOT_FOUND, "%s: no device named '%s'; known devices: %s%s%s", kCall, name,
                      known.empty() ? "(none)" : known.c_str(),
                      absent.empty() ? "" : "; unavailable: ", absent.c_str());
    }
  }
  tsr_drv_device_t handle = nullptr;
  TSR_RETURN_IF_ERROR(
      annotate(kCall, found.driver->table.device_open(found.driver->handle, found.index, &handle)));
  auto *device = new tsr_device_s;
  device->registry = registry;
  registry->retainInternal();
  device->driver = found.driver;
  device->handle = handle;
  device->info = found.info;
  *out_device = device;
  return nullptr;
}

} // extern "C"
