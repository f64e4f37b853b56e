// The memory of the host machine as the CPU device reports and enforces it: physical RAM,
// capped by the cgroup memory limit of this container (v2 memory.max or v1
// memory.limit_in_bytes at /sys/fs/cgroup) and by $TESSERA_MEMORY_LIMIT_BYTES.
//
// Also what `tessera run` checks host-side launch data against. Must never allocate.
#pragma once

#include <cstdint>

namespace tessera::cpu {

/// Bytes; 0 when the machine cannot say (then nothing fits).
uint64_t hostMemoryBytes();

} // namespace tessera::cpu
