// Test support for runtime tests that need a real device: a registry with the built-in
// drivers and one open device (or a skip when it is absent here), and "run this kernel by
// its launch spec and compare every output with the fp64 interpreter" -- the independent
// reference that proves a device still computes correctly after a refused request.
#pragma once

#include "backends/builtin_drivers.h"
#include "ir/interp/interpreter.h"
#include "ir/text/parser.h"
#include "tessera/device_run.h"
#include "tessera/output_check.h"
#include "tessera/program.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>

namespace tessera::testing {

class DeviceSession {
public:
  DeviceSession() = default;
  DeviceSession(const DeviceSession &) = delete;
  DeviceSession &operator=(const DeviceSession &) = delete;
  ~DeviceSession() {
    if (device)
      tsr_device_release(device);
    if (registry)
      tsr_registry_release(registry);
  }

  /// False when `name` is not a device here (the caller skips); fails the test on errors.
  bool open(const std::string &name) {
    EXPECT_EQ(tsr_registry_create(&registry), nullptr);
    if (tsr_status_t st = tsr_registry_register_builtin_drivers(registry))
      tsr_status_free(st); // unavailable backends are recorded, not errors
    if (tsr_status_t st = tsr_registry_open_device(registry, name.c_str(), &device)) {
      tsr_status_free(st);
      return false;
    }
    std::memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    EXPECT_EQ(tsr_device_info(device, &info), nullptr);
    return true;
  }

  tsr_registry_t registry = nullptr;
  tsr_device_t device = nullptr;
  tsr_device_info_t info = {};
};

/// A kernel the tests run: y[i] = a * x[i] + y[i] over 1000 elements.
inline constexpr const char *kSaxpy = R"(
kernel @saxpy(%x: buffer<f32, readonly>, %y: buffer<f32>, %a: f32, %n: i32) {
  %i = global_id.x : i32
  %in = cmp.slt %i, %n : i32
  if %in {
    %xv = load %x[%i] : f32
    %yv = load %y[%i] : f32
    %r = fma %a, %xv, %yv : f32
    store %r, %y[%i] : f32
  }
}

launch @saxpy grid(4) workgroup(256) seed(7) {
  %x[1000] = uniform(-1.0, 1.0)
  %y[1000] = uniform(-1.0, 1.0)
  %a = 2.5
  %n = 1000
}
)";

/// Compiles `source` for `device` (through `cache` when non-null), runs kernel `name` by its
/// launch spec and checks every output against the interpreter. Returns the program's stats
/// source through `source` when given.
inline void expectCorrectRun(tsr_device_t device, const std::string &source,
                             const std::string &name, CompileCache *cache = nullptr,
                             ProgramStats::Source *sourceOut = nullptr) {
  ir::ParseResult r = ir::parseModule(source, "test.tir");
  ASSERT_TRUE(r.ok()) << (r.diags.empty() ? "" : r.diags[0].str());
  std::string err;
  auto program = Program::create(device, *r.module, cache, {}, &err);
  ASSERT_TRUE(program) << err;
  if (sourceOut)
    *sourceOut = program->stats().source;
  const ir::Function *f = r.module->lookup(name);
  ASSERT_NE(f, nullptr);
  ir::LaunchData data;
  ASSERT_TRUE(ir::makeLaunchData(*f, data, err)) << err;
  ir::LaunchData reference = data; // the inputs, before the device writes anything
  std::vector<ir::HostBuffer> outputs;
  double ms = 0;
  ASSERT_TRUE(runOnDevice(device, *program->kernel(name), data, outputs, &ms, &err)) << err;
  tsr_device_info_t info{};
  info.struct_size = sizeof info;
  ASSERT_EQ(tsr_device_info(device, &info), nullptr);
  KernelCheck k = checkKernel(*r.module, *f, reference, outputs,
                              program->kernel(name)->subgroupSize, declaredProfile(info.backend));
  ASSERT_TRUE(k.ok) << k.error;
  for (const OutputCheck &c : k.outputs)
    EXPECT_TRUE(c.passed) << c.detail;
}

/// "cpu" for "cpu:0": test names of suites parametrised over device names.
inline std::string backendOf(const ::testing::TestParamInfo<std::string> &info) {
  return info.param.substr(0, info.param.find(':'));
}

} // namespace tessera::testing
