// The native collective channel of the SIMT drivers (hal_driver.h ABI 1.4) over NCCL (cuda)
// or RCCL (rocm): loading the library on first use, the channel entries, and the mapping of
// each HAL collective onto NCCL's calls, types and reduction operators.
//
// The mapping is where the HAL's semantics (hal.h "Collectives") meet NCCL's, so each choice
// is written down here: movements (all_gather, broadcast, all_to_all, send, recv) never read
// their elements and move bytes (ncclUint8), which also carries i16, a type NCCL lacks;
// reductions pick the NCCL type whose arithmetic is the HAL's (below). NCCL's own order of
// folding is its own: the native channel is not bitwise equal to the host paths for floats
// (docs/backends.md "Collectives"). Every call is made with the device current (DeviceScope),
// as NCCL requires. Must never block in stream_collective: NCCL enqueues on the stream.
#include "backends/simt_runtime/nccl_api.h"
#include "backends/simt_runtime/simt_driver.h"

#include <atomic>
#include <climits>
#include <cstring>
#include <dlfcn.h>
#include <iterator>
#include <new>

namespace tessera::simt {

// ---- the library -------------------------------------------------------------------------

bool loadNcclApi(const NcclLibrarySpec &spec, NcclApi *api, std::string *error) {
  std::vector<const char *> names(spec.names, spec.names + spec.nameCount);
  VendorLibrary library = openVendorLibrary(spec.envVar, names, error);
  if (!library.handle) {
    *error = "dlopen failed: " + *error;
    return false;
  }
  const struct {
    const char *name;
    void **slot;
  } symbols[] = {
#define TSR_NCCL_SYMBOL(ret, symbol, params) {#symbol, reinterpret_cast<void **>(&api->symbol)},
      TSR_NCCL_FUNCTIONS(TSR_NCCL_SYMBOL)
#undef TSR_NCCL_SYMBOL
  };
  for (const auto &symbol : symbols) {
    *symbol.slot = dlsym(library.handle, symbol.name);
    if (!*symbol.slot) {
      *error = library.name + ": symbol " + symbol.name + " not found (" + spec.label +
               " older than 2.10?)";
      return false;
    }
  }
  api->ncclGetLastError =
      reinterpret_cast<decltype(api->ncclGetLastError)>(dlsym(library.handle, "ncclGetLastError"));
  return true;
}

tsr_status_t NcclLibrary::get(const SimtApi &simt, const NcclApi **out) {
  std::call_once(once_, [this] { loaded_ = loadNcclApi(spec_, &api_, &error_); });
  if (!loaded_)
    return tsr_status_make(TSR_UNAVAILABLE, "%s: %s is not available: %s", simt.driverName,
                           spec_.label, error_.c_str());
  *out = &api_;
  return nullptr;
}

std::string describeNcclError(const NcclApi &api, ncclResult_t result) {
  static const char *const kNames[] = {
      "ncclSuccess",         "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
      "ncclInvalidArgument", "ncclInvalidUsage",       "ncclRemoteError", "ncclInProgress"};
  const char *name = result >= 0 && result < int(std::size(kNames)) ? kNames[result] : nullptr;
  return describeError(result, name, api.ncclGetErrorString(result));
}

tsr_status_code_t statusCodeOfNccl(ncclResult_t result) {
  switch (result) {
  case ncclInvalidArgument:
    return TSR_INVALID_ARGUMENT;
  case ncclInvalidUsage: // a call out of order, a mismatched group: the caller's fault
    return TSR_FAILED_PRECONDITION;
  case ncclRemoteError: // a peer failed or aborted
    return TSR_ABORTED;
  default: // CUDA / system / internal errors: the device or the library is broken
    return TSR_INTERNAL;
  }
}

namespace {

/// An NCCL communicator of one rank of `size`, and whether it was aborted (ncclCommAbort
/// frees it).
struct SimtChannel {
  const NcclApi &api;
  uint32_t size = 0;
  ncclComm_t comm = nullptr;
  std::atomic<bool> aborted{false};
};

SimtChannel &channelOf(tsr_drv_channel_t channel) { return *as<SimtChannel>(channel); }

/// NULL for ncclSuccess; otherwise "<driver>: <call>: NAME (description)[: last error]".
tsr_status_t ncclStatus(const SimtApi &simt, const NcclApi &api, ncclResult_t result,
                        const char *call, ncclComm_t comm) {
  if (result == ncclSuccess)
    return nullptr;
  std::string text = describeNcclError(api, result);
  const char *last = api.ncclGetLastError ? api.ncclGetLastError(comm) : nullptr;
  if (last && *last)
    text += std::string(": ") + last;
  return tsr_status_make(statusCodeOfNccl(result), "%s: %s: %s", simt.driverName, call,
                         text.c_str());
}

#define TSR_NCCL(simt, api, comm, fn, ...)                                                         \
  ncclStatus((simt), (api), (api).fn(__VA_ARGS__), #fn, (comm))

const char *kindName(uint32_t kind) {
  static const char *const kNames[] = {"invalid",        "all_reduce", "all_gather",
                                       "reduce_scatter", "broadcast",  "reduce",
                                       "all_to_all",     "send",       "recv"};
  return kind < std::size(kNames) ? kNames[kind] : "invalid";
}

/// The NCCL type and operator whose arithmetic is the HAL's for `type` and `op`: integers
/// wrap under SUM and PROD (NCCL's unsigned types, where overflow is defined), compare as
/// signed for MIN/MAX and unsigned for UMIN/UMAX, and AVG divides the signed sum (NCCL
/// truncates toward zero, as hal.h asks). Floats map to themselves.
tsr_status_t reduction(const SimtApi &simt, const tsr_drv_collective_t &c, ncclDataType_t *outType,
                       ncclRedOp_t *outOp) {
  struct Integer {
    tsr_type_t type;
    ncclDataType_t isigned, iunsigned;
  };
  static const Integer kIntegers[] = {{TSR_TYPE_I8, ncclInt8, ncclUint8},
                                      {TSR_TYPE_I32, ncclInt32, ncclUint32},
                                      {TSR_TYPE_I64, ncclInt64, ncclUint64}};
  static const ncclRedOp_t kOps[] = {-1,      ncclSum, ncclProd, ncclMin,
                                     ncclMax, ncclAvg, ncclMin,  ncclMax};
  const char *label = simt.collectives ? simt.collectives->label() : "NCCL";
  if (uint32_t(c.op) == 0 || uint32_t(c.op) >= std::size(kOps))
    return tsr_status_make(TSR_INVALID_ARGUMENT, "%s: %s: invalid reduction operator %d",
                           simt.driverName, kindName(c.kind), int(c.op));
  *outOp = kOps[c.op];
  bool isUnsigned = c.op == TSR_REDUCE_UMIN || c.op == TSR_REDUCE_UMAX;
  switch (c.type) {
  case TSR_TYPE_F16:
  case TSR_TYPE_BF16:
  case TSR_TYPE_F32:
  case TSR_TYPE_F64:
    if (isUnsigned)
      return tsr_status_make(TSR_INVALID_ARGUMENT,
                             "%s: %s: %s is only defined for integers, not %s", simt.driverName,
                             kindName(c.kind), tsr_reduce_op_name(c.op), tsr_type_name(c.type));
    *outType = c.type == TSR_TYPE_F16    ? ncclFloat16
               : c.type == TSR_TYPE_BF16 ? ncclBfloat16
               : c.type == TSR_TYPE_F32  ? ncclFloat32
                                         : ncclFloat64;
    return nullptr;
  case TSR_TYPE_I16: // the caller must reduce i16 some other way (docs/backends.md)
    return tsr_status_make(TSR_UNIMPLEMENTED,
                           "%s: %s of i16 (%s): %s has no 16-bit integer type to reduce",
                           simt.driverName, kindName(c.kind), tsr_reduce_op_name(c.op), label);
  default:
    break;
  }
  for (const Integer &integer : kIntegers) {
    if (integer.type != c.type)
      continue;
    bool wraps = c.op == TSR_REDUCE_SUM || c.op == TSR_REDUCE_PROD;
    *outType = isUnsigned || wraps ? integer.iunsigned : integer.isigned;
    return nullptr;
  }
  return tsr_status_make(TSR_INVALID_ARGUMENT, "%s: %s: invalid element type %d", simt.driverName,
                         kindName(c.kind), int(c.type));
}

void *pointerOf(tsr_drv_buffer_t buffer, uint64_t offset) {
  return buffer ? reinterpret_cast<void *>(uintptr_t(addressOf(buffer) + offset)) : nullptr;
}

tsr_status_t missingBuffer(const SimtApi &simt, const tsr_drv_collective_t &c, const char *which) {
  return tsr_status_make(TSR_INVALID_ARGUMENT, "%s: %s: no %s buffer", simt.driverName,
                         kindName(c.kind), which);
}

/// all_to_all as NCCL documents it: one send and one receive per peer, in one group (the
/// group is closed even when a call inside it failed, so NCCL's group depth stays right).
tsr_status_t allToAll(const SimtApi &simt, SimtChannel &ch, const tsr_drv_collective_t &c,
                      uint64_t bytes, Stream stream) {
  const NcclApi &api = ch.api;
  char *send = static_cast<char *>(pointerOf(c.send, c.send_offset));
  char *recv = static_cast<char *>(pointerOf(c.recv, c.recv_offset));
  if (!send || !recv)
    return missingBuffer(simt, c, send ? "recv" : "send");
  if (tsr_status_t status = TSR_NCCL(simt, api, ch.comm, ncclGroupStart))
    return status;
  tsr_status_t failure = nullptr;
  for (uint32_t peer = 0; peer < ch.size && !failure; ++peer) {
    failure = TSR_NCCL(simt, api, ch.comm, ncclSend, send + peer * bytes, bytes, ncclUint8,
                       int(peer), ch.comm, stream);
    if (!failure)
      failure = TSR_NCCL(simt, api, ch.comm, ncclRecv, recv + peer * bytes, bytes, ncclUint8,
                         int(peer), ch.comm, stream);
  }
  tsr_status_t end = TSR_NCCL(simt, api, ch.comm, ncclGroupEnd);
  if (!failure)
    return end;
  tsr_status_free(end);
  return failure;
}

} // namespace

tsr_status_t makeChannelUniqueId(const SimtApi &simt, tsr_comm_unique_id_t *out_id) {
  if (!simt.collectives)
    return tsr_status_make(TSR_UNIMPLEMENTED, "%s: no collective library", simt.driverName);
  const NcclApi *api = nullptr;
  if (tsr_status_t status = simt.collectives->get(simt, &api))
    return status;
  ncclUniqueId id = {};
  if (tsr_status_t status = TSR_NCCL(simt, *api, nullptr, ncclGetUniqueId, &id))
    return status;
  std::memcpy(out_id->internal, id.internal, sizeof(id.internal));
  return nullptr;
}

tsr_status_t channelCreate(tsr_drv_device_t device, const tsr_comm_unique_id_t *id, uint32_t size,
                           uint32_t rank, tsr_drv_channel_t *out_channel) {
  SimtDevice &d = deviceOf(device);
  if (!d.api.collectives)
    return tsr_status_make(TSR_UNIMPLEMENTED, "%s: no collective library", d.api.driverName);
  const NcclApi *api = nullptr;
  if (tsr_status_t status = d.api.collectives->get(d.api, &api))
    return status;
  if (size > uint32_t(INT_MAX))
    return tsr_status_make(TSR_INVALID_ARGUMENT, "%s: ncclCommInitRank: %u ranks (at most %d)",
                           d.api.driverName, size, INT_MAX);
  ncclUniqueId uid;
  std::memcpy(uid.internal, id->internal, sizeof(uid.internal));
  auto *channel = new (std::nothrow) SimtChannel{*api, size};
  if (!channel)
    return tsr_status_make(TSR_RESOURCE_EXHAUSTED, "%s: out of host memory", d.api.driverName);
  DeviceScope scope(d); // NCCL binds the communicator to the current device
  tsr_status_t status = scope.failure();
  if (!status)
    status =
        TSR_NCCL(d.api, *api, nullptr, ncclCommInitRank, &channel->comm, int(size), uid, int(rank));
  if (status) {
    delete channel;
    return status;
  }
  *out_channel = handleOf<tsr_drv_channel_t>(channel);
  return nullptr;
}

void channelAbort(tsr_drv_device_t device, tsr_drv_channel_t channel) {
  SimtDevice &d = deviceOf(device);
  SimtChannel &ch = channelOf(channel);
  if (ch.aborted.exchange(true))
    return;
  DeviceScope scope(d);
  ch.api.ncclCommAbort(ch.comm); // frees the communicator: never destroyed after this
}

void channelDestroy(tsr_drv_device_t device, tsr_drv_channel_t channel) {
  SimtDevice &d = deviceOf(device);
  SimtChannel *ch = as<SimtChannel>(channel);
  if (!ch->aborted.load()) {
    DeviceScope scope(d);
    ch->api.ncclCommDestroy(ch->comm);
  }
  delete ch;
}

tsr_status_t streamCollective(tsr_drv_device_t device, tsr_drv_stream_t stream,
                              tsr_drv_channel_t channel, const tsr_drv_collective_t *op) {
  SimtDevice &d = deviceOf(device);
  SimtChannel &ch = channelOf(channel);
  const tsr_drv_collective_t &c = *op;
  const NcclApi &api = ch.api;
  if (ch.aborted.load())
    return tsr_status_make(TSR_ABORTED, "%s: %s: the channel was aborted", d.api.driverName,
                           kindName(c.kind));
  uint64_t bytes = c.count * tsr_type_size(c.type);
  if (tsr_type_size(c.type) == 0)
    return tsr_status_make(TSR_INVALID_ARGUMENT, "%s: %s: invalid element type %d",
                           d.api.driverName, kindName(c.kind), int(c.type));
  ncclDataType_t type = ncclUint8;
  ncclRedOp_t redOp = ncclSum;
  bool reduces = c.kind == 1 || c.kind == 3 || c.kind == 5;
  if (reduces)
    if (tsr_status_t status = reduction(d.api, c, &type, &redOp))
      return status;
  void *send = pointerOf(c.send, c.send_offset), *recv = pointerOf(c.recv, c.recv_offset);
  int root = int(c.root_or_peer);
  Stream s = streamOf(stream);
  DeviceScope scope(d);
  if (tsr_status_t status = scope.failure())
    return status;
  switch (c.kind) {
  case 1:
    return TSR_NCCL(d.api, api, ch.comm, ncclAllReduce, send, recv, c.count, type, redOp, ch.comm,
                    s);
  case 2:
    return TSR_NCCL(d.api, api, ch.comm, ncclAllGather, send, recv, bytes, ncclUint8, ch.comm, s);
  case 3:
    return TSR_NCCL(d.api, api, ch.comm, ncclReduceScatter, send, recv, c.count, type, redOp,
                    ch.comm, s);
  case 4: // send is only read on the root, recv written everywhere
    return TSR_NCCL(d.api, api, ch.comm, ncclBroadcast, send, recv, bytes, ncclUint8, root, ch.comm,
                    s);
  case 5: // recv is only written on the root
    return TSR_NCCL(d.api, api, ch.comm, ncclReduce, send, recv, c.count, type, redOp, root,
                    ch.comm, s);
  case 6:
    return allToAll(d.api, ch, c, bytes, s);
  case 7:
    if (!send)
      return missingBuffer(d.api, c, "send");
    return TSR_NCCL(d.api, api, ch.comm, ncclSend, send, bytes, ncclUint8, root, ch.comm, s);
  case 8:
    if (!recv)
      return missingBuffer(d.api, c, "recv");
    return TSR_NCCL(d.api, api, ch.comm, ncclRecv, recv, bytes, ncclUint8, root, ch.comm, s);
  default:
    return tsr_status_make(TSR_INVALID_ARGUMENT, "%s: unknown collective kind %u", d.api.driverName,
                           c.kind);
  }
}

} // namespace tessera::simt
