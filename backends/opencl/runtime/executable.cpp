// OpenCL executables (TSR_OPENCL_FORMAT modules: OpenCL C source and a kernel table, built
// with TSR_OPENCL_BUILD_OPTIONS, the device binary cached on disk) and launches per the
// kernel ABI of backends/opencl/opencl_abi.h.
//
// Must never trust the module: sizes, names and the kernels' OpenCL signatures are checked
// before anything is built or launched; a failed build is a status carrying the build log.
#include "backends/gpu_module.h"
#include "backends/opencl/opencl_abi.h"
#include "backends/opencl/runtime/binary_cache.h"
#include "backends/opencl/runtime/internal.h"

#include <cstddef>
#include <cstring>

namespace tessera::opencl {
namespace {

std::string buildLog(const ClApi &api, cl_program program, cl_device_id device) {
  size_t n = 0;
  if (api.clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n) !=
          CL_SUCCESS ||
      n == 0)
    return "(no build log)";
  std::string log(n, '\0');
  api.clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
  log.resize(std::strlen(log.c_str()));
  if (log.size() > kMaxBuildLogBytes)
    log = log.substr(0, kMaxBuildLogBytes) + "\n... (build log cut at " +
          std::to_string(kMaxBuildLogBytes) + " of " + std::to_string(log.size()) + " bytes)";
  return log.empty() ? "(empty build log)" : log;
}

// The device binary of a built program (one device), or empty when it has none.
std::string programBinary(const ClApi &api, cl_program program) {
  size_t size = 0;
  if (api.clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr) !=
          CL_SUCCESS ||
      size == 0)
    return "";
  std::string bin(size, '\0');
  unsigned char *ptr = reinterpret_cast<unsigned char *>(bin.data());
  if (api.clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof ptr, &ptr, nullptr) != CL_SUCCESS)
    return "";
  return bin;
}

// Builds `program` for the device; on failure releases it and returns the status with the log.
tsr_status_t build(const ClApi &api, cl_program program, const DeviceDesc &desc, const char *what) {
  cl_int r = api.clBuildProgram(program, 1, &desc.id, TSR_OPENCL_BUILD_OPTIONS, nullptr, nullptr);
  if (r == CL_SUCCESS)
    return nullptr;
  std::string log = buildLog(api, program, desc.id);
  api.clReleaseProgram(program);
  return tsr_status_make(
      r == CL_BUILD_PROGRAM_FAILURE || r == CL_INVALID_BINARY ? TSR_INVALID_ARGUMENT : TSR_INTERNAL,
      "opencl: clBuildProgram of the %s failed (%s) on %s:\n%s", what, clErrorName(r).c_str(),
      desc.info.architecture, log.c_str());
}

// The program of `source`: from the binary cache when it holds a binary that loads and builds,
// else compiled from source (and then cached).
tsr_status_t programFor(ClDevice &dev, const std::string &source, cl_program *out) {
  const ClApi &api = dev.api();
  const DeviceDesc &desc = *dev.desc;
  BinaryCache cache = BinaryCache::fromEnvironment();
  std::string key = BinaryCache::key(source, TSR_OPENCL_BUILD_OPTIONS, desc.binaryIdentity);
  if (std::optional<std::string> bin = cache.load(key)) {
    const unsigned char *ptr = reinterpret_cast<const unsigned char *>(bin->data());
    size_t size = bin->size();
    cl_int binStatus = CL_SUCCESS, r = CL_SUCCESS;
    cl_program p =
        api.clCreateProgramWithBinary(dev.context, 1, &desc.id, &size, &ptr, &binStatus, &r);
    if (r == CL_SUCCESS && binStatus == CL_SUCCESS) {
      tsr_status_t st = build(api, p, desc, "cached binary");
      if (!st) {
        *out = p;
        return nullptr;
      }
      cache.reject(key, tsr_status_message(st));
      tsr_status_free(st);
    } else {
      if (p)
        api.clReleaseProgram(p);
      cache.reject(key,
                   "clCreateProgramWithBinary: " + clErrorName(r != CL_SUCCESS ? r : binStatus));
    }
  }
  const char *text = source.c_str();
  size_t length = source.size();
  cl_int r = CL_SUCCESS;
  cl_program p = api.clCreateProgramWithSource(dev.context, 1, &text, &length, &r);
  if (r != CL_SUCCESS)
    return clStatus("clCreateProgramWithSource", r);
  if (tsr_status_t st = build(api, p, desc, "module's OpenCL C source"))
    return st;
  cache.store(key, programBinary(api, p));
  *out = p;
  return nullptr;
}

