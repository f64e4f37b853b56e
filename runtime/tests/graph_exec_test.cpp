// GraphExecutable on cpu:0 (and vulkan:0 where present) with hand-built plans, so that the
// executor is tested apart from lowering: buffer binding (host inputs copied, device buffers
// used in place, strided and re-laid-out inputs), temporaries, outputs as views, the program
// cache across batch sizes, and every kind of bad input. Values are checked against naive loops.
#include "tessera/graph_exec.h"

#include "device_session.h"
#include "ir/graph/eval.h"
#include "ir/graph/text.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace tessera {
namespace {

using graph::DType;
using graph::OpKind;

// k0: t = x * y (a temporary); k1: o = t + x. Sizes are arguments (the module is the same
// text at every size, as lowering makes it).
const char *kModule = R"(
kernel @k0_pointwise(%x: buffer<f32, readonly>, %y: buffer<f32, readonly>, %t: buffer<f32>, %n: i32) {
  %i = global_id.x : i32
  %in = cmp.slt %i, %n : i32
  if %in {
    %a = load %x[%i] : f32
    %b = load %y[%i] : f32
    %r = mul %a, %b : f32
    store %r, %t[%i] : f32
  }
}
kernel @k1_pointwise(%t: buffer<f32, readonly>, %x: buffer<f32, readonly>, %o: buffer<f32>, %n: i32) {
  %i = global_id.x : i32
  %in = cmp.slt %i, %n : i32
  if %in {
    %a = load %t[%i] : f32
    %b = load %x[%i] : f32
    %r = add %a, %b : f32
    store %r, %o[%i] : f32
  }
}
)";

graph::Graph makeGraph(int64_t n) {
  graph::Graph g;
  g.name = "mul_add";
  graph::TensorType t{DType::F32, {n}, {}};
  g.params = {{t, "x"}, {t, "y"}};
  graph::Node mul;
  mul.op = OpKind::Mul;
  mul.inputs = {0, 1};
  mul.type = t;
  graph::Node add;
  add.op = OpKind::Add;
  add.inputs = {2, 0};
  add.type = t;
  g.nodes = {mul, add};
  g.outputs = {3};
  return g;
}

graph::Plan makePlan(int64_t n) {
  using graph::PlanArg;
  using graph::PlanBuffer;
  graph::Plan p;
  p.module = kModule;
  p.buffers = {{PlanBuffer::Role::Input, DType::F32, n, 0},
               {PlanBuffer::Role::Input, DType::F32, n, 1},
               {PlanBuffer::Role::Temp, DType::F32, n, -1},
               {PlanBuffer::Role::Output, DType::F32, n, -1}};
  auto buf = [](int b) { return PlanArg{PlanArg::Kind::Buffer, b, 0, 0}; };
  PlanArg count{PlanArg::Kind::I32, -1, n, 0};
  uint32_t groups = static_cast<uint32_t>((n + 63) / 64);
  graph::PlanLaunch k0{"k0_pointwise", {groups, 1, 1}, {64, 1, 1}, {buf(0), buf(1), buf(2), count}};
  graph::PlanLaunch k1{"k1_pointwise", {groups, 1, 1}, {64, 1, 1}, {buf(2), buf(0), buf(3), count}};
  p.launches = {k0, k1};
  p.outputs = {{3, 0, DType::F32, {n}, {1}}};
  p.kernels = {{"k0_pointwise", "pointwise", {"mul"}}, {"k1_pointwise", "pointwise", {"add"}}};
  return p;
}

/// A Device that owns one more reference to `d` (the session keeps its own).
hal::Device borrow(tsr_device_t d) {
  tsr_device_retain(d);
  return hal::Device(d);
}

std::vector<float> readOutput(tsr_device_t device, const GraphOutput &o) {
  int64_t n = o.shape.empty() ? 1 : o.shape[0];
  std::vector<float> all(static_cast<size_t>(o.offset + n * o.strides[0]));
  auto s = borrow(device).createStream();
  EXPECT_TRUE(s.ok());
  EXPECT_TRUE(s->copyToHost(o.buffer, 0, all.data(), all.size() * sizeof(float)).ok());
  EXPECT_TRUE(s->synchronize().ok());
  std::vector<float> out;
  for (int64_t i = 0; i < n; ++i)
    out.push_back(all[static_cast<size_t>(o.offset + i * o.strides[0])]);
  return out;
}

