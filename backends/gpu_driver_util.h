// What the CUDA and ROCm drivers share, because their APIs mirror each other: opening the
// vendor library with dlopen, the HAL status code of a CUDA / HIP error number (HIP reuses
// CUDA's numbers), the owned copy of a tsr_gpu_module (gpu_module.h), kernel metadata, the
// kernelParams array of a launch (the kernel ABI of gpu_module.h), and the pinned staging
// of device-to-host copies.
//
// Header-only so that each driver library stands alone. Must never name a vendor API or
// type: each driver declares its own.
#pragma once

#include "backends/gpu_module.h"
#include "tessera/hal_driver.h"

#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace tessera::gpu {

template <typename T, typename Handle> T *as(Handle handle) {
  return reinterpret_cast<T *>(handle);
}
template <typename Handle, typename T> Handle handleOf(T *object) {
  return reinterpret_cast<Handle>(object);
}

/// dlopen of $envVar when it is set and non-empty (tests point it at a fake library), else
/// of each name in turn; on failure `*error` is the loader's message for the first name.
/// The library is never closed: unloading a vendor runtime whose threads may still run is
/// unsafe, and the HAL never unloads plugins either.
inline void *openVendorLibrary(const char *envVar, const std::vector<const char *> &names,
                               std::string *error) {
  std::vector<const char *> candidates = names;
  if (const char *path = std::getenv(envVar); path && *path)
    candidates = {path};
  error->clear();
  for (const char *name : candidates) {
    if (void *library = dlopen(name, RTLD_NOW | RTLD_LOCAL))
      return library;
    const char *why = dlerror();
    if (error->empty())
      *error = why ? why : std::string(name) + ": dlopen failed";
  }
  return nullptr;
}

/// One entry of a driver's symbol table: the exported name and where to store it.
struct Symbol {
  const char *name;
  void **slot;
};

/// Resolves every symbol; on failure names the first missing one.
inline bool resolveSymbols(void *library, const std::vector<Symbol> &symbols, std::string *error) {
  for (const Symbol &symbol : symbols) {
    *symbol.slot = dlsym(library, symbol.name);
    if (*symbol.slot)
      continue;
    const char *why = dlerror();
    *error = why ? why : std::string(symbol.name) + ": symbol not found";
    return false;
  }
  return true;
}

/// The HAL code of a CUDA / HIP error number (the two share numbering).
inline tsr_status_code_t statusCodeOfGpuError(int error) {
  switch (error) {
  case 2:   // OUT_OF_MEMORY / hipErrorOutOfMemory
  case 701: // LAUNCH_OUT_OF_RESOURCES
    return TSR_RESOURCE_EXHAUSTED;
  case 34:  // STUB_LIBRARY
  case 35:  // INSUFFICIENT_DRIVER
  case 46:  // DEVICE_UNAVAILABLE
  case 100: // NO_DEVICE
  case 803: // SYSTEM_DRIVER_MISMATCH
  case 804: // COMPAT_NOT_SUPPORTED_ON_DEVICE
    return TSR_UNAVAILABLE;
  case 1:   // INVALID_VALUE
  case 200: // INVALID_IMAGE
  case 209: // NO_BINARY_FOR_GPU
  case 218: // INVALID_PTX / hipErrorInvalidKernelFile
  case 222: // UNSUPPORTED_PTX_VERSION
  case 300: // INVALID_SOURCE
    return TSR_INVALID_ARGUMENT;
  case 500: // NOT_FOUND
    return TSR_NOT_FOUND;
  case 801: // NOT_SUPPORTED
    return TSR_UNIMPLEMENTED;
  default: // illegal address, launch failure, ...: the device or the driver is broken
    return TSR_INTERNAL;
  }
}

/// "NAME (description)", or just "NAME" when the library has no better description.
inline std::string describeGpuError(int error, const char *name, const char *description) {
  std::string text = name ? name : "error " + std::to_string(error);
  if (description && *description && (!name || std::strcmp(name, description) != 0))
    text += std::string(" (") + description + ")";
  return text;
}

/// A kernel of a loaded module: the metadata the HAL asks for, and the vendor function.
struct GpuKernel {
  std::string name;
  std::vector<std::string> paramNames;
  std::vector<tsr_kernel_param_t> params; // names point into paramNames
  uint32_t sharedMemoryBytes = 0;
  void *function = nullptr; // CUfunction / hipFunction_t
};

/// The driver's own copy of a tsr_gpu_module: nothing points into the caller's data.
struct GpuModuleCopy {
  std::vector<unsigned char> image; // may be empty for "cuda"
  std::string fallback;             // "cuda": the PTX text; else empty
  std::vector<GpuKernel> kernels;
};

