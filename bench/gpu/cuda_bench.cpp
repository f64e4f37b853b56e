// CUDA backend benchmark (issue #6). In one run, on cuda:0:
//   1. device-to-device copy bandwidth through the HAL (tsr_stream_copy_d2d): the peer of 2;
//   2. fused elementwise y = gelu(a*x + b) (ir/examples/gelu_affine.tir) in GB/s, as a ratio
//      to 1 (target >= 0.9: a fused kernel should stream at copy speed);
//   3. row softmax (ir/examples/row_softmax.tir): time and effective GB/s;
//   4. tiled f32 matmul (ir/examples/matmul_tiled.tir) in TFLOP/s, against cuBLAS sgemm
//      (libcublas loaded with dlopen; the ratio is skipped with the reason when it is absent);
//   5. GEMM with the IR's matrix ops (bench/gpu/gemm_mx.tir: mma.sync for bf16, FMA for
//      f32) at 2048^3 and 4096^3 against cuBLAS (cublasSgemm; cublasGemmEx bf16 x bf16 ->
//      f32 with f32 compute), ratio target >= 0.8.
// Every figure is the median of --reps samples after a warm-up; a sample times several
// back-to-back operations between two synchronizes. Results are checked against the host
// before they are reported. Output: a table, and with --json FILE the same as JSON.
//
// Builds everywhere (no CUDA header: the driver and cuBLAS are loaded at run time). Without a
// CUDA device it prints "no CUDA device: <reason>" and exits 0, so CPU-only runs stay green;
// with one, any failed check or error exits 1.
#include "backends/cuda/runtime/cuda_api.h"
#include "backends/cuda/runtime/cuda_driver.h"
#include "bench/bench_util.h"
#include "ir/text/parser.h"
#include "tessera/hal.hpp"
#include "tessera/program.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace {

using namespace tessera;
using bench::Clock;
using bench::median;

/// A failed step: recorded, reported, and the run exits 1.
struct BenchFailure {
  std::string what;
};

void ok(hal::Status status, const std::string &what) {
  if (!status.ok())
    throw BenchFailure{what + ": " + status.toString()};
}
void ok(tsr_status_t status, const std::string &what) { ok(hal::Status::fromC(status), what); }
template <typename T> T take(hal::Expected<T> expected, const std::string &what) {
  ok(expected.status(), what);
  return std::move(expected).value();
}

struct Options {
  int reps = 7;
  bool quick = false;
  std::string json;
};

/// One row of the report: a name, numbers, and a note (a skip reason, a target, ...).
struct Row {
  std::string name;
  std::vector<std::pair<std::string, double>> numbers;
  std::string note;
};

struct Report {
  std::string device, architecture, skipped;
  std::vector<Row> rows;
  std::vector<std::string> failures;

  void add(Row row) {
    std::printf("  %-40s", row.name.c_str());
    for (const auto &[key, value] : row.numbers)
      std::printf(" %10.3f %-7s", value, key.c_str());
    std::printf(" %s\n", row.note.c_str());
    rows.push_back(std::move(row));
  }
  void fail(const std::string &what) {
    std::printf("  FAILED: %s\n", what.c_str());
    failures.push_back(what);
  }
};

void writeJson(const Report &report, const std::string &path) {
  using Json = nlohmann::ordered_json;
  Json doc = {{"schema", "tessera-cuda-bench/1"},
              {"device", report.device},
              {"architecture", report.architecture},
              {"skipped", report.skipped.empty() ? Json(nullptr) : Json(report.skipped)},
              {"results", Json::array()}};
  for (const Row &row : report.rows) {
    Json r = {{"name", row.name}};
    for (const auto &[key, value] : row.numbers)
      r[key] = std::isfinite(value) ? value : -1.0; // the schema's "no figure"
    r["note"] = row.note;
    doc["results"].push_back(std::move(r));
  }
  doc["failures"] = report.failures;
  doc["passed"] = report.failures.empty();
  std::ofstream(path) << doc.dump(2, ' ', false, Json::error_handler_t::replace) << "\n";
}

