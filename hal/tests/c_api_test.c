/* The C ABI used from C99: includes both public C headers, loads the null plugin, lists the
 * devices, opens null:0 and sees UNIMPLEMENTED from it. Called by c_api_test.cpp.
 *
 * Test-only. Compiled with -std=c99 -pedantic so any C++-ism in the headers fails here.
 */
#include "tessera/hal.h"
#include "tessera/hal_driver.h"

#include <stdio.h>
#include <string.h>

int tsr_c_api_smoke(const char *plugin_path, char *error, size_t error_size);

#define CHECK(cond, ...)                                                                           \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      snprintf(error, error_size, __VA_ARGS__);                                                    \
      goto done;                                                                                   \
    }                                                                                              \
  } while (0)

int tsr_c_api_smoke(const char *plugin_path, char *error, size_t error_size) {
  int ok = 0;
  tsr_registry_t registry = NULL;
  tsr_device_t device = NULL;
  tsr_buffer_t buffer = NULL;
  tsr_status_t status = NULL;
  uint32_t count = 0;
  tsr_device_info_t info;
  tsr_arg_t arg = tsr_arg_f64(2.5);

  CHECK(arg.kind == TSR_TYPE_F64 && arg.value.f64 == 2.5, "tsr_arg_f64");
  status = tsr_registry_create(&registry);
  CHECK(status == NULL, "create: %s", tsr_status_message(status));
  status = tsr_registry_load_plugins(registry, plugin_path);
  CHECK(status == NULL, "load: %s", tsr_status_message(status));
  status = tsr_registry_device_count(registry, &count);
  CHECK(status == NULL && count == 1, "count %u", (unsigned)count);
  memset(&info, 0, sizeof(info));
  info.struct_size = sizeof(info);
  status = tsr_registry_device_info(registry, 0, &info);
  CHECK(status == NULL && strcmp(info.name, "null:0") == 0, "info name '%s'", info.name);
  status = tsr_registry_open_device(registry, "null:0", &device);
  CHECK(status == NULL, "open: %s", tsr_status_message(status));
  status = tsr_buffer_allocate(device, 64, TSR_MEMORY_DEVICE_LOCAL, &buffer);
  CHECK(tsr_status_code(status) == TSR_UNIMPLEMENTED && buffer == NULL, "allocate: %s",
        tsr_status_message(status));
  CHECK(strstr(tsr_status_message(status), "null driver: buffer_allocate not implemented"),
        "message: %s", tsr_status_message(status));
  ok = 1;
done:
  tsr_status_free(status);
  tsr_device_release(device);
  tsr_registry_release(registry);
  return ok;
}
