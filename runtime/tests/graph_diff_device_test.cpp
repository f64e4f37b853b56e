// Random graphs (ir/graph/tests/graph_gen.h) through the production path on real devices:
// GraphExecutable::create (lowering for the device's caps, compile, load) and run (host inputs
// in the parameters' strided layouts, outputs read back through their views), compared with
// the graph reference evaluator under the tolerances of ir/graph/tests/graph_diff.h.
//
// cpu:0 runs TESSERA_GRAPH_DIFF_DEVICE_COUNT graphs (default 60); vulkan:0 (lavapipe here:
// slow, ~10 s a graph on a loaded machine) an eighth of that. TESSERA_GRAPH_DIFF_SEED sets the
// first seed.
#include "device_session.h"
#include "ir/graph/tests/graph_diff.h"
#include "ir/graph/tests/matmul_case.h"
#include "tessera/graph_exec.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace tessera {
namespace {

using graph::DType;
using graph::HostTensor;
using graph::testing::GenCase;

uint64_t envOr(const char *name, uint64_t dflt) {
  const char *v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : dflt;
}

/// Visits every index of `shape` in row-major order with the element offset under `strides`.
template <class F>
void forEachIndex(const std::vector<int64_t> &shape, const std::vector<int64_t> &strides,
                  int64_t offset, F f) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t at = offset;
    for (size_t d = 0; d < idx.size(); ++d)
      at += idx[d] * strides[d];
    f(i, at);
    for (size_t d = idx.size(); d-- > 0;) {
      if (++idx[d] < shape[d])
        break;
      idx[d] = 0;
    }
  }
}

/// `t` laid out in the parameter's storage (its strides), in the dtype's real format.
ir::HostBuffer pack(const graph::TensorType &param, const HostTensor &t) {
  ir::HostBuffer b(graph::storageScalar(param.dtype),
                   std::max<int64_t>(param.storageElements(), 1));
  forEachIndex(param.shape, param.effectiveStrides(), 0, [&](int64_t i, int64_t at) {
    ir::Literal l;
    double v = t.data[static_cast<size_t>(i)];
    if (graph::isFloat(param.dtype))
      l.f = v;
    else
      l.i = static_cast<uint64_t>(static_cast<int64_t>(v));
    b.set(at, l);
  });
  return b;
}

bool readOutput(tsr_device_t device, const GraphOutput &o, HostTensor *out, std::string *err) {
  out->type = graph::TensorType{o.dtype, o.shape, {}};
  out->data.assign(static_cast<size_t>(out->type.numel()), 0);
  if (out->data.empty())
    return true;
  int64_t last = o.offset;
  for (size_t d = 0; d < o.shape.size(); ++d)
    last += (o.shape[d] - 1) * o.strides[d];
  ir::HostBuffer all(graph::storageScalar(o.dtype), last + 1);
  tsr_device_retain(device);
  hal::Device dev(device);
  auto s = dev.createStream();
  if (!s.ok() || !s->copyToHost(o.buffer, 0, all.bytes.data(), all.bytes.size()).ok() ||
      !s->synchronize().ok()) {
    *err = "reading an output back failed";
    return false;
  }
  forEachIndex(o.shape, o.strides, o.offset, [&](int64_t i, int64_t at) {
    ir::Literal l = all.get(at);
    double &v = out->data[static_cast<size_t>(i)];
    if (graph::isFloat(o.dtype))
      v = l.f;
    else if (o.dtype == DType::Bool)
      v = l.i != 0;
    else if (o.dtype == DType::I32)
      v = static_cast<double>(static_cast<int32_t>(static_cast<uint32_t>(l.i)));
    else
      v = static_cast<double>(static_cast<int64_t>(l.i));
  });
  return true;
}

// Runs case `c` on `device` and compares with the reference evaluator: "" when it agrees, else
// what failed, with the case and (once created) the plan's module.
std::string runAgainstReference(tsr_device_t device, tsr_stream_t stream, GenCase &c) {
  std::string err;
  graph::testing::DiffReference ref;
  if (!graph::testing::referenceFor(c, &ref, &err, 32))
    return "reference: " + err;
  auto x = GraphExecutable::create(device, c.graph, nullptr, &err);
  if (!x)
    return "create: " + err + "\n" + graph::testing::describeCase(c);
  std::vector<ir::HostBuffer> packed;
  std::vector<GraphInput> in;
  for (size_t p = 0; p < c.graph.params.size(); ++p) {
    const graph::TensorType &t = c.graph.params[p].type;
    packed.push_back(pack(t, c.inputs[p]));
    GraphInput gi;
    gi.dtype = t.dtype;
    gi.shape = t.shape;
    gi.strides = t.effectiveStrides();
    in.push_back(gi);
  }
  for (size_t p = 0; p < in.size(); ++p)
    in[p].host = packed[p].bytes.data();
  std::vector<GraphOutput> out;
  hal::Status st = x->run(in, stream, &out);
  std::vector<HostTensor> got(out.size());
  bool ok = st.ok() && hal::Status::fromC(tsr_stream_synchronize(stream)).ok();
  for (size_t k = 0; ok && k < out.size(); ++k)
    ok = readOutput(device, out[k], &got[k], &err);
  std::string why = !st.ok() ? "run: " + st.toString()
                    : !ok    ? err
                             : graph::testing::compareWithReference(c, ref, got);
  return why.empty() ? why : why + "\n" + graph::testing::describeCase(c) + "\n" + x->plan().module;
}

