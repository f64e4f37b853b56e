// tessera.compile_graph(graph IR text, device) -> CompiledGraph: parse + verify
// (ir/graph), lower, compile (GraphExecutable through the compile cache and the shared
// ProgramCache), then run on host tensors or Buffers.
#include "common.h"

#include "ir/graph/text.h"
#include "tessera/graph_exec.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <chrono>
#include <utility>

namespace tessera::py {
namespace {

struct CompiledGraph {
  DevicePtr device;
  std::unique_ptr<GraphExecutable> exec;
  double compileMs = 0; // parse + verify + lower + compile + load, wall time
};

const char *graphSourceName(const GraphExecStats &s) {
  return s.programReused ? "memory-cache" : sourceName(s.source);
}

GemmImpl gemmImplArg(nb::handle arg) {
  if (arg.is_none())
    return gemmImplFromEnv();
  std::string v = nb::cast<std::string>(arg);
  if (v == "auto")
    return GemmImpl::Auto;
  if (v == "tessera")
    return GemmImpl::Tessera;
  if (v == "extern" || v == "mkl" || v == "openblas")
    return GemmImpl::Extern; // the target's first vendor library that loads
  raise(TSR_INVALID_ARGUMENT,
        "gemm_impl must be None, \"auto\", \"tessera\" or \"extern\", got \"" + v + "\"");
}

CompiledGraph compileGraph(const std::string &text, nb::handle deviceArg, nb::handle gemmArg) {
  auto t0 = std::chrono::steady_clock::now();
  std::string device =
      deviceArg.is_none()
          ? nb::cast<std::string>(nb::module_::import_("tessera._C").attr("default_device")())
          : nb::cast<std::string>(deviceArg);
  DevicePtr d = Runtime::get().device(device);
  const GemmImpl gemm = gemmImplArg(gemmArg);
  graph::Graph g;
  std::string err;
  if (!graph::parseGraph(text, "<string>", &g, &err)) // verifies too
    raise(TSR_INVALID_ARGUMENT, err);
  CompiledGraph cg;
  cg.device = d;
  {
    nb::gil_scoped_release nogil;
    auto x =
        GraphExecutable::create(d->device.get(), g, &compileCache(), ProgramCache::global(), gemm);
    if (!x.ok())
      raise(x.status().code(), x.status().message());
    cg.exec = std::move(x).value();
  }
  cg.compileMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return cg;
}

/// torch._C._to_dlpack and torch._C._from_dlpack, looked up on first use (GIL held). Kept as
/// strong references that are never released: static destructors run after the interpreter
/// is gone.
struct TorchDlpack {
  nb::handle to, from;
};
const TorchDlpack &torchDlpack() {
  static TorchDlpack fns;
  if (!fns.from.ptr()) {
    nb::object c = nb::module_::import_("torch._C");
    fns.to = nb::object(c.attr("_to_dlpack")).release();
    fns.from = nb::object(c.attr("_from_dlpack")).release();
  }
  return fns;
}

/// The DLPack capsule of torch tensor input `i`; anything else is a TesseraError.
nb::object torchCapsule(nb::handle obj, size_t i) {
  try {
    return torchDlpack().to(obj);
  } catch (nb::python_error &e) {
    raise(TSR_INVALID_ARGUMENT, "input " + std::to_string(i) +
                                    ": expected a torch tensor or a tessera.Buffer, got " +
                                    nb::type_name(obj.type()).c_str() + " (" + e.what() + ")");
  }
}

/// A zero-element tensor may export a null data pointer; no byte of it is ever read, but the
/// runtime takes null as "no host memory": any valid address stands in for it.
const char kNoBytes = 0;

/// The graph's outputs for `inputs` (Buffers of the graph's device, or host tensors; with
/// `torchIn` every host input is a torch tensor, read through torch._C._to_dlpack: a C call,
/// where the generic path calls Tensor.__dlpack__, a Python method). The outputs are complete
/// when this returns if `wait` (run() itself waits only when it read host memory).
/// The GraphInputs for `inputs` (see runGraph); `views` keeps their host memory alive.
void graphInputs(CompiledGraph &cg, nb::sequence inputs, bool torchIn, std::vector<GraphInput> &in,
                 std::vector<HostView> &views) {
  size_t n = nb::len(inputs);
  in.assign(n, GraphInput());
  views.assign(n, HostView());
  for (size_t i = 0; i < n; ++i) {
    nb::handle obj = inputs[i];
    if (Buffer *b = nullptr; nb::try_cast<Buffer *>(obj, b) && b) {
      if (b->storage->device.get() != cg.device.get())
        raise(TSR_INVALID_ARGUMENT, "input " + std::to_string(i) + " is a buffer on " +
                                        b->storage->device->name + ", the graph runs on " +
                                        cg.device->name);
      in[i].buffer = b->storage->buffer.get();
      in[i].dtype = b->dtype;
      in[i].shape = b->shape;
      in[i].strides = b->strides;
      in[i].offset = b->offset;
      continue;
    }
    views[i] = torchIn ? hostView(torchCapsule(obj, i)) : hostView(obj);
    in[i].host = views[i].data ? views[i].data : &kNoBytes;
    in[i].dtype = views[i].dtype;
    in[i].shape = views[i].shape;
    in[i].strides = views[i].strides;
  }
}

std::vector<GraphOutput> runGraph(CompiledGraph &cg, nb::sequence inputs, nb::handle stream,
                                  bool torchIn, bool wait) {
  std::vector<GraphInput> in;
  std::vector<HostView> views; // keep host memory alive during the run
  graphInputs(cg, inputs, torchIn, in, views);
  tsr_stream_t s = streamArg(stream, cg.device);
  std::vector<GraphOutput> out;
  {
    nb::gil_scoped_release nogil;
    check(cg.exec->run(in, s, &out));
    if (wait)
      checkC(tsr_stream_synchronize(s));
  }
  return out;
}

/// One Storage per HAL buffer: outputs that share one (the same value returned twice) share
/// it, so that it is mapped once.
StoragePtr storageOf(CompiledGraph &cg, GraphOutput &o,
                     std::vector<std::pair<tsr_buffer_t, StoragePtr>> &seen) {
  for (auto &[buf, st] : seen)
    if (buf == o.buffer.get())
      return st;
  auto st = std::make_shared<Storage>();
  st->device = cg.device;
  st->bytes = take(o.buffer.size());
  tsr_buffer_t key = o.buffer.get();
  st->buffer = std::move(o.buffer);
  seen.emplace_back(key, st);
  return st;
}

std::vector<Buffer> run(CompiledGraph &cg, nb::sequence inputs, nb::handle stream) {
  std::vector<GraphOutput> out = runGraph(cg, inputs, stream, false, false);
  std::vector<std::pair<tsr_buffer_t, StoragePtr>> seen;
  std::vector<Buffer> result;
  for (GraphOutput &o : out) {
    Buffer b;
    b.storage = storageOf(cg, o, seen);
    b.dtype = o.dtype;
    b.shape = o.shape;
    b.strides = o.strides;
    b.offset = o.offset;
    result.push_back(std::move(b));
  }
  return result;
}

/// The torch.compile path (backend.py): torch tensors in, torch tensors out, each output a
/// zero-copy view of its HAL buffer (a DLPack capsule made here, handed to
/// torch._C._from_dlpack), with no tessera.Buffer in between.
nb::list runTorch(CompiledGraph &cg, nb::sequence inputs) {
  if (!cg.device->hostVisible())
    raise(TSR_UNIMPLEMENTED, "run_torch returns views of host-visible memory; " + cg.device->name +
                                 " has none (use run_into)");
  std::vector<GraphOutput> out = runGraph(cg, inputs, nb::none(), true, true);
  std::vector<std::pair<tsr_buffer_t, StoragePtr>> seen;
  nb::list result;
  for (GraphOutput &o : out) {
    StoragePtr st = storageOf(cg, o, seen);
    const size_t elem = static_cast<size_t>(graph::dtypeBytes(o.dtype));
    char *data = static_cast<char *>(st->host()) + o.offset * int64_t(elem);
    // The capsule owns one reference to the storage: torch's tensor keeps it alive.
    nb::capsule owner(new StoragePtr(st),
                      [](void *p) noexcept { delete static_cast<StoragePtr *>(p); });
    std::vector<size_t> shape(o.shape.begin(), o.shape.end());
    nb::ndarray<> arr(data, shape.size(), shape.data(), owner, o.strides.data(), toDl(o.dtype),
                      nb::device::cpu::value, 0);
    nb::object capsule = nb::cast(arr, nb::rv_policy::reference);
    result.append(torchDlpack().from(capsule));
  }
  return result;
}

void runInto(CompiledGraph &cg, nb::sequence inputs, nb::sequence outputs) {
  std::vector<Buffer> got = run(cg, inputs, nb::none());
  if (nb::len(outputs) != got.size())
    raise(TSR_INVALID_ARGUMENT, "the graph has " + std::to_string(got.size()) +
                                    " outputs, run_into got " + std::to_string(nb::len(outputs)));
  for (size_t i = 0; i < got.size(); ++i) {
    HostView v = hostView(outputs[i]);
    if (v.dtype != got[i].dtype || v.shape != got[i].shape)
      raise(TSR_INVALID_ARGUMENT, "run_into output " + std::to_string(i) +
                                      ": the tensor's dtype or shape differs from the graph's " +
                                      graph::dtypeName(got[i].dtype) + " output");
    copyBufferToHost(got[i], const_cast<void *>(v.data), v.strides);
  }
}

/// Waits for the full tier (GraphExecutable::waitTierUp), GIL released: what the GEMM
/// choices and the launched kernels describe is the steady state.
void settleTier(const CompiledGraph &c) {
  hal::Status st;
  {
    nb::gil_scoped_release nogil;
    st = c.exec->waitTierUp();
  }
  if (!st.ok())
    raise(st.code(), st.message());
}

/// CompiledGraph.profile: each launch's median and minimum time over `runs` runs.
nb::list profileGraph(CompiledGraph &cg, nb::sequence inputs, int runs) {
  settleTier(cg); // the steady state's kernels, not the quick tier's
  std::vector<GraphInput> in;
  std::vector<HostView> views;
  graphInputs(cg, inputs, false, in, views);
  std::vector<LaunchProfile> prof;
  {
    nb::gil_scoped_release nogil;
    check(cg.exec->profile(in, streamArg(nb::none(), cg.device), runs, &prof));
  }
  nb::list out;
  for (LaunchProfile &p : prof) {
    std::sort(p.ms.begin(), p.ms.end());
    nb::dict d;
    d["kernel"] = p.kernel;
    d["launched"] = p.launched;
    d["median_ms"] = p.ms[p.ms.size() / 2];
    d["min_ms"] = p.ms.front();
    d["runs"] = p.ms.size();
    out.append(d);
  }
  return out;
}

} // namespace

void bindGraphs(nb::module_ &m) {
  nb::class_<CompiledGraph>(m, "CompiledGraph")
      .def("run", &run, nb::arg("inputs"), nb::arg("stream") = nb::none(),
           "Runs the graph on host tensors (torch CPU, numpy: copied) or Buffers of its device "
           "(used in place); returns one Buffer per graph output.")
      .def("run_torch", &runTorch, nb::arg("inputs"),
           "Runs the graph on torch CPU tensors (or Buffers of its device) and returns torch "
           "tensors that alias the outputs' host-visible memory (no copy).")
      .def("run_into", &runInto, nb::arg("inputs"), nb::arg("outputs"),
           "Runs the graph and copies each output into the given host tensor.")
      .def("profile", &profileGraph, nb::arg("inputs"), nb::arg("runs") = 20,
           "Runs the graph `runs` times with every launch timed alone (the stream synchronized "
           "around it); returns one dict per launch: kernel, launched (the extern kernel when "
           "a vendor GEMM replaces it), median_ms, min_ms, runs.")
      .def_prop_ro("device", [](const CompiledGraph &c) { return c.device->name; })
      .def_prop_ro("module", [](const CompiledGraph &c) { return c.exec->plan().module; })
      .def_prop_ro("kernels",
                   [](const CompiledGraph &c) {
                     // The GEMM choices are the full tier's: made once it runs.
                     settleTier(c);
                     nb::list out;
                     for (const graph::PlanKernelInfo &k : c.exec->plan().kernels) {
                       nb::dict d;
                       d["kernel"] = k.kernel;
                       d["kind"] = k.kind;
                       d["ops"] = nb::cast(k.ops);
                       // Matmul kernels: which implementation runs it, why, and the times
                       // measured (docs/torch.md, "Extern GEMMs").
                       d["impl"] = "tessera";
                       for (const GemmChoice &gc : c.exec->gemmChoices()) {
                         if (gc.kernel != k.kernel)
                           continue;
                         d["impl"] = gc.impl;
                         d["impl_reason"] = gc.reason;
                         d["tessera_ms"] = gc.tesseraMs >= 0 ? nb::cast(gc.tesseraMs) : nb::none();
                         d["extern_ms"] = gc.externMs >= 0 ? nb::cast(gc.externMs) : nb::none();
                         d["extern_library"] =
                             gc.library.empty() ? nb::none() : nb::cast(gc.library);
                         // The kernel finishing the epilogue after the vendor GEMM.
                         d["epilogue_kernel"] =
                             gc.epilogueKernel.empty() ? nb::none() : nb::cast(gc.epilogueKernel);
                       }
                       out.append(d);
                     }
                     return out;
                   })
      .def_prop_ro("launch_kernels",
                   [](const CompiledGraph &c) {
                     settleTier(c);
                     return c.exec->launchedKernels();
                   })
      .def_prop_ro("launches",
                   [](const CompiledGraph &c) { return c.exec->plan().launches.size(); })
      .def_prop_ro("stats",
                   [](const CompiledGraph &c) {
                     const GraphExecStats &s = c.exec->stats();
                     nb::dict d;
                     d["compile_ms"] = c.compileMs;
                     d["lower_ms"] = s.lowerMs;
                     d["codegen_ms"] = s.compileMs;
                     d["load_ms"] = s.loadMs;
                     d["source"] = graphSourceName(s);
                     d["program_reused"] = s.programReused;
                     d["tier"] = s.quickTier ? "quick" : "full";
                     return d;
                   })
      .def(
          "wait_tier_up", [](CompiledGraph &c) { settleTier(c); },
          "Waits until the background full-tier compile is done and its kernels replace the "
          "quick tier's (run swaps them in by itself once ready; docs/torch.md).");
  m.def("compile_graph", &compileGraph, nb::arg("text"), nb::arg("device") = nb::none(),
        nb::arg("gemm_impl") = nb::none(),
        "Parses, verifies, lowers and compiles graph IR text (docs/graph_ir.md) for a device "
        "(default: default_device()). gemm_impl: None (TESSERA_GEMM_IMPL, else \"auto\": "
        "epilogue-free f32 GEMMs run as the vendor library's when measured faster), "
        "\"tessera\" or \"extern\" (the first vendor library that loads: MKL, else OpenBLAS).");
}

} // namespace tessera::py