/// Sets TESSERA_DEVICE_LOCAL_ONLY for its scope: host inputs then travel by stream copies
/// (the discrete-GPU path) instead of host writes into mapped memory.
struct DeviceLocalOnly {
  explicit DeviceLocalOnly(bool on) {
    if (on)
      setenv("TESSERA_DEVICE_LOCAL_ONLY", "1", 1);
  }
  ~DeviceLocalOnly() { unsetenv("TESSERA_DEVICE_LOCAL_ONLY"); }
};

/// The graph's two inputs x, y from dense host vectors of its size.
std::vector<GraphInput> hostInputs(const std::vector<float> &a, const std::vector<float> &b) {
  std::vector<GraphInput> in(2);
  in[0].host = a.data();
  in[0].shape = {int64_t(a.size())};
  in[1].host = b.data();
  in[1].shape = {int64_t(b.size())};
  return in;
}

class GraphExecTest : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    if (!session.open(GetParam()))
      GTEST_SKIP() << GetParam() << " is not available here";
    auto s = borrow(session.device).createStream();
    ASSERT_TRUE(s.ok());
    stream = std::move(s.value());
  }
  std::unique_ptr<GraphExecutable> make(int64_t n, ProgramCache &programs) {
    auto x =
        GraphExecutable::fromPlan(session.device, makeGraph(n), makePlan(n), nullptr, programs);
    EXPECT_TRUE(x.ok()) << x.status().toString();
    return x.ok() ? std::move(x).value() : nullptr;
  }
  /// x from a device buffer at an offset (used in place), y from strided host memory (re-laid
  /// out into the parameter's layout).
  void checkInPlaceAndRelaid() {
    ProgramCache programs;
    const int64_t n = 100;
    auto x = make(n, programs);
    ASSERT_TRUE(x);
    hal::Device dev = borrow(session.device);
    // x: a device buffer at an element offset of 16 (64 bytes: aligned for every backend).
    std::vector<float> a(static_cast<size_t>(n + 16), -100.0f), b2(static_cast<size_t>(2 * n));
    for (int64_t i = 0; i < n; ++i) {
      a[static_cast<size_t>(16 + i)] = float(i) * 0.5f;
      b2[static_cast<size_t>(2 * i)] = float(n - i);
      b2[static_cast<size_t>(2 * i + 1)] = 1e30f; // never read: between the strided elements
    }
    auto buf = dev.allocate(a.size() * sizeof(float));
    ASSERT_TRUE(buf.ok());
    ASSERT_TRUE(stream.copyToDevice(a.data(), *buf, 0, a.size() * sizeof(float)).ok());
    std::vector<GraphInput> in(2);
    in[0].buffer = buf->get();
    in[0].shape = {n};
    in[0].offset = 16;
    in[1].host = b2.data(); // stride 2: re-laid out into the parameter's contiguous layout
    in[1].shape = {n};
    in[1].strides = {2};
    std::vector<GraphOutput> out;
    hal::Status st = x->run(in, stream.get(), &out);
    ASSERT_TRUE(st.ok()) << st.toString();
    ASSERT_TRUE(stream.synchronize().ok());
    std::vector<float> got = readOutput(session.device, out[0]);
    for (int64_t i = 0; i < n; ++i) {
      float av = float(i) * 0.5f, bv = float(n - i);
      ASSERT_EQ(got[static_cast<size_t>(i)], av * bv + av) << i;
    }
  }
  testing::DeviceSession session;
  hal::Stream stream;
};