/// Median ms per operation: `iters` operations between synchronizes, over `reps` samples.
double timeMs(int reps, int iters, hal::Stream &stream, const std::function<void()> &op) {
  op();
  ok(stream.synchronize(), "warm-up");
  std::vector<double> samples;
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    for (int i = 0; i < iters; ++i)
      op();
    ok(stream.synchronize(), "synchronize");
    samples.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / iters);
  }
  return median(samples);
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw BenchFailure{"cannot open " + path};
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// Deterministic inputs in [lo, hi) without a slow generator (2^26 values are made here).
std::vector<float> inputs(size_t n, unsigned seed, float lo, float hi) {
  std::vector<float> v(n);
  uint32_t state = 0x9E3779B9u * (seed + 1);
  for (float &x : v) {
    state = state * 1664525u + 1013904223u;
    x = lo + (hi - lo) * float(state >> 8) * (1.0f / 16777216.0f);
  }
  return v;
}

/// Compiles a file of the source tree (e.g. "ir/examples/saxpy.tir") for the device through
/// Program.
std::unique_ptr<Program> compileFile(hal::Device &device, const std::string &file) {
  std::string text = readFile(std::string(TESSERA_SOURCE_DIR) + "/" + file);
  auto parsed = ir::parseModule(text, file);
  if (!parsed.ok())
    throw BenchFailure{file + ": " +
                       (parsed.diags.empty() ? "parse failed" : parsed.diags[0].str())};
  std::string error;
  // Unchecked: Program implements no other bounds mode on cuda yet (and the kernels here are
  // in bounds by construction).
  ProgramOptions opts;
  opts.bounds = TSR_BOUNDS_UNCHECKED;
  auto program = Program::create(device.get(), *parsed.module, nullptr, opts, &error);
  if (!program)
    throw BenchFailure{"Program::create(" + file + "): " + error};
  return program;
}

std::unique_ptr<Program> compileExample(hal::Device &device, const std::string &file) {
  return compileFile(device, "ir/examples/" + file);
}

tsr_kernel_t kernelOf(const Program &program, const char *name) {
  const ProgramKernel *k = program.kernel(name);
  if (!k)
    throw BenchFailure{std::string("no kernel ") + name};
  return k->kernel;
}

void launch(hal::Stream &stream, tsr_kernel_t kernel, hal::Dim3 grid, hal::Dim3 wg,
            const std::vector<tsr_arg_t> &args) {
  uint32_t g[3] = {grid.x, grid.y, grid.z}, w[3] = {wg.x, wg.y, wg.z};
  ok(tsr_stream_launch(stream.get(), kernel, g, w, args.data(), uint32_t(args.size())), "launch");
}

hal::Buffer upload(hal::Device &device, hal::Stream &stream, const std::vector<float> &v) {
  hal::Buffer b = take(device.allocate(v.size() * 4), "allocate");
  ok(stream.copyToDevice(v.data(), b, 0, v.size() * 4), "copy to device");
  ok(stream.synchronize(), "synchronize");
  return b;
}

std::vector<float> download(hal::Stream &stream, const hal::Buffer &b, size_t n) {
  std::vector<float> v(n);
  ok(stream.copyToHost(b, 0, v.data(), n * 4), "copy to host");
  ok(stream.synchronize(), "synchronize");
  return v;
}

std::string ratioNote(double ratio, double target) {
  char text[96];
  std::snprintf(text, sizeof text, "ratio %.3f, target >= %.2f: %s", ratio, target,
                ratio >= target ? "met" : "NOT met");
  return text;
}

// ---- 1 + 2: copy bandwidth and the fused elementwise kernel ---------------------------

