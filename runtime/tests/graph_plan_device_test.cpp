// Lowered graph plans (ir/graph/lower.h) run on real devices (cpu:0, and vulkan:0 when
// present) through Program, launch by launch, compared with the graph reference evaluator.
// The plan's buffers live on the host between launches here (each launch uploads what it
// reads and downloads what it writes): this checks the kernels and their arguments, not the
// runtime executor (runtime/src/graph_exec.cpp has its own tests).
#include "ir/graph/tests/lower_check.h"
#include "runtime/tests/device_session.h"

namespace tessera {
namespace {

using graph::HostTensor;
using graph::Plan;

/// Runs `plan` on the device: every launch through runOnDevice on host copies of the buffers.
/// Inputs are written through their strides like the interpreter path does.
bool runPlanOnDevice(testing::DeviceSession &s, const Plan &plan, const graph::Graph &g,
                     const std::vector<HostTensor> &inputs, std::vector<HostTensor> *outputs,
                     std::string *err) {
  ir::ParseResult pr = ir::parseModule(plan.module, "<plan>");
  if (!pr.ok()) {
    *err = pr.diags.empty() ? "parse" : pr.diags.front().str();
    return false;
  }
  ProgramOptions po;
  po.subgroupSize = s.info.subgroup_size;
  auto prog =
      Program::create(s.device, *pr.module, nullptr, withSupportedBounds(s.device, po), err);
  if (!prog)
    return false;
  std::vector<ir::HostBuffer> bufs;
  for (const graph::PlanBuffer &b : plan.buffers)
    bufs.emplace_back(graph::storageScalar(b.dtype), b.elements);
  for (size_t bi = 0; bi < plan.buffers.size(); ++bi) {
    const graph::PlanBuffer &b = plan.buffers[bi];
    if (b.role != graph::PlanBuffer::Role::Input)
      continue;
    const graph::TensorType &t = g.params[static_cast<size_t>(b.param)].type;
    std::vector<int64_t> st = t.effectiveStrides(), idx(t.shape.size(), 0);
    const std::vector<double> &data = inputs[static_cast<size_t>(b.param)].data;
    for (size_t i = 0; i < data.size(); ++i) {
      int64_t at = 0;
      for (size_t d = 0; d < idx.size(); ++d)
        at += idx[d] * st[d];
      ir::Literal l;
      if (graph::isFloat(t.dtype))
        l.f = data[i];
      else
        l.i = static_cast<uint64_t>(static_cast<int64_t>(data[i]));
      bufs[bi].set(at, l);
      for (size_t d = idx.size(); d-- > 0;) {
        if (++idx[d] < t.shape[d])
          break;
        idx[d] = 0;
      }
    }
  }
  for (const graph::PlanLaunch &l : plan.launches) {
    const ProgramKernel *k = prog->kernel(l.kernel);
    if (!k) {
      *err = "no kernel " + l.kernel;
      return false;
    }
    ir::LaunchData data;
    std::vector<int> which;
    for (const graph::PlanArg &a : l.args)
      if (a.kind == graph::PlanArg::Kind::Buffer) {
        data.buffers.push_back(bufs[static_cast<size_t>(a.buffer)]);
        which.push_back(a.buffer);
      }
    size_t b = 0;
    for (const graph::PlanArg &a : l.args) {
      ir::KernelArg ka;
      if (a.kind == graph::PlanArg::Kind::Buffer)
        ka.buffer = &data.buffers[b++];
      else if (a.kind == graph::PlanArg::Kind::I32 || a.kind == graph::PlanArg::Kind::I64)
        ka.scalar.i = static_cast<uint64_t>(a.i);
      else
        ka.scalar.f = a.f;
      data.args.push_back(ka);
    }
    for (int d = 0; d < 3; ++d) {
      data.dims.grid[static_cast<size_t>(d)] = l.grid[d];
      data.dims.workgroup[static_cast<size_t>(d)] = l.workgroup[d];
    }
    std::vector<ir::HostBuffer> out;
    double ms = 0;
    if (!runOnDevice(s.device, *k, data, out, &ms, err))
      return false;
    for (size_t i = 0; i < which.size(); ++i)
      bufs[static_cast<size_t>(which[i])] = out[i];
  }
  outputs->clear();
  for (const graph::PlanOutput &o : plan.outputs) {
    HostTensor t;
    t.type.dtype = o.dtype;
    t.type.shape = o.shape;
    std::vector<int64_t> idx(o.shape.size(), 0);
    for (int64_t i = 0; i < t.type.numel(); ++i) {
      int64_t at = o.offset;
      for (size_t d = 0; d < idx.size(); ++d)
        at += idx[d] * o.strides[d];
      ir::Literal l = bufs[static_cast<size_t>(o.buffer)].get(at);
      double v = graph::isFloat(o.dtype)         ? l.f
                 : o.dtype == graph::DType::Bool ? double((l.i & 0xff) != 0)
                 : o.dtype == graph::DType::I32
                     ? double(static_cast<int32_t>(static_cast<uint32_t>(l.i)))
                     : double(static_cast<int64_t>(l.i));
      t.data.push_back(v);
      for (size_t d = idx.size(); d-- > 0;) {
        if (++idx[d] < o.shape[d])
          break;
        idx[d] = 0;
      }
    }
    outputs->push_back(std::move(t));
  }
  return true;
}

const char *kGraphs[] = {
    // softmax over prime rows, with a strided input
    R"(graph @sm(%x: tensor<f32, [37, 11], strides [1, 37]>) {
  %xt = permute %x {perm = [1, 0]}
  %m = amax %xt {axes = [1], keepdim = true}
  %s = sub %xt, %m
  %e = exp %s
  %t = sum %e {axes = [1], keepdim = true}
  %y = div %e, %t
  return %y
})",
    // layer norm with saved statistics, and column sums (its weight gradient's shape)
    R"(graph @ln(%x: tensor<f32, [9, 300]>, %g: tensor<f32, [300]>, %b: tensor<f32, [300]>) {
  %v = var %x {axes = [1], keepdim = true, correction = 0}
  %m = mean %x {axes = [1], keepdim = true}
  %eps = constant {value = 1.0e-5, dtype = "f32", shape = []} : tensor<f32, []>
  %ve = add %v, %eps
  %r = rsqrt %ve
  %d = sub %x, %m
  %n = mul %d, %r
  %y0 = mul %n, %g
  %y = add %y0, %b
  %cs = sum %y {axes = [0], keepdim = false}
  %am = argmax %x {axes = [1], keepdim = false}
  return %y, %r, %cs, %am
})",
    // pointwise with broadcasting, casts, where, cat and embedding
    R"(graph @pw(%a: tensor<bf16, [5, 7]>, %b: tensor<f32, [7]>, %w: tensor<f32, [6, 7]>,
               %i: tensor<i64, [4]>) {
  %af = cast %a {dtype = "f32"}
  %s = add %af, %b
  %g = gelu_tanh %s
  %c = gt %s, %b
  %z = where %c, %g, %af
  %h = cast %z {dtype = "bf16"}
  %e = embedding %w, %i
  %k = cat %s, %e {axis = 0}
  return %h, %k
})"};

