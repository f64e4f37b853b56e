// tessera.compile(kernel IR text, device) -> Program, and Program.launch with typed arguments.
//
// Arguments are checked against the kernel's parameter types before the HAL sees them (a
// Buffer of the wrong element type or device, an int for a float, a float for an int): the
// error names the kernel, the parameter and both types.
#include "common.h"

#include "ir/graph/plan_interp.h"
#include "ir/interp/numerics.h"
#include "ir/text/parser.h"
#include "tessera/graph_exec.h"
#include "tessera/program.h"

#include <cmath>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

namespace tessera::py {

CompileCache &compileCache() {
  // $TESSERA_CACHE_DIR (or the XDG default); created on first use, never destroyed (Programs
  // alive at interpreter shutdown may still hold it).
  static CompileCache *cache = new CompileCache(CompileCache::defaultDir());
  return *cache;
}

const char *sourceName(ProgramStats::Source s) {
  switch (s) {
  case ProgramStats::Source::Compiled:
    return "compiled";
  case ProgramStats::Source::MemoryCache:
    return "memory-cache";
  case ProgramStats::Source::DiskCache:
    return "disk-cache";
  }
  return "compiled";
}

namespace {

struct PyProgram {
  DevicePtr device;
  std::shared_ptr<Program> program;
};

tsr_arg_t scalarArg(const std::string &where, const ir::Type &t, nb::handle v) {
  if (ir::isFloatScalar(t.elem)) {
    if (!nb::isinstance<nb::float_>(v) && !nb::isinstance<nb::int_>(v))
      raise(TSR_INVALID_ARGUMENT, where + ": expected a number for " + ir::toString(t));
    double x = 0;
    if (!nb::try_cast<double>(v, x))
      raise(TSR_OUT_OF_RANGE, where + ": the number does not fit in a double");
    // As in launch specs (docs/ir.md): a finite value that rounds to infinity is an error.
    const double rounded = ir::numerics::roundToFloat(x, t.elem);
    if (std::isfinite(x) && std::isinf(rounded))
      raise(TSR_OUT_OF_RANGE, where + ": " + nb::str(v).c_str() + " overflows " + ir::toString(t) +
                                  " (pass inf for an infinity)");
    switch (t.elem) {
    case ir::Scalar::F16:
      return tsr_arg_f16_bits(ir::numerics::toF16Bits(rounded));
    case ir::Scalar::BF16:
      return tsr_arg_bf16_bits(ir::numerics::toBF16Bits(rounded));
    case ir::Scalar::F32:
      return tsr_arg_f32(static_cast<float>(x));
    default:
      return tsr_arg_f64(x);
    }
  }
  if (!nb::isinstance<nb::int_>(v) || nb::isinstance<nb::bool_>(v))
    raise(TSR_INVALID_ARGUMENT, where + ": expected an int for " + ir::toString(t) + ", got " +
                                    nb::type_name(v.type()).c_str());
  // As integer literals (docs/ir.md): width w takes -2^(w-1) .. 2^w - 1, read signed or
  // unsigned by the ops.
  const int bits = ir::bitWidth(t.elem);
  int64_t x = 0;
  if (uint64_t u = 0; !nb::try_cast<int64_t>(v, x)) {
    if (bits != 64 || !nb::try_cast<uint64_t>(v, u))
      raise(TSR_OUT_OF_RANGE, where + ": " + nb::str(v).c_str() + " does not fit in " +
                                  ir::toString(t) + " (-2^" + std::to_string(bits - 1) + " .. 2^" +
                                  std::to_string(bits) + " - 1)");
    x = static_cast<int64_t>(u);
  } else if (bits < 64 && (x < -(int64_t(1) << (bits - 1)) || x > (int64_t(1) << bits) - 1)) {
    raise(TSR_OUT_OF_RANGE, where + ": " + std::to_string(x) + " does not fit in " +
                                ir::toString(t) + " (-2^" + std::to_string(bits - 1) + " .. 2^" +
                                std::to_string(bits) + " - 1)");
  }
  switch (t.elem) {
  case ir::Scalar::I1:
  case ir::Scalar::I8:
    return tsr_arg_i8(static_cast<int8_t>(x));
  case ir::Scalar::I16:
    return tsr_arg_i16(static_cast<int16_t>(x));
  case ir::Scalar::I32:
    return tsr_arg_i32(static_cast<int32_t>(x));
  default:
    return tsr_arg_i64(x);
  }
}

/// A grid or workgroup: an int, or a sequence of 1 to 3 ints.
std::array<uint32_t, 3> dims(const char *what, nb::handle v) {
  std::array<uint32_t, 3> d = {1, 1, 1};
  std::vector<int64_t> xs;
  if (int64_t x = 0; nb::try_cast<int64_t>(v, x))
    xs = {x};
  else if (!nb::try_cast<std::vector<int64_t>>(v, xs) || xs.empty() || xs.size() > 3)
    raise(TSR_INVALID_ARGUMENT, std::string(what) + " must be an int or 1 to 3 ints");
  for (size_t i = 0; i < xs.size(); ++i) {
    if (xs[i] < 0 || xs[i] > int64_t(UINT32_MAX))
      raise(TSR_OUT_OF_RANGE,
            std::string(what) + " extent " + std::to_string(xs[i]) + " is outside [0, 2^32)");
    d[i] = static_cast<uint32_t>(xs[i]);
  }
  return d;
}

PyProgram compileText(const std::string &text, const std::string &device,
                      const std::string &bounds) {
  DevicePtr d = Runtime::get().device(device);
  ir::ParseResult parsed = ir::parseModule(text, "<string>");
  if (!parsed.ok()) {
    std::string msg;
    for (const auto &diag : parsed.diags)
      msg += (msg.empty() ? "" : "\n") + diag.str();
    raise(TSR_INVALID_ARGUMENT, msg);
  }
  ProgramOptions opts;
  if (bounds.empty()) // robust where the backend has it (docs/ir.md "Faults")
    opts = withSupportedBounds(d->device.get(), opts);
  else if (!parseBoundsMode(bounds, &opts.bounds))
    raise(TSR_INVALID_ARGUMENT, "bounds must be unchecked, robust or checked, got " + bounds);
  std::string err;
  std::unique_ptr<Program> p;
  {
    nb::gil_scoped_release nogil;
    p = Program::create(d->device.get(), *parsed.module, &compileCache(), opts, &err);
  }
  if (!p)
    raise(TSR_INTERNAL, "compiling for " + device + ": " + err);
  return PyProgram{d, std::shared_ptr<Program>(std::move(p))};
}

void launch(PyProgram &p, const std::string &name, nb::handle grid, nb::handle workgroup,
            nb::list args, nb::handle stream) {
  const ProgramKernel *k = p.program->kernel(name);
  if (!k) {
    std::string names;
    for (const ProgramKernel &pk : p.program->kernels())
      names += (names.empty() ? "@" : ", @") + pk.name;
    raise(TSR_NOT_FOUND, "no kernel @" + name + " in the program (it has " + names + ")");
  }
  std::array<uint32_t, 3> g = dims("grid", grid), w = dims("workgroup", workgroup);
  if (std::string bad = launchShapeError(*k, w.data()); !bad.empty())
    raise(TSR_INVALID_ARGUMENT, "@" + name + ": " + bad);
  if (args.size() != k->params.size())
    raise(TSR_INVALID_ARGUMENT, "@" + name + " takes " + std::to_string(k->params.size()) +
                                    " arguments, got " + std::to_string(args.size()));
  std::vector<tsr_arg_t> hal;
  for (size_t i = 0; i < k->params.size(); ++i) {
    const ir::Type &t = k->params[i];
    std::string where = "@" + name + " argument " + std::to_string(i);
    if (t.kind != ir::Type::Kind::Buffer) {
      hal.push_back(scalarArg(where, t, args[i]));
      continue;
    }
    Buffer *b = nullptr;
    if (!nb::try_cast<Buffer *>(args[i], b) || !b)
      raise(TSR_INVALID_ARGUMENT, where + ": expected a tessera.Buffer for " + ir::toString(t));
    if (b->storage->device.get() != p.device.get())
      raise(TSR_INVALID_ARGUMENT, where + ": the buffer is on " + b->storage->device->name +
                                      ", the program on " + p.device->name);
    if (graph::storageScalar(b->dtype) != t.elem)
      raise(TSR_INVALID_ARGUMENT,
            where + ": a " + graph::dtypeName(b->dtype) + " buffer for " + ir::toString(t));
    hal.push_back(tsr_arg_buffer(b->storage->buffer.get(),
                                 uint64_t(b->offset) * graph::dtypeBytes(b->dtype)));
  }
  tsr_stream_t s = streamArg(stream, p.device);
  checkC(tsr_stream_launch(s, k->kernel, g.data(), w.data(), hal.data(),
                           static_cast<uint32_t>(hal.size())));
  if (stream.is_none()) { // the default stream: synchronous, so errors surface here
    nb::gil_scoped_release nogil;
    check(p.device->stream.synchronize());
  }
}

} // namespace

void bindPrograms(nb::module_ &m) {
  nb::class_<PyProgram>(m, "Program")
      .def_prop_ro("kernels",
                   [](const PyProgram &p) {
                     std::vector<std::string> names;
                     for (const ProgramKernel &k : p.program->kernels())
                       names.push_back(k.name);
                     return names;
                   })
      .def_prop_ro("device", [](const PyProgram &p) { return p.device->name; })
      .def_prop_ro("source",
                   [](const PyProgram &p) { return sourceName(p.program->stats().source); })
      .def("launch", &launch, nb::arg("name"), nb::arg("grid"), nb::arg("workgroup"),
           nb::arg("args"), nb::arg("stream") = nb::none(),
           "Launches @name with grid workgroups of `workgroup` work-items. Without a stream: on "
           "the device's default stream, synchronously.");
  m.def("compile", &compileText, nb::arg("text"), nb::arg("device") = "cpu:0",
        nb::arg("bounds") = "",
        "Compiles kernel IR text (docs/ir.md) for a device, through the compile cache. bounds: "
        "'robust' (the default where the backend has it), 'checked' or 'unchecked'.");
}

} // namespace tessera::py
