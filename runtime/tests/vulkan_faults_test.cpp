// Hostile kernels on vulkan:0 (issue #10): out-of-bounds global and shared accesses,
// integer division faults, a `while` that never ends and a `for` whose step is 0 at run
// time. Robust mode must give the defined results (the reference interpreter's where it
// defines them, the robust rules where it stops: loads read 0, stores are dropped), checked
// mode the right status naming the kernel, the op's location and the work-item, a deadline
// DEADLINE_EXCEEDED within a short timeout; and the same stream must run a correct launch
// right after each. Skips itself where no Vulkan device is present.
#include "backends/builtin_drivers.h"
#include "backends/divergent_barrier_test_kernels.h"
#include "ir/interp/interpreter.h"
#include "ir/interp/launch.h"
#include "ir/text/parser.h"
#include "tessera/program.h"

#include <gtest/gtest.h>

#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>

namespace tessera {
namespace {

struct Outcome {
  tsr_status_code_t code = TSR_OK;
  std::string message;
  std::vector<ir::HostBuffer> outputs;
  double seconds = 0;
};

class VulkanRun : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(tsr_registry_create(&registry_), nullptr);
    ASSERT_EQ(tsr_registry_register_builtin_drivers(registry_), nullptr);
    if (tsr_status_t st = tsr_registry_open_device(registry_, "vulkan:0", &device_)) {
      std::string why = tsr_status_message(st);
      tsr_status_free(st);
      GTEST_SKIP() << "no vulkan:0: " << why;
    }
    ASSERT_EQ(tsr_stream_create(device_, &stream_), nullptr);
  }
  void TearDown() override {
    if (stream_)
      tsr_stream_release(stream_);
    if (device_)
      tsr_device_release(device_);
    if (registry_)
      tsr_registry_release(registry_);
  }

  /// Compiles `text` in `mode` and runs its kernel by its launch spec on the fixture's
  /// stream; `data` gets the inputs (for the reference run).
  Outcome run(const std::string &text, tsr_bounds_mode mode, ir::LaunchData *inputs = nullptr,
              const std::string &kernel = {}) {
    Outcome o;
    ir::ParseResult pr = ir::parseModule(text, "hostile.tir");
    EXPECT_TRUE(pr.ok()) << (pr.diags.empty() ? "" : pr.diags[0].str());
    if (!pr.ok())
      return o;
    module_ = std::move(pr.module);
    ProgramOptions opts;
    opts.bounds = mode;
    std::string err;
    program_ = Program::create(device_, *module_, nullptr, opts, &err);
    EXPECT_NE(program_, nullptr) << err;
    if (!program_)
      return o;
    kernel_ = kernel.empty() ? module_->functions.back().get() : module_->lookup(kernel);
    const ir::Function &f = *kernel_;
    ir::LaunchData data;
    EXPECT_TRUE(ir::makeLaunchData(f, data, err)) << err;
    if (inputs)
      *inputs = data;
    const ProgramKernel *pk = program_->kernel(f.name);
    std::vector<tsr_buffer_t> buffers;
    for (const ir::HostBuffer &hb : data.buffers) {
      tsr_buffer_t b = nullptr;
      EXPECT_EQ(tsr_buffer_allocate(device_, hb.bytes.size(), TSR_MEMORY_DEVICE_LOCAL, &b),
                nullptr);
      EXPECT_EQ(tsr_stream_copy_h2d(stream_, hb.bytes.data(), b, 0, hb.bytes.size()), nullptr);
      buffers.push_back(b);
    }
    std::vector<tsr_arg_t> args;
    size_t bi = 0;
    for (size_t i = 0; i < pk->params.size(); ++i)
      args.push_back(pk->params[i].kind == ir::Type::Kind::Buffer
                         ? tsr_arg_buffer(buffers[bi++], 0)
                         : tsr_arg_i32(static_cast<int32_t>(data.args[i].scalar.i)));
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(tsr_stream_launch(stream_, pk->kernel, data.dims.grid.data(),
                                data.dims.workgroup.data(), args.data(), uint32_t(args.size())),
              nullptr);
    if (tsr_status_t st = tsr_stream_synchronize(stream_)) {
      o.code = tsr_status_code(st);
      o.message = tsr_status_message(st);
      tsr_status_free(st);
      const std::string call = "tsr_stream_synchronize: "; // the HAL names the call
      if (o.message.rfind(call, 0) == 0)
        o.message.erase(0, call.size());
    }
    o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (size_t i = 0; i < buffers.size(); ++i) {
      o.outputs.push_back(data.buffers[i]);
      EXPECT_EQ(tsr_stream_copy_d2h(stream_, buffers[i], 0, o.outputs.back().bytes.data(),
                                    o.outputs.back().bytes.size()),
                nullptr);
    }
    EXPECT_EQ(tsr_stream_synchronize(stream_), nullptr) << "the stream must stay usable";
    for (tsr_buffer_t b : buffers)
      tsr_buffer_release(b);
    return o;
  }

