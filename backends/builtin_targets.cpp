// Registration of the built-in compiler targets (see builtin_targets.h), and the process's
// default registry.
//
// Like builtin_drivers.cpp, the one file allowed to name several backends' compilers; it
// must never hold compiler code. Each backend folder defines `<name>::makeTarget()` in its
// `<name>_target.cpp`: adding a backend with a compiler is that folder plus one row here.
#include "backends/builtin_targets.h"

// X(namespace of the backend's makeTarget), in registration order: the order of
// `tessera compile --help` and of the target list in errors.
#define TSR_BUILTIN_TARGETS(X) X(cpu) X(vulkan) X(cuda) X(rocm) X(opencl) X(levelzero)

namespace tessera {

#define TSR_DECLARE_MAKE_TARGET(ns)                                                                \
  namespace ns {                                                                                   \
  std::unique_ptr<Target> makeTarget();                                                            \
  }
TSR_BUILTIN_TARGETS(TSR_DECLARE_MAKE_TARGET)
#undef TSR_DECLARE_MAKE_TARGET

void registerBuiltinTargets(TargetRegistry &registry){
#define TSR_ADD_TARGET(ns) registry.add(ns::makeTarget());
    TSR_BUILTIN_TARGETS(TSR_ADD_TARGET)
#undef TSR_ADD_TARGET
}

TargetRegistry &defaultTargets() {
  // Built on first use by this explicit call, not by a static constructor.
  static TargetRegistry *registry = [] {
    auto *r = new TargetRegistry; // never destroyed: targets may be used during exit
    registerBuiltinTargets(*r);
    return r;
  }();
  return *registry;
}

const Target *targetForDevice(const tsr_device_info_t &info) {
  return defaultTargets().forBackend(info.backend);
}

} // namespace tessera
