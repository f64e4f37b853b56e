// Program: compile (or fetch from the cache) and load a module on a HAL device, through the
// target that the registry gives for the device's backend (backends/target.h). One path for
// every target: an artefact (the cache holds its .tsrx encoding) handed to the driver as a
// tsr_gpu_module in the target's format. A backend without a target gets a clear error.
//
// Must never name a backend or include a codegen header: that is the registry's business.
#include "tessera/program.h"

#include "tessera/artefact.h"

#include "runtime/src/cached_module.h"

#include "backends/gpu_module.h"
#include "backends/stage_files.h"
#include "ir/text/printer.h"
#include "ir/verify/matrix_launch.h"
#include "ir/verify/verifier.h"
#include "tessera/hal.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <dlfcn.h>
#include <functional>
#include <mutex>
#include <optional>
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
    struct stat st{};
    if (dladdr(reinterpret_cast<void *>(&defaultTargets), &info) && info.dli_fname &&
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

// The artefact under `key` from the cache, else the target's (stored for next time). A dump
// directory bypasses the cache (every stage must be produced). Null with `*error` set.
// A cached artefact is used only when it decodes and its kernel table is `m`'s in the
// target's format (the caller rejects it too when the driver refuses it); otherwise it is
// dropped with one warning.
std::optional<Artefact> cachedCompile(const Target &target, CompileCache *cache,
                                      const ProgramOptions &opts, const CacheKey &key,
                                      const ir::Module &m, const TargetOptions &topts,
                                      const tsr_device_info_t &info, ProgramStats *stats,
                                      bool *fromCache, std::string *error) {
  bool useCache = cache && opts.dumpDir.empty();
  stats->source = ProgramStats::Source::Compiled;
  *fromCache = false;
  if (useCache) {
    uint64_t diskBefore = cache->stats().diskHits;
    if (auto payload = cache->lookup(key)) {
      std::string why = "its payload is not an artefact container";
      auto a = decodeArtefact(*payload);
      if (a && detail::checkArtefact(*a, target, m, topts, info, &why)) {
        stats->source = cache->stats().diskHits > diskBefore ? ProgramStats::Source::DiskCache
                                                             : ProgramStats::Source::MemoryCache;
        *fromCache = true;
        return a;
      }
      cache->reject(key, why);
    }
  }
  if (opts.cachedOnly) {
    *error = "not in the compile cache";
    return std::nullopt;
  }
  std::optional<Artefact> a = target.compile(m, topts, error);
  if (!a)
    return std::nullopt;
  if (!opts.dumpDir.empty() && !writeArtefactStages(opts.dumpDir, a->stages, error))
    return std::nullopt;
  if (useCache)
    cache->store(key, encodeArtefact(*a)); // a failed write costs the next compile
  return a;
}

} // namespace

