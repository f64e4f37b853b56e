// OpenCL executables (TSR_OPENCL_FORMAT modules: OpenCL C source and a kernel table, built
// with TSR_OPENCL_BUILD_OPTIONS, the device binary cached on disk) and launches per the
// kernel ABI of backends/opencl/opencl_abi.h.
//
// Per-size programs: executable_create builds the generic program (it reports the build log
// and checks the kernels' signatures); the first launch of each workgroup size builds the
// source once more for that size (opencl_abi.h, "Per-size programs"), so that the index tests
// that depend on the size fold in the front end: PoCL's LLVM otherwise hoisted them out of
// loops before PoCL knew the size and kept them per work-item (docs/performance.md, "OpenCL").
// That costs one more build per size at its first launch (cached on disk like the generic
// one); TESSERA_OPENCL_SIZED_PROGRAMS=0 turns it off.
//
// Must never trust the module: sizes, names and the kernels' OpenCL signatures are checked
// before anything is built or launched; a failed build is a status carrying the build log.
#include "backends/gpu_module.h"
#include "backends/opencl/opencl_abi.h"
#include "backends/opencl/runtime/binary_cache.h"
#include "backends/opencl/runtime/internal.h"

#include <cstddef>
#include <cstdio>
#include <cstdlib>
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
tsr_status_t build(const ClApi &api, cl_program program, const DeviceDesc &desc,
                   const std::string &options, const char *what) {
  cl_int r = api.clBuildProgram(program, 1, &desc.id, options.c_str(), nullptr, nullptr);
  if (r == CL_SUCCESS)
    return nullptr;
  std::string log = buildLog(api, program, desc.id);
  api.clReleaseProgram(program);
  return tsr_status_make(
      r == CL_BUILD_PROGRAM_FAILURE || r == CL_INVALID_BINARY ? TSR_INVALID_ARGUMENT : TSR_INTERNAL,
      "opencl: clBuildProgram of the %s failed (%s) on %s:\n%s", what, clErrorName(r).c_str(),
      desc.info.architecture, log.c_str());
}

// The program of `source` built with `options`: from the binary cache when it holds a binary
// that loads and builds, else compiled from source (and then cached). The key holds the
// options, so a per-size program's binary (its -D TSR_OPENCL_WORKGROUP_*) is never handed to
// another size or to the generic program.
tsr_status_t programFor(ClDevice &dev, const std::string &source, const std::string &options,
                        cl_program *out) {
  const ClApi &api = dev.api();
  const DeviceDesc &desc = *dev.desc;
  BinaryCache cache = BinaryCache::fromEnvironment();
  std::string key = BinaryCache::key(source, options, desc.binaryIdentity);
  if (std::optional<std::string> bin = cache.load(key)) {
    const unsigned char *ptr = reinterpret_cast<const unsigned char *>(bin->data());
    size_t size = bin->size();
    cl_int binStatus = CL_SUCCESS, r = CL_SUCCESS;
    cl_program p =
        api.clCreateProgramWithBinary(dev.context, 1, &desc.id, &size, &ptr, &binStatus, &r);
    if (r == CL_SUCCESS && binStatus == CL_SUCCESS) {
      tsr_status_t st = build(api, p, desc, options, "cached binary");
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
  if (tsr_status_t st = build(api, p, desc, options, "module's OpenCL C source"))
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

tsr_status_t createKernel(ClDevice &dev, cl_program program, const std::string &source,
                          const tsr_gpu_kernel &k, std::unique_ptr<ClKernel> *out) {
  auto kernel = std::make_unique<ClKernel>();
  kernel->name = k.name;
  kernel->sharedBytes = k.shared_memory_bytes;
  std::string tag = "// tsr_private_bytes " + opencl::symbol(k.name) + " ";
  if (size_t at = source.find(tag); at != std::string::npos)
    kernel->privateBytes = std::strtoull(source.c_str() + at + tag.size(), nullptr, 10);
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
  for (auto &[size, sp] : exe->sized) {
    for (cl_kernel k : sp.kernels)
      api.clReleaseKernel(k);
    if (sp.program)
      api.clReleaseProgram(sp.program);
  }
  for (auto &k : exe->kernels)
    if (k->kernel)
      api.clReleaseKernel(k->kernel);
  if (exe->program)
    api.clReleaseProgram(exe->program);
  delete exe;
}

// Builds the source for `workgroup` and creates every kernel of it; false when something
// failed (`sp` then holds nothing: the generic program runs those launches, which is correct,
// only slower: one warning line says so).
bool buildSized(ClDevice &dev, ClExecutable &exe, const uint32_t workgroup[3], SizedProgram *sp) {
  const ClApi &api = dev.api();
  tsr_status_t st = programFor(dev, exe.source, workgroupBuildOptions(workgroup), &sp->program);
  if (st) {
    std::fprintf(stderr,
                 "tessera: warning: opencl: the program for workgroup size %u,%u,%u did not "
                 "build (%s); its launches run the generic program\n",
                 workgroup[0], workgroup[1], workgroup[2], tsr_status_message(st));
    tsr_status_free(st);
    sp->program = nullptr;
    return false;
  }
  for (const auto &k : exe.kernels) {
    cl_int r = CL_SUCCESS;
    cl_kernel ck = api.clCreateKernel(sp->program, opencl::symbol(k->name).c_str(), &r);
    if (r != CL_SUCCESS) {
      for (cl_kernel c : sp->kernels)
        api.clReleaseKernel(c);
      sp->kernels.clear();
      api.clReleaseProgram(sp->program);
      sp->program = nullptr;
      return false;
    }
    sp->kernels.push_back(ck);
  }
  return true;
}

} // namespace

cl_kernel kernelForWorkgroup(ClDevice &dev, ClKernel &k, const uint32_t workgroup[3]) {
  if (!dev.sizedPrograms || !k.exe)
    return k.kernel;
  // A size the device cannot take: the generic kernel, whose launch reports it as before.
  const tsr_device_info_t &info = dev.desc->info;
  uint64_t total = 1;
  for (int i = 0; i < 3; ++i) {
    if (workgroup[i] == 0 || workgroup[i] > info.max_workgroup_size[i])
      return k.kernel;
    total *= workgroup[i];
  }
  if (total > info.max_workgroup_total)
    return k.kernel;
  ClExecutable &exe = *k.exe;
  std::array<uint32_t, 3> size{workgroup[0], workgroup[1], workgroup[2]};
  // One lock for lookups and builds: a second launch of a size being built waits for it
  // instead of building it again.
  std::lock_guard<std::mutex> lock(exe.sizedMutex);
  auto it = exe.sized.find(size);
  if (it == exe.sized.end()) {
    SizedProgram sp;
    buildSized(dev, exe, workgroup, &sp); // on failure: remembered as generic
    it = exe.sized.emplace(size, std::move(sp)).first;
  }
  return it->second.program ? it->second.kernels[k.index] : k.kernel;
}

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
  if (tsr_status_t st = programFor(*dev, source, TSR_OPENCL_BUILD_OPTIONS, &exe->program)) {
    delete exe;
    return st;
  }
  for (uint32_t i = 0; i < m->kernel_count; ++i) {
    std::unique_ptr<ClKernel> k;
    if (tsr_status_t st = createKernel(*dev, exe->program, source, m->kernels[i], &k)) {
      destroy(dev->api(), exe);
      return st;
    }
    k->exe = exe;
    k->index = i;
    exe->kernels.push_back(std::move(k));
  }
  exe->source = std::move(source); // per-size programs are built from it at their first launch
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