void runOn(const std::string &device, uint64_t count) {
  testing::DeviceSession s;
  if (!s.open(device))
    GTEST_SKIP() << device << " is not available here";
  graph::ScheduleCaps caps;
  ASSERT_TRUE(deviceScheduleCaps(s.device, &caps).ok());
  graph::testing::GenOptions opts;
  opts.lowPrecision = caps.f16 && caps.bf16;
  opts.f64 = caps.f64;
  opts.i64 = caps.i64;
  opts.matmul = envOr("TESSERA_GRAPH_DIFF_MATMUL", 1) != 0; // 0: leave GEMMs out (slow on lavapipe)
  auto stream = [&] {
    tsr_device_retain(s.device);
    return hal::Device(s.device).createStream();
  }();
  ASSERT_TRUE(stream.ok());
  uint64_t first = envOr("TESSERA_GRAPH_DIFF_SEED", 1);
  int failures = 0, ran = 0;
  for (uint64_t seed = first; seed < first + count && failures < 3; ++seed) {
    GenCase c;
    std::string err;
    ASSERT_TRUE(graph::testing::generateCase(seed, opts, &c, &err)) << err;
    if (const char *file = std::getenv("TESSERA_GRAPH_DIFF_FILE")) {
      // Re-runs a printed failure: the graph of FILE, inputs from the seed.
      std::ifstream in(file);
      std::stringstream text;
      text << in.rdbuf();
      ASSERT_TRUE(graph::parseGraph(text.str(), file, &c.graph, &err)) << err;
      c.inputs.clear();
      for (size_t p = 0; p < c.graph.params.size(); ++p)
        c.inputs.push_back(graph::randomTensor(c.graph.params[p].type, seed * 100 + p));
      c.reduceLength = 1024;
    }
    if (std::string why = runAgainstReference(s.device, stream->get(), c); !why.empty()) {
      ADD_FAILURE() << device << " seed " << seed << ": " << why;
      ++failures;
    }
    ++ran;
  }
  std::printf("graph diff: %d graphs from seed %llu agreed on %s\n", ran - failures,
              static_cast<unsigned long long>(first), device.c_str());
}

TEST(GraphDiffDevice, Cpu) { runOn("cpu:0", envOr("TESSERA_GRAPH_DIFF_DEVICE_COUNT", 60)); }

TEST(GraphDiffDevice, Vulkan) {
  if (!getenv("XDG_RUNTIME_DIR"))
    GTEST_SKIP() << "XDG_RUNTIME_DIR is not set";
  runOn("vulkan:0", envOr("TESSERA_GRAPH_DIFF_DEVICE_COUNT", 60) / 8);
}

} // namespace
} // namespace tessera

namespace tessera {
namespace {

// Found by the random graphs on vulkan:0 (seed 4026): a pointwise kernel over several strided
// rank-4 operands passes every offset, stride and size as an i64 scalar, 168+ bytes, over
// Vulkan's 128 bytes of push constants, so create() failed ("the scalar parameters need N bytes
// of push constants"). The lowering now writes the scalars past the device's limit into the
// kernel as constants (ScheduleCaps::maxScalarParamBytes); the result is checked against the
// reference evaluator.
TEST(GraphDiffDeviceKnown, VulkanManyStridedOperandsFitPushConstants) {
  if (!getenv("XDG_RUNTIME_DIR"))
    GTEST_SKIP() << "XDG_RUNTIME_DIR is not set";
  testing::DeviceSession s;
  if (!s.open("vulkan:0"))
    GTEST_SKIP() << "vulkan:0 is not available here";
  graph::Graph g;
  std::string err;
  ASSERT_TRUE(graph::parseGraph(R"(graph @p(%a: tensor<f32, [2, 3, 4, 5], strides [130, 40, 10, 2]>,
       %b: tensor<f32, [2, 3, 4, 5], strides [131, 40, 10, 2]>,
       %c: tensor<f32, [2, 3, 4, 5], strides [132, 40, 10, 2]>,
       %d: tensor<f32, [2, 3, 4, 5], strides [133, 40, 10, 2]>) {
  %x = add %a, %b
  %y = mul %c, %d
  %z = sub %x, %y
  return %z
})",
                                "<t>", &g, &err))
      << err;
  GenCase c;
  c.graph = g;
  for (size_t p = 0; p < g.params.size(); ++p)
    c.inputs.push_back(graph::randomTensor(g.params[p].type, 4026 * 100 + p));
  c.reduceLength = 1024;
  auto stream = [&] {
    tsr_device_retain(s.device);
    return hal::Device(s.device).createStream();
  }();
  ASSERT_TRUE(stream.ok());
  EXPECT_EQ(runAgainstReference(s.device, stream->get(), c), "");
}

} // namespace
} // namespace tessera
