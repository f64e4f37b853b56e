// The buffer object: an allocation or a view of one. Views are resolved here, so a driver
// only ever sees allocations plus absolute offsets.
//
// Only the root (the allocation) owns driver memory and the map state of that memory; a
// view owns nothing but an internal reference to its parent.
#pragma once

#include "hal/src/device.h"
#include "hal/src/object.h"

#include <atomic>
#include <cstdint>
#include <mutex>

struct tsr_buffer_s final : tessera::hal::Handle<tsr_buffer_s> {
  static constexpr tessera::hal::ObjectKind kKind = tessera::hal::ObjectKind::Buffer;

  tsr_device_s *device = nullptr; // internal reference
  tsr_buffer_s *parent = nullptr; // internal reference; NULL for an allocation
  tsr_buffer_s *root = nullptr;   // the allocation (this, or kept alive through `parent`)
  uint64_t offset = 0;            // of this view within the allocation
  uint64_t size = 0;
  tsr_memory_kind_t kind = 0;
  tsr_drv_buffer_t handle = nullptr; // the allocation's driver buffer
  std::atomic<bool> mapped{false};   // this handle is mapped

  // Root only: maps of the allocation through any of its handles, counted.
  std::mutex mapMutex;
  uint32_t mapCount = 0;
  void *mapBase = nullptr;
  // Root of an import only: told when the caller's memory is free (after buffer_free).
  tsr_buffer_release_fn release = nullptr;
  void *releaseData = nullptr;

  void destroy();
};
