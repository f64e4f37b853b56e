// hostMemoryBytes: physical RAM, capped by the cgroup limit and the environment override.
#include "backends/cpu/runtime/host_memory.h"

#include "backends/memory_budget.h"

#include <algorithm>
#include <fstream>
#include <string>
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
  return backend::memoryLimit(ram);
}

} // namespace tessera::cpu
