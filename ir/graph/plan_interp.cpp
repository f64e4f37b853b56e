// runPlanOnInterpreter (plan_interp.h): a Plan executed launch by launch on ir::interpret.
#include "ir/graph/plan_interp.h"

#include "ir/interp/interpreter.h"
#include "ir/text/parser.h"

#include <cmath>

namespace tessera::graph {

ir::Scalar storageScalar(DType t) {
  switch (t) {
  case DType::Bool:
    return ir::Scalar::I8;
  case DType::I32:
    return ir::Scalar::I32;
  case DType::I64:
    return ir::Scalar::I64;
  case DType::F16:
    return ir::Scalar::F16;
  case DType::BF16:
    return ir::Scalar::BF16;
  case DType::F32:
    return ir::Scalar::F32;
  case DType::F64:
    return ir::Scalar::F64;
  }
  return ir::Scalar::F32;
}

namespace {

ir::Literal literalOf(DType t, double v) {
  ir::Literal l;
  if (isFloat(t))
    l.f = v;
  else if (t == DType::Bool)
    l.i = v != 0;
  else
    l.i = static_cast<uint64_t>(static_cast<int64_t>(v));
  return l;
}

double valueOf(DType t, const ir::Literal &l) {
  if (isFloat(t))
    return l.f;
  if (t == DType::Bool)
    return (l.i & 0xff) != 0;
  if (t == DType::I32)
    return static_cast<int32_t>(static_cast<uint32_t>(l.i));
  return static_cast<double>(static_cast<int64_t>(l.i));
}

/// Calls f(linear row-major index, storage index) for every element of a strided view.
template <class F>
void forEachElement(const std::vector<int64_t> &shape, const std::vector<int64_t> &strides,
                    int64_t offset, F f) {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t at = offset;
    for (size_t d = 0; d < shape.size(); ++d)
      at += idx[d] * strides[d];
    f(i, at);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d])
        break;
      idx[d] = 0;
    }
  }
}

} // namespace

bool runPlanOnInterpreter(const Plan &plan, const Graph &g, const std::vector<HostTensor> &inputs,
                          std::vector<HostTensor> *outputs, std::string *err,
                          const PlanInterpOptions &opts) {
  if (inputs.size() != g.params.size()) {
    *err = "expected " + std::to_string(g.params.size()) + " inputs, got " +
           std::to_string(inputs.size());
    return false;
  }
  std::unique_ptr<ir::Module> module;
  if (!plan.module.empty()) {
    ir::ParseResult pr = ir::parseModule(plan.module, "<plan>");
    if (!pr.ok()) {
      *err = pr.diags.empty() ? "the plan's module does not parse" : pr.diags.front().str();
      return false;
    }
    module = std::move(pr.module);
  }
  std::vector<ir::HostBuffer> bufs;
  for (const PlanBuffer &b : plan.buffers)
    bufs.emplace_back(storageScalar(b.dtype), b.elements);
  for (size_t bi = 0; bi < plan.buffers.size(); ++bi) {
    const PlanBuffer &b = plan.buffers[bi];
    if (b.role != PlanBuffer::Role::Input)
      continue;
    const TensorType &t = g.params[static_cast<size_t>(b.param)].type;
    const HostTensor &in = inputs[static_cast<size_t>(b.param)];
    if (static_cast<int64_t>(in.data.size()) != t.numel()) {
      *err = "input " + std::to_string(b.param) + " has " + std::to_string(in.data.size()) +
             " values, its type " + typeToString(t) + " needs " + std::to_string(t.numel());
      return false;
    }
    forEachElement(t.shape, t.effectiveStrides(), 0, [&](int64_t i, int64_t at) {
      bufs[bi].set(at, literalOf(t.dtype, in.data[static_cast<size_t>(i)]));
    });
  }
  for (const PlanLaunch &l : plan.launches) {
    const ir::Function *f = module ? module->lookup(l.kernel) : nullptr;
    if (!f) {
      *err = "launch of @" + l.kernel + ": no such kernel in the module";
      return false;
    }
    std::vector<ir::KernelArg> args(l.args.size());
    for (size_t i = 0; i < l.args.size(); ++i) {
      const PlanArg &a = l.args[i];
      if (a.kind == PlanArg::Kind::Buffer)
        args[i].buffer = &bufs[static_cast<size_t>(a.buffer)];
      else if (a.kind == PlanArg::Kind::I32 || a.kind == PlanArg::Kind::I64)
        args[i].scalar.i = static_cast<uint64_t>(a.i);
      else
        args[i].scalar.f = a.f;
    }
    ir::LaunchDims dims;
    for (int d = 0; d < 3; ++d) {
      dims.grid[static_cast<size_t>(d)] = l.grid[d];
      dims.workgroup[static_cast<size_t>(d)] = l.workgroup[d];
    }
    ir::InterpOptions io;
    io.subgroupSize = opts.subgroupSize;
    ir::InterpResult r = ir::interpret(*module, *f, dims, args, io);
    if (!r.ok) {
      *err = "launch of @" + l.kernel + ": " + r.error;
      return false;
    }
  }
  outputs->clear();
  for (const PlanOutput &o : plan.outputs) {
    HostTensor t;
    t.type.dtype = o.dtype;
    t.type.shape = o.shape;
    t.data.resize(static_cast<size_t>(t.type.numel()));
    const ir::HostBuffer &b = bufs[static_cast<size_t>(o.buffer)];
    forEachElement(o.shape, o.strides, o.offset, [&](int64_t i, int64_t at) {
      t.data[static_cast<size_t>(i)] = valueOf(o.dtype, b.get(at));
    });
    outputs->push_back(std::move(t));
  }
  return true;
}

} // namespace tessera::graph