double copyBandwidth(const Options &o, hal::Device &device, hal::Stream &stream, Report &report) {
  const uint64_t bytes = o.quick ? (uint64_t(4) << 20) : (uint64_t(256) << 20);
  hal::Buffer a = take(device.allocate(bytes), "allocate"),
              b = take(device.allocate(bytes), "allocate");
  ok(stream.fill<uint32_t>(a, 0, bytes, 0x3F800000u), "fill");
  double ms = timeMs(o.reps, 20, stream, [&] { ok(stream.copy(a, 0, b, 0, bytes), "copy d2d"); });
  double gbps = 2.0 * double(bytes) / ms / 1e6; // read + write
  report.add({"d2d copy (tsr_stream_copy_d2d)",
              {{"ms", ms}, {"GB/s", gbps}},
              std::to_string(bytes >> 20) + " MiB"});
  return gbps;
}

void fusedElementwise(const Options &o, hal::Device &device, hal::Stream &stream, double copyGbps,
                      Report &report) {
  const size_t n = o.quick ? (size_t(1) << 20) : (size_t(1) << 26);
  const float a = 1.5f;
  std::vector<float> x = inputs(n, 1, -4, 4), bias = inputs(n, 2, -1, 1);
  auto program = compileExample(device, "gelu_affine.tir");
  tsr_kernel_t gelu = kernelOf(*program, "gelu_affine");
  hal::Buffer bx = upload(device, stream, x), bb = upload(device, stream, bias);
  hal::Buffer by = take(device.allocate(n * 4), "allocate");
  std::vector<tsr_arg_t> args = {tsr_arg_buffer(bx.get(), 0), tsr_arg_buffer(bb.get(), 0),
                                 tsr_arg_buffer(by.get(), 0), tsr_arg_f32(a),
                                 tsr_arg_i32(int32_t(n))};
  double ms =
      timeMs(o.reps, 20, stream, [&] { launch(stream, gelu, {uint32_t(n / 256)}, {256}, args); });
  std::vector<float> y = download(stream, by, n);
  for (size_t i = 0; i < n; i += 9973) {
    double t = double(a) * x[i] + bias[i];
    double want = 0.5 * t * (1 + std::erf(t / std::sqrt(2.0)));
    if (std::fabs(y[i] - want) > 1e-5 * (1 + std::fabs(want)))
      throw BenchFailure{"gelu_affine: y[" + std::to_string(i) + "] = " + std::to_string(y[i]) +
                         ", expected " + std::to_string(want)};
  }
  double gbps = 3.0 * 4.0 * double(n) / ms / 1e6;
  report.add({"fused gelu(a*x+b) (gelu_affine.tir)",
              {{"ms", ms}, {"GB/s", gbps}},
              ratioNote(gbps / copyGbps, 0.9) + " (vs d2d copy)"});
}

// ---- 3: row softmax ---------------------------------------------------------------------

void rowSoftmax(const Options &o, hal::Device &device, hal::Stream &stream, double copyGbps,
                Report &report) {
  const size_t rows = o.quick ? 256 : 8192, cols = o.quick ? 1024 : 8192;
  std::vector<float> x = inputs(rows * cols, 3, -6, 6);
  auto program = compileExample(device, "row_softmax.tir");
  tsr_kernel_t softmax = kernelOf(*program, "row_softmax");
  hal::Buffer bx = upload(device, stream, x);
  hal::Buffer by = take(device.allocate(rows * cols * 4), "allocate");
  std::vector<tsr_arg_t> args = {tsr_arg_buffer(bx.get(), 0), tsr_arg_buffer(by.get(), 0),
                                 tsr_arg_i32(int32_t(cols))};
  // One workgroup of 128 per row: the kernel's shared reduction array has 128 slots.
  double ms =
      timeMs(o.reps, 10, stream, [&] { launch(stream, softmax, {uint32_t(rows)}, {128}, args); });
  std::vector<float> y = download(stream, by, rows * cols);
  for (size_t r = 0; r < rows; r += rows / 16) {
    const float *row = &x[r * cols];
    double m = *std::max_element(row, row + cols), sum = 0;
    for (size_t c = 0; c < cols; ++c)
      sum += std::exp(double(row[c]) - m);
    for (size_t c = 0; c < cols; c += 97) {
      double want = std::exp(double(row[c]) - m) / sum;
      if (std::fabs(y[r * cols + c] - want) > 1e-5 * want + 1e-9)
        throw BenchFailure{"row_softmax: y[" + std::to_string(r) + ", " + std::to_string(c) +
                           "] = " + std::to_string(y[r * cols + c]) + ", expected " +
                           std::to_string(want)};
    }
  }
  double gbps = 2.0 * 4.0 * double(rows * cols) / ms / 1e6; // one read + one write
  char note[96];
  std::snprintf(note, sizeof note, "%zu x %zu; %.2f of d2d copy bandwidth", rows, cols,
                gbps / copyGbps);
  report.add({"row softmax (row_softmax.tir)", {{"ms", ms}, {"GB/s", gbps}}, note});
}