  /// The reference interpreter's outputs for the inputs of the last run.
  std::vector<ir::HostBuffer> reference(ir::LaunchData data) {
    const ir::Function &f = *kernel_;
    ir::InterpOptions io;
    io.subgroupSize = program_->kernel(f.name)->subgroupSize;
    ir::InterpResult r = ir::interpret(*module_, f, data.dims, data.args, io);
    EXPECT_TRUE(r.ok) << r.error;
    return data.buffers;
  }

  /// A correct kernel right after a fault: the device and the stream still work.
  void expectHealthy() {
    Outcome o = run(R"(
kernel @healthy(%o: buffer<i32>) {
  %i = global_id.x : i32
  %t = mul %i, %i : i32
  store %t, %o[%i] : i32
}
launch @healthy grid(2) workgroup(64) { %o[128] = fill(0) }
)",
                    TSR_BOUNDS_ROBUST);
    ASSERT_EQ(o.code, TSR_OK) << o.message;
    for (int64_t i = 0; i < 128; ++i)
      ASSERT_EQ(int64_t(o.outputs[0].get(i).i), i * i) << i;
  }

  static std::vector<int32_t> ints(const ir::HostBuffer &b) {
    std::vector<int32_t> v(size_t(b.size()));
    std::memcpy(v.data(), b.bytes.data(), b.bytes.size());
    return v;
  }

  tsr_registry_t registry_ = nullptr;
  tsr_device_t device_ = nullptr;
  tsr_stream_t stream_ = nullptr;
  std::unique_ptr<ir::Module> module_;
  const ir::Function *kernel_ = nullptr;
  std::unique_ptr<Program> program_;
};

const char *kStoreFar = R"(
kernel @store_far(%o: buffer<i32>, %i: i32) {
  %v = const 7 : i32
  store %v, %o[%i] : i32
}
launch @store_far grid(1) workgroup(1) { %o[4] = fill(1)  %i = -2000000000 }
)";

TEST_F(VulkanRun, StoreFarOutOfBounds) {
  Outcome robust = run(kStoreFar, TSR_BOUNDS_ROBUST);
  EXPECT_EQ(robust.code, TSR_OK) << robust.message;
  EXPECT_EQ(ints(robust.outputs[0]), (std::vector<int32_t>{1, 1, 1, 1})); // dropped
  Outcome checked = run(kStoreFar, TSR_BOUNDS_CHECKED);
  EXPECT_EQ(checked.code, TSR_OUT_OF_RANGE);
  EXPECT_EQ(checked.message,
            "kernel @store_far: out-of-bounds store at 4:3: index -2000000000 outside [0, 4) of "
            "parameter 0, work-item local (0, 0, 0) of workgroup (0, 0, 0)");
  EXPECT_EQ(ints(checked.outputs[0]), (std::vector<int32_t>{1, 1, 1, 1}));
  expectHealthy();
}

TEST_F(VulkanRun, LoadPastTheEnd) {
  const char *text = R"(
kernel @load_end(%a: buffer<i32, readonly>, %o: buffer<i32>) {
  %i = global_id.x : i32
  %v = load %a[%i] : i32
  store %v, %o[%i] : i32
}
launch @load_end grid(2) workgroup(3) { %a[4] = iota(10, 1)  %o[6] = fill(-1) }
)";
  Outcome robust = run(text, TSR_BOUNDS_ROBUST);
  EXPECT_EQ(robust.code, TSR_OK) << robust.message;
  EXPECT_EQ(ints(robust.outputs[1]), (std::vector<int32_t>{10, 11, 12, 13, 0, 0}));
  Outcome checked = run(text, TSR_BOUNDS_CHECKED);
  EXPECT_EQ(checked.code, TSR_OUT_OF_RANGE);
  // Work-item 4 or 5 (local 1 or 2 of workgroup 1) claims the record first.
  EXPECT_TRUE(std::regex_match(
      checked.message,
      std::regex("kernel @load_end: out-of-bounds load at 4:3: index ([45]) outside \\[0, 4\\) "
                 "of parameter 0, work-item local \\(([12]), 0, 0\\) of workgroup \\(1, 0, 0\\)")))
      << checked.message;
  expectHealthy();
}

TEST_F(VulkanRun, SharedIndexOutOfBounds) {
  const char *text = R"(
kernel @shared_oob(%o: buffer<i32>) {
  %s = shared_alloc : shared<i32, 8>
  %l = local_id.x : i32
  %six = const 6 : i32
  %j = add %l, %six : i32
  %hundred = const 100 : i32
  %v = add %l, %hundred : i32
  store %v, %s[%j] : i32
  barrier
  %r = load %s[%j] : i32
  store %r, %o[%l] : i32
}
launch @shared_oob grid(1) workgroup(4) { %o[4] = fill(-1) }
)";
  Outcome robust = run(text, TSR_BOUNDS_ROBUST);
  EXPECT_EQ(robust.code, TSR_OK) << robust.message;
  EXPECT_EQ(ints(robust.outputs[0]), (std::vector<int32_t>{100, 101, 0, 0}));
  Outcome checked = run(text, TSR_BOUNDS_CHECKED);
  EXPECT_EQ(checked.code, TSR_OUT_OF_RANGE);
  EXPECT_TRUE(std::regex_match(
      checked.message,
      std::regex("kernel @shared_oob: out-of-bounds shared-memory access at 9:3: index ([89]) "
                 "outside \\[0, 8\\) of a shared array, work-item local \\(([23]), 0, 0\\) of "
                 "workgroup \\(0, 0, 0\\)")))
      << checked.message;
  expectHealthy();
}

