// Launch-spec memory checks (see tessera/launch_memory.h). Never allocates launch data.
#include "tessera/launch_memory.h"

#include "backends/cpu/runtime/host_memory.h"
#include "backends/target.h"

#include <cstring>

namespace tessera {
namespace {

// Whether `copies` copies of `bytes` fit in the host's memory; else the message after `what`.
bool hostFits(const std::string &what, uint64_t bytes, unsigned copies, std::string *error) {
  uint64_t host = cpu::hostMemoryBytes();
  if (copies > 0 && bytes > host / copies) {
    *error = what + "; with its " + std::to_string(copies) +
             " host copies that is more than the host's " + std::to_string(host) +
             " bytes of memory (nothing was allocated)";
    return false;
  }
  return true;
}

} // namespace

bool launchBufferBytes(const ir::Function &kernel, uint64_t *bytes, std::string *error) {
  if (!kernel.launch) {
    *error = "@" + kernel.name + " has no launch spec";
    return false;
  }
  uint64_t total = 0;
  std::vector<ir::Value *> params = kernel.params();
  const std::vector<ir::ArgInit> &args = kernel.launch->args; // in parameter order
  for (size_t i = 0; i < params.size() && i < args.size(); ++i) {
    const ir::Value *p = params[i];
    if (p->type.kind != ir::Type::Kind::Buffer)
      continue;
    const ir::ArgInit &a = args[i];
    if (a.count <= 0)
      continue;
    // The verifier caps counts at 2^31 and element sizes are at most 8 bytes, so neither
    // the product nor a sum over any realistic number of parameters overflows; saturate
    // anyway rather than trust that.
    uint64_t size = uint64_t(a.count) * uint64_t(ir::byteSize(p->type.elem));
    total = total > UINT64_MAX - size ? UINT64_MAX : total + size;
  }
  *bytes = total;
  return true;
}

bool checkLaunchFits(tsr_device_t device, const ir::Function &kernel, unsigned hostCopies,
                     std::string *error) {
  uint64_t bytes = 0;
  if (!launchBufferBytes(kernel, &bytes, error))
    return false;
  tsr_device_info_t info;
  std::memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  if (tsr_status_t st = tsr_device_info(device, &info)) {
    *error = tsr_status_message(st);
    tsr_status_free(st);
    return false;
  }
  std::string what =
      "launch @" + kernel.name + " needs " + std::to_string(bytes) + " bytes of buffers";
  if (bytes > info.total_memory) {
    *error = what + ", more than the " + std::to_string(info.total_memory) +
             " bytes of memory of " + info.name + " (nothing was allocated)";
    return false;
  }
  // The device's own buffers are host memory too: the CPU target's, and any device whose
  // memory the host shares (PoCL, lavapipe: opencl:0 grew to 24 GB and was OOM-killed).
  const Target *t = targetForDevice(info);
  if ((t && t->buffersInHostMemory()) || (info.features & TSR_FEATURE_UNIFIED_MEMORY))
    ++hostCopies;
  return hostFits(what, bytes, hostCopies, error);
}

bool checkHostLaunchFits(const ir::Function &kernel, unsigned hostCopies, std::string *error) {
  uint64_t bytes = 0;
  if (!launchBufferBytes(kernel, &bytes, error))
    return false;
  return hostFits("launch @" + kernel.name + " needs " + std::to_string(bytes) +
                      " bytes of buffers",
                  bytes, hostCopies, error);
}

} // namespace tessera
