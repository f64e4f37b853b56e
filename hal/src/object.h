// The common header of every HAL handle: a magic word that says "live X handle", two
// reference counts, and destruction into a quarantine.
//
// Public references (tsr_X_retain/release) and internal ones (a view holding its parent, a
// stream holding what its pending work uses) are counted apart: when the last public
// reference goes, the handle is poisoned (magic = kReleasedMagic) even if internal
// references keep the object alive, so any later public use is reported. When the last
// reference of any kind goes, destroy() frees the driver resources and the memory moves to
// a bounded quarantine with magic = kDestroyedMagic, so a stale handle still reads as
// "released" instead of touching freed memory (ASan-clean). Nothing here may call a driver.
#pragma once

#include <atomic>
#include <cstdint>

namespace tessera::hal {

/// The live magic of each handle kind (ASCII tags, so they read well in a debugger).
enum class ObjectKind : uint32_t {
  Registry = 0x54524547,   // "TREG"
  Device = 0x54444556,     // "TDEV"
  Buffer = 0x54425546,     // "TBUF"
  Stream = 0x54535452,     // "TSTR"
  Event = 0x54455654,      // "TEVT"
  Executable = 0x54455845, // "TEXE"
  Kernel = 0x544b524e,     // "TKRN"
  Comm = 0x54434f4d,       // "TCOM"
};

constexpr uint32_t kReleasedMagic = 0x52454c53;  // "RELS": no public reference left
constexpr uint32_t kDestroyedMagic = 0x44454144; // "DEAD": destroyed, in quarantine

/// "buffer", "stream", ...
const char *kindName(ObjectKind kind);

/// The header of every handle. Deliberately not polymorphic: the magic word is the first
/// thing in memory, so checking a stale or foreign pointer reads one word and never goes
/// through a vtable.
class Object {
public:
  using Hook = void (*)(Object *);

  Object(ObjectKind kind, Hook destroy, Hook free)
      : magic_(uint32_t(kind)), kind_(kind), destroy_(destroy), free_(free) {}
  Object(const Object &) = delete;
  Object &operator=(const Object &) = delete;

  ObjectKind kind() const { return kind_; }
  uint32_t magic() const { return magic_.load(std::memory_order_acquire); }
  bool isLive() const { return magic() == uint32_t(kind_); }

  void retainPublic();
  void releasePublic();
  void retainInternal();
  void releaseInternal();

  /// Deletes the object's memory (used by the quarantine when it evicts).
  void free() { free_(this); }

private:
  void dropReference();

  std::atomic<uint32_t> magic_;
  const ObjectKind kind_;
  const Hook destroy_; // frees driver resources, drops internal references; runs once
  const Hook free_;    // deletes the concrete object
  std::atomic<int64_t> publicRefs_{1};
  std::atomic<int64_t> totalRefs_{1};
};

/// The base of each concrete handle type T, which must define `static constexpr ObjectKind
/// kKind` and `void destroy()`: free its driver resources and drop the internal references
/// it holds. destroy() is called exactly once, by the last reference, and must be called
/// by nothing else.
template <typename T> class Handle : public Object {
public:
  Handle()
      : Object(
            T::kKind, [](Object *o) { static_cast<T *>(o)->destroy(); },
            [](Object *o) { delete static_cast<T *>(o); }) {}
};

/// Number of destroyed handles whose memory is kept for detection (oldest freed first).
constexpr unsigned kQuarantineCapacity = 4096;

/// The public retain/release of every handle type: NULL is a no-op; a handle that is not a
/// live `kind` is reported on stderr and ignored (it must never crash).
void retainHandle(Object *object, ObjectKind kind, const char *call);
void releaseHandle(Object *object, ObjectKind kind, const char *call);

} // namespace tessera::hal
