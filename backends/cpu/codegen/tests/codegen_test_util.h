// Shared helpers of the CPU codegen tests: run a JIT-compiled kernel over its whole grid
// (single-threaded, one call per workgroup) and the reference interpreter on the same data.
#pragma once

#include "backends/cpu/codegen/cpu_codegen.h"
#include "ir/interp/interpreter.h"
#include "ir/interp/launch.h"
#include "ir/interp/numerics.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace tessera::cpu::testing {

/// The names (stems) of every ir/examples/*.tir, sorted: the parameters of the suites that run
/// each example (codegen_examples_test, codegen_tier_test).
inline std::vector<std::string> allExamples() {
  std::vector<std::string> names;
  for (auto &e :
       std::filesystem::directory_iterator(std::string(TESSERA_SOURCE_DIR) + "/ir/examples"))
    if (e.path().extension() == ".tir")
      names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

/// Calls `fn` once per workgroup of `dims` with `args` (the interpreter's argument list), as
/// the driver does: buffer sizes in arg_bytes, a fault record, a cancel flag (never raised).
/// Returns the fault record (checked mode) after the last workgroup. `cancelled`: the flag is
/// raised from the start (as if the deadline had passed).
inline tsr_kernel_fault runGrid(TsrCpuWgFn fn, const CpuKernelInfo &k, const ir::LaunchDims &dims,
                                std::vector<ir::KernelArg> &args, bool cancelled = false) {
  std::vector<uint64_t> argBytes(args.size(), 0);
  tsr_kernel_fault fault = {};
  uint32_t cancel = cancelled ? 1 : 0;
  std::vector<void *> bufPtrs(args.size(), nullptr);
  std::vector<std::array<uint8_t, 8>> scalars(args.size());
  std::vector<void *> argv(args.size(), nullptr);
  for (size_t i = 0; i < args.size(); ++i) {
    if (k.params[i].kind == ir::Type::Kind::Buffer) {
      bufPtrs[i] = args[i].buffer->bytes.data();
      argBytes[i] = args[i].buffer->bytes.size();
      argv[i] = &bufPtrs[i];
      continue;
    }
    scalars[i].fill(0);
    ir::numerics::storeElement(scalars[i].data(), 0, k.params[i].elem, args[i].scalar);
    argv[i] = scalars[i].data();
  }
  size_t sharedBytes = (k.sharedBytes + 63) / 64 * 64 + 64;
  void *shared = std::aligned_alloc(64, sharedBytes);
  std::memset(shared, 0xA5, sharedBytes); // not zeroed on a GPU either
  TsrCpuWgCtx ctx{};
  for (int d = 0; d < 3; ++d) {
    ctx.num_groups[d] = dims.grid[d];
    ctx.group_size[d] = dims.workgroup[d];
  }
  ctx.shared_memory = shared;
  ctx.arg_bytes = argBytes.data();
  ctx.fault = &fault;
  ctx.cancel = &cancel;
  for (uint32_t z = 0; z < dims.grid[2]; ++z)
    for (uint32_t y = 0; y < dims.grid[1]; ++y)
      for (uint32_t x = 0; x < dims.grid[0]; ++x) {
        ctx.group_id[0] = x, ctx.group_id[1] = y, ctx.group_id[2] = z;
        fn(&ctx, argv.data());
      }
  std::free(shared);
  return fault;
}

/// Compiles and JIT-loads `m`; fails the test (returns null) on any error.
inline std::unique_ptr<CpuCompiledModule>
compileAndLoad(const ir::Module &m, const CpuCompileOptions &opts, std::string &error) {
  auto cm = compileKernelModule(m, opts, &error);
  if (!cm)
    return nullptr;
  if (!cm->load(&error))
    return nullptr;
  return cm;
}

} // namespace tessera::cpu::testing