TEST_F(VulkanRun, DivisionByAnArgumentZero) {
  const char *text = R"(
kernel @div_zero(%o: buffer<i32>, %q: buffer<i32>, %d: i32) {
  %i = global_id.x : i32
  %five = const 5 : i32
  %x = add %i, %five : i32
  %a = div %x, %d : i32
  %b = rem %x, %d : i32
  store %a, %o[%i] : i32
  store %b, %q[%i] : i32
}
launch @div_zero grid(1) workgroup(8) { %o[8] = fill(-1)  %q[8] = fill(-1)  %d = 0 }
)";
  ir::LaunchData in;
  Outcome robust = run(text, TSR_BOUNDS_ROBUST, &in);
  EXPECT_EQ(robust.code, TSR_OK) << robust.message;
  std::vector<ir::HostBuffer> want = reference(in);
  EXPECT_EQ(ints(robust.outputs[0]), ints(want[0])); // x div 0 = x
  EXPECT_EQ(ints(robust.outputs[1]), ints(want[1])); // x rem 0 = 0
  EXPECT_EQ(ints(want[0])[3], 8);
  Outcome checked = run(text, TSR_BOUNDS_CHECKED);
  EXPECT_EQ(checked.code, TSR_INVALID_ARGUMENT);
  EXPECT_TRUE(std::regex_match(checked.message,
                               std::regex("kernel @div_zero: integer division by zero at 6:3, "
                                          "work-item local \\([0-7], 0, 0\\) of workgroup "
                                          "\\(0, 0, 0\\)")))
      << checked.message;
  EXPECT_EQ(ints(checked.outputs[0]), ints(want[0])); // the kernel went on, robustly
  expectHealthy();
}

TEST_F(VulkanRun, MinDividedByComputedMinusOne) {
  const char *text = R"(
kernel @div_min(%o: buffer<i32>, %q: buffer<i32>, %m: i32) {
  %i = global_id.x : i32
  %one = const 1 : i32
  %d = sub %i, %one : i32
  %a = div %m, %d : i32
  %b = rem %m, %d : i32
  store %a, %o[%i] : i32
  store %b, %q[%i] : i32
}
launch @div_min grid(1) workgroup(4) { %o[4] = fill(-1)  %q[4] = fill(-1)  %m = -2147483648 }
)";
  ir::LaunchData in;
  Outcome robust = run(text, TSR_BOUNDS_ROBUST, &in);
  EXPECT_EQ(robust.code, TSR_OK) << robust.message;
  std::vector<ir::HostBuffer> want = reference(in);
  EXPECT_EQ(ints(robust.outputs[0]), ints(want[0]));
  EXPECT_EQ(ints(robust.outputs[1]), ints(want[1]));
  EXPECT_EQ(ints(want[0])[0], INT32_MIN); // MIN div -1 = MIN
  EXPECT_EQ(ints(want[0])[1], INT32_MIN); // MIN div 0 = MIN (x div 0 = x)
  Outcome checked = run(text, TSR_BOUNDS_CHECKED);
  EXPECT_EQ(checked.code, TSR_INVALID_ARGUMENT);
  // Work-item 0 divides by -1, work-item 1 by 0: either may claim the record first.
  EXPECT_TRUE(std::regex_match(
      checked.message,
      std::regex("kernel @div_min: integer division (overflow \\(MIN / -1\\) at 6:3, work-item "
                 "local \\(0|by zero at 6:3, work-item local \\(1), 0, 0\\) of workgroup "
                 "\\(0, 0, 0\\)")))
      << checked.message;
  expectHealthy();
}

TEST_F(VulkanRun, ForStepZeroAtRunTime) {
  const char *text = R"(
kernel @step_zero(%o: buffer<i32>, %st: i32) {
  %z = const 0 : i32
  %n = const 10 : i32
  %s = for %k = %z to %n step %st iter(%a = %z) : i32 {
    %b = add %a, %k : i32
    yield %b
  }
  %i = global_id.x : i32
  store %s, %o[%i] : i32
}
launch @step_zero grid(1) workgroup(2) { %o[2] = fill(-1)  %st = 0 }
)";
  ir::LaunchData in;
  Outcome robust = run(text, TSR_BOUNDS_ROBUST, &in);
  EXPECT_EQ(robust.code, TSR_OK) << robust.message;
  std::vector<ir::HostBuffer> want = reference(in);
  EXPECT_EQ(ints(want[0]), (std::vector<int32_t>{0, 0})); // no iteration
  EXPECT_EQ(ints(robust.outputs[0]), ints(want[0]));
  Outcome checked = run(text, TSR_BOUNDS_CHECKED);
  EXPECT_EQ(checked.code, TSR_INVALID_ARGUMENT);
  EXPECT_TRUE(std::regex_match(checked.message,
                               std::regex("kernel @step_zero: `for` step that is not positive at "
                                          "5:3: step 0, work-item local \\([01], 0, 0\\) of "
                                          "workgroup \\(0, 0, 0\\)")))
      << checked.message;
  expectHealthy();
}