// ---- 4: matmul against cuBLAS -----------------------------------------------------------

/// cuBLAS through dlopen: the few entry points sgemm needs.
struct Cublas {
  using Handle = struct cublasContext *;
  int (*create)(Handle *) = nullptr;
  int (*destroy)(Handle) = nullptr;
  int (*setStream)(Handle, cuda::CUstream) = nullptr;
  int (*sgemm)(Handle, int, int, int, int, int, const float *, const float *, int, const float *,
               int, const float *, float *, int) = nullptr;
  // cublasGemmEx(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta,
  //              C, Ctype, ldc, computeType, algo); absent in very old cuBLAS.
  int (*gemmEx)(Handle, int, int, int, int, int, const void *, const void *, int, int, const void *,
                int, int, const void *, void *, int, int, int, int) = nullptr;
  static constexpr int kR32F = 0, kR16BF = 14, kCompute32F = 68, kGemmDefault = -1;

  /// Empty on success, else why cuBLAS cannot be used.
  std::string load() {
    std::vector<std::string> names = {"libcublas.so", "libcublas.so.13", "libcublas.so.12",
                                      "/usr/local/cuda/lib64/libcublas.so"};
    if (const char *env = std::getenv("TESSERA_CUBLAS_LIBRARY"))
      names.insert(names.begin(), env);
    void *library = nullptr;
    std::string first;
    for (const std::string &name : names) {
      if ((library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)))
        break;
      if (first.empty())
        first = dlerror();
    }
    if (!library)
      return "cuBLAS not found: " + first;
    create = reinterpret_cast<decltype(create)>(dlsym(library, "cublasCreate_v2"));
    destroy = reinterpret_cast<decltype(destroy)>(dlsym(library, "cublasDestroy_v2"));
    setStream = reinterpret_cast<decltype(setStream)>(dlsym(library, "cublasSetStream_v2"));
    sgemm = reinterpret_cast<decltype(sgemm)>(dlsym(library, "cublasSgemm_v2"));
    gemmEx = reinterpret_cast<decltype(gemmEx)>(dlsym(library, "cublasGemmEx"));
    return create && destroy && setStream && sgemm ? "" : "cuBLAS lacks cublasSgemm_v2";
  }
};

/// cuBLAS's own CUDA resources on the device's primary context, released in any case.
struct CublasRun {
  cuda::CudaApi api;
  Cublas blas;
  cuda::CUdevice device = 0;
  cuda::CUcontext context = nullptr;
  cuda::CUstream stream = nullptr;
  cuda::CUdeviceptr dA = 0, dB = 0, dC = 0;
  Cublas::Handle handle = nullptr;

