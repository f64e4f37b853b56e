// GraphExecutable and ProgramCache (graph_exec.h): lowering a graph for a device, sharing
// loaded Programs between graphs whose modules are the same text, and running plans.
#include "tessera/graph_exec.h"

#include "runtime/src/graph_exec_internal.h"

#include "ir/text/parser.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace tessera {
namespace {

using hal::Status;

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::string dimsText(const std::vector<int64_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

} // namespace

namespace detail {
tsr_arg_t planScalarArg(const graph::PlanArg &a) {
  switch (a.kind) {
  case graph::PlanArg::Kind::I32:
    return tsr_arg_i32(static_cast<int32_t>(a.i));
  case graph::PlanArg::Kind::I64:
    return tsr_arg_i64(a.i);
  case graph::PlanArg::Kind::F32:
    return tsr_arg_f32(static_cast<float>(a.f));
  case graph::PlanArg::Kind::F64:
    return tsr_arg_f64(a.f);
  case graph::PlanArg::Kind::Buffer:
    break;
  }
  return tsr_arg_i64(0); // buffers are bound by the caller
}

} // namespace detail

void copyStridedHost(const char *src, const std::vector<int64_t> &srcStrides, char *dst,
                     const std::vector<int64_t> &dstStrides, const std::vector<int64_t> &shape,
                     size_t elemBytes) {
  for (int64_t d : shape)
    if (d == 0)
      return;
  // Dims of extent 1 never move the index; dropping them lets more layouts collapse below.
  std::vector<int64_t> ext, ss, ds;
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] != 1) {
      ext.push_back(shape[i]);
      ss.push_back(srcStrides[i]);
      ds.push_back(dstStrides[i]);
    }
  // Merge a dim into the next inner one when both layouts step over it contiguously
  // (stride[i] == stride[i+1] * extent[i+1] on both sides): a dense tensor becomes one run.
  for (size_t i = ext.size(); i-- > 1;)
    if (ss[i - 1] == ss[i] * ext[i] && ds[i - 1] == ds[i] * ext[i]) {
      ext[i - 1] *= ext[i];
      ss[i - 1] = ss[i];
      ds[i - 1] = ds[i];
      ext.erase(ext.begin() + static_cast<std::ptrdiff_t>(i));
      ss.erase(ss.begin() + static_cast<std::ptrdiff_t>(i));
      ds.erase(ds.begin() + static_cast<std::ptrdiff_t>(i));
    }
  const int64_t eb = static_cast<int64_t>(elemBytes);
  if (ext.empty()) { // a single element
    std::memcpy(dst, src, elemBytes);
    return;
  }
  const size_t inner = ext.size() - 1;
  const int64_t n = ext[inner], si = ss[inner], di = ds[inner];
  // The innermost dim: one memcpy when both sides are unit-stride, else a tight loop. The
  // outer dims: an odometer, once per inner run.
  std::vector<int64_t> idx(inner, 0);
  int64_t s = 0, t = 0;
  while (true) {
    const char *from = src + s * eb;
    char *to = dst + t * eb;
    if (si == 1 && di == 1)
      std::memcpy(to, from, static_cast<size_t>(n * eb));
    else
      for (int64_t j = 0; j < n; ++j)
        std::memcpy(to + j * di * eb, from + j * si * eb, elemBytes);
    size_t k = inner;
    while (k > 0) {
      --k;
      s += ss[k];
      t += ds[k];
      if (++idx[k] < ext[k])
        break;
      s -= ss[k] * ext[k];
      t -= ds[k] * ext[k];
      idx[k] = 0;
      if (k == 0)
        return;
    }
    if (inner == 0)
      return;
  }
}