void checkOn(const std::string &device) {
  testing::DeviceSession s;
  if (!s.open(device))
    GTEST_SKIP() << device << " is not available here";
  graph::ScheduleCaps caps;
  caps.backend = device.substr(0, device.find(':'));
  caps.subgroupSize = s.info.subgroup_size;
  caps.maxWorkgroupSize = s.info.max_workgroup_total;
  caps.sharedBytes = s.info.max_shared_memory;
  for (const char *text : kGraphs) {
    graph::Graph g;
    ASSERT_TRUE(graph::testing::parseOrFail(text, &g));
    Plan plan;
    std::string err;
    ASSERT_TRUE(graph::lower(g, caps, &plan, &err)) << err;
    std::vector<HostTensor> in, want, got;
    for (size_t p = 0; p < g.params.size(); ++p)
      in.push_back(graph::randomTensor(g.params[p].type, 40 + p));
    for (double &v : in.back().data) // embedding indices: in range, plus one past the end
      v = v < 0 ? -v : v;
    in.back().data[0] = 6;
    ASSERT_TRUE(graph::evaluate(g, in, &want, &err)) << err;
    ASSERT_TRUE(runPlanOnDevice(s, plan, g, in, &got, &err)) << err << "\n" << plan.module;
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < want.size(); ++k) {
      // Device math meets the ULP budgets of docs/ir.md (up to 16 ulp for erf/pow in f32),
      // looser than the interpreter's correctly rounded ops: 1e-4 relative here, and sums of
      // up to 300 terms in another order.
      double tol = graph::isFloat(want[k].type.dtype)
                       ? std::max(1e-4, graph::testing::tolerance(want[k].type.dtype))
                       : 0;
      for (size_t i = 0; i < want[k].data.size(); ++i) {
        double a = got[k].data[i], b = want[k].data[i];
        if (std::isnan(a) && std::isnan(b))
          continue;
        ASSERT_LE(std::fabs(a - b), tol * (1 + std::fabs(b)))
            << device << " output " << k << " element " << i << "\n"
            << text;
      }
    }
  }
}

TEST(GraphPlanDevice, Cpu) { checkOn("cpu:0"); }

TEST(GraphPlanDevice, Vulkan) {
  if (!getenv("XDG_RUNTIME_DIR"))
    GTEST_SKIP() << "XDG_RUNTIME_DIR is not set";
  checkOn("vulkan:0");
}

} // namespace
} // namespace tessera