struct Program::Impl {
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

bool deviceCompilerCaps(tsr_device_t device, std::string *caps, std::string *error) {
  caps->clear();
  size_t len = 0;
  tsr_status_t st = tsr_device_compiler_caps(device, nullptr, 0, &len);
  if (tsr_status_code(st) == TSR_UNIMPLEMENTED) {
    tsr_status_free(st); // a driver without a record: the target decides what it needs
    return true;
  }
  if (!st && len > 0) {
    caps->resize(len);
    st = tsr_device_compiler_caps(device, caps->data(), len, &len);
    caps->resize(std::min(len, caps->size()));
  }
  if (st) {
    *error = hal::Status::fromC(st).message();
    return false;
  }
  return true;
}

std::string launchShapeError(const ProgramKernel &kernel, const uint32_t workgroup[3]) {
  uint64_t items = uint64_t{workgroup[0]} * workgroup[1] * workgroup[2];
  return ir::matrixLaunchError(kernel.name, kernel.usesMatrix, items, kernel.subgroupSize);
}

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

bool quickTierSupported(std::string_view backend) {
  const Target *t = defaultTargets().forBackend(backend);
  return t && t->quickTier();
}

bool boundsModeSupported(std::string_view backend, tsr_bounds_mode mode) {
  const Target *t = defaultTargets().forBackend(backend);
  return t && t->boundsModeSupported(mode);
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

namespace {

// The artefact as a Program on `device`; null with `*why` set when the driver refuses it.
std::unique_ptr<Program> loadArtefact(
    tsr_device_t device, const tsr_device_info_t &info, const Artefact &art, std::string *why,
    const std::function<std::unique_ptr<Program>(tsr_executable_t, std::vector<ProgramKernel>)>
        &make) {
  // The driver copies names and parameter tables: these only live until it returns.
  std::vector<std::vector<tsr_kernel_param_t>> params;
  for (const auto &k : art.kernels) {
    std::vector<tsr_kernel_param_t> ps;
    for (const auto &t : k.params)
      ps.push_back({halType(t), nullptr});
    params.push_back(std::move(ps));
  }
  std::vector<tsr_gpu_kernel> gk;
  std::vector<uint32_t> controls;
  bool anyControl = false;
  for (size_t i = 0; i < art.kernels.size(); ++i) {
    const auto &k = art.kernels[i];
    gk.push_back({k.name.c_str(), params[i].data(), uint32_t(params[i].size()),
                  k.offsets.empty() ? nullptr : k.offsets.data(), k.pushBytes,
                  uint32_t(k.sharedBytes)});
    controls.push_back(k.controlBinding);
    anyControl = anyControl || k.controlBinding != TSR_GPU_NO_CONTROL;
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
  mod.control_bindings = anyControl ? controls.data() : nullptr;
  tsr_executable_t exe = nullptr;
  if (tsr_status_t st = tsr_executable_create(device, art.format.c_str(), &mod, sizeof mod, &exe)) {
    *why = hal::Status::fromC(st).message();
    return nullptr;
  }
  std::vector<ProgramKernel> kernels;
  for (const auto &k : art.kernels) {
    ProgramKernel pk{k.name, nullptr, k.params,
                     k.subgroupSize ? k.subgroupSize : info.subgroup_size, k.sharedBytes};
    if (tsr_status_t st = tsr_executable_kernel(exe, k.name.c_str(), &pk.kernel)) {
      *why = hal::Status::fromC(st).message();
      for (auto &done : kernels)
        tsr_kernel_release(done.kernel);
      tsr_executable_release(exe);
      return nullptr;
    }
    kernels.push_back(std::move(pk));
  }
  return make(exe, std::move(kernels));
}

} // namespace

std::unique_ptr<Program> Program::create(tsr_device_t device, const ir::Module &m,
                                         CompileCache *cache, const ProgramOptions &opts,
                                         std::string *error) {
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
  if (tsr_status_t st = tsr_device_info(device, &info))
    return fail(hal::Status::fromC(st).message());
  const Target *target = targetForDevice(info);
  if (!target)
    return fail(std::string("no compiler for backend '") + info.backend +
                "' (targets: " + defaultTargets().names() + ")");
  // Refuse rather than run a robust or checked request unchecked.
  if (!target->boundsModeSupported(opts.bounds))
    return fail(std::string(target->name()) + ": bounds mode '" + boundsModeName(opts.bounds) +
                "' is not implemented for this backend yet (only 'unchecked': "
                "ProgramOptions::bounds = TSR_BOUNDS_UNCHECKED, tessera run --bounds unchecked)");
  std::string caps, err;
  if (!deviceCompilerCaps(device, &caps, &err))
    return fail(err);
  TargetOptions topts;
  // Only a target that emulates subgroups takes a width; elsewhere it is the device's.
  topts.subgroupSize = target->subgroupSizeOption() ? opts.subgroupSize : 0;
  topts.bounds = opts.bounds;
  topts.strict = opts.strict;
  topts.keepStages = !opts.dumpDir.empty();
  topts.quick = opts.quick && target->quickTier();
  if (!target->deviceOptions(info, caps, &topts, &err))
    return fail(err);
  CacheKey key = makeCacheKey(std::string(kCompilerVersion) + " " + compilerBuildId(),
                              target->name(), target->cacheKey(topts), ir::printModule(m));

  // A cached artefact the driver refuses is rejected and compiled afresh, once.
  for (int attempt = 0;; ++attempt) {
    ProgramStats stats;
    bool fromCache = false;
    auto t0 = std::chrono::steady_clock::now();
    std::optional<Artefact> art =
        cachedCompile(*target, cache, opts, key, m, topts, info, &stats, &fromCache, &err);
    if (!art)
      return fail(err);
    stats.compileMs = msSince(t0);
    auto t1 = std::chrono::steady_clock::now();
    std::unique_ptr<Program> p = loadArtefact(
        device, info, *art, &err, [](tsr_executable_t exe, std::vector<ProgramKernel> kernels) {
          auto impl = std::make_unique<Impl>();
          impl->exe = exe;
          std::unique_ptr<Program> p(new Program(std::move(impl)));
          p->kernels_ = std::move(kernels);
          return p;
        });
    if (p) // what the launch rules need, from the IR (the artefact does not carry it)
      for (ProgramKernel &k : p->kernels_)
        if (const ir::Function *f = m.lookup(k.name))
          k.usesMatrix = ir::usesMatrixOps(*f);
    if (p) {
      stats.loadMs = msSince(t1);
      p->stats_ = stats;
      return p;
    }
    if (!fromCache || attempt > 0)
      return fail(err);
    cache->reject(key, "the driver refused it: " + err);
  }
}

} // namespace tessera