TEST_P(GraphExecTest, HostInputsGiveNaiveLoopValuesAtEverySize) {
  ProgramCache programs;
  for (int64_t n : {int64_t(1000), int64_t(37), int64_t(1000), int64_t(333)}) {
    DeviceLocalOnly deviceLocal(n == 333);
    auto x = make(n, programs);
    ASSERT_TRUE(x);
    std::vector<float> a(static_cast<size_t>(n)), b(a.size());
    for (size_t i = 0; i < a.size(); ++i) {
      a[i] = 0.25f * float(i) - 3.0f;
      b[i] = 1.5f - 0.125f * float(i % 7);
    }
    std::vector<GraphInput> in = hostInputs(a, b);
    std::vector<GraphOutput> out;
    ASSERT_TRUE(x->run(in, stream.get(), &out).ok());
    ASSERT_EQ(out.size(), 1u);
    std::vector<float> got = readOutput(session.device, out[0]);
    for (size_t i = 0; i < a.size(); ++i) // exact: one rounding in each of mul and add
      ASSERT_EQ(got[i], a[i] * b[i] + a[i]) << "n=" << n << " i=" << i;
    // A second run re-uses the pooled temporary and gives the same values.
    ASSERT_TRUE(x->run(in, stream.get(), &out).ok());
    EXPECT_EQ(readOutput(session.device, out[0]), got);
  }
}

// A run with host inputs synchronizes its stream, so it runs inside a deferred span
// (tsr_stream_set_deferred; on cpu the calling thread runs the launches). Runs of one executable
// from two threads on two streams stay correct, and after such a run the stream's work is the
// worker's again: a run on device buffers (no synchronize in it) completes by itself.
TEST_P(GraphExecTest, HostInputRunsFromTwoThreadsThenAsynchronousWorkStillRuns) {
  ProgramCache programs;
  const int64_t n = 257;
  auto x = make(n, programs);
  ASSERT_TRUE(x);
  std::vector<float> a(static_cast<size_t>(n)), b(a.size());
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = 0.5f * float(i) - 7.0f, b[i] = 2.0f - 0.25f * float(i % 5);
  std::atomic<int> wrong{0};
  auto worker = [&](hal::Stream *s) {
    for (int r = 0; r < 30; ++r) {
      std::vector<GraphOutput> out;
      if (!x->run(hostInputs(a, b), s->get(), &out).ok() || out.size() != 1) {
        ++wrong;
        continue;
      }
      std::vector<float> got = readOutput(session.device, out[0]);
      for (size_t i = 0; i < a.size(); ++i)
        wrong += got[i] != a[i] * b[i] + a[i];
    }
  };
  auto other = borrow(session.device).createStream();
  ASSERT_TRUE(other.ok());
  std::thread t1(worker, &stream), t2(worker, &other.value());
  t1.join();
  t2.join();
  EXPECT_EQ(wrong.load(), 0);
  // Device-buffer inputs: run() enqueues and returns; nothing synchronizes the stream.
  hal::Device dev = borrow(session.device);
  auto ba = dev.allocate(a.size() * sizeof(float)), bb = dev.allocate(b.size() * sizeof(float));
  ASSERT_TRUE(ba.ok() && bb.ok());
  ASSERT_TRUE(stream.copyToDevice(a.data(), *ba, 0, a.size() * sizeof(float)).ok());
  ASSERT_TRUE(stream.copyToDevice(b.data(), *bb, 0, b.size() * sizeof(float)).ok());
  ASSERT_TRUE(stream.synchronize().ok());
  std::vector<GraphInput> in(2);
  in[0].buffer = ba->get();
  in[0].shape = {n};
  in[1].buffer = bb->get();
  in[1].shape = {n};
  std::vector<GraphOutput> out;
  ASSERT_TRUE(x->run(in, stream.get(), &out).ok());
  bool idle = false;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    ASSERT_EQ(tsr_stream_query(stream.get(), &idle), nullptr);
    if (idle)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(idle) << "work enqueued after a deferred run never ran without a synchronize";
  std::vector<float> got = readOutput(session.device, out[0]);
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_EQ(got[i], a[i] * b[i] + a[i]) << i;
}

TEST_P(GraphExecTest, FirstExecutableCompilesLaterOnesReuse) {
  ProgramCache programs;
  auto first = make(64, programs);
  ASSERT_TRUE(first);
  EXPECT_FALSE(first->stats().programReused);
  auto second = make(4096, programs);
  ASSERT_TRUE(second);
  EXPECT_TRUE(second->stats().programReused);
  EXPECT_EQ(programs.liveEntries(), 1u);
  first.reset();
  second.reset();
  EXPECT_EQ(programs.liveEntries(), 0u); // held weakly: gone with its last executable
}

