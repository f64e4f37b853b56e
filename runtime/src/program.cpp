// Program: compile (or fetch from the cache) and load a module on a HAL device.
// One path per backend: CPU (JIT-linked object, cpu-native format) and the GPU backends
// (an image handed to the driver in a tsr_gpu_module). Others get a clear "no compiler" error.
#include "tessera/program.h"

#include "tessera/artefact.h"

#include "runtime/src/cached_module.h"

#include "backends/cpu/codegen/cpu_codegen.h"
#include "backends/cpu/runtime/cpu_native_module.h"
#include "backends/cuda/codegen/cuda_codegen.h"
#include "backends/gpu_module.h"
#include "backends/rocm/codegen/rocm_codegen.h"
#include "backends/vulkan/codegen/vulkan_codegen.h"
#include "ir/text/printer.h"
#include "ir/verify/verifier.h"
#include "tessera/hal.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <cstring>
#include <dlfcn.h>
#include <mutex>
#include <optional>
#include <sstream>
#include <sys/stat.h>

namespace tessera {
namespace {

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Identifies the compiler build, so that a rebuilt codegen never loads objects cached by the
// previous build: the path, size and modification time of the binary holding the codegen.
// (A stat per process; hashing the binary would cost more than the disk-cache hit itself.)
const std::string &compilerBuildId() {
  static std::string id;
  static std::once_flag once;
  std::call_once(once, [] {
    Dl_info info{};
    struct stat st {};
    if (dladdr(reinterpret_cast<void *>(&cpu::compileKernelModule), &info) && info.dli_fname &&
        stat(info.dli_fname, &st) == 0)
      id = std::string(info.dli_fname) + ":" + std::to_string(st.st_size) + ":" +
           std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
    else
      id = "unknown-build"; // still correct for one build; only cross-build reuse is at risk
  });
  return id;
}

tsr_type_t halType(const ir::Type &t) {
  if (t.kind == ir::Type::Kind::Buffer)
    return TSR_TYPE_BUFFER;
  switch (t.elem) {
  case ir::Scalar::I1:
  case ir::Scalar::I8:
    return TSR_TYPE_I8; // i1 travels as one byte
  case ir::Scalar::I16:
    return TSR_TYPE_I16;
  case ir::Scalar::I32:
    return TSR_TYPE_I32;
  case ir::Scalar::I64:
    return TSR_TYPE_I64;
  case ir::Scalar::F16:
    return TSR_TYPE_F16;
  case ir::Scalar::BF16:
    return TSR_TYPE_BF16;
  case ir::Scalar::F32:
    return TSR_TYPE_F32;
  case ir::Scalar::F64:
    return TSR_TYPE_F64;
  }
  return TSR_TYPE_I32;
}


// --- GPU artefacts (tessera/artefact.h): one container, also the cache payload -----------

vulkan::VulkanTargetCaps vulkanCaps(const tsr_device_info_t &info) {
  // The driver reports a feature bit only when every Vulkan feature behind it is enabled.
  vulkan::VulkanTargetCaps c;
  uint64_t f = info.features;
  c.subgroupSize = info.subgroup_size;
  c.float16 = f & TSR_FEATURE_FP16;
  c.storageBuffer16BitAccess = f & (TSR_FEATURE_FP16 | TSR_FEATURE_INT16);
  c.float64 = f & TSR_FEATURE_FP64;
  c.int64 = c.shaderBufferInt64Atomics = c.shaderSharedInt64Atomics = f & TSR_FEATURE_INT64;
  c.int16 = f & TSR_FEATURE_INT16;
  c.int8 = c.storageBuffer8BitAccess = f & TSR_FEATURE_INT8;
  bool sub = f & TSR_FEATURE_SUBGROUPS;
  c.subgroupArithmetic = c.subgroupShuffle = c.subgroupVote = c.subgroupExtendedTypes = sub;
  bool fa = f & TSR_FEATURE_FLOAT_ATOMICS;
  c.shaderBufferFloat32AtomicAdd = c.shaderSharedFloat32AtomicAdd = fa;
  c.shaderBufferFloat32Atomics = c.shaderSharedFloat32Atomics = fa;
  c.signedZeroInfNanPreserve = f & TSR_FEATURE_FLOAT_PRESERVE;
  c.denormPreserve = f & TSR_FEATURE_DENORM_PRESERVE;
  c.maxComputeSharedMemorySize = uint32_t(std::min<uint64_t>(info.max_shared_memory, UINT32_MAX));
  return c;
}

// The artefact under `key` from the cache, else `compile`'s (stored for next time). A dump
// directory bypasses the cache (every stage must be produced). False with `*error` set.
// A cached artefact is used only when it decodes and its kernel table is `m`'s (the caller
// rejects it too when the driver refuses it); otherwise it is dropped with one warning.
bool cachedCompile(CompileCache *cache, const ProgramOptions &opts, const std::string &key,
                   const ir::Module &m, const tsr_device_info_t &info,
                   const std::function<bool(GpuArtefact *, std::string *)> &compile,
                   GpuArtefact *out, ProgramStats *stats, std::string *usedKey,
                   std::string *error) {
  bool useCache = cache && opts.dumpDir.empty();
  stats->source = ProgramStats::Source::Compiled;
  if (useCache) {
    uint64_t diskBefore = cache->stats().diskHits;
    if (auto payload = cache->lookup(key)) {
      std::string why = "its payload is not a GPU artefact";
      auto a = decodeArtefact(*payload);
      if (a && detail::checkArtefact(*a, m, info, &why)) {
        *out = std::move(*a);
        stats->source = cache->stats().diskHits > diskBefore ? ProgramStats::Source::DiskCache
                                                             : ProgramStats::Source::MemoryCache;
        *usedKey = key;
        return true;
      }
      cache->reject(key, why);
    }
  }
  if (!compile(out, error))
    return false;
  if (useCache)
    cache->store(key, encodeArtefact(*out));
  return true;
}

// Each GPU compiler: options from the device, a cache key, and the artefact.
bool compileVulkan(const tsr_device_info_t &info, const ir::Module &m, CompileCache *cache,
                   const ProgramOptions &opts, const std::string &key0, GpuArtefact *out,
                   ProgramStats *stats, std::string *usedKey, std::string *error) {
  vulkan::VulkanCompileOptions vo;
  vo.caps = vulkanCaps(info);
  vo.bounds = opts.bounds; // hashed into vo.hash(), so into the cache key
  vo.strict = opts.strict; // likewise
  std::string key = makeCacheKey(key0, "vulkan " + vo.caps.describe(), std::to_string(vo.hash()),
                                 ir::printModule(m));
  return cachedCompile(
      cache, opts, key, m, info,
      [&](GpuArtefact *a, std::string *err) {
        auto cm = vulkan::compileKernelModule(m, vo, err);
        if (!cm || (!opts.dumpDir.empty() && !cm->writeStages(opts.dumpDir, err)))
          return false;
        *a = artefactOf(*cm, info.subgroup_size);
        return true;
      },
      out, stats, usedKey, error);
}

// sm_XY of the device -> the newest PTX target Tessera emits that it runs (the driver
// JIT-compiles the PTX for newer parts when the cubin does not load).
std::optional<std::string> cudaArch(const std::string &deviceArch) {
  int cc = 0;
  if (std::sscanf(deviceArch.c_str(), "sm_%d", &cc) != 1 || cc < 80)
    return std::nullopt;
  return cc >= 90 ? "sm_90" : cc >= 89 ? "sm_89" : "sm_80";
}

bool compileCuda(const tsr_device_info_t &info, const ir::Module &m, CompileCache *cache,
                 const ProgramOptions &opts, const std::string &key0, GpuArtefact *out,
                 ProgramStats *stats, std::string *usedKey, std::string *error) {
  auto arch = cudaArch(info.architecture);
  if (!arch) {
    *error = std::string("cuda: device architecture '") + info.architecture +
             "' is not supported (Tessera emits PTX for sm_80 and newer)";
    return false;
  }
  cuda::CudaCompileOptions co;
  co.arch = *arch;
  co.strict = opts.strict;
  std::string key = makeCacheKey(key0, cuda::targetDescription(co), std::to_string(co.hash()),
                                 ir::printModule(m));
  return cachedCompile(
      cache, opts, key, m, info,
      [&](GpuArtefact *a, std::string *err) {
        auto cm = cuda::compileKernelModule(m, co, err);
        if (!cm || (!opts.dumpDir.empty() && !cm->writeStages(opts.dumpDir, err)))
          return false;
        *a = artefactOf(*cm);
        return true;
      },
      out, stats, usedKey, error);
}

bool compileRocm(const tsr_device_info_t &info, const ir::Module &m, CompileCache *cache,
                 const ProgramOptions &opts, const std::string &key0, GpuArtefact *out,
                 ProgramStats *stats, std::string *usedKey, std::string *error) {
  std::string arch = info.architecture;
  arch = arch.substr(0, arch.find(':')); // "gfx90a:sramecc+:xnack-" -> "gfx90a"
  const auto &archs = rocm::supportedArchs();
  if (std::find(archs.begin(), archs.end(), arch) == archs.end()) {
    *error = "rocm: device architecture '" + arch + "' is not supported (Tessera emits code " +
             "objects for gfx90a, gfx942 and gfx1100)";
    return false;
  }
  rocm::RocmCompileOptions ro;
  ro.arch = arch;
  ro.strict = opts.strict;
  std::string key = makeCacheKey(key0, rocm::targetDescription(ro), std::to_string(ro.hash()),
                                 ir::printModule(m));
  return cachedCompile(
      cache, opts, key, m, info,
      [&](GpuArtefact *a, std::string *err) {
        auto cm = rocm::compileKernelModule(m, ro, err);
        if (!cm || (!opts.dumpDir.empty() && !cm->writeStages(opts.dumpDir, err)))
          return false;
        *a = artefactOf(*cm);
        return true;
      },
      out, stats, usedKey, error);
}

} // namespace

struct Program::Impl {
  std::unique_ptr<cpu::CpuCompiledModule> cpu;
  tsr_executable_t exe = nullptr;
};

Program::Program(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Program::~Program() {
  for (auto &k : kernels_)
    if (k.kernel)
      tsr_kernel_release(k.kernel);
  if (impl_ && impl_->exe)
    tsr_executable_release(impl_->exe);
}

const ProgramKernel *Program::kernel(std::string_view name) const {
  for (const auto &k : kernels_)
    if (k.name == name)
      return &k;
  return nullptr;
}

std::vector<std::string> compilerTargets() { return {"cpu", "vulkan", "cuda", "rocm"}; }

const char *boundsModeName(tsr_bounds_mode mode) {
  switch (mode) {
  case TSR_BOUNDS_UNCHECKED:
    return "unchecked";
  case TSR_BOUNDS_ROBUST:
    return "robust";
  case TSR_BOUNDS_CHECKED:
    return "checked";
  }
  return "?";
}

bool boundsModeSupported(std::string_view backend, tsr_bounds_mode mode) {
  // The SIMT lowering has no buffer sizes yet (they would be extra kernel parameters).
  return mode == TSR_BOUNDS_UNCHECKED || (backend != "cuda" && backend != "rocm");
}

ProgramOptions withSupportedBounds(tsr_device_t device, ProgramOptions opts) {
  tsr_device_info_t info;
  std::memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  if (tsr_status_t st = tsr_device_info(device, &info)) {
    tsr_status_free(st); // Program::create reports the same failure
    return opts;
  }
  if (!boundsModeSupported(info.backend, opts.bounds))
    opts.bounds = TSR_BOUNDS_UNCHECKED;
  return opts;
}

bool parseBoundsMode(std::string_view name, tsr_bounds_mode *out) {
  for (tsr_bounds_mode m : {TSR_BOUNDS_UNCHECKED, TSR_BOUNDS_ROBUST, TSR_BOUNDS_CHECKED})
    if (name == boundsModeName(m)) {
      *out = m;
      return true;
    }
  return false;
}

std::unique_ptr<Program> Program::create(tsr_device_t device, const ir::Module &m,
                                         CompileCache *cache, const ProgramOptions &opts,
                                         std::string *error) {
  std::string err;
  auto fail = [&](const std::string &msg) -> std::unique_ptr<Program> {
    if (error)
      *error = msg;
    return nullptr;
  };
  // A module past the size limits would take minutes and gigabytes to compile (or could
  // not be encoded): refused here too, for modules built in C++ that skipped the verifier.
  if (ir::Diagnostics limits = ir::checkLimits(m); !limits.empty())
    return fail(limits.front().str());
  tsr_device_info_t info;
  std::memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  if (tsr_status_t st = tsr_device_info(device, &info)) {
    return fail(hal::Status::fromC(st).message());
  }
  std::string_view backend = info.backend;
  if (backend == "vulkan" || backend == "cuda" || backend == "rocm")
    return createGpu(device, info, m, cache, opts, error);
  if (backend != "cpu")
    return fail(std::string("no compiler for backend '") + info.backend +
                "' yet (compilers: cpu, vulkan, cuda, rocm)");

  cpu::CpuCompileOptions copts;
  copts.subgroupSize = opts.subgroupSize;
  copts.bounds = opts.bounds;
  copts.strict = opts.strict;
  ProgramStats stats;
  auto t0 = std::chrono::steady_clock::now();

  // Links `cm` and makes it a Program on `device`; null with `*why` set when that fails.
  auto load = [&](std::unique_ptr<cpu::CpuCompiledModule> cm,
                  std::string *why) -> std::unique_ptr<Program> {
    if (!cm->load(why))
      return nullptr;
    // The driver copies names and parameter tables, so these only need to live until
    // tsr_executable_create returns; the functions live as long as `cm`.
    std::vector<std::vector<tsr_kernel_param_t>> params;
    std::vector<tsr_cpu_native_kernel> natives;
    for (const auto &k : cm->kernels()) {
      std::vector<tsr_kernel_param_t> ps;
      for (const auto &t : k.params)
        ps.push_back({halType(t), nullptr});
      params.push_back(std::move(ps));
    }
    for (size_t i = 0; i < cm->kernels().size(); ++i) {
      const auto &k = cm->kernels()[i];
      tsr_cpu_native_kernel nk{};
      nk.name = k.name.c_str();
      nk.params = params[i].data();
      nk.param_count = static_cast<uint32_t>(params[i].size());
      nk.shared_memory_bytes = static_cast<uint32_t>(k.sharedBytes);
      nk.fn = cm->lookup(k.name);
      if (!nk.fn) {
        *why = "kernel @" + k.name + " was not linked";
        return nullptr;
      }
      natives.push_back(nk);
    }
    tsr_cpu_native_module mod{};
    mod.struct_size = sizeof mod;
    mod.version = TSR_CPU_NATIVE_VERSION;
    mod.kernels = natives.data();
    mod.kernel_count = static_cast<uint32_t>(natives.size());
    auto impl = std::make_unique<Impl>();
    if (tsr_status_t st =
            tsr_executable_create(device, TSR_CPU_NATIVE_FORMAT, &mod, sizeof mod, &impl->exe)) {
      *why = hal::Status::fromC(st).message();
      return nullptr;
    }
    std::unique_ptr<Program> p(new Program(std::move(impl)));
    for (const auto &k : cm->kernels()) {
      ProgramKernel pk{k.name, nullptr, k.params, k.subgroupSize, k.sharedBytes};
      if (tsr_status_t st = tsr_executable_kernel(p->impl_->exe, k.name.c_str(), &pk.kernel)) {
        *why = hal::Status::fromC(st).message();
        return nullptr;
      }
      p->kernels_.push_back(std::move(pk));
    }
    p->impl_->cpu = std::move(cm);
    return p;
  };

  std::string key;
  if (cache && opts.dumpDir.empty()) {
    key = makeCacheKey(std::string(kCompilerVersion) + " " + compilerBuildId(),
                       cpu::targetDescription(copts),
                       std::to_string(copts.hash()), ir::printModule(m));
    uint64_t diskBefore = cache->stats().diskHits;
    if (auto payload = cache->lookup(key)) {
      // Trusted only once it matches `m` and links: anything else recompiles.
      std::string why;
      auto t1 = std::chrono::steady_clock::now();
      std::unique_ptr<Program> p;
      if (auto cm = detail::decodeCpuPayload(*payload, m, copts.subgroupSize, info, &why))
        p = load(std::move(cm), &why);
      if (p) {
        stats.source = cache->stats().diskHits > diskBefore ? ProgramStats::Source::DiskCache
                                                            : ProgramStats::Source::MemoryCache;
        stats.compileMs = std::chrono::duration<double, std::milli>(t1 - t0).count();
        stats.loadMs = msSince(t1);
        p->stats_ = stats;
        return p;
      }
      cache->reject(key, why);
    }
  }
  stats.source = ProgramStats::Source::Compiled;
  auto cm = cpu::compileKernelModule(m, copts, &err);
  if (!cm)
    return fail(err);
  if (!opts.dumpDir.empty() && !cm->writeStages(opts.dumpDir, &err))
    return fail(err);
  if (cache && !key.empty())
    cache->store(key, detail::encodeCpuPayload(*cm)); // a failed write costs the next compile
  stats.compileMs = msSince(t0);
  auto t1 = std::chrono::steady_clock::now();
  auto p = load(std::move(cm), &err);
  if (!p)
    return fail(err);
  stats.loadMs = msSince(t1);
  p->stats_ = stats;
  return p;
}

std::unique_ptr<Program> Program::createGpu(tsr_device_t device, const tsr_device_info_t &info,
                                            const ir::Module &m, CompileCache *cache,
                                            const ProgramOptions &opts, std::string *error) {
  auto fail = [&](const std::string &msg) -> std::unique_ptr<Program> {
    if (error)
      *error = msg;
    return nullptr;
  };
  std::string backend = info.backend;
  std::string key0 = std::string(kCompilerVersion) + " " + compilerBuildId();
  using Compiler = bool (*)(const tsr_device_info_t &, const ir::Module &, CompileCache *,
                            const ProgramOptions &, const std::string &, GpuArtefact *,
                            ProgramStats *, std::string *, std::string *);
  Compiler compile = nullptr;
  if (backend == "vulkan")
    compile = compileVulkan;
  else if (backend == "cuda")
    compile = compileCuda;
  else
    compile = compileRocm;
  // Refuse rather than run a robust or checked request unchecked.
  if (!boundsModeSupported(backend, opts.bounds))
    return fail(backend + ": bounds mode '" + boundsModeName(opts.bounds) +
                "' is not implemented for this backend yet (only 'unchecked': "
                "ProgramOptions::bounds = TSR_BOUNDS_UNCHECKED, tessera run --bounds unchecked)");

  // The artefact as a Program on `device`; null with `*why` set when the driver refuses it.
  auto load = [&](const GpuArtefact &art, std::string *why) -> std::unique_ptr<Program> {
    std::vector<std::vector<tsr_kernel_param_t>> params;
    for (const auto &k : art.kernels) {
      std::vector<tsr_kernel_param_t> ps;
      for (const auto &t : k.params)
        ps.push_back({halType(t), nullptr});
      params.push_back(std::move(ps));
    }
    std::vector<tsr_gpu_kernel> gk;
    std::vector<uint32_t> controls;
    for (const auto &k : art.kernels)
      controls.push_back(k.controlBinding);
    for (size_t i = 0; i < art.kernels.size(); ++i) {
      const auto &k = art.kernels[i];
      gk.push_back({k.name.c_str(), params[i].data(), uint32_t(params[i].size()),
                    k.offsets.empty() ? nullptr : k.offsets.data(), k.pushBytes,
                    uint32_t(k.sharedBytes)});
    }
    tsr_gpu_module mod = {};
    mod.struct_size = sizeof mod;
    mod.version = TSR_GPU_MODULE_VERSION;
    mod.image = art.image.empty() ? nullptr : art.image.data();
    mod.image_size = art.image.size();
    mod.fallback = art.fallback.empty() ? nullptr : art.fallback.data();
    mod.fallback_size = art.fallback.size();
    mod.kernels = gk.data();
    mod.kernel_count = uint32_t(gk.size());
    mod.control_bindings = controls.data();
    auto impl = std::make_unique<Impl>();
    if (tsr_status_t st =
            tsr_executable_create(device, art.format.c_str(), &mod, sizeof mod, &impl->exe)) {
      *why = hal::Status::fromC(st).message();
      return nullptr;
    }
    std::unique_ptr<Program> p(new Program(std::move(impl)));
    for (const auto &k : art.kernels) {
      ProgramKernel pk{k.name, nullptr, k.params,
                       k.subgroupSize ? k.subgroupSize : info.subgroup_size, k.sharedBytes};
      if (tsr_status_t st = tsr_executable_kernel(p->impl_->exe, k.name.c_str(), &pk.kernel)) {
        *why = hal::Status::fromC(st).message();
        return nullptr;
      }
      p->kernels_.push_back(std::move(pk));
    }
    return p;
  };

  // A cached artefact the driver refuses is rejected and compiled afresh, once.
  for (int attempt = 0;; ++attempt) {
    ProgramStats stats;
    GpuArtefact art;
    std::string err, usedKey;
    auto t0 = std::chrono::steady_clock::now();
    if (!compile(info, m, cache, opts, key0, &art, &stats, &usedKey, &err))
      return fail(err);
    stats.compileMs = msSince(t0);
    auto t1 = std::chrono::steady_clock::now();
    std::unique_ptr<Program> p = load(art, &err);
    if (p) {
      stats.loadMs = msSince(t1);
      p->stats_ = stats;
      return p;
    }
    if (usedKey.empty() || attempt > 0)
      return fail(err);
    cache->reject(usedKey, "the driver refused it: " + err);
  }
}

} // namespace tessera