hal::Status deviceScheduleCaps(tsr_device_t device, graph::ScheduleCaps *caps) {
  tsr_device_info_t info = {};
  info.struct_size = sizeof(info);
  if (Status st = Status::fromC(tsr_device_info(device, &info)); !st.ok())
    return st;
  graph::ScheduleCaps c;
  c.backend = info.backend;
  c.maxWorkgroupSize =
      std::max<uint32_t>(1, std::min(info.max_workgroup_total, info.max_workgroup_size[0]));
  // The CPU target emulates subgroups at any width; it reports the width it compiles for.
  c.subgroupSize = std::max<uint32_t>(1, info.subgroup_size);
  c.sharedBytes = info.max_shared_memory;
  c.f16 = info.features & TSR_FEATURE_FP16;
  c.bf16 = info.features & TSR_FEATURE_BF16;
  c.f64 = info.features & TSR_FEATURE_FP64;
  c.i64 = info.features & TSR_FEATURE_INT64;
  // Matrix ops where the target has a conformance-tested matrix lowering (backends/target.h).
  if (const Target *target = targetForDevice(info)) {
    std::string record, error;
    if (!deviceCompilerCaps(device, &record, &error))
      return Status(TSR_INTERNAL, error);
    c.matrixOps = target->graphMatrixOps();
    c.matrixMinFlops = target->graphMatrixMinFlops(record);
    c.externGemm = !target->externGemmLibrary().empty();
    c.maxScalarParamBytes = target->graphScalarParamBytes(record);
    c.maxKernelBuffers = target->graphMaxKernelBuffers(record);
  } else {
    c.matrixOps = false;
  }
  *caps = c;
  return Status();
}

ProgramOptions graphProgramOptions(tsr_device_t device, const graph::ScheduleCaps &caps) {
  ProgramOptions opts;
  opts.bounds = TSR_BOUNDS_ROBUST;
  // Targets that emulate subgroups (cpu) compile for the width the schedule assumed.
  const Target *target = defaultTargets().forBackend(caps.backend);
  if (target && target->subgroupSizeOption())
    opts.subgroupSize = caps.subgroupSize;
  return withSupportedBounds(device, opts);
}

tsr_memory_kind_t preferredMemoryKind(tsr_device_t device) {
  if (const char *e = std::getenv("TESSERA_DEVICE_LOCAL_ONLY"); e && std::string(e) == "1")
    return TSR_MEMORY_DEVICE_LOCAL;
  tsr_device_info_t info = {};
  info.struct_size = sizeof(info);
  if (tsr_status_t st = tsr_device_info(device, &info)) {
    tsr_status_free(st);
    return TSR_MEMORY_DEVICE_LOCAL;
  }
  if (info.features & TSR_FEATURE_UNIFIED_MEMORY)
    return TSR_MEMORY_DEVICE_LOCAL | TSR_MEMORY_HOST_VISIBLE;
  return TSR_MEMORY_DEVICE_LOCAL;
}

// --- ProgramCache -------------------------------------------------------------------------

ProgramCache &ProgramCache::global() {
  static ProgramCache cache; // constructed on first use: not a registration side effect
  return cache;
}

size_t ProgramCache::liveEntries() {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<size_t>(std::count_if(
      entries_.begin(), entries_.end(), [](const auto &e) { return !e.second.program.expired(); }));
}

hal::Expected<ProgramCache::Lookup> ProgramCache::get(tsr_device_t device,
                                                      const std::string &moduleText,
                                                      CompileCache *cache,
                                                      const ProgramOptions &opts) {
  // The key is the text itself (an exact compare, no hash collision to reason about), prefixed
  // by the device handle and every option that changes the compiled code.
  char prefix[96];
  std::snprintf(prefix, sizeof(prefix), "%p|sg%u|b%d|s%d|q%d|", static_cast<void *>(device),
                opts.subgroupSize, static_cast<int>(opts.bounds), opts.strict ? 1 : 0,
                opts.quick ? 1 : 0);
  std::string key = prefix + moduleText;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end();)
    it = it->second.program.expired() ? entries_.erase(it) : std::next(it);
  if (auto it = entries_.find(key); it != entries_.end())
    return Lookup{it->second.program.lock(), true};

  ir::ParseResult parsed = ir::parseModule(moduleText, "<graph module>");
  if (!parsed.ok()) {
    std::string msg = "the lowered module does not parse (a lowering bug):";
    for (const auto &d : parsed.diags)
      msg += "\n  " + d.str();
    return Status(TSR_INTERNAL, msg);
  }
  std::string err;
  std::unique_ptr<Program> program = Program::create(device, *parsed.module, cache, opts, &err);
  if (!program)
    return Status(TSR_INTERNAL, "compiling the graph's module: " + err);
  std::shared_ptr<Program> shared(std::move(program));
  tsr_device_retain(device);
  entries_[key] = Entry{hal::Device(device), shared};
  return Lookup{shared, false};
}

