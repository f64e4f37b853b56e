// What a compile-cache payload says about a module, checked against the module being
// loaded: the CPU payload (kernel table + object bytes) and the GPU artefact's kernel table.
// A payload that fails any check is a miss the caller recompiles; nothing in it is trusted
// before these checks (sizes are checked against the bytes present before any allocation).
//
// Internal to runtime/src (Program). Never throws.
#pragma once

#include "backends/cpu/codegen/cpu_codegen.h"
#include "ir/core/ir.h"
#include "tessera/artefact.h"
#include "tessera/hal.h"

#include <memory>
#include <string>

namespace tessera::detail {

/// The CPU payload: "TSRPROG1", one line per kernel, then the object bytes.
std::string encodeCpuPayload(const cpu::CpuCompiledModule &cm);

/// The module a CPU payload holds, if it is well formed and its kernel table is the one `m`
/// compiles to with `subgroupSize` on a device with `info`'s limits; else null, `*why` says
/// what was wrong.
std::unique_ptr<cpu::CpuCompiledModule> decodeCpuPayload(const std::string &payload,
                                                         const ir::Module &m, uint32_t subgroupSize,
                                                         const tsr_device_info_t &info,
                                                         std::string *why);

/// Whether a decoded GPU artefact's kernel table matches `m` and `info`'s limits.
bool checkArtefact(const GpuArtefact &a, const ir::Module &m, const tsr_device_info_t &info,
                   std::string *why);

} // namespace tessera::detail