TEST_P(GraphExecTest, DeviceBufferInputsAreUsedInPlaceAndStridedHostInputsRelaid) {
  for (bool deviceLocal : {false, true}) {
    SCOPED_TRACE(deviceLocal ? "device-local only" : "preferred memory");
    DeviceLocalOnly scope(deviceLocal);
    checkInPlaceAndRelaid();
  }
}

// On a device that shares host memory and imports it (tsr_buffer_import_host), dense aligned
// host inputs are bound in place: no byte is copied. A misaligned start (one element in)
// and $TESSERA_GRAPH_HOST_IMPORT=0 copy instead; every way gives the naive loop's values.
TEST_P(GraphExecTest, AlignedDenseHostInputsAreBoundWithoutACopy) {
  hal::Device dev = borrow(session.device);
  alignas(64) static float probe[16];
  bool imports = preferredMemoryKind(session.device) & TSR_MEMORY_HOST_VISIBLE;
  if (imports) {
    auto b = dev.importHost(probe, sizeof probe);
    imports = b.ok();
    if (!b.ok())
      EXPECT_EQ(b.status().code(), TSR_UNIMPLEMENTED) << b.status().toString();
  }
  const int64_t n = 1000;
  const uint64_t bytes = n * sizeof(float);
  std::vector<float> a(static_cast<size_t>(n + 1)), b(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = 0.25f * float(i) - 3.0f;
    b[i] = 1.5f - 0.125f * float(i % 7);
  }
  for (int mode = 0; mode < 3; ++mode) { // 0: aligned, 1: one element in, 2: import off
    SCOPED_TRACE(mode);
    if (mode == 2)
      setenv("TESSERA_GRAPH_HOST_IMPORT", "0", 1);
    ProgramCache programs;
    auto x = make(n, programs);
    unsetenv("TESSERA_GRAPH_HOST_IMPORT");
    ASSERT_TRUE(x);
    const size_t first = mode == 1 ? 1 : 0;
    std::vector<GraphInput> in(2);
    in[0].host = a.data() + first;
    in[0].shape = {n};
    in[1].host = b.data() + first;
    in[1].shape = {n};
    std::vector<GraphOutput> out;
    for (int run = 0; run < 2; ++run) {
      ASSERT_TRUE(x->run(in, stream.get(), &out).ok());
      std::vector<float> got = readOutput(session.device, out[0]);
      for (size_t i = 0; i < size_t(n); ++i) // exact: one rounding in each of mul and add
        ASSERT_EQ(got[i], a[first + i] * b[first + i] + a[first + i]) << "run " << run << " " << i;
    }
    const bool inPlace = imports && mode == 0;
    EXPECT_EQ(x->stats().inputBytesImported, inPlace ? 4 * bytes : 0u);
    EXPECT_EQ(x->stats().inputBytesCopied, inPlace ? 0u : 4 * bytes);
  }
}

