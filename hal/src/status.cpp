// tsr_status_t: creation, inspection and freeing of HAL statuses.
//
// This file is part of a tiny library (tessera_hal_base) that plugin drivers link to create
// the statuses they return; the layout below is therefore part of the ABI: one
// malloc'd block freed with free(). It must never depend on anything else in the HAL and
// never allocate with operator new (a plugin and the host may use different C++ runtimes).
#include "tessera/hal.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

struct tsr_status_s {
  tsr_status_code_t code;
  char *message; // points just past this struct, in the same allocation
};

namespace {
// Returned when the host is too short of memory to build a status; never freed.
char kOomMessage[] = "out of host memory while reporting an error";
tsr_status_s kOomStatus = {TSR_RESOURCE_EXHAUSTED, kOomMessage};
} // namespace

extern "C" {

tsr_status_code_t tsr_status_code(tsr_status_t status) { return status ? status->code : TSR_OK; }

const char *tsr_status_message(tsr_status_t status) { return status ? status->message : "OK"; }

void tsr_status_free(tsr_status_t status) {
  if (!status || status == &kOomStatus)
    return;
  std::free(status);
}

const char *tsr_status_code_name(tsr_status_code_t code) {
  switch (code) {
  case TSR_OK:
    return "OK";
  case TSR_ABORTED:
    return "ABORTED";
  case TSR_DEADLINE_EXCEEDED:
    return "DEADLINE_EXCEEDED";
  case TSR_FAILED_PRECONDITION:
    return "FAILED_PRECONDITION";
  case TSR_INTERNAL:
    return "INTERNAL";
  case TSR_INVALID_ARGUMENT:
    return "INVALID_ARGUMENT";
  case TSR_NOT_FOUND:
    return "NOT_FOUND";
  case TSR_OUT_OF_RANGE:
    return "OUT_OF_RANGE";
  case TSR_RESOURCE_EXHAUSTED:
    return "RESOURCE_EXHAUSTED";
  case TSR_UNAVAILABLE:
    return "UNAVAILABLE";
  case TSR_UNIMPLEMENTED:
    return "UNIMPLEMENTED";
  }
  return "UNKNOWN";
}

tsr_status_t tsr_status_make(tsr_status_code_t code, const char *format, ...) {
  if (code == TSR_OK)
    return nullptr;
  if (!format)
    format = "";
  va_list args;
  va_start(args, format);
  va_list again;
  va_copy(again, args);
  int length = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  if (length < 0)
    length = 0;
  auto *status =
      static_cast<tsr_status_s *>(std::malloc(sizeof(tsr_status_s) + size_t(length) + 1));
  if (!status) {
    va_end(again);
    return &kOomStatus;
  }
  status->code = code;
  status->message = reinterpret_cast<char *>(status + 1);
  std::vsnprintf(status->message, size_t(length) + 1, format, again);
  va_end(again);
  return status;
}

} // extern "C"
