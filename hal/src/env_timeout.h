// Timeouts read from the environment (TESSERA_KERNEL_TIMEOUT_MS, TESSERA_COMM_TIMEOUT_MS),
// parsed one way everywhere: the HAL's streams and communicators and the MPI transport's
// creation handshake (runtime/src/comm_mpi.cpp), which has no communicator yet to ask.
#pragma once

#include <cstdint>

namespace tessera::hal {

/// A timeout from the environment variable `var` (whole milliseconds, 0 = none), else
/// `defaultMs`; returned in nanoseconds. A malformed value is ignored with a warning on stderr
/// rather than failing the stream or communicator that asked.
uint64_t timeoutNsFromEnv(const char *var, uint64_t defaultMs);

} // namespace tessera::hal
