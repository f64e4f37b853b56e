/* A test plugin built as if against driver ABI 1.0: its struct_size stops before
 * stream_query (added in 1.1). The memory where stream_query would be holds a function
 * that fails loudly, proving the HAL never reads past struct_size.
 *
 * Written in C99 on purpose: it also proves hal_driver.h serves C drivers. Test-only; its
 * stream is a synchronous no-op.
 */
#include "tessera/hal_driver.h"

#include <stdio.h>
#include <string.h>

static char driver_tag, device_tag, stream_tag;

static tsr_status_t driver_open(tsr_drv_driver_t *out_driver) {
  *out_driver = (tsr_drv_driver_t)&driver_tag;
  return NULL;
}
static void driver_close(tsr_drv_driver_t driver) { (void)driver; }
static tsr_status_t device_count(tsr_drv_driver_t driver, uint32_t *out_count) {
  (void)driver;
  *out_count = 1;
  return NULL;
}
static tsr_status_t device_info(tsr_drv_driver_t driver, uint32_t index,
                                tsr_device_info_t *out_info) {
  (void)driver;
  (void)index;
  snprintf(out_info->vendor, sizeof(out_info->vendor), "Old Minor Ltd.");
  return NULL;
}
static tsr_status_t device_open(tsr_drv_driver_t driver, uint32_t index,
                                tsr_drv_device_t *out_device) {
  (void)driver;
  (void)index;
  *out_device = (tsr_drv_device_t)&device_tag;
  return NULL;
}
static void device_close(tsr_drv_device_t device) { (void)device; }
static tsr_status_t stream_create(tsr_drv_device_t device, tsr_drv_stream_t *out_stream) {
  (void)device;
  *out_stream = (tsr_drv_stream_t)&stream_tag;
  return NULL;
}
static void stream_destroy(tsr_drv_device_t device, tsr_drv_stream_t stream) {
  (void)device;
  (void)stream;
}
static tsr_status_t stream_synchronize(tsr_drv_device_t device, tsr_drv_stream_t stream) {
  (void)device;
  (void)stream;
  return NULL;
}
static tsr_status_t must_not_be_called(tsr_drv_device_t device, tsr_drv_stream_t stream,
                                       bool *out_idle) {
  (void)device;
  (void)stream;
  *out_idle = true;
  return tsr_status_make(TSR_INTERNAL, "oldminor: the HAL read past struct_size");
}

static tsr_driver_v1 table;

TSR_DRIVER_EXPORT const tsr_driver_v1 *tsr_driver_entry(void) {
  memset(&table, 0, sizeof(table));
  table.struct_size = (uint32_t)TSR_DRIVER_V1_0_SIZE;
  table.abi_major = 1;
  table.abi_minor = 0;
  table.name = "oldminor";
  table.driver_open = driver_open;
  table.driver_close = driver_close;
  table.device_count = device_count;
  table.device_info = device_info;
  table.device_open = device_open;
  table.device_close = device_close;
  table.stream_create = stream_create;
  table.stream_destroy = stream_destroy;
  table.stream_synchronize = stream_synchronize;
  table.stream_query = must_not_be_called; /* beyond struct_size */
  return &table;
}