// A kernel that never ends must not "succeed" with lost results (main on lavapipe returned
// OK here). llvmpipe ends every loop after 65535 iterations per work-item, silently: the
// codegen's exit test after each loop turns that into UNIMPLEMENTED, in every mode. A device
// without such a limit cancels the loop at its deadline instead: DEADLINE_EXCEEDED.
TEST_F(VulkanRun, NeverEndingWhileIsNeverASuccess) {
  const char *text = R"(
kernel @forever(%o: buffer<i32>, %n: i32) {
  %z = const 0 : i32
  %two = const 2 : i32
  %r = while iter(%x = %z) {
    %c = cmp.ne %x, %n : i32
    condition %c
  } do {
    %x2 = add %x, %two : i32
    yield %x2
  }
  store %r, %o[%z] : i32
}
launch @forever grid(1) workgroup(4) { %o[1] = fill(5)  %n = -1 }
)";
  ASSERT_EQ(tsr_stream_set_timeout(stream_, 300'000'000), nullptr); // 300 ms
  for (tsr_bounds_mode mode : {TSR_BOUNDS_UNCHECKED, TSR_BOUNDS_ROBUST, TSR_BOUNDS_CHECKED}) {
    Outcome o = run(text, mode);
    EXPECT_LT(o.seconds, 5.0) << mode;
    if (o.code == TSR_DEADLINE_EXCEEDED) {
      EXPECT_EQ(o.message, "kernel @forever ran past its deadline of 300 ms and was cancelled");
    } else {
      EXPECT_EQ(o.code, TSR_UNIMPLEMENTED) << mode << ": " << o.message;
      EXPECT_TRUE(std::regex_match(
          o.message, std::regex("kernel @forever: loop ended early by the device \\(an "
                                "implementation limit on loop iterations; llvmpipe allows 65535 "
                                "per work-item\\) at 5:3, work-item local \\([0-3], 0, 0\\) of "
                                "workgroup \\(0, 0, 0\\)")))
          << o.message;
    }
    expectHealthy();
  }
}

// The same on a `while` whose condition is the constant true and whose body is pure: its only
// way out is the codegen's cancellation poll. With that poll a relaxed atomic load, mesa made
// the kernel return at once as if cancelled: status OK, the store after the loop never made,
// in ~2 ms (advir6 bug 12). Every bounds mode, and the output must never look finished.
TEST_F(VulkanRun, AnEndlessLoopOnTheConstantTrueIsReported) {
  const char *text = R"(
kernel @spin(%o: buffer<i32>) {
  %z = const 0 : i32
  %one = const 1 : i32
  %t = const true : i1
  %r = while iter(%x = %z) {
    condition %t
  } do {
    %x2 = add %x, %one : i32
    yield %x2
  }
  store %r, %o[%z] : i32
}
launch @spin grid(1) workgroup(1) { %o[1] = fill(5) }
)";
  ASSERT_EQ(tsr_stream_set_timeout(stream_, 300'000'000), nullptr); // 300 ms
  for (tsr_bounds_mode mode : {TSR_BOUNDS_UNCHECKED, TSR_BOUNDS_ROBUST, TSR_BOUNDS_CHECKED}) {
    Outcome o = run(text, mode);
    EXPECT_LT(o.seconds, 5.0) << mode;
    if (o.code == TSR_DEADLINE_EXCEEDED)
      EXPECT_EQ(o.message, "kernel @spin ran past its deadline of 300 ms and was cancelled");
    else
      EXPECT_EQ(o.message, "kernel @spin: loop ended early by the device (an implementation limit "
                           "on loop iterations; llvmpipe allows 65535 per work-item) at 6:3, "
                           "work-item local (0, 0, 0) of workgroup (0, 0, 0)")
          << mode << ": " << tsr_status_code_name(o.code);
    expectHealthy();
  }
}

