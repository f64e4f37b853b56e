// hostMemoryBytes: physical RAM, capped by the cgroup limit, the address-space limit (ulimit -v)
// and the environment override.
#include "backends/cpu/runtime/host_memory.h"

#include "backends/memory_budget.h"

#include <algorithm>
#include <fstream>
#include <string>
#include <sys/resource.h>
#include <unistd.h>

namespace tessera::cpu {
namespace {

// The limit in a cgroup file ("max", or a byte count; v1 reports a huge number when unset),
// or UINT64_MAX when the file is absent or says there is none.
uint64_t cgroupLimit(const char *path) {
  std::ifstream f(path);
  std::string text;
  if (!(f >> text) || text == "max" || text.empty() ||
      text.find_first_not_of("0123456789") != std::string::npos || text.size() > 19)
    return UINT64_MAX;
  return std::stoull(text);
}

} // namespace

uint64_t hostMemoryBytes() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long pageSize = sysconf(_SC_PAGE_SIZE);
  uint64_t ram = pages > 0 && pageSize > 0 ? uint64_t(pages) * uint64_t(pageSize) : 0;
  ram = std::min({ram, cgroupLimit("/sys/fs/cgroup/memory.max"),
                  cgroupLimit("/sys/fs/cgroup/memory/memory.limit_in_bytes")});
  // `ulimit -v`: an allocation past it fails (std::bad_alloc) however much RAM there is.
  struct rlimit as;
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY)
    ram = std::min<uint64_t>(ram, as.rlim_cur);
  return backend::memoryLimit(ram);
}

} // namespace tessera::cpu