/// stream_set_timeout of a driver whose kernels cannot be cancelled: a running CUDA / HIP
/// kernel only stops with its context, which would not leave the device usable. So no
/// deadlines: 0 (none) is accepted, anything else is UNIMPLEMENTED.
inline tsr_status_t refuseKernelTimeout(const char *driver, uint64_t timeoutNs) {
  if (timeoutNs == 0)
    return nullptr;
  return tsr_status_make(TSR_UNIMPLEMENTED,
                         "%s driver: kernel deadlines are not supported (a running kernel "
                         "cannot be cancelled without losing the context)",
                         driver);
}

inline bool validParamKind(tsr_type_t kind) {
  return kind >= TSR_TYPE_BUFFER && kind <= TSR_TYPE_F64;
}

/// Checks and copies a tsr_gpu_module. `driver` prefixes messages ("cuda driver");
/// `needsImage` is false only for "cuda", whose PTX fallback may stand alone.
inline tsr_status_t readGpuModule(const char *driver, const void *data, size_t size,
                                  bool needsImage, GpuModuleCopy &out) {
  if (size < sizeof(tsr_gpu_module))
    return tsr_status_make(TSR_INVALID_ARGUMENT,
                           "%s: size %zu is smaller than a tsr_gpu_module (%zu)", driver, size,
                           sizeof(tsr_gpu_module));
  tsr_gpu_module module;
  std::memcpy(&module, data, sizeof(module));
  if (module.struct_size < sizeof(tsr_gpu_module) || module.version != TSR_GPU_MODULE_VERSION)
    return tsr_status_make(TSR_INVALID_ARGUMENT,
                           "%s: tsr_gpu_module struct_size %u / version %u, this driver reads "
                           "size %zu version %d",
                           driver, module.struct_size, module.version, sizeof(tsr_gpu_module),
                           TSR_GPU_MODULE_VERSION);
  bool hasImage = module.image && module.image_size > 0;
  bool hasFallback = module.fallback && module.fallback_size > 0;
  if (needsImage && !hasImage)
    return tsr_status_make(TSR_INVALID_ARGUMENT, "%s: the module has no image", driver);
  if (!hasImage && !hasFallback)
    return tsr_status_make(TSR_INVALID_ARGUMENT, "%s: the module has neither an image nor PTX",
                           driver);
  if (hasFallback && static_cast<const char *>(module.fallback)[module.fallback_size - 1] != '\0')
    return tsr_status_make(TSR_INVALID_ARGUMENT,
                           "%s: the PTX fallback is not NUL-terminated within fallback_size %zu",
                           driver, module.fallback_size);
  if (module.kernel_count == 0 || !module.kernels)
    return tsr_status_make(TSR_INVALID_ARGUMENT, "%s: the module lists no kernels", driver);
  try {
    if (hasImage) {
      const auto *bytes = static_cast<const unsigned char *>(module.image);
      out.image.assign(bytes, bytes + module.image_size);
    }
    if (hasFallback)
      out.fallback.assign(static_cast<const char *>(module.fallback), module.fallback_size - 1);
    out.kernels.resize(module.kernel_count);
    std::set<std::string> names;
    for (uint32_t i = 0; i < module.kernel_count; ++i) {
      const tsr_gpu_kernel &in = module.kernels[i];
      GpuKernel &kernel = out.kernels[i];
      if (!in.name || !*in.name)
        return tsr_status_make(TSR_INVALID_ARGUMENT, "%s: module kernel %u has no name", driver, i);
      if (!names.insert(in.name).second)
        return tsr_status_make(TSR_INVALID_ARGUMENT, "%s: kernel name '%s' appears twice", driver,
                               in.name);
      if (in.param_count > 0 && !in.params)
        return tsr_status_make(TSR_INVALID_ARGUMENT,
                               "%s: kernel '%s' has %u parameters but params is NULL", driver,
                               in.name, in.param_count);
      kernel.name = in.name;
      kernel.sharedMemoryBytes = in.shared_memory_bytes;
      for (uint32_t p = 0; p < in.param_count; ++p) {
        if (!validParamKind(in.params[p].kind))
          return tsr_status_make(TSR_INVALID_ARGUMENT,
                                 "%s: kernel '%s' parameter %u has invalid kind %d", driver,
                                 in.name, p, int(in.params[p].kind));
        kernel.paramNames.push_back(in.params[p].name ? in.params[p].name : "");
        kernel.params.push_back({in.params[p].kind, nullptr});
      }
    }
  } catch (const std::bad_alloc &) {
    return tsr_status_make(TSR_RESOURCE_EXHAUSTED, "%s: out of host memory copying the module",
                           driver);
  }
  // The vectors are final: parameter names can point into them now.
  for (GpuKernel &kernel : out.kernels)
    for (size_t p = 0; p < kernel.params.size(); ++p)
      kernel.params[p].name = kernel.paramNames[p].empty() ? nullptr : kernel.paramNames[p].c_str();
  return nullptr;
}

/// Fills a zeroed current-size tsr_kernel_info_t (the HAL's promise) from a kernel.
inline void fillKernelInfo(const GpuKernel &kernel, tsr_kernel_info_t *out_info) {
  out_info->name = kernel.name.c_str();
  out_info->param_count = uint32_t(kernel.params.size());
  out_info->params = kernel.params.data();
  out_info->shared_memory_bytes = kernel.sharedMemoryBytes; // no required workgroup size
}