// Checks the module's header and kernel table (not its source: the compiler does).
tsr_status_t checkModule(const tsr_gpu_module *m, size_t size) {
  constexpr size_t kMinSize = offsetof(tsr_gpu_module, kernel_count) + sizeof(uint32_t);
  if (size < kMinSize || m->struct_size < kMinSize)
    return tsr_status_make(TSR_INVALID_ARGUMENT,
                           "opencl: executable data of %zu bytes is not a tsr_gpu_module", size);
  if (m->version != TSR_GPU_MODULE_VERSION)
    return tsr_status_make(TSR_INVALID_ARGUMENT, "opencl: tsr_gpu_module version %u (expected %u)",
                           m->version, TSR_GPU_MODULE_VERSION);
  if (!m->image || m->image_size == 0)
    return tsr_status_make(TSR_INVALID_ARGUMENT, "opencl: the module has no OpenCL C source");
  if (m->image_size > kMaxSourceBytes)
    return tsr_status_make(TSR_RESOURCE_EXHAUSTED,
                           "opencl: OpenCL C source of %zu bytes exceeds the driver's limit of %zu",
                           m->image_size, kMaxSourceBytes);
  if (m->kernel_count && !m->kernels)
    return tsr_status_make(TSR_INVALID_ARGUMENT, "opencl: %u kernels but no kernel table",
                           m->kernel_count);
  for (uint32_t i = 0; i < m->kernel_count; ++i) {
    const tsr_gpu_kernel &k = m->kernels[i];
    if (!k.name || !*k.name)
      return tsr_status_make(TSR_INVALID_ARGUMENT, "opencl: kernel %u has no name", i);
    if (k.param_count && !k.params)
      return tsr_status_make(TSR_INVALID_ARGUMENT, "opencl: kernel @%s has no parameter table",
                             k.name);
  }
  return nullptr;
}

// Arguments of the OpenCL function of `params` (opencl_abi.h): 3 per buffer, 1 per scalar,
// then the control buffer.
cl_uint abiArgCount(const std::vector<tsr_kernel_param_t> &params) {
  cl_uint n = 1;
  for (const auto &p : params)
    n += p.kind == TSR_TYPE_BUFFER ? TSR_OPENCL_BUFFER_ARGS : 1;
  return n;
}