TEST_P(GraphExecTest, BadInputsAreClearErrors) {
  ProgramCache programs;
  auto x = make(8, programs);
  ASSERT_TRUE(x);
  std::vector<float> a(8, 1.0f);
  std::vector<GraphOutput> out;
  GraphInput good;
  good.host = a.data();
  good.shape = {8};

  hal::Status st = x->run({good}, stream.get(), &out);
  EXPECT_EQ(st.code(), TSR_INVALID_ARGUMENT);
  EXPECT_NE(st.message().find("takes 2 inputs, got 1"), std::string::npos) << st.message();

  GraphInput wrongDtype = good;
  wrongDtype.dtype = DType::F16;
  st = x->run({good, wrongDtype}, stream.get(), &out);
  EXPECT_EQ(st.code(), TSR_INVALID_ARGUMENT);
  EXPECT_NE(st.message().find("input 1 (%y): dtype f16, the graph takes f32"), std::string::npos)
      << st.message();

  GraphInput wrongShape = good;
  wrongShape.shape = {9};
  st = x->run({wrongShape, good}, stream.get(), &out);
  EXPECT_EQ(st.code(), TSR_INVALID_ARGUMENT);
  EXPECT_NE(st.message().find("shape [9], the graph takes [8]"), std::string::npos) << st.message();

  GraphInput nothing;
  nothing.shape = {8};
  st = x->run({good, nothing}, stream.get(), &out);
  EXPECT_EQ(st.code(), TSR_INVALID_ARGUMENT);
  EXPECT_TRUE(out.empty());

  // A device buffer too small for the view.
  hal::Device dev = borrow(session.device);
  auto small = dev.allocate(16);
  ASSERT_TRUE(small.ok());
  GraphInput shortBuf;
  shortBuf.buffer = small->get();
  shortBuf.shape = {8};
  st = x->run({good, shortBuf}, stream.get(), &out);
  EXPECT_EQ(st.code(), TSR_OUT_OF_RANGE) << st.toString();

  // A plan naming a kernel its module lacks.
  graph::Plan bad = makePlan(8);
  bad.launches[1].kernel = "nope";
  auto r = GraphExecutable::fromPlan(session.device, makeGraph(8), bad, nullptr, programs);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("@nope"), std::string::npos);
}

// A softmax as the front end decomposes it, lowered for the device: at two batch sizes the
// second executable re-uses the first one's Program, and both match the reference evaluator.
TEST_P(GraphExecTest, LoweredSoftmaxAtTwoBatchSizesSharesTheProgramAndMatchesEvaluate) {
  ProgramCache programs;
  std::vector<std::unique_ptr<GraphExecutable>> alive; // the cache holds programs weakly
  for (int64_t rows : {int64_t(4), int64_t(9)}) {
    std::string text = "graph @softmax(%x: tensor<f32, [" + std::to_string(rows) +
                       ", 37]>) {\n"
                       "  %m = amax %x {axes = [1], keepdim = true}\n"
                       "  %d = sub %x, %m\n"
                       "  %e = exp %d\n"
                       "  %s = sum %e {axes = [1], keepdim = true}\n"
                       "  %y = div %e, %s\n"
                       "  return %y\n"
                       "}\n";
    graph::Graph g;
    std::string err;
    ASSERT_TRUE(graph::parseGraph(text, "<test>", &g, &err)) << err;
    auto x = GraphExecutable::create(session.device, g, nullptr, programs);
    ASSERT_TRUE(x.ok()) << x.status().toString();
    EXPECT_EQ(x.value()->stats().programReused, rows == 9) << rows;
    std::vector<float> in(static_cast<size_t>(rows * 37));
    graph::HostTensor ref{g.params[0].type, {}};
    for (size_t i = 0; i < in.size(); ++i) {
      in[i] = float(int(i * 7919 % 61) - 30) * 0.25f;
      ref.data.push_back(in[i]);
    }
    std::vector<graph::HostTensor> want;
    ASSERT_TRUE(graph::evaluate(g, {ref}, &want, &err)) << err;
    GraphInput gi;
    gi.host = in.data();
    gi.shape = {rows, 37};
    std::vector<GraphOutput> out;
    ASSERT_TRUE(x.value()->run({gi}, stream.get(), &out).ok());
    ASSERT_EQ(out.size(), 1u);
    ASSERT_EQ(out[0].offset, 0);
    ASSERT_EQ(out[0].strides, (std::vector<int64_t>{37, 1}));
    std::vector<float> got(in.size());
    ASSERT_TRUE(stream.copyToHost(out[0].buffer, 0, got.data(), got.size() * 4).ok());
    ASSERT_TRUE(stream.synchronize().ok());
    // f32 exp (a few ulp) and a 37-term sum: 1e-5 relative is well above both.
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], want[0].data[i], 1e-5 * std::abs(want[0].data[i]) + 1e-7) << i;
    alive.push_back(std::move(x).value());
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, GraphExecTest, ::testing::Values("cpu:0", "vulkan:0"),
                         [](const auto &info) {
                           return info.param.substr(0, info.param.find(':'));
                         });

} // namespace
} // namespace tessera
