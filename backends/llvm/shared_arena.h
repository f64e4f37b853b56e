// The per-workgroup shared-memory arena of the work-item-loop (CPU) lowering: each
// shared_alloc of a kernel's top-level block is a 64-byte aligned slice, in program order.
// One definition for the lowering (backends/llvm/workitem_loops.cpp lays the slices out) and
// for the CPU target's check of a cached kernel table (cpu_target.cpp): the driver gives a
// launch exactly the arena the table says, so a table that says less must never be loaded.
//
// Must stay free of LLVM headers (included by the target, which the runtime links).
#pragma once

#include "ir/core/ir.h"

#include <cstdint>

namespace tessera::llvmgen {

/// Bytes of the arena slice one shared_alloc of type `t` takes.
inline uint64_t sharedSliceBytes(const ir::Type &t) {
  return (static_cast<uint64_t>(t.count) * ir::byteSize(t.elem) + 63) / 64 * 64;
}

/// Bytes of kernel `k`'s arena: the sum of its shared_alloc slices.
inline uint64_t sharedArenaBytes(const ir::Function &k) {
  uint64_t bytes = 0;
  for (const auto &op : k.body->ops)
    if (op->kind == ir::OpKind::SharedAlloc)
      bytes += sharedSliceBytes(op->results[0]->type);
  return bytes;
}

} // namespace tessera::llvmgen
