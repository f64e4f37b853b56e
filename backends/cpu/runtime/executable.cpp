// CPU executables: the "extern" format (extern_kernels.cpp), the "cpu" format
// (backends/gpu_module.h: the codegen's relocatable object, JIT-linked here) and the "cpu-native"
// format (cpu_native_module.h: functions already in the process, for hand-written kernels);
// checking and copying the module's kernel table, answering kernel metadata, and running a launch's
// workgroups on the device's thread pool.
//
// Must never keep a pointer into the caller's module struct (only the kernel functions
// themselves), and never accept a kernel table the HAL could not validate launches against.
#include "backends/cpu/codegen/cpu_codegen.h"
#include "backends/cpu/runtime/entry_points.h"
#include "backends/gpu_module.h"
#include "backends/kernel_fault_status.h"
#include "backends/simt_runtime/module_copy.h" // the tsr_gpu_module reader (names no vendor)

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <set>

namespace tessera::cpu {
namespace {

constexpr size_t kSharedAlignment = 64;

bool validKind(tsr_type_t kind) { return kind >= TSR_TYPE_BUFFER && kind <= TSR_TYPE_F64; }

tsr_status_t copyKernel(const tsr_cpu_native_kernel &in, uint32_t index, CpuKernel &out) {
  if (!in.name || !*in.name)
    return tsr_status_make(TSR_INVALID_ARGUMENT, "cpu driver: module kernel %u has no name", index);
  if (!in.fn)
    return tsr_status_make(TSR_INVALID_ARGUMENT, "cpu driver: kernel '%s' has no function",
                           in.name);
  if (in.param_count > 0 && !in.params)
    return tsr_status_make(TSR_INVALID_ARGUMENT,
                           "cpu driver: kernel '%s' has %u parameters but params is NULL", in.name,
                           in.param_count);
  out.name = in.name;
  for (uint32_t p = 0; p < in.param_count; ++p) {
    if (!validKind(in.params[p].kind))
      return tsr_status_make(TSR_INVALID_ARGUMENT,
                             "cpu driver: kernel '%s' parameter %u has invalid kind %d", in.name, p,
                             int(in.params[p].kind));
    out.paramNames.push_back(in.params[p].name ? in.params[p].name : "");
    out.params.push_back({in.params[p].kind, nullptr});
  }
  std::memcpy(out.requiredWorkgroup, in.required_workgroup_size, sizeof(out.requiredWorkgroup));
  out.sharedMemoryBytes = in.shared_memory_bytes;
  out.fn = in.fn;
  return nullptr;
}

tsr_status_t readModule(const void *data, size_t size, CpuExecutable &executable) {
  constexpr size_t kMinSize = offsetof(tsr_cpu_native_module, kernel_count) + sizeof(uint32_t);
  if (size < kMinSize)
    return tsr_status_make(TSR_INVALID_ARGUMENT,
                           "cpu driver: size %zu is smaller than a tsr_cpu_native_module (%zu)",
                           size, kMinSize);
  const auto *module = static_cast<const tsr_cpu_native_module *>(data);
  if (module->struct_size < kMinSize || module->struct_size > size)
    return tsr_status_make(TSR_INVALID_ARGUMENT,
                           "cpu driver: module struct_size %u is not within [%zu, size %zu]",
                           module->struct_size, kMinSize, size);
  if (module->version != TSR_CPU_NATIVE_VERSION)
    return tsr_status_make(TSR_INVALID_ARGUMENT,
                           "cpu driver: cpu-native module version %u, this driver reads %d",
                           module->version, TSR_CPU_NATIVE_VERSION);
  if (module->kernel_count == 0 || !module->kernels)
    return tsr_status_make(TSR_INVALID_ARGUMENT, "cpu driver: the module lists no kernels");
  executable.kernels.resize(module->kernel_count);
  std::set<std::string> names;
  for (uint32_t i = 0; i < module->kernel_count; ++i) {
    if (tsr_status_t s = copyKernel(module->kernels[i], i, executable.kernels[i]))
      return s;
    if (!names.insert(executable.kernels[i].name).second)
      return tsr_status_make(TSR_INVALID_ARGUMENT, "cpu driver: kernel name '%s' appears twice",
                             executable.kernels[i].name.c_str());
  }
  // The vector is final: parameter names can point into it now.
  for (CpuKernel &k : executable.kernels)
    for (size_t p = 0; p < k.params.size(); ++p)
      k.params[p].name = k.paramNames[p].empty() ? nullptr : k.paramNames[p].c_str();
  return nullptr;
}

// Per-thread workgroup-shared memory, grown on demand and reused across launches.
void *sharedScratch(size_t bytes) {
  struct Scratch {
    void *data = nullptr;
    size_t size = 0;
    ~Scratch() { std::free(data); }
  };
  thread_local Scratch scratch;
  if (scratch.size >= bytes)
    return scratch.data;
  std::free(scratch.data);
  size_t rounded = (bytes + kSharedAlignment - 1) / kSharedAlignment * kSharedAlignment;
  scratch.data = std::aligned_alloc(kSharedAlignment, rounded);
  scratch.size = scratch.data ? rounded : 0;
  return scratch.data;
}

} // namespace

tsr_status_t runLaunch(CpuDevice &device, const CpuKernel &kernel, const uint32_t grid[3],
                       const uint32_t workgroup[3], void **args, const uint64_t *argBytes,
                       uint64_t timeoutNs) {
  const uint64_t gx = grid[0], gy = grid[1];
  const uint64_t total = gx * gy * grid[2];
  tsr_kernel_fault fault = {};
  std::atomic<uint32_t> cancel{0};
  static_assert(sizeof(cancel) == sizeof(uint32_t), "the kernel reads the flag as a uint32_t");
  uint64_t armed = 0;
  if (timeoutNs) {
    // Clamped to 2^62 ns (146 years), so that now + timeout cannot overflow the clock.
    auto ns = std::chrono::nanoseconds(int64_t(std::min<uint64_t>(timeoutNs, uint64_t(1) << 62)));
    armed = device.watchdog.arm(Watchdog::Clock::now() + ns, &cancel);
  }
  // Ranges of linear workgroup ids: the id is decomposed once per range, then stepped, so
  // small workgroups don't pay three divisions each.
  std::function<void(uint64_t, uint64_t)> body = [&](uint64_t begin, uint64_t end) {
    tsr_cpu_launch_ctx ctx;
    ctx.group_id[0] = uint32_t(begin % gx);
    ctx.group_id[1] = uint32_t(begin / gx % gy);
    ctx.group_id[2] = uint32_t(begin / (gx * gy));
    std::memcpy(ctx.num_groups, grid, sizeof(ctx.num_groups));
    std::memcpy(ctx.group_size, workgroup, sizeof(ctx.group_size));
    ctx.shared_memory =
        kernel.sharedMemoryBytes ? sharedScratch(kernel.sharedMemoryBytes) : nullptr;
    ctx.arg_bytes = argBytes;
    ctx.fault = &fault;
    ctx.cancel = reinterpret_cast<const volatile uint32_t *>(&cancel);
    for (uint64_t linear = begin; linear < end; ++linear) {
      // A cancelled launch dispatches no further workgroup.
      if (cancel.load(std::memory_order_relaxed))
        return;
      kernel.fn(&ctx, args);
      if (++ctx.group_id[0] < gx)
        continue;
      ctx.group_id[0] = 0;
      if (++ctx.group_id[1] < gy)
        continue;
      ctx.group_id[1] = 0;
      ++ctx.group_id[2];
    }
  };
  if (kernel.ownThreads)
    device.pool.releaseSpinners();
  // Keyed by the kernel (and the sizes its cost depends on): a launch of a kernel whose
  // workgroups took long last time shares them at once (thread_pool.h).
  uint64_t key = reinterpret_cast<uintptr_t>(kernel.fn);
  for (uint32_t a : kernel.costArgs) {
    int64_t v;
    std::memcpy(&v, args[a], sizeof v);
    key = mixCostKey(key, uint64_t(v));
  }
  device.pool.parallelForRanges(total, body, key);
  if (armed)
    device.watchdog.disarm(armed);
  // A cancellation between workgroups, or in a kernel without loop checks, leaves the
  // record free: the deadline is the launch's fault then.
  if (cancel.load(std::memory_order_relaxed) && fault.kind == TSR_FAULT_NONE)
    fault.kind = TSR_FAULT_DEADLINE;
  return kernelFaultStatus(kernel.name.c_str(), fault, timeoutNs);
}

namespace {

// The "cpu" format: the object is JIT-linked into this process (libm, libmvec and libgcc
// resolved) and each kernel's tsr_wg_<name> becomes its function.
tsr_status_t readObjectModule(const void *data, size_t size, CpuExecutable &executable) {
  simt::GpuModuleCopy copy;
  if (tsr_status_t s = simt::readGpuModule("cpu driver", data, size, true, copy))
    return s;
  std::vector<CpuKernelInfo> infos;
  for (const simt::GpuKernel &k : copy.kernels)
    infos.push_back({k.name, TSR_CPU_WG_SYMBOL_PREFIX + k.name, {}, k.sharedMemoryBytes, 0});
  std::vector<uint8_t> object(copy.image.begin(), copy.image.end());
  std::shared_ptr<CpuCompiledModule> code =
      CpuCompiledModule::fromObject(std::move(object), std::move(infos));
  std::string err;
  if (!code->load(&err))
    return tsr_status_make(TSR_INVALID_ARGUMENT, "cpu driver: the object does not link: %s",
                           err.c_str());
  executable.kernels.resize(copy.kernels.size());
  for (size_t i = 0; i < copy.kernels.size(); ++i) {
    const simt::GpuKernel &in = copy.kernels[i];
    CpuKernel &out = executable.kernels[i];
    out.name = in.name;
    out.paramNames = in.paramNames;
    for (const tsr_kernel_param_t &p : in.params)
      out.params.push_back({p.kind, nullptr});
    out.sharedMemoryBytes = in.sharedMemoryBytes;
    out.fn = code->lookup(in.name);
    if (!out.fn)
      return tsr_status_make(TSR_INVALID_ARGUMENT, "cpu driver: the object defines no %s%s",
                             TSR_CPU_WG_SYMBOL_PREFIX, in.name.c_str());
  }
  for (CpuKernel &k : executable.kernels)
    for (size_t p = 0; p < k.params.size(); ++p)
      k.params[p].name = k.paramNames[p].empty() ? nullptr : k.paramNames[p].c_str();
  executable.code = std::move(code);
  return nullptr;
}

} // namespace

tsr_status_t executableCreate(tsr_drv_device_t, const char *format, const void *data, size_t size,
                              tsr_drv_executable_t *out_executable) {
  bool object = std::strcmp(format, TSR_CPU_FORMAT) == 0;
  bool external = std::strcmp(format, TSR_CPU_EXTERN_FORMAT) == 0;
  if (!object && !external && std::strcmp(format, TSR_CPU_NATIVE_FORMAT) != 0)
    return tsr_status_make(TSR_UNIMPLEMENTED,
                           "cpu driver: executable format '%s' is not supported (accepted: "
                           "" TSR_CPU_FORMAT ", " TSR_CPU_NATIVE_FORMAT ", " TSR_CPU_EXTERN_FORMAT
                           ")",
                           format);
  auto *executable = new (std::nothrow) CpuExecutable;
  if (!executable)
    return tsr_status_make(TSR_RESOURCE_EXHAUSTED, "cpu driver: out of host memory");
  if (tsr_status_t s = object     ? readObjectModule(data, size, *executable)
                       : external ? readExternModule(data, size, *executable)
                                  : readModule(data, size, *executable)) {
    delete executable;
    return s;
  }
  *out_executable = handleOf<tsr_drv_executable_t>(executable);
  return nullptr;
}

void executableDestroy(tsr_drv_device_t, tsr_drv_executable_t executable) {
  delete as<CpuExecutable>(executable);
}

tsr_status_t executableKernelCount(tsr_drv_device_t, tsr_drv_executable_t executable,
                                   uint32_t *out_count) {
  *out_count = uint32_t(as<CpuExecutable>(executable)->kernels.size());
  return nullptr;
}

tsr_status_t executableKernel(tsr_drv_device_t, tsr_drv_executable_t executable, uint32_t index,
                              tsr_kernel_info_t *out_info, tsr_drv_kernel_t *out_kernel) {
  CpuKernel &k = as<CpuExecutable>(executable)->kernels[index];
  out_info->name = k.name.c_str();
  out_info->param_count = uint32_t(k.params.size());
  out_info->params = k.params.empty() ? nullptr : k.params.data();
  std::memcpy(out_info->required_workgroup_size, k.requiredWorkgroup,
              sizeof(out_info->required_workgroup_size));
  out_info->shared_memory_bytes = k.sharedMemoryBytes;
  *out_kernel = handleOf<tsr_drv_kernel_t>(&k);
  return nullptr;
}

} // namespace tessera::cpu