// --- GraphExecutable ----------------------------------------------------------------------

GraphExecutable::~GraphExecutable() {
  // A full-tier compile still running uses this executable's device, which the caller may
  // release right after: waited for (graph_tier.cpp).
  abandonTierUp();
  for (size_t b = 0; b < pool_.size(); ++b)
    if (poolMapped_[b])
      (void)pool_[b].unmap();
}

std::unique_ptr<GraphExecutable> GraphExecutable::create(tsr_device_t device, const graph::Graph &g,
                                                         CompileCache *cache, std::string *error) {
  auto r = create(device, g, cache, ProgramCache::global());
  if (!r.ok()) {
    if (error)
      *error = r.status().toString();
    return nullptr;
  }
  return std::move(r).value();
}

hal::Expected<std::unique_ptr<GraphExecutable>>
GraphExecutable::create(tsr_device_t device, const graph::Graph &g, CompileCache *cache,
                        ProgramCache &programs, GemmImpl gemm) {
  graph::ScheduleCaps caps;
  if (Status st = deviceScheduleCaps(device, &caps); !st.ok())
    return st;
  auto t0 = std::chrono::steady_clock::now();
  graph::Plan plan;
  std::string err;
  if (!graph::lower(g, caps, &plan, &err))
    return Status(TSR_UNIMPLEMENTED, "graph @" + g.name + ": " + err);
  double lowerMs = msSince(t0);
  auto r = fromPlan(device, g, std::move(plan), cache, programs, gemm);
  if (r.ok())
    r.value()->stats_.lowerMs = lowerMs;
  return r;
}

hal::Expected<std::unique_ptr<GraphExecutable>>
GraphExecutable::fromPlan(tsr_device_t device, const graph::Graph &g, graph::Plan plan,
                          CompileCache *cache, ProgramCache &programs, GemmImpl gemm) {
  std::unique_ptr<GraphExecutable> x(new GraphExecutable());
  tsr_device_retain(device);
  x->device_ = hal::Device(device);
  auto info = x->device_.info();
  if (!info.ok())
    return info.status();
  x->info_ = info.value();
  if (plan.outputs.size() != g.outputs.size())
    return Status(TSR_INTERNAL, "the plan has " + std::to_string(plan.outputs.size()) +
                                    " outputs for a graph with " +
                                    std::to_string(g.outputs.size()));
  if (!plan.launches.empty())
    if (Status st = x->compileProgram(plan.module, cache, programs); !st.ok())
      return st;
  for (const graph::PlanLaunch &l : plan.launches) {
    const ProgramKernel *k = x->program_->kernel(l.kernel);
    if (!k)
      return Status(TSR_INTERNAL, "the plan launches @" + l.kernel + ", not in its module");
    if (std::string bad = launchShapeError(*k, l.workgroup); !bad.empty())
      return Status(TSR_INVALID_ARGUMENT, "@" + l.kernel + ": " + bad);
    if (k->params.size() != l.args.size())
      return Status(TSR_INTERNAL, "@" + l.kernel + " takes " + std::to_string(k->params.size()) +
                                      " arguments; the plan passes " +
                                      std::to_string(l.args.size()));
    for (const graph::PlanArg &a : l.args)
      if (a.kind == graph::PlanArg::Kind::Buffer &&
          (a.buffer < 0 || a.buffer >= static_cast<int>(plan.buffers.size())))
        return Status(TSR_INTERNAL, "@" + l.kernel + ": a plan argument names buffer " +
                                        std::to_string(a.buffer) + " of " +
                                        std::to_string(plan.buffers.size()));
    x->launchKernels_.push_back(k);
  }
  x->pool_.resize(plan.buffers.size());
  x->poolMapped_.resize(plan.buffers.size(), nullptr);
  x->unified_ = preferredMemoryKind(device) & TSR_MEMORY_HOST_VISIBLE;
  const char *importEnv = std::getenv("TESSERA_GRAPH_HOST_IMPORT");
  x->importHost_ = x->unified_ && !(importEnv && std::string(importEnv) == "0");
  x->staging_.resize(g.params.size());
  auto ev = x->device_.createEvent();
  if (!ev.ok())
    return ev.status();
  x->lastRun_ = std::move(ev.value());
  x->graph_ = g;
  x->plan_ = std::move(plan);
  x->gemmMode_ = gemm;
  x->cache_ = cache;
  // The quick tier's GEMM kernels are not the ones to measure: the vendor library runs every
  // GEMM it can take until the full tier is swapped in and chooses again.
  const GemmImpl now = x->tierUp_ && gemm == GemmImpl::Auto ? GemmImpl::Extern : gemm;
  if (Status st = x->chooseGemms(now, cache); !st.ok())
    return st;
  return x;
}