// The same limit on a `for` with a long trip count: 100000 iterations are not 65535.
TEST_F(VulkanRun, LoopPastTheDeviceLimitIsReported) {
  const char *text = R"(
kernel @long_for(%o: buffer<i32>, %n: i32) {
  %z = const 0 : i32
  %one = const 1 : i32
  %s = for %k = %z to %n step %one iter(%a = %z) : i32 {
    %b = add %a, %one : i32
    yield %b
  }
  store %s, %o[%z] : i32
}
launch @long_for grid(1) workgroup(1) { %o[1] = fill(-1)  %n = 100000 }
)";
  Outcome o = run(text, TSR_BOUNDS_ROBUST);
  if (o.code == TSR_OK) { // a device without the limit: the right sum
    EXPECT_EQ(ints(o.outputs[0]), (std::vector<int32_t>{100000}));
    return;
  }
  EXPECT_EQ(o.code, TSR_UNIMPLEMENTED) << o.message;
  EXPECT_NE(o.message.find("kernel @long_for: loop ended early by the device"), std::string::npos)
      << o.message;
  expectHealthy();
}

// The same with constant bounds: the exit test after such a loop used to be folded away (the
// merge block's only way in is the loop's exit, so NIR knew the condition was false there),
// and vulkan:0 returned the sum of the first 65535 iterations as a result. The limit counts
// the iterations of all loops of a work-item: 300 x 300 nested constant loops pass it too.
TEST_F(VulkanRun, ConstantLoopsPastTheDeviceLimitAreReported) {
  const char *text = R"(
kernel @k(%o: buffer<i32>) {
  %z = const 0 : i32
  %one = const 1 : i32
  %n = const $N : i32
  %m = const $M : i32
  %s = for %j = %z to %n step %one iter(%a = %z) : i32 {
    %t = for %k = %z to %m step %one iter(%b = %a) : i32 {
      %b2 = add %b, %k : i32
      yield %b2
    }
    yield %t
  }
  store %s, %o[%z] : i32
}
launch @k grid(1) workgroup(1) { %o[1] = fill(-1) }
)";
  struct Case {
    int n, m;
  } cases[] = {{1, 70000}, {300, 300}};
  for (const Case &c : cases) {
    std::string t = text;
    t.replace(t.find("$N"), 2, std::to_string(c.n));
    t.replace(t.find("$M"), 2, std::to_string(c.m));
    SCOPED_TRACE(std::to_string(c.n) + " x " + std::to_string(c.m));
    Outcome o = run(t.c_str(), TSR_BOUNDS_ROBUST);
    if (o.code == TSR_OK) { // a device without the limit: the right sum
      int64_t want = int64_t(c.n) * (int64_t(c.m) * (c.m - 1) / 2);
      EXPECT_EQ(ints(o.outputs[0]), (std::vector<int32_t>{int32_t(uint32_t(want))}));
      continue;
    }
    EXPECT_EQ(o.code, TSR_UNIMPLEMENTED) << o.message;
    EXPECT_NE(o.message.find("kernel @k: loop ended early by the device"), std::string::npos)
        << o.message;
    expectHealthy();
  }
}

// Ifs with results nested D deep, every condition true (a loaded value): the kernel stores D.
std::string nestedIfs(int depth) {
  std::string t = "kernel @k(%x: buffer<i32, readonly>, %o: buffer<i32>) {\n"
                  "  %g = global_id.x : i32\n  %v = load %x[%g] : i32\n"
                  "  %one = const 1 : i32\n  %z = const 0 : i32\n";
  for (int i = 0; i < depth; ++i)
    t += "  %k" + std::to_string(i) + " = const " + std::to_string(i) + " : i32\n  %t" +
         std::to_string(i) + " = cmp.sgt %v, %k" + std::to_string(i) + " : i32\n";
  std::string inner = "%one";
  for (int i = depth - 1; i >= 0; --i) {
    std::string n = std::to_string(i);
    inner = "%r" + n + " = if %t" + n + " -> (i32) {\n" + (i == depth - 1 ? "" : inner + "\n") +
            "  %y" + n + " = add " +
            (i == depth - 1 ? std::string("%z") : "%r" + std::to_string(i + 1)) +
            ", %one : i32\n  yield %y" + n + "\n} else {\n  yield %z\n}";
  }
  return t + inner + "\nstore %r0, %o[%g] : i32\n}\n" +
         "launch @k grid(1) workgroup(8) { %x[8] = fill(1000)\n %o[8] = fill(0) }\n";
}

// lavapipe (llvmpipe) ignores conditions nested past 80 (gallivm's LP_MAX_TGSI_NESTING): 84
// nested ifs with results returned 158 instead of 1084, no error (adversarial round 5). The
// Vulkan codegen refuses a kernel nested past the device's maxControlFlowNesting capability;
// one inside it runs and is right.
TEST_F(VulkanRun, ControlFlowNestedPastTheDeviceLimitIsRefusedNotRunWrong) {
  tsr_device_info_t info{};
  info.struct_size = sizeof info;
  ASSERT_EQ(tsr_device_info(device_, &info), nullptr);
  bool llvmpipe = std::string(info.architecture).find("llvmpipe") != std::string::npos;
  Outcome ok = run(nestedIfs(60), TSR_BOUNDS_ROBUST);
  ASSERT_EQ(ok.code, TSR_OK) << ok.message;
  EXPECT_EQ(ints(ok.outputs[1]), std::vector<int32_t>(8, 60));
  ir::ParseResult pr = ir::parseModule(nestedIfs(84), "deep.tir");
  ASSERT_TRUE(pr.ok()) << pr.diags[0].str();
  std::string err;
  auto program = Program::create(device_, *pr.module, nullptr, ProgramOptions{}, &err);
  if (!llvmpipe && program)
    return; // a device without the limit: the kernel runs (checked on lavapipe only)
  ASSERT_EQ(program, nullptr) << "84 nested ifs compiled for llvmpipe";
  EXPECT_NE(err.find("function k nests 84 ifs or loops"), std::string::npos) << err;
  EXPECT_NE(err.find("caps.maxControlFlowNesting = 80"), std::string::npos) << err;
}

