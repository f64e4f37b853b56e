// What every benchmark in bench/ shares: fatal errors, medians of timed runs, one device with
// a stream, reading and compiling IR, and the ratio lines printed against an issue's target.
#pragma once

#include "backends/builtin_drivers.h"
#include "ir/text/parser.h"
#include "tessera/compile_cache.h"
#include "tessera/hal.hpp"
#include "tessera/program.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace tessera::bench {

using Clock = std::chrono::steady_clock;

[[noreturn]] inline void die(const std::string &msg) {
  std::fprintf(stderr, "bench: %s\n", msg.c_str());
  std::exit(1);
}

inline void check(tsr_status_t st, const char *what) {
  if (st)
    die(std::string(what) + ": " + hal::Status::fromC(st).message());
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Median wall time in ms of `fn` over `reps` runs after one warm-up run.
inline double timeMs(int reps, const std::function<void()> &fn) {
  fn();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto t0 = Clock::now();
    fn();
    t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  return median(t);
}

/// One opened device (built-in drivers) and a stream on it.
struct Device {
  tsr_registry_t registry = nullptr;
  tsr_device_t device = nullptr;
  tsr_stream_t stream = nullptr;

  explicit Device(const char *name = "cpu:0") {
    check(tsr_registry_create(&registry), "tsr_registry_create");
    tsr_status_t st = tsr_registry_register_builtin_drivers(registry);
    if (tsr_status_code(st) == TSR_UNAVAILABLE)
      tsr_status_free(st); // recorded; opening the device below says why it is missing
    else
      check(st, "register drivers");
    check(tsr_registry_open_device(registry, name, &device), name);
    check(tsr_stream_create(device, &stream), "tsr_stream_create");
  }
  ~Device() {
    tsr_stream_release(stream);
    tsr_device_release(device);
    tsr_registry_release(registry);
  }
  tsr_buffer_t upload(const std::vector<float> &v) {
    tsr_buffer_t b = nullptr;
    check(tsr_buffer_allocate(device, v.size() * 4, TSR_MEMORY_DEVICE_LOCAL, &b), "allocate");
    check(tsr_stream_copy_h2d(stream, v.data(), b, 0, v.size() * 4), "copy_h2d");
    check(tsr_stream_synchronize(stream), "synchronize");
    return b;
  }
  void download(tsr_buffer_t b, std::vector<float> &v) {
    check(tsr_stream_copy_d2h(stream, b, 0, v.data(), v.size() * 4), "copy_d2h");
    check(tsr_stream_synchronize(stream), "synchronize");
  }
  void launch(tsr_kernel_t k, uint32_t grid, uint32_t wg, std::vector<tsr_arg_t> args) {
    uint32_t g[3] = {grid, 1, 1}, w[3] = {wg, 1, 1};
    check(tsr_stream_launch(stream, k, g, w, args.data(), static_cast<uint32_t>(args.size())),
          "launch");
  }
  void sync() { check(tsr_stream_synchronize(stream), "synchronize"); }
};

inline std::unique_ptr<ir::Module> parseOrDie(const std::string &text, const char *name) {
  auto r = ir::parseModule(text, name);
  if (!r.ok())
    die(r.diags.empty() ? "parse failed" : r.diags[0].str());
  return std::move(r.module);
}

inline std::unique_ptr<Program> programOrDie(Device &d, const ir::Module &m, CompileCache *cache,
                                             const ProgramOptions &opts = {}) {
  std::string err;
  auto p = Program::create(d.device, m, cache, opts, &err);
  if (!p)
    die(err);
  return p;
}

inline std::string readFile(const std::string &path) {
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    die("cannot open " + path);
  std::string s;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0)
    s.append(buf, n);
  std::fclose(f);
  return s;
}

inline void ratioLine(const char *what, double ratio, const char *op, double target) {
  bool met = op[0] == '>' ? ratio >= target : ratio <= target;
  std::printf("  %-44s %8.3f   target %s %.2f  %s\n", what, ratio, op, target,
              met ? "met" : "NOT met");
}

/// One output of a benchmarked kernel and who computed it ("tessera", "glsl" ...).
struct NamedOutput {
  const char *who;
  const std::vector<float> *values;
};

/// Dies unless every output holds y = gelu(a*x + b) (exact erf GELU, ir/examples/
/// gelu_affine.tir) within 1e-5 relative of the fp64 value.
inline void checkGeluAffine(const std::vector<float> &x, const std::vector<float> &b, float a,
                            std::initializer_list<NamedOutput> outputs) {
  for (size_t i = 0; i < x.size(); ++i) {
    double t = double(a) * x[i] + b[i];
    double want = 0.5 * t * (1.0 + std::erf(t / std::sqrt(2.0)));
    double tol = 1e-5 * std::max(1.0, std::fabs(want));
    for (const NamedOutput &o : outputs)
      if (std::fabs((*o.values)[i] - want) > tol)
        die("gelu result wrong at " + std::to_string(i) + ": " + o.who + " " +
            std::to_string((*o.values)[i]) + ", want " + std::to_string(want));
  }
}

/// Dies unless every output holds the row softmax of the rows x cols matrix `x`
/// (ir/examples/row_softmax.tir) within 1e-6 + 1e-4 relative of the fp64 value.
inline void checkRowSoftmax(const std::vector<float> &x, int64_t rows, int64_t cols,
                            std::initializer_list<NamedOutput> outputs) {
  for (int64_t r = 0; r < rows; ++r) {
    double m = -INFINITY, s = 0;
    for (int64_t c = 0; c < cols; ++c)
      m = std::max(m, double(x[size_t(r * cols + c)]));
    for (int64_t c = 0; c < cols; ++c)
      s += std::exp(double(x[size_t(r * cols + c)]) - m);
    for (int64_t c = 0; c < cols; ++c) {
      size_t i = size_t(r * cols + c);
      double want = std::exp(double(x[i]) - m) / s;
      for (const NamedOutput &o : outputs)
        if (std::fabs((*o.values)[i] - want) > 1e-6 + 1e-4 * want)
          die(std::string("softmax result wrong at ") + std::to_string(i) + ": " + o.who);
    }
  }
}

} // namespace tessera::bench
