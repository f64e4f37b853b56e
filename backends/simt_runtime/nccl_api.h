// The slice of the NCCL API the SIMT drivers' native collective channel uses (hal_driver.h
// ABI 1.4), declared here (no NCCL header is needed to build) and resolved at run time from
// libnccl.so.2 (cuda) or librccl.so.1 (rocm: RCCL exports the same functions, types and
// numbers). The library is loaded on the first channel call, not when the driver opens:
// a system with a GPU but no NCCL still has a working driver.
//
// Values are those of nccl.h (NCCL 2.28; unchanged since 2.10, which added ncclAvg and
// ncclBfloat16) and of RCCL's rccl.h. Must never include nccl.h or rccl.h.
#pragma once

#include "backends/simt_runtime/simt_api.h"

#include <mutex>
#include <string>

namespace tessera::simt {

using ncclResult_t = int;
using ncclDataType_t = int;
using ncclRedOp_t = int;
using ncclComm_t = struct NcclComm_ *;

/// ncclUniqueId: passed by value to ncclCommInitRank, so its size is part of the ABI.
struct ncclUniqueId {
  char internal[128];
};
static_assert(sizeof(ncclUniqueId) == sizeof(tsr_comm_unique_id_t),
              "a HAL unique id carries an NCCL one unchanged");

enum : int { // ncclResult_t
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
};

enum : int { // ncclDataType_t
  ncclInt8 = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclFloat32 = 7,
  ncclFloat64 = 8,
  ncclBfloat16 = 9,
};

enum : int { // ncclRedOp_t
  ncclSum = 0,
  ncclProd = 1,
  ncclMax = 2,
  ncclMin = 3,
  ncclAvg = 4,
};

// X(return type, symbol, parameters): every entry point the channel calls. The stream is
// the SIMT table's (cudaStream_t and hipStream_t are CUstream and hipStream_t).
#define TSR_NCCL_FUNCTIONS(X)                                                                      \
  X(const char *, ncclGetErrorString, (ncclResult_t))                                              \
  X(ncclResult_t, ncclGetUniqueId, (ncclUniqueId *))                                               \
  X(ncclResult_t, ncclCommInitRank, (ncclComm_t *, int, ncclUniqueId, int))                        \
  X(ncclResult_t, ncclCommAbort, (ncclComm_t))                                                     \
  X(ncclResult_t, ncclCommDestroy, (ncclComm_t))                                                   \
  X(ncclResult_t, ncclAllReduce,                                                                   \
    (const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, Stream))               \
  X(ncclResult_t, ncclAllGather,                                                                   \
    (const void *, void *, size_t, ncclDataType_t, ncclComm_t, Stream))                            \
  X(ncclResult_t, ncclReduceScatter,                                                               \
    (const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, Stream))               \
  X(ncclResult_t, ncclBroadcast,                                                                   \
    (const void *, void *, size_t, ncclDataType_t, int, ncclComm_t, Stream))                       \
  X(ncclResult_t, ncclReduce,                                                                      \
    (const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t, Stream))          \
  X(ncclResult_t, ncclSend, (const void *, size_t, ncclDataType_t, int, ncclComm_t, Stream))       \
  X(ncclResult_t, ncclRecv, (void *, size_t, ncclDataType_t, int, ncclComm_t, Stream))             \
  X(ncclResult_t, ncclGroupStart, ())                                                              \
  X(ncclResult_t, ncclGroupEnd, ())

struct NcclApi {
#define TSR_NCCL_FIELD(ret, symbol, params) ret(*symbol) params = nullptr;
  TSR_NCCL_FUNCTIONS(TSR_NCCL_FIELD)
#undef TSR_NCCL_FIELD
  /// ncclGetLastError (NCCL 2.13+, not in every RCCL): the failed call's detail, or null.
  const char *(*ncclGetLastError)(ncclComm_t) = nullptr;
};

/// Where a driver finds its collective library: "NCCL", the variable that names a file
/// instead (TESSERA_NCCL_LIBRARY), and the names tried otherwise.
struct NcclLibrarySpec {
  const char *label;
  const char *envVar;
  const char *const *names;
  size_t nameCount;
};

/// A driver's collective library, loaded on first use (thread-safe). Owned by the driver
/// object; SimtApi::collectives points at it.
class NcclLibrary {
public:
  explicit NcclLibrary(const NcclLibrarySpec &spec) : spec_(spec) {}
  NcclLibrary(const NcclLibrary &) = delete;
  NcclLibrary &operator=(const NcclLibrary &) = delete;

  /// The resolved API, or UNAVAILABLE naming the library and the loader's reason (the same
  /// answer every time: a failed load is not retried).
  tsr_status_t get(const SimtApi &simt, const NcclApi **out);
  const char *label() const { return spec_.label; }

private:
  NcclLibrarySpec spec_;
  std::once_flag once_;
  bool loaded_ = false;
  std::string error_;
  NcclApi api_;
};

/// Resolves every entry of NcclApi from the library `spec` names into *api; on failure
/// `*error` is the loader's message or "<library>: symbol <name> not found".
bool loadNcclApi(const NcclLibrarySpec &spec, NcclApi *api, std::string *error);

/// "ncclInvalidUsage (invalid usage)": NCCL's name of a result and its own description.
std::string describeNcclError(const NcclApi &api, ncclResult_t result);
/// The HAL code of an NCCL result (ncclInvalidArgument: INVALID_ARGUMENT; a peer's failure,
/// ncclRemoteError: ABORTED; the rest: INTERNAL).
tsr_status_code_t statusCodeOfNccl(ncclResult_t result);

} // namespace tessera::simt