hal::Expected<tsr_buffer_t> GraphExecutable::pooled(size_t planBuffer, uint64_t bytes) {
  bytes = std::max<uint64_t>(bytes, 1); // the HAL has no empty buffers
  hal::Buffer &b = pool_[planBuffer];
  if (b) {
    auto size = b.size();
    if (size.ok() && size.value() >= bytes)
      return b.get();
  }
  if (poolMapped_[planBuffer])
    (void)b.unmap();
  poolMapped_[planBuffer] = nullptr;
  // Inputs on unified memory are written by the host directly (bindInput): mapped for life.
  bool hostWritten = unified_ && plan_.buffers[planBuffer].role == graph::PlanBuffer::Role::Input;
  auto nb = device_.allocate(bytes, hostWritten ? preferredMemoryKind(device_.get())
                                                : TSR_MEMORY_DEVICE_LOCAL);
  if (!nb.ok())
    return nb.status();
  b = std::move(nb.value());
  if (hostWritten) {
    auto mapped = b.map(0, bytes);
    if (!mapped.ok())
      return mapped.status();
    poolMapped_[planBuffer] = mapped.value();
  }
  return b.get();
}

hal::Expected<bool>
GraphExecutable::bindImported(size_t planBuffer, const char *src, uint64_t bytes,
                              std::vector<std::pair<tsr_buffer_t, uint64_t>> *bound) {
  uint64_t align = std::max<uint32_t>(1, info_.buffer_offset_alignment);
  if (!importHost_ || reinterpret_cast<uintptr_t>(src) % align != 0)
    return false;
  // The kernels only read inputs (plans never write a parameter's buffer), so aliasing the
  // caller's tensor is safe; run() synchronizes before the caller gets its memory back.
  auto imported = device_.importHost(const_cast<char *>(src), bytes);
  if (!imported.ok()) {
    if (imported.status().code() != TSR_UNIMPLEMENTED)
      return imported.status();
    importHost_ = false; // the driver cannot: copy from now on, without asking again
    return false;
  }
  (*bound)[planBuffer] = {imported.value().get(), 0};
  imports_.push_back(std::move(imported.value()));
  stats_.inputBytesImported += bytes;
  return true;
}

