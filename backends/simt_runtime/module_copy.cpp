// Copying and checking a tsr_gpu_module, and a launch's kernelParams (see module_copy.h).
//
// Must never read past the sizes the module declares, nor crash on a malformed one: every
// defect is INVALID_ARGUMENT naming what is wrong.
#include "backends/simt_runtime/module_copy.h"

#include "backends/gpu_module.h"

#include <cstring>
#include <new>
#include <set>

namespace tessera::simt {
namespace {

bool validParamKind(tsr_type_t kind) { return kind >= TSR_TYPE_BUFFER && kind <= TSR_TYPE_F64; }

} // namespace

tsr_status_t readGpuModule(const char *driver, const void *data, size_t size, bool needsImage,
                           GpuModuleCopy &out) {
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

void fillKernelInfo(const GpuKernel &kernel, tsr_kernel_info_t *out_info) {
  out_info->name = kernel.name.c_str();
  out_info->param_count = uint32_t(kernel.params.size());
  out_info->params = kernel.params.data();
  out_info->shared_memory_bytes = kernel.sharedMemoryBytes; // no required workgroup size
}

} // namespace tessera::simt
