// Level Zero executables and launch: a TSR_LEVELZERO_FORMAT module (SPIR-V) built with
// zeModuleCreate (a failed build's status carries the build log), one ze kernel per entry,
// and launches that pass arguments per levelzero_abi.h with a control block each.
//
// Must never read a control block before its launch has completed (stream.cpp's FaultLog
// reads it), nor change a kernel's arguments while another thread appends it.
#include "backends/gpu_module.h"
#include "backends/levelzero/levelzero_abi.h"
#include "backends/levelzero/runtime/internal.h"

#include <cstring>

namespace tessera::levelzero {
namespace {

constexpr uint32_t kSpirvMagic = 0x07230203;

ZeDeviceObj &deviceOf(tsr_drv_device_t d) { return *as<ZeDeviceObj>(d); }

/// Checks the module enough that zeModuleCreate gets SPIR-V words.
tsr_status_t checkModule(const tsr_gpu_module *m, size_t size) {
  if (size < offsetof(tsr_gpu_module, control_bindings) ||
      m->struct_size < offsetof(tsr_gpu_module, control_bindings))
    return tsr_status_make(TSR_INVALID_ARGUMENT,
                           "%s: a \"%s\" executable is a tsr_gpu_module (got %zu bytes)",
                           kDriverPrefix, TSR_LEVELZERO_FORMAT, size);
  if (m->version != TSR_GPU_MODULE_VERSION)
    return tsr_status_make(TSR_INVALID_ARGUMENT, "%s: tsr_gpu_module version %u (expected %u)",
                           kDriverPrefix, m->version, TSR_GPU_MODULE_VERSION);
  uint32_t magic = 0;
  if (m->image && m->image_size >= 4)
    std::memcpy(&magic, m->image, 4);
  if (!m->image || m->image_size % 4 != 0 || magic != kSpirvMagic)
    return tsr_status_make(TSR_INVALID_ARGUMENT,
                           "%s: the module's image is not SPIR-V (%zu bytes, first word 0x%08x; "
                           "expected a multiple of 4 bytes starting with 0x%08x)",
                           kDriverPrefix, m->image_size, magic, kSpirvMagic);
  if (m->kernel_count && !m->kernels)
    return tsr_status_make(TSR_INVALID_ARGUMENT, "%s: %u kernels listed without their table",
                           kDriverPrefix, m->kernel_count);
  return nullptr;
}

/// zeModuleCreate's status with its build log appended.
tsr_status_t buildFailure(const ZeApi &api, ze_result_t r, ze_module_build_log_handle_t log) {
  std::string text;
  size_t size = 0;
  if (log && api.zeModuleBuildLogGetString(log, &size, nullptr) == ZE_RESULT_SUCCESS && size) {
    text.resize(size);
    if (api.zeModuleBuildLogGetString(log, &size, text.data()) != ZE_RESULT_SUCCESS)
      text.clear();
    text.resize(std::strlen(text.c_str())); // the log's size counts its NUL
  }
  tsr_status_t s = zeStatus("zeModuleCreate", r);
  tsr_status_t withLog =
      tsr_status_make(tsr_status_code(s), "%s; build log:\n%s", tsr_status_message(s),
                      text.empty() ? "(empty)" : text.c_str());
  tsr_status_free(s);
  return withLog;
}

void destroyExecutable(const ZeApi &api, ZeExecutableObj *e) {
  for (auto &k : e->kernels)
    if (k->kernel)
      api.zeKernelDestroy(k->kernel);
  if (e->module)
    api.zeModuleDestroy(e->module);
  delete e;
}

} // namespace

tsr_status_t executableCreate(tsr_drv_device_t device, const char *format, const void *data,
                              size_t size, tsr_drv_executable_t *out_executable) {
  ZeDeviceObj &dev = deviceOf(device);
  const ZeApi &api = dev.api();
  if (std::strcmp(format, TSR_LEVELZERO_FORMAT) != 0)
    return tsr_status_make(TSR_UNIMPLEMENTED,
                           "%s: unknown executable format \"%s\" (accepted: "
                           "\"%s\")",
                           kDriverPrefix, format, TSR_LEVELZERO_FORMAT);
  const auto *m = static_cast<const tsr_gpu_module *>(data);
  if (tsr_status_t s = checkModule(m, size))
    return s;

  ze_module_desc_t md = {};
  md.stype = ZE_STRUCTURE_TYPE_MODULE_DESC;
  md.format = ZE_MODULE_FORMAT_IL_SPIRV;
  md.inputSize = m->image_size;
  md.pInputModule = static_cast<const uint8_t *>(m->image);
  md.pBuildFlags = "";
  auto *e = new ZeExecutableObj;
  ze_module_build_log_handle_t log = nullptr;
  ze_result_t r = api.zeModuleCreate(dev.context(), dev.phys->device, &md, &e->module, &log);
  if (r != ZE_RESULT_SUCCESS) {
    tsr_status_t s = buildFailure(api, r, log);
    if (log)
      api.zeModuleBuildLogDestroy(log);
    e->module = nullptr;
    destroyExecutable(api, e);
    return s;
  }
  if (log)
    api.zeModuleBuildLogDestroy(log);

  for (uint32_t i = 0; i < m->kernel_count; ++i) {
    const tsr_gpu_kernel &gk = m->kernels[i];
    auto k = std::make_unique<ZeKernelObj>();
    k->name = gk.name ? gk.name : "";
    for (uint32_t p = 0; p < gk.param_count; ++p)
      k->paramNames.push_back(gk.params[p].name ? gk.params[p].name : "");
    for (uint32_t p = 0; p < gk.param_count; ++p)
      k->params.push_back(
          {gk.params[p].kind, gk.params[p].name ? k->paramNames[p].c_str() : nullptr});
    k->sharedBytes = gk.shared_memory_bytes;
    ze_kernel_desc_t kd = {};
    kd.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC;
    kd.pKernelName = k->name.c_str();
    if (ze_result_t kr = api.zeKernelCreate(e->module, &kd, &k->kernel)) {
      tsr_status_t s = zeStatus("zeKernelCreate", kr);
      tsr_status_t named = tsr_status_make(tsr_status_code(s), "%s (kernel \"%s\")",
                                           tsr_status_message(s), k->name.c_str());
      tsr_status_free(s);
      destroyExecutable(api, e);
      return named;
    }
    e->kernels.push_back(std::move(k));
  }
  *out_executable = handleOf<tsr_drv_executable_t>(e);
  return nullptr;
}

void executableDestroy(tsr_drv_device_t device, tsr_drv_executable_t executable) {
  destroyExecutable(deviceOf(device).api(), as<ZeExecutableObj>(executable));
}

tsr_status_t executableKernelCount(tsr_drv_device_t, tsr_drv_executable_t executable,
                                   uint32_t *out_count) {
  *out_count = uint32_t(as<ZeExecutableObj>(executable)->kernels.size());
  return nullptr;
}

tsr_status_t executableKernel(tsr_drv_device_t, tsr_drv_executable_t executable, uint32_t index,
                              tsr_kernel_info_t *out_info, tsr_drv_kernel_t *out_kernel) {
  ZeKernelObj &k = *as<ZeExecutableObj>(executable)->kernels[index];
  out_info->name = k.name.c_str();
  out_info->param_count = uint32_t(k.params.size());
  out_info->params = k.params.data();
  out_info->shared_memory_bytes = k.sharedBytes;
  *out_kernel = handleOf<tsr_drv_kernel_t>(&k);
  return nullptr;
}

namespace {

/// Sets argument `*index` (and advances it).
tsr_status_t setArg(const ZeApi &api, ZeKernelObj &k, uint32_t *index, size_t size,
                    const void *value) {
  if (ze_result_t r = api.zeKernelSetArgumentValue(k.kernel, *index, size, value)) {
    tsr_status_t s = zeStatus("zeKernelSetArgumentValue", r);
    tsr_status_t named = tsr_status_make(tsr_status_code(s), "%s (kernel @%s, argument %u)",
                                         tsr_status_message(s), k.name.c_str(), *index);
    tsr_status_free(s);
    return named;
  }
  ++*index;
  return nullptr;
}

/// The arguments of levelzero_abi.h: per parameter (base, offset, bytes) or the scalar,
/// then the workgroup size x, y, z, then the control block.
tsr_status_t setArgs(const ZeApi &api, ZeKernelObj &k, const uint32_t wg[3],
                     const tsr_drv_arg_t *args, uint32_t count, uint32_t *control) {
  uint32_t index = 0;
  for (uint32_t i = 0; i < count; ++i) {
    const tsr_drv_arg_t &a = args[i];
    tsr_status_t s = nullptr;
    if (a.kind == TSR_TYPE_BUFFER) {
      void *base = as<ZeBufferObj>(a.value.buffer.buf)->ptr;
      if (!(s = setArg(api, k, &index, sizeof base, &base)) &&
          !(s = setArg(api, k, &index, sizeof(uint64_t), &a.value.buffer.offset)))
        s = setArg(api, k, &index, sizeof(uint64_t), &a.value.buffer.length);
    } else {
      // Every scalar lies at the start of the union, little-endian, tsr_type_size bytes.
      s = setArg(api, k, &index, tsr_type_size(a.kind), &a.value);
    }
    if (s)
      return s;
  }
  for (int d = 0; d < 3; ++d)
    if (tsr_status_t s = setArg(api, k, &index, sizeof(uint32_t), &wg[d]))
      return s;
  return setArg(api, k, &index, sizeof control, &control);
}

} // namespace

tsr_status_t streamLaunch(tsr_drv_device_t device, tsr_drv_stream_t stream, tsr_drv_kernel_t kernel,
                          const uint32_t grid[3], const uint32_t workgroup[3],
                          const tsr_drv_arg_t *args, uint32_t arg_count) {
  ZeDeviceObj &dev = deviceOf(device);
  const ZeApi &api = dev.api();
  ZeStreamObj &s = *as<ZeStreamObj>(stream);
  ZeKernelObj &k = *as<ZeKernelObj>(kernel);
  uint32_t *control = nullptr;
  if (tsr_status_t st = dev.controls.acquire(dev, &control))
    return st;
  tsr_status_t failure = nullptr;
  {
    std::lock_guard<std::mutex> kernelLock(k.mutex);
    // A 1-D workgroup of x*y*z work-items (levelzero_abi.h); the kernel rebuilds x, y, z.
    uint32_t linear = workgroup[0] * workgroup[1] * workgroup[2];
    if (ze_result_t r = api.zeKernelSetGroupSize(k.kernel, linear, 1, 1))
      failure = zeStatus("zeKernelSetGroupSize", r);
    if (!failure)
      failure = setArgs(api, k, workgroup, args, arg_count, control);
    if (!failure) {
      // Arguments are captured when the launch is appended, so the kernel lock ends after.
      std::lock_guard<std::mutex> streamLock(s.mutex);
      ze_group_count_t groups = {grid[0], grid[1], grid[2]};
      failure = s.orderNext();
      if (!failure)
        if (ze_result_t r =
                api.zeCommandListAppendLaunchKernel(s.list, k.kernel, &groups, nullptr, 0, nullptr))
          failure = zeStatus("zeCommandListAppendLaunchKernel", r);
      if (!failure) {
        PendingLaunch p;
        p.control = control;
        p.kernel = k.name;
        p.timeoutNs = s.timeoutNs;
        p.deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(s.timeoutNs);
        s.faults->add(std::move(p));
      }
    }
  }
  if (failure)
    dev.controls.release(control);
  return failure;
}

} // namespace tessera::levelzero
