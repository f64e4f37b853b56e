// OpenBLAS as a benchmark peer: the loader the CPU driver's extern kernels use
// (backends/cpu/runtime/openblas.h says why it is dlopen'ed and why OPENBLAS_CORETYPE is set).
#pragma once

#include "backends/cpu/runtime/openblas.h"

namespace tessera::bench {
using OpenBlas = tessera::cpu::OpenBlas;
} // namespace tessera::bench