  void cu(cuda::CUresult result, const char *call) {
    if (result != cuda::CUDA_SUCCESS)
      throw BenchFailure{std::string("cuBLAS set-up: ") + call + ": CUDA error " +
                         std::to_string(result)};
  }
  ~CublasRun() {
    if (!context)
      return;
    if (handle)
      blas.destroy(handle);
    for (cuda::CUdeviceptr p : {dA, dB, dC})
      if (p)
        api.memFree(p);
    if (stream)
      api.streamDestroy(stream);
    cuda::CUcontext popped = nullptr;
    api.cuCtxPopCurrent_v2(&popped);
    api.cuDevicePrimaryCtxRelease_v2(device);
  }
};

cuda::CUdeviceptr hostAddress(const void *p) { return reinterpret_cast<cuda::CUdeviceptr>(p); }

/// cuBLAS on C = A x B (row-major M x K times K x N; f32, or bf16 bits with `bf16`) in its own
/// CUDA memory, C in f32: the median ms, or a negative value with *why set when cuBLAS cannot
/// run here. f32: cublasSgemm; bf16: cublasGemmEx with f32 compute.
double cublasGemmMs(const Options &o, const void *A, const void *B, size_t elemBytes, bool bf16,
                    int M, int N, int K, std::vector<float> *C, std::string *why) {
  CublasRun r;
  if ((*why = r.blas.load()) != "" || !cuda::loadCudaApi(&r.api, why))
    return -1;
  if (bf16 && !r.blas.gemmEx) {
    *why = "cuBLAS lacks cublasGemmEx";
    return -1;
  }
  size_t aBytes = size_t(M) * K * elemBytes, bBytes = size_t(K) * N * elemBytes;
  r.cu(r.api.cuDeviceGet(&r.device, 0), "cuDeviceGet");
  r.cu(r.api.cuDevicePrimaryCtxRetain(&r.context, r.device), "cuDevicePrimaryCtxRetain");
  if (r.api.cuCtxPushCurrent_v2(r.context) != cuda::CUDA_SUCCESS) {
    r.api.cuDevicePrimaryCtxRelease_v2(r.device);
    r.context = nullptr;
    throw BenchFailure{"cuBLAS set-up: cuCtxPushCurrent_v2 failed"};
  }
  r.cu(r.api.streamCreate(&r.stream, simt::kStreamNonBlocking), "cuStreamCreate");
  r.cu(r.api.memAlloc(&r.dA, aBytes), "cuMemAlloc_v2");
  r.cu(r.api.memAlloc(&r.dB, bBytes), "cuMemAlloc_v2");
  r.cu(r.api.memAlloc(&r.dC, C->size() * 4), "cuMemAlloc_v2");
  r.cu(r.api.cuMemcpyAsync(r.dA, hostAddress(A), aBytes, r.stream), "cuMemcpyAsync");
  r.cu(r.api.cuMemcpyAsync(r.dB, hostAddress(B), bBytes, r.stream), "cuMemcpyAsync");
  if (int status = r.blas.create(&r.handle)) {
    r.handle = nullptr;
    *why = "cublasCreate_v2 failed with status " + std::to_string(status) +
           " (a cuBLAS newer than the driver?)";
    return -1;
  }
  r.blas.setStream(r.handle, r.stream);
  const float one = 1, zero = 0;
  auto *dA = reinterpret_cast<void *>(r.dA), *dB = reinterpret_cast<void *>(r.dB);
  auto *dC = reinterpret_cast<float *>(r.dC);
  // Row-major C = A B is column-major C^T = B^T A^T: swap the operands, no transposes.
  auto run = [&] {
    int status = bf16 ? r.blas.gemmEx(r.handle, 0, 0, N, M, K, &one, dB, Cublas::kR16BF, N, dA,
                                      Cublas::kR16BF, K, &zero, dC, Cublas::kR32F, N,
                                      Cublas::kCompute32F, Cublas::kGemmDefault)
                      : r.blas.sgemm(r.handle, 0, 0, N, M, K, &one, static_cast<float *>(dB), N,
                                     static_cast<float *>(dA), K, &zero, dC, N);
    if (status)
      throw BenchFailure{std::string(bf16 ? "cublasGemmEx" : "cublasSgemm_v2") +
                         " failed with status " + std::to_string(status)};
  };
  run();
  r.cu(r.api.streamSynchronize(r.stream), "cuStreamSynchronize");
  std::vector<double> samples;
  for (int rep = 0; rep < o.reps; ++rep) {
    auto t0 = Clock::now();
    for (int i = 0; i < 3; ++i)
      run();
    r.cu(r.api.streamSynchronize(r.stream), "cuStreamSynchronize");
    samples.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / 3);
  }
  r.cu(r.api.cuMemcpyAsync(hostAddress(C->data()), r.dC, C->size() * 4, r.stream), "cuMemcpyAsync");
  r.cu(r.api.streamSynchronize(r.stream), "cuStreamSynchronize");
  return median(samples);
}

