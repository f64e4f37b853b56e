// Reference counting, poisoning and the quarantine of HAL handles (see object.h).
//
// Must never call a driver directly: destroy() implementations do that.
#include "hal/src/object.h"

#include <cassert>
#include <cstdio>
#include <deque>
#include <mutex>

namespace tessera::hal {
namespace {

// Destroyed objects whose memory is kept readable. Heap-allocated on first use and never
// destroyed, so there is no static constructor and nothing runs at exit.
struct Quarantine {
  std::mutex mutex;
  std::deque<Object *> objects;
};

Quarantine &quarantine() {
  static Quarantine *q = new Quarantine;
  return *q;
}

void quarantineObject(Object *object) {
  Object *evicted = nullptr;
  {
    Quarantine &q = quarantine();
    std::lock_guard<std::mutex> lock(q.mutex);
    q.objects.push_back(object);
    if (q.objects.size() > kQuarantineCapacity) {
      evicted = q.objects.front();
      q.objects.pop_front();
    }
  }
  if (evicted)
    evicted->free();
}

} // namespace

const char *kindName(ObjectKind kind) {
  switch (kind) {
  case ObjectKind::Registry:
    return "registry";
  case ObjectKind::Device:
    return "device";
  case ObjectKind::Buffer:
    return "buffer";
  case ObjectKind::Stream:
    return "stream";
  case ObjectKind::Event:
    return "event";
  case ObjectKind::Executable:
    return "executable";
  case ObjectKind::Kernel:
    return "kernel";
  case ObjectKind::Comm:
    return "communicator";
  }
  return "unknown";
}

void Object::retainPublic() {
  publicRefs_.fetch_add(1, std::memory_order_relaxed);
  totalRefs_.fetch_add(1, std::memory_order_relaxed);
}

void Object::releasePublic() {
  int64_t before = publicRefs_.fetch_sub(1, std::memory_order_acq_rel);
  assert(before > 0 && "public reference count underflow");
  if (before == 1)
    magic_.store(kReleasedMagic, std::memory_order_release);
  dropReference();
}

void Object::retainInternal() { totalRefs_.fetch_add(1, std::memory_order_relaxed); }

void Object::releaseInternal() { dropReference(); }

void Object::dropReference() {
  int64_t before = totalRefs_.fetch_sub(1, std::memory_order_acq_rel);
  assert(before > 0 && "reference count underflow");
  if (before != 1)
    return;
  destroy_(this);
  magic_.store(kDestroyedMagic, std::memory_order_release);
  quarantineObject(this);
}

void retainHandle(Object *object, ObjectKind kind, const char *call) {
  if (!object)
    return;
  if (object->magic() != uint32_t(kind)) {
    std::fprintf(stderr, "tessera: %s: ignoring a handle that is not a live %s\n", call,
                 kindName(kind));
    return;
  }
  object->retainPublic();
}

void releaseHandle(Object *object, ObjectKind kind, const char *call) {
  if (!object)
    return;
  if (object->magic() != uint32_t(kind)) {
    std::fprintf(stderr, "tessera: %s: ignoring a handle that is not a live %s\n", call,
                 kindName(kind));
    return;
  }
  object->releasePublic();
}

} // namespace tessera::hal