/// The kernelParams array of cuLaunchKernel / hipModuleLaunchKernel: one 8-byte slot per
/// argument holding a buffer's device address (base + offset) or a scalar's bits in its low
/// bytes (the host is little-endian, so an i8 or f16 parameter reads the right bytes), and
/// a pointer to each slot. The launch call copies the values, so this lives on the stack.
struct LaunchParams {
  std::vector<uint64_t> slots;
  std::vector<void *> pointers;
};

/// `addressOf(buffer)` is the device address of an allocation's first byte.
template <typename AddressOf>
tsr_status_t buildLaunchParams(const char *driver, const tsr_drv_arg_t *args, uint32_t count,
                               AddressOf addressOf, LaunchParams &out) {
  static_assert(sizeof(void *) == sizeof(uint64_t), "device pointers are 64-bit");
  try {
    out.slots.assign(count, 0);
    out.pointers.assign(count, nullptr);
  } catch (const std::bad_alloc &) {
    return tsr_status_make(TSR_RESOURCE_EXHAUSTED, "%s: out of host memory for a launch", driver);
  }
  for (uint32_t i = 0; i < count; ++i) {
    if (args[i].kind == TSR_TYPE_BUFFER)
      out.slots[i] = addressOf(args[i].value.buffer.buf) + args[i].value.buffer.offset;
    else
      std::memcpy(&out.slots[i], &args[i].value, sizeof(uint64_t));
    out.pointers[i] = &out.slots[i];
  }
  return nullptr;
}

/// Pinned host memory that a device-to-host copy lands in first, so that the enqueue never
/// waits: into pageable memory cuMemcpyAsync / hipMemcpyAsync return only once the copy is
/// done. A host callback enqueued after the copy runs finish(), which copies the block to
/// the caller's memory and returns it to the free list (no vendor call: callbacks must not
/// make one). Blocks are freed by clear(), when nothing is in flight, or when the free list
/// outgrows kTrimBytes (freeing pinned memory may wait for the device, so only then).
class StagingPool {
public:
  struct Block {
    StagingPool *pool = nullptr;
    void *pinned = nullptr;
    size_t capacity = 0;
    void *dst = nullptr; // the copy in flight
    size_t length = 0;
    Block *next = nullptr; // free list link
  };

  /// The smallest free block that fits, else a new one from allocPinned(size, void **)
  /// (returning tsr_status_t). Call it where the vendor API may be called.
  template <typename Alloc, typename Free>
  tsr_status_t acquire(const char *driver, size_t length, Alloc allocPinned, Free freePinned,
                       Block **out_block) {
    Block *trimmed = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      Block **best = nullptr;
      for (Block **link = &free_; *link; link = &(*link)->next)
        if ((*link)->capacity >= length && (!best || (*link)->capacity < (*best)->capacity))
          best = link;
      if (best) {
        *out_block = *best;
        *best = (*best)->next;
        freeBytes_ -= (*out_block)->capacity;
        return nullptr;
      }
      if (freeBytes_ > kTrimBytes) { // every free block is too small: drop them
        trimmed = std::exchange(free_, nullptr);
        freeBytes_ = 0;
      }
    }
    destroy(trimmed, freePinned);
    auto *block = new (std::nothrow) Block;
    if (!block)
      return tsr_status_make(TSR_RESOURCE_EXHAUSTED, "%s: out of host memory", driver);
    block->pool = this;
    block->capacity = (length + kGranule - 1) / kGranule * kGranule;
    if (tsr_status_t status = allocPinned(block->capacity, &block->pinned)) {
      delete block;
      return status;
    }
    *out_block = block;
    return nullptr;
  }

  void release(Block *block) {
    std::lock_guard<std::mutex> lock(mutex_);
    block->next = free_;
    free_ = block;
    freeBytes_ += block->capacity;
  }

  /// The host callback's work: safe on any thread, makes no vendor call.
  static void finish(void *data) {
    auto *block = static_cast<Block *>(data);
    std::memcpy(block->dst, block->pinned, block->length);
    block->pool->release(block);
  }

  /// Frees every block (device close: no copy is in flight).
  template <typename Free> void clear(Free freePinned) {
    std::lock_guard<std::mutex> lock(mutex_);
    destroy(std::exchange(free_, nullptr), freePinned);
    freeBytes_ = 0;
  }

private:
  static constexpr size_t kGranule = size_t(64) << 10;
  static constexpr size_t kTrimBytes = size_t(256) << 20;

  template <typename Free> static void destroy(Block *list, Free freePinned) {
    while (Block *block = list) {
      list = block->next;
      freePinned(block->pinned);
      delete block;
    }
  }

  std::mutex mutex_;
  Block *free_ = nullptr;
  size_t freeBytes_ = 0;
};

} // namespace tessera::gpu