double cublasSgemmMs(const Options &o, const std::vector<float> &A, const std::vector<float> &B,
                     int M, int N, int K, std::vector<float> *C, std::string *why) {
  return cublasGemmMs(o, A.data(), B.data(), 4, false, M, N, K, C, why);
}

/// Checks sampled entries of C against a double dot product, within K * 2^-23 * sum|a b|.
void checkMatmul(const char *who, const std::vector<float> &A, const std::vector<float> &B,
                 const std::vector<float> &C, int M, int N, int K) {
  for (int s = 0; s < 64; ++s) {
    int i = (s * 7919) % M, j = (s * 104729 + 13) % N;
    double want = 0, magnitude = 0;
    for (int k = 0; k < K; ++k) {
      want += double(A[size_t(i) * K + k]) * B[size_t(k) * N + j];
      magnitude += std::fabs(double(A[size_t(i) * K + k]) * B[size_t(k) * N + j]);
    }
    if (std::fabs(C[size_t(i) * N + j] - want) > K * std::ldexp(magnitude, -23) + 1e-6)
      throw BenchFailure{std::string(who) + ": C[" + std::to_string(i) + ", " + std::to_string(j) +
                         "] = " + std::to_string(C[size_t(i) * N + j]) + ", expected " +
                         std::to_string(want)};
  }
}

/// The arguments of matmul_tiled and gemm_mx's kernels: (A, B, C, M, N, K).
std::vector<tsr_arg_t> matmulArgs(const hal::Buffer &a, const hal::Buffer &b, const hal::Buffer &c,
                                  int M, int N, int K) {
  return {tsr_arg_buffer(a.get(), 0),
          tsr_arg_buffer(b.get(), 0),
          tsr_arg_buffer(c.get(), 0),
          tsr_arg_i32(M),
          tsr_arg_i32(N),
          tsr_arg_i32(K)};
}

void matmul(const Options &o, hal::Device &device, hal::Stream &stream, Report &report) {
  const int M = o.quick ? 256 : 4096, N = M, K = M;
  std::vector<float> A = inputs(size_t(M) * K, 4, -1, 1), B = inputs(size_t(K) * N, 5, -1, 1);
  double flop = 2.0 * M * N * K;
  auto program = compileExample(device, "matmul_tiled.tir");
  tsr_kernel_t mm = kernelOf(*program, "matmul_tiled");
  hal::Buffer bA = upload(device, stream, A), bB = upload(device, stream, B);
  hal::Buffer bC = take(device.allocate(size_t(M) * N * 4), "allocate");
  std::vector<tsr_arg_t> args = matmulArgs(bA, bB, bC, M, N, K);
  hal::Dim3 grid = {uint32_t(N + 15) / 16, uint32_t(M + 15) / 16};
  double ms = timeMs(o.reps, 3, stream, [&] { launch(stream, mm, grid, {16, 16}, args); });
  checkMatmul("matmul_tiled", A, B, download(stream, bC, size_t(M) * N), M, N, K);
  double tflops = flop / ms / 1e9;
  std::string size = std::to_string(M) + "^3";
  report.add({"tiled matmul f32 (matmul_tiled.tir)", {{"ms", ms}, {"TFLOP/s", tflops}}, size});
  std::string why;
  std::vector<float> C(size_t(M) * N);
  double blasMs = cublasSgemmMs(o, A, B, M, N, K, &C, &why);
  if (blasMs < 0) {
    report.add({"cuBLAS sgemm (peer)", {}, "skipped: " + why});
    return;
  }
  checkMatmul("cuBLAS sgemm", A, B, C, M, N, K);
  double blasTflops = flop / blasMs / 1e9;
  char note[96];
  std::snprintf(note, sizeof note, "%s; tiled / cuBLAS = %.3f", size.c_str(), tflops / blasTflops);
  report.add({"cuBLAS sgemm (peer)", {{"ms", blasMs}, {"TFLOP/s", blasTflops}}, note});
}