hal::Status GraphExecutable::bindInput(size_t p, const GraphInput &in, tsr_stream_t stream,
                                       bool *hostCopy,
                                       std::vector<std::pair<tsr_buffer_t, uint64_t>> *bound) {
  const graph::TensorType &t = graph_.params[p].type;
  std::string where =
      "graph @" + graph_.name + " input " + std::to_string(p) + " (%" + graph_.params[p].name + ")";
  if (in.dtype != t.dtype)
    return Status(TSR_INVALID_ARGUMENT, where + ": dtype " + graph::dtypeName(in.dtype) +
                                            ", the graph takes " + graph::dtypeName(t.dtype));
  if (in.shape != t.shape)
    return Status(TSR_INVALID_ARGUMENT, where + ": shape " + dimsText(in.shape) +
                                            ", the graph takes " + dimsText(t.shape));
  std::vector<int64_t> strides = in.strides.empty() ? t.contiguousStrides() : in.strides;
  if (strides.size() != in.shape.size())
    return Status(TSR_INVALID_ARGUMENT, where + ": " + std::to_string(strides.size()) +
                                            " strides for rank " + std::to_string(in.shape.size()));
  for (int64_t s : strides)
    if (s < 0)
      return Status(TSR_INVALID_ARGUMENT,
                    where + ": negative strides " + dimsText(strides) + " are not supported");
  if (in.offset < 0)
    return Status(TSR_INVALID_ARGUMENT, where + ": negative offset");
  std::vector<int64_t> want = t.effectiveStrides();
  // A stride over a dim of extent 1 never moves: layouts equal up to those are the same.
  bool sameLayout = true;
  for (size_t i = 0; i < want.size(); ++i)
    sameLayout &= t.shape[i] <= 1 || want[i] == strides[i];
  const uint64_t elem = static_cast<uint64_t>(graph::dtypeBytes(t.dtype));
  const uint64_t storageBytes = static_cast<uint64_t>(t.storageElements()) * elem;
  // The plan buffer that holds this parameter (one per parameter).
  int planBuffer = -1;
  for (size_t b = 0; b < plan_.buffers.size(); ++b)
    if (plan_.buffers[b].role == graph::PlanBuffer::Role::Input &&
        plan_.buffers[b].param == static_cast<int>(p))
      planBuffer = static_cast<int>(b);
  if (planBuffer < 0)
    return Status(); // the plan never reads it
  if (in.buffer) {
    uint64_t offsetBytes = static_cast<uint64_t>(in.offset) * elem;
    uint64_t size = 0;
    if (Status st = Status::fromC(tsr_buffer_size(in.buffer, &size)); !st.ok())
      return st;
    if (!sameLayout)
      return Status(TSR_INVALID_ARGUMENT, where + ": a device buffer with strides " +
                                              dimsText(strides) + ", the graph takes " +
                                              dimsText(want) + " (compile for its layout)");
    if (offsetBytes + storageBytes > size)
      return Status(TSR_OUT_OF_RANGE, where + ": the view needs " +
                                          std::to_string(offsetBytes + storageBytes) +
                                          " bytes, the buffer has " + std::to_string(size));
    uint32_t align = std::max<uint32_t>(1, info_.buffer_offset_alignment);
    if (offsetBytes % align == 0) {
      (*bound)[static_cast<size_t>(planBuffer)] = {in.buffer, offsetBytes};
      return Status();
    }
    // A misaligned view: copied into the pool, where offsets are 0.
    auto dst = pooled(static_cast<size_t>(planBuffer), storageBytes);
    if (!dst.ok())
      return dst.status();
    (*bound)[static_cast<size_t>(planBuffer)] = {dst.value(), 0};
    return Status::fromC(
        tsr_stream_copy_d2d(stream, in.buffer, offsetBytes, dst.value(), 0, storageBytes));
  }
  if (!in.host)
    return Status(TSR_INVALID_ARGUMENT, where + ": neither a buffer nor host memory");
  const char *src = static_cast<const char *>(in.host) + in.offset * int64_t(elem);
  if (sameLayout && storageBytes > 0) {
    auto imported = bindImported(static_cast<size_t>(planBuffer), src, storageBytes, bound);
    if (!imported.ok())
      return imported.status();
    if (imported.value()) {
      *hostCopy = true; // the device reads the caller's memory: run() waits for it
      return Status();
    }
  }
  auto dst = pooled(static_cast<size_t>(planBuffer), storageBytes);
  if (!dst.ok())
    return dst.status();
  (*bound)[static_cast<size_t>(planBuffer)] = {dst.value(), 0};
  if (storageBytes == 0)
    return Status();
  // The caller gave host memory: it gets its results synchronously (run() waits), whichever
  // way the data travels.
  *hostCopy = true;
  stats_.inputBytesCopied += storageBytes;
  if (char *mapped = static_cast<char *>(poolMapped_[static_cast<size_t>(planBuffer)])) {
    // Unified memory: written here, on the calling thread, once earlier runs are done with
    // the pool (one queue round trip per input saved: they dominate small graphs).
    if (!hostWaited_) {
      if (Status st = lastRun_.synchronize(); !st.ok())
        return st;
      hostWaited_ = true;
    }
    if (sameLayout)
      std::memcpy(mapped, src, storageBytes);
    else
      copyStridedHost(src, strides, mapped, want, t.shape, elem);
    return Status();
  }
  if (sameLayout) // the storage span, as it is
    return Status::fromC(tsr_stream_copy_h2d(stream, src, dst.value(), 0, storageBytes));
  // Another layout: re-laid out on the host into the parameter's (staging kept until the
  // stream is synchronized at the end of run()).
  std::vector<char> &stage = staging_[p];
  stage.assign(storageBytes, 0);
  copyStridedHost(src, strides, stage.data(), want, t.shape, elem);
  return Status::fromC(tsr_stream_copy_h2d(stream, stage.data(), dst.value(), 0, storageBytes));
}

