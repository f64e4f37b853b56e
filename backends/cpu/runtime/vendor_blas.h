// The vendor BLAS behind the CPU driver's extern GEMM (extern_kernels.cpp, docs/hal.md
// "Extern kernels"): Intel MKL's cblas_sgemm through its single dynamic library libmkl_rt,
// dlopen'ed, with OpenBLAS (openblas.h) the fallback when MKL cannot be loaded.
//
// Why MKL first: at the torch models' shapes torch's own MKL is 1.2-2x faster than OpenBLAS
// (docs/performance.md), and Inductor's extern mm/addmm/bmm run through it.
// Why sequential MKL: the driver already has a pool of threads (thread_pool.h) that runs the
// launch's workgroups; MKL's OpenMP threads would spin against it. The GEMM is instead split
// into row or column blocks, one per workgroup, each a sequential MKL call (docs/hal.md).
// Where MKL is found: $TESSERA_MKL_LIBRARY (a path or soname), else the dynamic loader's path
// (libmkl_rt.so.3, then .so.2), else each folder of $TESSERA_MKL_DIRS (':'-separated; the
// Python package sets it to its prefix's lib/, where `pip install mkl` puts the library).
#pragma once

#include "backends/cpu/runtime/openblas.h"

#include <cstdlib>
#include <dlfcn.h>
#include <string>
#include <strings.h>
#include <vector>

namespace tessera::cpu {

struct Mkl {
  using Sgemm = OpenBlas::Sgemm;
  Sgemm sgemm = nullptr;  // cblas_sgemm; null when MKL is missing
  bool sequential = true; // false: the caller chose MKL's threading (MKL_THREADING_LAYER)
  std::string path;       // what was opened
  std::string error;      // why sgemm is null (each place tried, with dlerror's text)

  Mkl() {
    std::vector<std::string> tries;
    if (const char *e = std::getenv("TESSERA_MKL_LIBRARY"); e && *e) {
      tries.push_back(e); // named explicitly: nothing else is tried
    } else {
      tries = {"libmkl_rt.so.3", "libmkl_rt.so.2"};
      if (const char *dirs = std::getenv("TESSERA_MKL_DIRS")) {
        std::string d = dirs;
        for (size_t pos = 0; pos <= d.size();) {
          size_t end = d.find(':', pos);
          if (end == std::string::npos)
            end = d.size();
          if (end > pos)
            for (const char *so : {"/libmkl_rt.so.3", "/libmkl_rt.so.2"})
              tries.push_back(d.substr(pos, end - pos) + so);
          pos = end + 1;
        }
      }
    }
    for (const std::string &t : tries) {
      void *h = dlopen(t.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!h) {
        const char *e = dlerror();
        error += (error.empty() ? "" : "; ") + (e ? std::string(e) : "dlopen(" + t + ") failed");
        continue;
      }
      auto fn = reinterpret_cast<Sgemm>(dlsym(h, "cblas_sgemm"));
      auto layer = reinterpret_cast<int (*)(int)>(dlsym(h, "MKL_Set_Threading_Layer"));
      if (!fn || !layer) {
        error += (error.empty() ? "" : "; ") + t + " lacks cblas_sgemm or MKL_Set_Threading_Layer";
        continue;
      }
      // Before MKL's first call, which fixes the layer. A caller who set
      // MKL_THREADING_LAYER keeps MKL's own threads (then a launch is one call).
      const char *userLayer = std::getenv("MKL_THREADING_LAYER");
      sequential = !userLayer || !*userLayer || strcasecmp(userLayer, "SEQUENTIAL") == 0;
      if (!userLayer || !*userLayer)
        layer(1 /*MKL_THREADING_SEQUENTIAL*/);
      sgemm = fn;
      path = t;
      error.clear();
      return;
    }
  }
  explicit operator bool() const { return sgemm != nullptr; }
};

} // namespace tessera::cpu