// ---- 5: GEMM with the matrix ops against cuBLAS -----------------------------------------

/// f32 -> bf16 bits, round to nearest even (the inputs are finite).
std::vector<uint16_t> toBF16(std::vector<float> &v) {
  std::vector<uint16_t> bits(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t u;
    std::memcpy(&u, &v[i], 4);
    u += 0x7fff + ((u >> 16) & 1);
    bits[i] = uint16_t(u >> 16);
    u = uint32_t(bits[i]) << 16;
    std::memcpy(&v[i], &u, 4); // v now holds the bf16 value: the reference's input
  }
  return bits;
}

void matrixGemm(const Options &o, hal::Device &device, hal::Stream &stream, bool bf16, int size,
                Report &report) {
  const int M = size, N = size, K = size;
  std::vector<float> A = inputs(size_t(M) * K, 6, -1, 1), B = inputs(size_t(K) * N, 7, -1, 1);
  std::vector<uint16_t> A16, B16;
  if (bf16) {
    A16 = toBF16(A);
    B16 = toBF16(B);
  }
  size_t elemBytes = bf16 ? 2 : 4;
  const void *hostA = bf16 ? static_cast<const void *>(A16.data()) : A.data();
  const void *hostB = bf16 ? static_cast<const void *>(B16.data()) : B.data();
  auto program = compileFile(device, "bench/gpu/gemm_mx.tir");
  const char *kernelName = bf16 ? "gemm_bf16" : "gemm_f32";
  tsr_kernel_t gemm = kernelOf(*program, kernelName);
  hal::Buffer bA = take(device.allocate(A.size() * elemBytes), "allocate");
  hal::Buffer bB = take(device.allocate(B.size() * elemBytes), "allocate");
  ok(stream.copyToDevice(hostA, bA, 0, A.size() * elemBytes), "copy to device");
  ok(stream.copyToDevice(hostB, bB, 0, B.size() * elemBytes), "copy to device");
  hal::Buffer bC = take(device.allocate(size_t(M) * N * 4), "allocate");
  std::vector<tsr_arg_t> args = matmulArgs(bA, bB, bC, M, N, K);
  // 64 x 64 of C per workgroup of 4 warps (gemm_mx.tir).
  hal::Dim3 grid = {uint32_t(N + 63) / 64, uint32_t(M + 63) / 64};
  // At most 3 samples of one launch: the f32 kernel (an FMA loop) may be slow at 4096^3.
  double ms =
      timeMs(std::min(o.reps, 3), 1, stream, [&] { launch(stream, gemm, grid, {128}, args); });
  checkMatmul(kernelName, A, B, download(stream, bC, size_t(M) * N), M, N, K);
  double flop = 2.0 * M * N * K, tflops = flop / ms / 1e9;
  std::string name = std::string(kernelName) + " " + std::to_string(size) + "^3";
  report.add({name + " (gemm_mx.tir)",
              {{"ms", ms}, {"TFLOP/s", tflops}},
              bf16 ? "bf16 in, f32 out" : "f32"});
  std::string why;
  std::vector<float> C(size_t(M) * N);
  double blasMs = cublasGemmMs(o, hostA, hostB, elemBytes, bf16, M, N, K, &C, &why);
  std::string peer = bf16 ? "cuBLAS GemmEx bf16 " : "cuBLAS sgemm ";
  if (blasMs < 0) {
    report.add({peer + std::to_string(size) + "^3 (peer)", {}, "skipped: " + why});
    return;
  }
  checkMatmul(peer.c_str(), A, B, C, M, N, K);
  double blasTflops = flop / blasMs / 1e9;
  report.add({peer + std::to_string(size) + "^3 (peer)",
              {{"ms", blasMs}, {"TFLOP/s", blasTflops}, {"ratio", tflops / blasTflops}},
              ratioNote(tflops / blasTflops, 0.8)});
}

