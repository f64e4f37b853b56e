/* What the two halves of the fake Level Zero loader share (fake_libze.c: loader, device,
 * memory, command lists, events; fake_libze_module.c: modules, kernels, launches): the
 * handle structs, the counters, and the failure knob. Test-only.
 */
#ifndef TESSERA_BACKENDS_LEVELZERO_RUNTIME_TESTS_FAKE_LIBZE_H_
#define TESSERA_BACKENDS_LEVELZERO_RUNTIME_TESTS_FAKE_LIBZE_H_

#include <level_zero/ze_api.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

extern int fake_ze_live_objects; /* contexts, allocations, lists, pools, events, modules... */
extern int fake_ze_launches;
extern uint32_t fake_ze_last_group_size[3], fake_ze_last_group_count[3];
extern int fake_ze_initialized;
extern struct _ze_device_handle_t fake_ze_device;

enum { MAX_ARGS = 128, MAX_ENTRIES = 64, NAME_MAX_LEN = 128 };

struct _ze_driver_handle_t {
  int unused;
};
struct _ze_device_handle_t {
  int unused;
};
struct _ze_context_handle_t {
  int unused;
};
struct _ze_command_list_handle_t {
  int unused;
};
struct _ze_event_handle_t {
  int signalled;
};
struct _ze_event_pool_handle_t {
  uint32_t count;
};
struct _ze_module_build_log_handle_t {
  char text[256];
};
/* A kernel's signature as its SPIR-V declares it: the byte size of each OpFunctionParameter
 * (pointers 8, integers and floats their width); paramCount -1 when the module has no
 * OpFunction for the entry (the tests' hand-made modules list names only). */
struct Signature {
  uint32_t function; /* the entry's function id */
  int paramCount;
  uint8_t paramSizes[MAX_ARGS];
};
struct _ze_module_handle_t {
  char entries[MAX_ENTRIES][NAME_MAX_LEN];
  struct Signature signatures[MAX_ENTRIES];
  int count;
};
struct Arg {
  size_t size;
  unsigned char bytes[8];
  int set;
};
struct _ze_kernel_handle_t {
  char name[NAME_MAX_LEN];
  struct Signature signature;
  uint32_t group[3];
  struct Arg args[MAX_ARGS];
};

/* The result of `fn` when TESSERA_FAKE_ZE_FAIL names it, else success. */
static inline ze_result_t failing(const char *fn, ze_result_t code) {
  const char *v = getenv("TESSERA_FAKE_ZE_FAIL");
  return v && strcmp(v, fn) == 0 ? code : ZE_RESULT_SUCCESS;
}
#define FAIL_IF_ASKED(code)                                                                        \
  do {                                                                                             \
    ze_result_t r_ = failing(__func__, code);                                                      \
    if (r_)                                                                                        \
      return r_;                                                                                   \
  } while (0)
#define REQUIRE_INIT()                                                                             \
  if (!fake_ze_initialized)                                                                        \
  return ZE_RESULT_ERROR_UNINITIALIZED

static inline void *track(void *object) {
  if (object)
    __atomic_add_fetch(&fake_ze_live_objects, 1, __ATOMIC_RELAXED);
  return object;
}
static inline void untrack(void *object) {
  if (object)
    __atomic_sub_fetch(&fake_ze_live_objects, 1, __ATOMIC_RELAXED);
  free(object);
}

static inline ze_result_t waitsDone(uint32_t n, ze_event_handle_t *events) {
  for (uint32_t i = 0; i < n; ++i)
    if (!events[i]->signalled) /* nothing could ever signal it: a real list would hang */
      return ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT;
  return ZE_RESULT_SUCCESS;
}

/* A launch of `spin` that has not ended (one at a time, process-wide): until its cancel flag
 * is seen (zeEventHostSynchronize polls it), every event that work appended after it would
 * signal is deferred, as an in-order device would leave it unsignalled. */
struct FakeSpin {
  uint32_t *control; /* NULL: nothing spins */
  ze_event_handle_t deferred[256];
  int count;
};
extern struct FakeSpin fake_ze_spin;

static inline void signalIfAny(ze_event_handle_t event) {
  if (!event)
    return;
  if (fake_ze_spin.control && fake_ze_spin.count < 256) {
    fake_ze_spin.deferred[fake_ze_spin.count++] = event;
    return;
  }
  __atomic_store_n(&event->signalled, 1, __ATOMIC_RELEASE);
}

/* The spinning launch ends: with a deadline record when `cancelled`, then its events. */
static inline void endSpin(int cancelled) {
  uint32_t none = 0;
  if (cancelled)
    __atomic_compare_exchange_n(&fake_ze_spin.control[1], &none, 8 /* TSR_FAULT_DEADLINE */, 0,
                                __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
  fake_ze_spin.control = NULL;
  for (int i = 0; i < fake_ze_spin.count; ++i)
    __atomic_store_n(&fake_ze_spin.deferred[i]->signalled, 1, __ATOMIC_RELEASE);
  fake_ze_spin.count = 0;
}

#endif