hal::Status GraphExecutable::run(const std::vector<GraphInput> &inputs, tsr_stream_t stream,
                                 std::vector<GraphOutput> *outputs) {
  std::lock_guard<std::mutex> lock(runMu_);
  return runLocked(inputs, stream, outputs);
}

hal::Status GraphExecutable::runLocked(const std::vector<GraphInput> &inputs, tsr_stream_t stream,
                                       std::vector<GraphOutput> *outputs) {
  outputs->clear();
  if (tierUp_)
    if (Status st = tierUp(/*wait=*/false); !st.ok())
      return st;
  bool hostCopy = false;
  // A run with host inputs synchronizes at its end (below), so the stream may leave its work
  // to that synchronize (tsr_stream_set_deferred; cpu: the calling thread runs the launches
  // instead of waking the stream's worker and sleeping until it is done: two thread
  // hand-offs per run). The span ends on every path, and before the synchronize's result.
  const bool willWait = std::any_of(inputs.begin(), inputs.end(),
                                    [](const GraphInput &in) { return in.host != nullptr; });
  const bool deferred = willWait && tsr_stream_set_deferred(stream, true) == nullptr;
  Status st = enqueue(inputs, stream, outputs, &hostCopy);
  // Host inputs are read by asynchronous copies: the caller's memory (and the staging) must
  // outlive them, on the error paths too.
  if (hostCopy)
    if (Status sync = Status::fromC(tsr_stream_synchronize(stream)); st.ok())
      st = sync;
  if (deferred)
    if (Status end = Status::fromC(tsr_stream_set_deferred(stream, false)); st.ok())
      st = end;
  imports_.clear(); // the stream has finished with them (or never enqueued work on them)
  if (!st.ok())
    outputs->clear();
  return st;
}

hal::Status GraphExecutable::profile(const std::vector<GraphInput> &inputs, tsr_stream_t stream,
                                     int runs, std::vector<LaunchProfile> *out) {
  if (runs < 1)
    return Status(TSR_INVALID_ARGUMENT,
                  "profile: runs must be at least 1, got " + std::to_string(runs));
  out->clear();
  std::lock_guard<std::mutex> lock(runMu_); // profile_ is read by enqueue under it
  // A full tier that is ready is swapped in first (as run() would), so the names below are
  // what the timed runs launch.
  if (tierUp_)
    if (Status st = tierUp(/*wait=*/false); !st.ok())
      return st;
  const std::vector<std::string> launched = launchedKernels();
  for (size_t i = 0; i < plan_.launches.size(); ++i)
    out->push_back({plan_.launches[i].kernel, launched[i], {}});
  std::vector<GraphOutput> outputs;
  for (int r = 0; r < runs; ++r) {
    profile_ = out;
    Status st = runLocked(inputs, stream, &outputs);
    if (st.ok())
      st = Status::fromC(tsr_stream_synchronize(stream));
    profile_ = nullptr;
    if (!st.ok())
      return st;
  }
  return Status();
}