tsr_status_t createKernel(ClDevice &dev, cl_program program, const tsr_gpu_kernel &k,
                          std::unique_ptr<ClKernel> *out) {
  auto kernel = std::make_unique<ClKernel>();
  kernel->name = k.name;
  kernel->sharedBytes = k.shared_memory_bytes;
  for (uint32_t i = 0; i < k.param_count; ++i)
    kernel->paramNames.push_back(k.params[i].name ? k.params[i].name : "");
  for (uint32_t i = 0; i < k.param_count; ++i) // names copied first: their storage is fixed
    kernel->params.push_back(
        {k.params[i].kind, k.params[i].name ? kernel->paramNames[i].c_str() : nullptr});
  std::string symbol = opencl::symbol(k.name);
  cl_int r = CL_SUCCESS;
  kernel->kernel = dev.api().clCreateKernel(program, symbol.c_str(), &r);
  if (r != CL_SUCCESS)
    return tsr_status_make(r == CL_INVALID_KERNEL_NAME ? TSR_INVALID_ARGUMENT : TSR_INTERNAL,
                           "opencl: kernel @%s: the program has no kernel %s (clCreateKernel: %s)",
                           k.name, symbol.c_str(), clErrorName(r).c_str());
  cl_uint args = 0;
  dev.api().clGetKernelInfo(kernel->kernel, CL_KERNEL_NUM_ARGS, sizeof args, &args, nullptr);
  cl_uint expected = abiArgCount(kernel->params);
  if (args != expected) {
    dev.api().clReleaseKernel(kernel->kernel);
    return tsr_status_make(TSR_INVALID_ARGUMENT,
                           "opencl: kernel @%s: %s takes %u arguments, but its %u parameters need "
                           "%u in the kernel ABI (opencl_abi.h: buffers 3, scalars 1, control 1)",
                           k.name, symbol.c_str(), args, k.param_count, expected);
  }
  *out = std::move(kernel);
  return nullptr;
}

void destroy(const ClApi &api, ClExecutable *exe) {
  for (auto &k : exe->kernels)
    if (k->kernel)
      api.clReleaseKernel(k->kernel);
  if (exe->program)
    api.clReleaseProgram(exe->program);
  delete exe;
}

} // namespace

tsr_status_t executableCreate(tsr_drv_device_t device, const char *format, const void *data,
                              size_t size, tsr_drv_executable_t *out) {
  auto *dev = as<ClDevice>(device);
  if (std::strcmp(format, TSR_OPENCL_FORMAT) != 0)
    return tsr_status_make(TSR_UNIMPLEMENTED,
                           "opencl driver: executable format '%s' is not supported (accepted: %s)",
                           format, TSR_OPENCL_FORMAT);
  auto *m = static_cast<const tsr_gpu_module *>(data); // read only after checkModule passed
  if (tsr_status_t st = checkModule(m, size))
    return st;
  std::string source(static_cast<const char *>(m->image), m->image_size);
  if (!source.empty() && source.back() == '\0')
    source.pop_back(); // a terminating NUL is tolerated; one inside is not
  if (source.find('\0') != std::string::npos)
    return tsr_status_make(TSR_INVALID_ARGUMENT,
                           "opencl: the OpenCL C source holds a NUL byte at offset %zu",
                           source.find('\0'));
  auto *exe = new ClExecutable;
  if (tsr_status_t st = programFor(*dev, source, &exe->program)) {
    delete exe;
    return st;
  }
  for (uint32_t i = 0; i < m->kernel_count; ++i) {
    std::unique_ptr<ClKernel> k;
    if (tsr_status_t st = createKernel(*dev, exe->program, m->kernels[i], &k)) {
      destroy(dev->api(), exe);
      return st;
    }
    exe->kernels.push_back(std::move(k));
  }
  *out = handleOf<tsr_drv_executable_t>(exe);
  return nullptr;
}

void executableDestroy(tsr_drv_device_t device, tsr_drv_executable_t executable) {
  destroy(as<ClDevice>(device)->api(), as<ClExecutable>(executable));
}

tsr_status_t executableKernelCount(tsr_drv_device_t, tsr_drv_executable_t executable,
                                   uint32_t *out) {
  *out = uint32_t(as<ClExecutable>(executable)->kernels.size());
  return nullptr;
}

tsr_status_t executableKernel(tsr_drv_device_t, tsr_drv_executable_t executable, uint32_t index,
                              tsr_kernel_info_t *out, tsr_drv_kernel_t *outKernel) {
  ClKernel &k = *as<ClExecutable>(executable)->kernels[index];
  out->name = k.name.c_str();
  out->param_count = uint32_t(k.params.size());
  out->params = k.params.data();
  out->shared_memory_bytes = k.sharedBytes;
  *outKernel = handleOf<tsr_drv_kernel_t>(&k);
  return nullptr;
}

} // namespace tessera::opencl