// Constant loops inside the limit are never reported, whatever their type, bounds and step
// (the exit test compares sign-flipped values unsigned: exact at every width).
TEST_F(VulkanRun, ConstantLoopsInsideTheLimitAreNotReported) {
  const char *text = R"(
kernel @k(%o: buffer<i64>) {
  %z = const 0 : i32
  %lb8 = const -128 : i8
  %ub8 = const 127 : i8
  %s8 = const 3 : i8
  %a8 = for %i8 = %lb8 to %ub8 step %s8 iter(%x8 = %lb8) : i8 {
    %y8 = xor %x8, %i8 : i8
    yield %y8
  }
  %lb16 = const -30000 : i16
  %ub16 = const 32767 : i16
  %s16 = const 1000 : i16
  %a16 = for %i16 = %lb16 to %ub16 step %s16 iter(%x16 = %lb16) : i16 {
    %y16 = add %x16, %i16 : i16
    yield %y16
  }
  %lb32 = const -2147483648 : i32
  %ub32 = const 2147483647 : i32
  %s32 = const 131072 : i32
  %a32 = for %i32 = %lb32 to %ub32 step %s32 iter(%x32 = %z) : i32 {
    %y32 = add %x32, %i32 : i32
    yield %y32
  }
  %lb64 = const -9223372036854775807 : i64
  %ub64 = const 9223372036854775807 : i64
  %s64 = const 1000000000000000000 : i64
  %z64 = const 0 : i64
  %a64 = for %i64 = %lb64 to %ub64 step %s64 iter(%x64 = %z64) : i64 {
    %y64 = add %x64, %i64 : i64
    yield %y64
  }
  %e8 = convert %a8 : i8 -> i64
  %e16 = convert %a16 : i16 -> i64
  %e32 = convert %a32 : i32 -> i64
  %one = const 1 : i32
  %two = const 2 : i32
  %three = const 3 : i32
  store %e8, %o[%z] : i64
  store %e16, %o[%one] : i64
  store %e32, %o[%two] : i64
  store %a64, %o[%three] : i64
}
launch @k grid(1) workgroup(1) { %o[4] = fill(7) }
)";
  Outcome o = run(text, TSR_BOUNDS_CHECKED);
  ASSERT_EQ(o.code, TSR_OK) << o.message;
  // The same sums on the host, with the IR's wrapping arithmetic and its no-wrap loop rule.
  int8_t a8 = -128;
  for (int i = -128; i < 127; i += 3)
    a8 = int8_t(a8 ^ i);
  int16_t a16 = -30000;
  for (int i = -30000; i < 32767; i += 1000)
    a16 = int16_t(uint16_t(a16) + uint16_t(i));
  uint32_t a32 = 0;
  for (int64_t i = INT32_MIN; i < INT32_MAX; i += 131072)
    a32 += uint32_t(int32_t(i));
  uint64_t a64 = 0;
  for (__int128 i = -INT64_MAX; i < INT64_MAX; i += 1000000000000000000)
    a64 += uint64_t(int64_t(i));
  ASSERT_EQ(o.outputs[0].bytes.size(), 32u);
  int64_t got[4];
  std::memcpy(got, o.outputs[0].bytes.data(), 32);
  EXPECT_EQ(got[0], a8);
  EXPECT_EQ(got[1], a16);
  EXPECT_EQ(got[2], int32_t(a32));
  EXPECT_EQ(got[3], int64_t(a64));
  expectHealthy();
}

