// Whether a kernel's launch spec fits in memory, decided from the spec alone, before any of
// its data is built: `tessera run` would otherwise fill gigabytes of host buffers (and be
// killed by the OOM killer) for a launch the device refuses anyway.
#pragma once

#include "ir/core/ir.h"
#include "tessera/hal.h"

#include <cstdint>
#include <string>

namespace tessera {

/// The bytes of every buffer the launch spec of `kernel` declares (count x element size),
/// summed; false with `error` set when the kernel has no launch spec.
bool launchBufferBytes(const ir::Function &kernel, uint64_t *bytes, std::string *error);

/// False, with a message naming the bytes needed and available, when the launch spec's
/// buffers exceed the device's total_memory, or `hostCopies` copies of them exceed the
/// host's memory (physical RAM, cgroup limit, $TESSERA_MEMORY_LIMIT_BYTES).
bool checkLaunchFits(tsr_device_t device, const ir::Function &kernel, unsigned hostCopies,
                     std::string *error);

/// The same for a launch that only the host runs (`tessera interp`): false, with the message,
/// when `hostCopies` copies of the spec's buffers exceed the host's memory.
bool checkHostLaunchFits(const ir::Function &kernel, unsigned hostCopies, std::string *error);

} // namespace tessera
