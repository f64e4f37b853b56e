// gemm_bench's GEMMs through the graph lowering (ir/graph/lower_matmul.cpp, what torch.compile's
// mm / linear / bmm become): runLowered, used by the "via lowerMatmul" cases of gemm_bench.cpp,
// and the --shapes section, the GEMMs of bench/torch_models.py against OpenBLAS (gemm_bench.h).
#include "bench/gemm_bench.h"

#include "ir/graph/lower_internal.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

namespace gemmbench {

using namespace tessera::bench;

namespace {

// --shapes reports the best of its runs, not the median: its runs take 0.05-1 ms, so on a
// shared host the median measures the other processes' load more than the GEMM.
double timeRuns(int reps, bool bestOf, const std::function<void()> &fn) {
  if (!bestOf)
    return timeMs(reps, fn);
  fn();
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    best = std::min(
        best,
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

} // namespace

double runLowered(Device &d, Gemm g, int batch, bool bCol, Epi epi, int reps, bool bestOf,
                  tsr_buffer_t bA, tsr_buffer_t bB, tsr_buffer_t bBias, std::vector<float> &C) {
  using namespace tessera::graph;
  Graph gr;
  auto param = [&](std::vector<int64_t> shape, const char *name) {
    TensorType t;
    t.shape = std::move(shape);
    return gr.addParam(t, name);
  };
  // A batch dim only when batched: [M, K] x [K, N] is what a linear layer lowers to.
  auto shape = [&](int64_t r, int64_t c) {
    return batch > 1 ? std::vector<int64_t>{batch, r, c} : std::vector<int64_t>{r, c};
  };
  auto strides = [&](int64_t rs, int64_t cs, int64_t mat) {
    return batch > 1 ? std::vector<int64_t>{mat, rs, cs} : std::vector<int64_t>{rs, cs};
  };
  // Every parameter before the first node: a node's value id counts the parameters.
  const int pa = param(shape(g.M, g.K), "a"), pb = param(shape(g.K, g.N), "b");
  const int pbias = epi != Epi::None ? param({g.N}, "bias") : -1;
  std::string err;
  detail::MatmulGroup mm;
  mm.matmul = mm.result = gr.add(OpKind::Matmul, {pa, pb}, {}, &err);
  auto operand = [](int buffer, std::vector<int64_t> shape, std::vector<int64_t> strides) {
    detail::Operand o;
    o.buffer = buffer;
    o.shape = std::move(shape);
    o.strides = std::move(strides);
    return o;
  };
  const int64_t kn = int64_t(g.K) * g.N;
  mm.a = operand(0, shape(g.M, g.K), strides(g.K, 1, int64_t(g.M) * g.K));
  mm.b = operand(1, shape(g.K, g.N), bCol ? strides(1, g.K, kn) : strides(g.N, 1, kn));
  if (epi != Epi::None) {
    const int add = gr.add(OpKind::Add, {mm.matmul, pbias}, {}, &err);
    mm.result = add;
    mm.epilogue = {add};
    if (epi == Epi::BiasGelu) {
      mm.result = gr.add(OpKind::Gelu, {add}, {}, &err);
      mm.epilogue.push_back(mm.result);
    }
    mm.extras = {operand(2, shape(g.M, g.N), strides(0, 1, 0))};
    mm.extraOf[pbias] = 0;
  }
  if (mm.result < 0)
    die("graph: " + err);
  mm.out = operand(epi != Epi::None ? 3 : 2, shape(g.M, g.N), strides(g.N, 1, int64_t(g.M) * g.N));
  tsr_device_info_t info{};
  info.struct_size = sizeof info;
  check(tsr_device_info(d.device, &info), "device info");
  ScheduleCaps caps;
  caps.backend = info.backend;
  caps.subgroupSize = info.subgroup_size;
  caps.maxWorkgroupSize = info.max_workgroup_total;
  detail::KernelText text;
  PlanLaunch launch;
  if (!detail::lowerMatmul(gr, mm, caps, "gemm", text, &launch, &err))
    die("lowerMatmul: " + err);
  auto module = parseOrDie(text.str(), "lowered_gemm.tir");
  auto program = programOrDie(d, *module, nullptr);
  const tessera::ProgramKernel *pk = program->kernel("gemm");
  if (!pk || pk->subgroupSize != caps.subgroupSize)
    die("lowered gemm: kernel missing or compiled for another subgroup size");
  tsr_buffer_t bC = d.upload(C);
  std::vector<tsr_buffer_t> bufs = {bA, bB};
  if (bBias)
    bufs.push_back(bBias);
  bufs.push_back(bC);
  std::vector<tsr_arg_t> args;
  for (const PlanArg &a : launch.args)
    args.push_back(a.kind == PlanArg::Kind::Buffer ? tsr_arg_buffer(bufs.at(size_t(a.buffer)), 0)
                   : a.kind == PlanArg::Kind::I32  ? tsr_arg_i32(int32_t(a.i))
                                                   : tsr_arg_i64(a.i));
  double ms = timeRuns(reps, bestOf, [&] {
    check(tsr_stream_launch(d.stream, pk->kernel, launch.grid, launch.workgroup, args.data(),
                            uint32_t(args.size())),
          "launch");
    d.sync();
  });
  d.download(bC, C);
  for (tsr_buffer_t b : bufs)
    tsr_buffer_release(b);
  return ms;
}

namespace {

// A GEMM of the shapes torch models make (--shapes): through lowerMatmul like torch's
// linear / bmm, x [M, K] @ W^T (W [N, K], read with `.col`) + bias, or a bmm over `batch`
// entries, against OpenBLAS sgemm per batch entry (2 threads) plus a bias pass, timed in the
// same run and checked against each other as gemm_bench.cpp's compare() does (one more
// rounding: the bias add).
CaseResult shapeCase(Device &d, const std::string &label, Gemm g, int batch, bool bCol, bool bias,
                     int reps) {
  const size_t a1 = size_t(g.M) * g.K, b1 = size_t(g.K) * g.N, c1 = size_t(g.M) * g.N;
  std::vector<float> A = randomMatrix(a1 * batch, 1), B = randomMatrix(b1 * batch, 2);
  std::vector<float> bv = randomMatrix(size_t(g.N), 3);
  std::vector<float> C(c1 * batch, 0.f), Cp(C.size());
  double tt = runLowered(d, g, batch, bCol, bias ? Epi::Bias : Epi::None, reps, true, d.upload(A),
                         d.upload(B), bias ? d.upload(bv) : nullptr, C);
  double tp = timeRuns(reps, true, [&] {
    for (int e = 0; e < batch; ++e)
      peer().run(g.M, g.N, g.K, A.data() + e * a1, g.K, B.data() + e * b1, bCol ? g.K : g.N, bCol,
                 Cp.data() + e * c1, g.N);
    if (bias)
      for (size_t i = 0; i < Cp.size(); ++i)
        Cp[i] += bv[i % size_t(g.N)];
  });
  for (int e = 0; e < batch; ++e) {
    std::vector<float> Ae(A.begin() + e * a1, A.begin() + (e + 1) * a1);
    std::vector<float> Be(B.begin() + e * b1, B.begin() + (e + 1) * b1);
    std::vector<float> S = magnitudes(Ae, Be, g.M, g.N, g.K, bCol);
    for (size_t i = 0; i < c1; ++i) {
      const double got = C[e * c1 + i], want = Cp[e * c1 + i];
      double tol = 2.02 * (g.K + 1) * 0x1p-24 * S[i] + 2.0 * (g.K + 1) * 0x1p-126;
      if (bias)
        tol += 2 * 0x1p-24 * (std::fabs(want) + S[i] + std::fabs(bv[i % size_t(g.N)]));
      if (!(std::fabs(got - want) <= tol))
        die(label + ": Tessera and the peer differ at " + std::to_string(e * c1 + i) + ": " +
            std::to_string(got) + " vs " + std::to_string(want));
    }
  }
  CaseResult r;
  r.name = label;
  r.device = "cpu:0";
  r.peer = bias ? "openblas sgemm + bias pass" : "openblas sgemm";
  r.tessera = 2.0 * g.M * g.N * g.K * batch / (tt * 1e6);
  r.peerGflops = 2.0 * g.M * g.N * g.K * batch / (tp * 1e6);
  return r;
}

} // namespace

void runShapes(Device &cpu, const std::string &only, int reps, std::vector<CaseResult> &results) {
  struct ShapeSpec {
    const char *name;
    Gemm g;
    int batch;
    bool bCol, bias;
  };
  const ShapeSpec shapeSpecs[] = {
      {"linear 64x256x512 +bias", {64, 512, 256}, 1, true, true},
      {"linear 64x512x512 +bias", {64, 512, 512}, 1, true, true},
      {"linear 64x512x128 +bias", {64, 128, 512}, 1, true, true},
      {"linear 256x128x256 +bias", {256, 256, 128}, 1, true, true},
      {"linear 256x256x768", {256, 768, 256}, 1, true, false},
      {"bmm 32x[64x32]x[32x64]^T", {64, 64, 32}, 32, true, false},
      {"bmm 32x[64x64]x[64x32]", {64, 32, 64}, 32, false, false},
  };
  for (const ShapeSpec &s : shapeSpecs) {
    if (!only.empty() && std::string(s.name).find(only) == std::string::npos)
      continue;
    results.push_back(shapeCase(cpu, s.name, s.g, s.batch, s.bCol, s.bias, reps));
    print(results.back());
  }
}

} // namespace gemmbench