// 0.0 / x and x / 0.0 with a constant +0.0: llvmpipe's NIR folded the first to +0 (for a NaN,
// zero or negative x) and made the second undefined, so its store vanished (the output kept
// its fill). The codegen spells both out (spirv_scalar.cpp, divisionWithZero); the results
// must be IEEE's, the sign of a zero or infinity included, for every `special` input.
TEST_F(VulkanRun, DivisionByAndOfAConstantZeroIsIeee) {
  const char *text = R"(
kernel @k(%x: buffer<f32, readonly>, %top: buffer<f32>, %bottom: buffer<f32>) {
  %i = global_id.x : i32
  %f = load %x[%i] : f32
  %z = const 0.0 : f32
  %a = div %z, %f : f32
  %b = div %f, %z : f32
  store %a, %top[%i] : f32
  store %b, %bottom[%i] : f32
}
launch @k grid(1) workgroup(32) { %x[32] = special  %top[32] = fill(7)  %bottom[32] = fill(7) }
)";
  ir::LaunchData in;
  Outcome o = run(text, TSR_BOUNDS_ROBUST, &in);
  ASSERT_EQ(o.code, TSR_OK) << o.message;
  ASSERT_EQ(o.outputs.size(), 3u);
  volatile float zero = 0.0f; // a run-time division on the host
  for (int i = 0; i < 32; ++i) {
    float x, top, bottom;
    std::memcpy(&x, in.buffers[0].bytes.data() + 4 * i, 4);
    std::memcpy(&top, o.outputs[1].bytes.data() + 4 * i, 4);
    std::memcpy(&bottom, o.outputs[2].bytes.data() + 4 * i, 4);
    float wantTop = zero / x, wantBottom = x / zero;
    SCOPED_TRACE("x = " + std::to_string(x));
    if (std::isnan(wantTop))
      EXPECT_TRUE(std::isnan(top)) << top; // no op promises a NaN's bits (docs/ir.md)
    else
      EXPECT_EQ(std::bit_cast<uint32_t>(top), std::bit_cast<uint32_t>(wantTop)) << top;
    if (std::isnan(wantBottom))
      EXPECT_TRUE(std::isnan(bottom)) << bottom;
    else
      EXPECT_EQ(std::bit_cast<uint32_t>(bottom), std::bit_cast<uint32_t>(wantBottom)) << bottom;
  }
}

// docs/ir.md: a launch past its deadline ends with DEADLINE_EXCEEDED in every mode: every
// dynamic loop tests the cancel flag that the driver sets when the deadline passes. About
// 16 s of work on lavapipe, cancelled after 300 ms.
TEST_F(VulkanRun, LongLaunchMeetsItsDeadline) {
  const char *text = R"(
kernel @long_run(%o: buffer<i32>, %n: i32) {
  %z = const 0 : i32
  %one = const 1 : i32
  %i = global_id.x : i32
  %s = for %k = %z to %n step %one iter(%a = %i) : i32 {
    %b = mul %a, %a : i32
    %c = add %b, %k : i32
    yield %c
  }
  store %s, %o[%i] : i32
}
launch @long_run grid(4096) workgroup(64) { %o[262144] = fill(0)  %n = 60000 }
)";
  ASSERT_EQ(tsr_stream_set_timeout(stream_, 300'000'000), nullptr); // 300 ms
  for (tsr_bounds_mode mode : {TSR_BOUNDS_UNCHECKED, TSR_BOUNDS_ROBUST, TSR_BOUNDS_CHECKED}) {
    Outcome o = run(text, mode);
    EXPECT_EQ(o.code, TSR_DEADLINE_EXCEEDED) << mode << ": " << o.message;
    EXPECT_EQ(o.message, "kernel @long_run ran past its deadline of 300 ms and was cancelled");
    EXPECT_LT(o.seconds, 3.0) << mode;
    expectHealthy();
  }
}

// A kernel without dynamic loops has no cancellation point (nor a control buffer), so past its
// deadline it runs to its end; the status must still name it.
TEST_F(VulkanRun, LoopFreeKernelPastItsDeadlineIsNamed) {
  const char *text = R"(
kernel @huge(%a: buffer<i32>) {
  %z = const 0 : i32
  %one = const 1 : i32
  %o = atomic_add %a[%z], %one : i32
}
launch @huge grid(65535) workgroup(1024) { %a[1] = fill(0) }
)";
  ASSERT_EQ(tsr_stream_set_timeout(stream_, 5'000'000), nullptr); // 5 ms
  Outcome o = run(text, TSR_BOUNDS_ROBUST);
  if (o.code == TSR_OK) // a device fast enough to finish within 5 ms
    return;
  EXPECT_EQ(o.code, TSR_DEADLINE_EXCEEDED) << o.message;
  // It ends within the driver's grace period here, or later ("... and did not stop when
  // cancelled (...)"): either way the kernel is named (it was "a kernel").
  EXPECT_EQ(o.message.rfind("vulkan: @huge ran past its deadline of 5.000 ms", 0), 0u) << o.message;
  expectHealthy();
}

// Issue #11: subgroups of 2-D / 3-D workgroups are consecutive linear local ids on vulkan:0
// as on every other device (lavapipe used to cut x-rows into pieces), for every subgroup
// op, compared with the interpreter at the device's subgroup size.
TEST_F(VulkanRun, SubgroupLayoutFollowsLinearLocalIds) {
  std::ifstream in(std::string(TESSERA_SOURCE_DIR) + "/conformance/kernels/subgroup_layout.tir");
  std::stringstream text;
  text << in.rdbuf();
  ASSERT_FALSE(text.str().empty());
  for (const char *kernel : {"sg", "sg_ops_3d"}) {
    ir::LaunchData inputs;
    Outcome o = run(text.str(), TSR_BOUNDS_ROBUST, &inputs, kernel);
    ASSERT_EQ(o.code, TSR_OK) << o.message;
    std::vector<ir::HostBuffer> want = reference(inputs);
    EXPECT_EQ(ints(o.outputs[0]), ints(want[0])) << kernel;
    if (std::string(kernel) == "sg" && program_->kernel(kernel)->subgroupSize == 8)
      EXPECT_EQ(ints(o.outputs[0])[0], 28); // the issue's "got 6, want 28"
  }
}

