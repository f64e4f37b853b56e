// A compiled module (backends/target.h: Artefact) as one self-describing byte string: the
// `.tsrx` container that `tessera compile -o FILE.tsrx` writes and the compile cache stores,
// for every target (the CPU's relocatable object included). It carries the executable format,
// every kernel's metadata (name, parameter types, Vulkan push-constant offsets, shared memory,
// subgroup size) and the images (backends/gpu_module.h says what each format's are).
//
// Layout (text header lines, then raw bytes):
//   TSRX1 <format>\n
//   kernel <name> <shared bytes> <push bytes> <subgroup size> <n> <type>[:<offset>] ...\n
//       (per kernel; the offsets are written when the kernel has them: Vulkan)
//   control <binding>\n      (Vulkan, after its kernel's line, if it has a control buffer)
//   bytes <N>\n<N raw bytes>     the image
//   bytes <N>\n<N raw bytes>     the fallback (empty except for cuda: NUL-terminated PTX)
// Containers written before the CPU used it have `:<offset>` on every parameter; they decode
// the same (offsets the driver ignores).
#pragma once

#include "backends/target.h"
#include "ir/core/ir.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tessera {

std::string encodeArtefact(const Artefact &a);
/// Null when `bytes` is not a well-formed container (never throws, never trusts sizes).
std::optional<Artefact> decodeArtefact(const std::string &bytes);

/// A kernel parameter type as text ("kind.elem.access.count") and back.
std::string encodeType(const ir::Type &t);
bool decodeType(const std::string &s, ir::Type &t);

} // namespace tessera