/// Runs one section; a failure is recorded and the next section still runs.
void section(Report &report, const std::function<void()> &body) {
  try {
    body();
  } catch (const BenchFailure &failure) {
    report.fail(failure.what);
  }
}

int usage(int code) {
  std::printf("usage: cuda_bench [--reps N] [--quick] [--json FILE]\n"
              "  --reps N     samples per figure, median reported (default 7)\n"
              "  --quick      small sizes, 3 samples (a smoke run)\n"
              "  --json FILE  also write the results as JSON (schema tessera-cuda-bench/1)\n"
              "Without a CUDA device: prints 'no CUDA device: <reason>' and exits 0.\n"
              "TESSERA_CUDA_LIBRARY / TESSERA_CUBLAS_LIBRARY name other libraries to load.\n");
  return code;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick") {
      o.quick = true;
      o.reps = 3;
    } else if (a == "--reps" && i + 1 < argc) {
      o.reps = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--json" && i + 1 < argc) {
      o.json = argv[++i];
    } else if (a == "--help" || a == "-h") {
      return usage(0);
    } else {
      std::fprintf(stderr, "cuda_bench: unknown argument '%s'\n", a.c_str());
      return usage(2);
    }
  }
  Report report;
  auto finish = [&] {
    if (!o.json.empty())
      writeJson(report, o.json);
    return report.failures.empty() ? 0 : 1;
  };
  hal::Registry registry = take(hal::Registry::create(), "tsr_registry_create");
  hal::Status registered = registry.registerDriver(tsr_cuda_driver());
  if (registered.code() == TSR_UNAVAILABLE) {
    // The registry's record holds the driver's reason, without the call's name in front.
    report.skipped = registered.message();
    auto unavailable = registry.unavailable();
    if (unavailable.ok() && !unavailable->empty())
      report.skipped = unavailable->front().reason;
    std::printf("no CUDA device: %s\n", report.skipped.c_str());
    return finish();
  }
  section(report, [&] {
    ok(registered, "register the CUDA driver");
    hal::Device device = take(registry.openDevice("cuda:0"), "open cuda:0");
    tsr_device_info_t info = take(device.info(), "device info");
    report.device = info.name;
    report.architecture = info.architecture;
    hal::Stream stream = take(device.createStream(), "create a stream");
    std::printf("Tessera CUDA benchmark: %s (%s, %u SMs, %.1f GiB), median of %d samples%s\n\n",
                info.name, info.architecture, info.compute_units,
                double(info.total_memory) / double(1 << 30), o.reps, o.quick ? " (quick)" : "");
    double copyGbps = 0;
    section(report, [&] { copyGbps = copyBandwidth(o, device, stream, report); });
    section(report, [&] { fusedElementwise(o, device, stream, copyGbps, report); });
    section(report, [&] { rowSoftmax(o, device, stream, copyGbps, report); });
    section(report, [&] { matmul(o, device, stream, report); });
    for (int size : o.quick ? std::vector<int>{256} : std::vector<int>{2048, 4096})
      for (bool bf16 : {false, true})
        section(report, [&] { matrixGemm(o, device, stream, bf16, size, report); });
  });
  std::printf("\n%s\n", report.failures.empty() ? "all checks passed" : "SOME CHECKS FAILED");
  return finish();
}