// Barriers in control flow that differs between the work-items of a workgroup (docs/ir.md,
// "Barriers"): every if / for / while the uniformity analysis cannot prove uniform votes on
// its decision; a disagreement is TSR_FAULT_DIVERGENT_BARRIER naming the op and the split,
// and every work-item goes the false way (vulkan:0 returned whatever lavapipe did: a `for`
// to local_id left some stores undone).
TEST_F(VulkanRun, DivergentBarriersAreReportedNotRun) {
  using testing::divergentBarrierKernel;
  for (const testing::DivergentBarrierCase &c : testing::kDivergentBarrierCases)
    for (tsr_bounds_mode mode : {TSR_BOUNDS_ROBUST, TSR_BOUNDS_CHECKED}) {
      SCOPED_TRACE(std::string(c.name) + (mode == TSR_BOUNDS_CHECKED ? " checked" : ""));
      Outcome o = run(divergentBarrierKernel(c.body, 8), mode, nullptr, "d");
      EXPECT_EQ(o.code, TSR_INVALID_ARGUMENT) << o.message;
      EXPECT_NE(o.message.find("divergent control flow around a barrier " + std::string(c.where)),
                std::string::npos)
          << o.message;
      EXPECT_NE(o.message.find("(" + std::to_string(c.yes) + " of the 8 work-items"),
                std::string::npos)
          << o.message;
      expectHealthy();
    }
  // A workgroup where every work-item decides alike runs to its end.
  Outcome one = run(divergentBarrierKernel(testing::kDivergentBarrierCases[0].body, 1),
                    TSR_BOUNDS_CHECKED, nullptr, "d");
  ASSERT_EQ(one.code, TSR_OK) << one.message;
  EXPECT_EQ(ints(one.outputs[0]), std::vector<int32_t>{0});
  // local_id.y is 0 in every work-item of a (8, 1, 1) workgroup: the vote agrees.
  Outcome agree = run(divergentBarrierKernel("  %lo = cmp.slt %y, %c1 : i32\n  if %lo {\n"
                                             "    barrier\n  }\n",
                                             8),
                      TSR_BOUNDS_CHECKED, nullptr, "d");
  ASSERT_EQ(agree.code, TSR_OK) << agree.message;
  EXPECT_EQ(ints(agree.outputs[0]), (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
}

// A loop around barriers whose bound is loaded from memory votes each iteration (and each
// chunk); it is uniform in fact and must run as the interpreter says (each work-item sums
// its neighbour's values over 1500 iterations: two chunks of the cancellable loop), with a
// voted `if` on a loaded flag inside.
TEST_F(VulkanRun, LoopsAroundBarriersWithALoadedBoundRun) {
  std::string text = "kernel @fl(%n: buffer<i32, readonly>, %a: buffer<i32>) {\n"
                     "  %s = shared_alloc : shared<i32, 64>\n"
                     "  %l = local_id.x : i32\n  %g = global_id.x : i32\n"
                     "  %c0 = const 0 : i32\n  %c1 = const 1 : i32\n"
                     "  %ub = load %n[%c0] : i32\n  %f = load %n[%c1] : i32\n"
                     "  %on = cmp.ne %f, %c0 : i32\n"
                     "  %r = for %i = %c0 to %ub step %c1 iter(%acc = %c0) : i32 {\n"
                     "    %w = add %i, %l : i32\n    store %w, %s[%l] : i32\n    barrier\n"
                     "    %o = xor %l, %c1 : i32\n    %v = load %s[%o] : i32\n    barrier\n"
                     "    %t = if %on -> (i32) {\n      barrier\n"
                     "      %t2 = add %acc, %v : i32\n      yield %t2\n"
                     "    } else {\n      yield %acc\n    }\n"
                     "    yield %t\n  }\n"
                     "  store %r, %a[%g] : i32\n}\n"
                     "launch @fl grid(3) workgroup(64) {\n  %n[2] = fill(1500)\n"
                     "  %a[192] = fill(0)\n}\n";
  ir::LaunchData inputs;
  Outcome o = run(text, TSR_BOUNDS_CHECKED, &inputs);
  ASSERT_EQ(o.code, TSR_OK) << o.message;
  std::vector<ir::HostBuffer> want = reference(inputs);
  EXPECT_EQ(ints(o.outputs[1]), ints(want[1]));
  EXPECT_EQ(ints(o.outputs[1])[0], 1500 * 1499 / 2 + 1500); // neighbour 1: i + 1
}

} // namespace
} // namespace tessera