hal::Status GraphExecutable::enqueue(const std::vector<GraphInput> &inputs, tsr_stream_t stream,
                                     std::vector<GraphOutput> *outputs, bool *hostCopy) {
  if (inputs.size() != graph_.params.size())
    return Status(TSR_INVALID_ARGUMENT, "graph @" + graph_.name + " takes " +
                                            std::to_string(graph_.params.size()) + " inputs, got " +
                                            std::to_string(inputs.size()));
  hostWaited_ = false;
  // Ordered after the previous run, whatever its stream: they share the pooled buffers.
  if (Status st = Status::fromC(tsr_stream_wait_event(stream, lastRun_.get())); !st.ok())
    return st;
  std::vector<std::pair<tsr_buffer_t, uint64_t>> bound(plan_.buffers.size(), {nullptr, 0});
  for (size_t p = 0; p < inputs.size(); ++p)
    if (Status st = bindInput(p, inputs[p], stream, hostCopy, &bound); !st.ok())
      return st;
  // Outputs: fresh buffers the caller owns; temporaries: the pool.
  std::vector<hal::Buffer> fresh(plan_.buffers.size());
  tsr_memory_kind_t outKind = preferredMemoryKind(device_.get());
  for (size_t b = 0; b < plan_.buffers.size(); ++b) {
    const graph::PlanBuffer &pb = plan_.buffers[b];
    uint64_t bytes = static_cast<uint64_t>(pb.elements) * graph::dtypeBytes(pb.dtype);
    if (pb.role == graph::PlanBuffer::Role::Temp) {
      auto t = pooled(b, bytes);
      if (!t.ok())
        return t.status();
      bound[b] = {t.value(), 0};
    } else if (pb.role == graph::PlanBuffer::Role::Output) {
      auto o = device_.allocate(std::max<uint64_t>(bytes, 1), outKind);
      if (!o.ok())
        return o.status();
      fresh[b] = std::move(o.value());
      bound[b] = {fresh[b].get(), 0};
    } else if (!bound[b].first) {
      return Status(TSR_INTERNAL, "plan buffer " + std::to_string(b) + " holds parameter " +
                                      std::to_string(pb.param) + ", which has no input");
    }
  }
  std::vector<tsr_arg_t> args;
  // Profiling: each launch starts on an idle stream (inputs copied) and is waited for.
  if (profile_)
    if (Status st = Status::fromC(tsr_stream_synchronize(stream)); !st.ok())
      return st;
  auto bindArgs = [&](const graph::PlanLaunch &l) {
    args.clear();
    for (const graph::PlanArg &a : l.args) {
      if (a.kind != graph::PlanArg::Kind::Buffer) {
        args.push_back(detail::planScalarArg(a));
        continue;
      }
      auto [buf, off] = bound[static_cast<size_t>(a.buffer)];
      args.push_back(tsr_arg_buffer(buf, off));
    }
  };
  for (size_t i = 0; i < plan_.launches.size(); ++i) {
    // A GEMM measured faster in the vendor library runs as its extern kernel.
    const ExternGemm *x = externGemm(i);
    const graph::PlanLaunch &l = x ? x->launch : plan_.launches[i];
    bindArgs(l);
    const auto t0 =
        profile_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    if (Status st = Status::fromC(
            tsr_stream_launch(stream, x ? x->kernel.get() : launchKernels_[i]->kernel, l.grid,
                              l.workgroup, args.data(), static_cast<uint32_t>(args.size())));
        !st.ok())
      return Status(st.code(), "@" + l.kernel + ": " + st.message());
    // A vendor GEMM stored the plain product: the plan's epilogue kernel finishes it in place
    // (the matmul launch's arguments).
    if (x && x->epilogue) {
      const graph::PlanLaunch &e = x->epilogueLaunch;
      bindArgs(e);
      if (Status st =
              Status::fromC(tsr_stream_launch(stream, x->epilogue->kernel, e.grid, e.workgroup,
                                              args.data(), static_cast<uint32_t>(args.size())));
          !st.ok())
        return Status(st.code(), "@" + e.kernel + ": " + st.message());
    }
    if (profile_) {
      if (Status st = Status::fromC(tsr_stream_synchronize(stream)); !st.ok())
        return Status(st.code(), "@" + l.kernel + ": " + st.message());
      (*profile_)[i].ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  if (Status st = Status::fromC(tsr_stream_record_event(stream, lastRun_.get())); !st.ok())
    return st;
  for (size_t o = 0; o < plan_.outputs.size(); ++o) {
    const graph::PlanOutput &po = plan_.outputs[o];
    GraphOutput out;
    size_t b = static_cast<size_t>(po.buffer);
    if (po.buffer < 0 || b >= plan_.buffers.size() || !fresh[b])
      return Status(TSR_INTERNAL,
                    "graph output " + std::to_string(o) + " is not an Output buffer of the plan");
    out.buffer = fresh[b].share();
    out.dtype = po.dtype;
    out.shape = po.shape;
    out.strides = po.strides.empty() ? graph::TensorType{po.dtype, po.shape, {}}.contiguousStrides()
                                     : po.strides;
    out.offset = po.offset;
    outputs->push_back(std::move(out));
  }
  return Status();
}

} // namespace tessera
