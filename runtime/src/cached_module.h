// What a compile-cache payload (a .tsrx artefact container, tessera/artefact.h) says about a
// module, checked against the module being loaded and the target it is for. A payload that
// fails any check is a miss the caller recompiles; nothing in it is trusted before these
// checks (the decoder checks sizes against the bytes present before any allocation).
//
// Internal to runtime/src (Program). Never throws.
#pragma once

#include "backends/target.h"
#include "ir/core/ir.h"
#include "tessera/hal.h"

#include <string>

namespace tessera::detail {

/// Whether a decoded artefact is in `target`'s format and its kernel table is the one `m`
/// compiles to with `opts` on a device with `info`'s limits; else false, `*why` says what
/// was wrong.
bool checkArtefact(const Artefact &a, const Target &target, const ir::Module &m,
                   const TargetOptions &opts, const tsr_device_info_t &info, std::string *why);

} // namespace tessera::detail
