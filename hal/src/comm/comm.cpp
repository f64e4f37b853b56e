// The public tsr_comm_* calls: communicator creation (in-process group, native channel),
// queries, timeout, abort, split, and the eight operations with their validation (the
// validation layer's style: the call's name and the offending argument in every message).
//
// Must never hand the engine or a driver an op that failed a check, and never block an
// enqueue on a peer (creation and split are the calls that rendezvous).
#include "hal/src/comm/comm.h"

#include "hal/src/buffer.h"
#include "hal/src/comm/reduce.h"
#include "hal/src/stream.h"
#include "hal/src/validation.h"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <thread>

using namespace tessera::hal;
using namespace tessera::hal::comm;

namespace tessera::hal::comm {
void startWorker(tsr_comm_s *comm);
void stopWorker(tsr_comm_s *comm);
} // namespace tessera::hal::comm

namespace {

// TESSERA_COMM_TIMEOUT_MS (milliseconds, 0 = wait forever) or the default; a malformed
// value is ignored with a warning rather than failing every communicator.
uint64_t defaultTimeoutNs() {
  return timeoutNsFromEnv("TESSERA_COMM_TIMEOUT_MS", TSR_COMM_DEFAULT_TIMEOUT_MS);
}

tsr_comm_s *newComm(tsr_device_s *device, std::unique_ptr<Transport> transport,
                    tsr_drv_channel_t channel, uint32_t rank, uint32_t size) {
  auto *comm = new tsr_comm_s;
  comm->device = device;
  device->retainInternal();
  comm->posting = dynamic_cast<PostingTransport *>(transport.get());
  comm->transport = std::move(transport);
  comm->channel = channel;
  comm->rank = rank;
  comm->size = size;
  comm->timeoutNs.store(defaultTimeoutNs());
  if (!channel)
    startWorker(comm);
  return comm;
}

// ncclCommInitAll through the devices' native channel (ABI 1.4): all ranks of one driver
// that has the entries, each channel_create on its own thread (they rendezvous). Returns
// false, with nothing created, when the channel is absent or fails: the HAL path is used.
bool createNativeChannels(uint32_t count, const tsr_device_t *devices, tsr_comm_t *out) {
  const DriverRecord *driver = devices[0]->driver;
  const tsr_driver_v1 &t = driver->table;
  if (!t.channel_unique_id || !t.channel_create || !t.stream_collective || !t.channel_destroy)
    return false;
  for (uint32_t i = 1; i < count; ++i)
    if (devices[i]->driver != driver)
      return false;
  tsr_comm_unique_id_t id = {};
  if (tsr_status_t s = t.channel_unique_id(driver->handle, &id)) {
    tsr_status_free(s);
    return false;
  }
  std::vector<tsr_drv_channel_t> channels(count, nullptr);
  std::vector<tsr_status_t> statuses(count, nullptr);
  std::vector<std::thread> threads;
  for (uint32_t i = 0; i < count; ++i)
    threads.emplace_back([&, i] {
      statuses[i] = t.channel_create(devices[i]->handle, &id, count, i, &channels[i]);
    });
  for (std::thread &thread : threads)
    thread.join();
  bool ok = true;
  for (tsr_status_t s : statuses)
    if (s) {
      ok = false;
      tsr_status_free(s);
    }
  if (!ok) {
    for (uint32_t i = 0; i < count; ++i)
      if (channels[i])
        t.channel_destroy(devices[i]->handle, channels[i]);
    return false;
  }
  for (uint32_t i = 0; i < count; ++i)
    out[i] = newComm(devices[i], nullptr, channels[i], i, count);
  return true;
}

bool isReduction(OpKind kind) {
  return kind == OpKind::AllReduce || kind == OpKind::ReduceScatter || kind == OpKind::Reduce;
}

/// The arguments of one public operation.
struct OpArgs {
  OpKind kind;
  tsr_buffer_s *send;
  uint64_t sendOffset;
  tsr_buffer_s *recv;
  uint64_t recvOffset;
  uint64_t count;
  tsr_type_t type;
  tsr_reduce_op_t op;
  uint32_t root; // root or peer
};

// A buffer the op reads or writes: live, on the communicator's device, `bytes` in range.
tsr_status_t checkOpBuffer(const char *call, const char *what, const tsr_comm_s *comm,
                           const tsr_buffer_s *buffer, uint64_t offset, uint64_t bytes) {
  TSR_RETURN_IF_ERROR(checkHandle(call, what, buffer));
  TSR_RETURN_IF_ERROR(checkSameDevice(call, what, buffer->device, comm->device));
  return checkRange(call, what, offset, bytes, buffer->size);
}

// Everything spec.md's engine step 1 lists; fills the byte counts of send and recv.
tsr_status_t validate(const char *call, tsr_comm_s *comm, tsr_stream_s *stream, const OpArgs &a,
                      bool *sendUsed, uint64_t *sendBytes, bool *recvUsed, uint64_t *recvBytes) {
  TSR_RETURN_IF_ERROR(checkHandle(call, "comm", comm));
  TSR_RETURN_IF_ERROR(checkHandle(call, "stream", stream));
  if (stream->device != comm->device)
    return TSR_FAIL(TSR_INVALID_ARGUMENT,
                    "%s: stream is on device '%s' but the communicator's rank %u is on '%s'", call,
                    stream->device->info.name, comm->rank, comm->device->info.name);
  const size_t elementSize = tsr_type_size(a.type);
  if (elementSize == 0)
    return TSR_FAIL(TSR_INVALID_ARGUMENT, "%s: type %d is not an element type", call, int(a.type));
  if (isReduction(a.kind))
    TSR_RETURN_IF_ERROR(checkReduceOp(call, a.type, a.op));
  const bool rooted = a.kind == OpKind::Broadcast || a.kind == OpKind::Reduce;
  const bool p2p = a.kind == OpKind::Send || a.kind == OpKind::Recv;
  if ((rooted || p2p) && a.root >= comm->size)
    return TSR_FAIL(TSR_OUT_OF_RANGE, "%s: %s %u is not a rank of this communicator (size %u)",
                    call, p2p ? "peer" : "root", a.root, comm->size);
  if (p2p && a.root == comm->rank)
    return TSR_FAIL(TSR_INVALID_ARGUMENT, "%s: peer %u is this rank itself", call, a.root);
  const uint64_t n = comm->size;
  if (a.count > UINT64_MAX / elementSize / n)
    return TSR_FAIL(TSR_OUT_OF_RANGE, "%s: count %" PRIu64 " of %s overflows a byte size", call,
                    a.count, tsr_type_name(a.type));
  const uint64_t one = a.count * elementSize, all = one * n;
  *sendBytes = a.kind == OpKind::ReduceScatter || a.kind == OpKind::AllToAll ? all : one;
  *recvBytes = a.kind == OpKind::AllGather || a.kind == OpKind::AllToAll ? all : one;
  *sendUsed = a.kind != OpKind::Recv && !(a.kind == OpKind::Broadcast && comm->rank != a.root);
  *recvUsed = a.kind != OpKind::Send && !(a.kind == OpKind::Reduce && comm->rank != a.root);
  const char *sendName = p2p ? "buffer" : "send";
  const char *recvName = p2p ? "buffer" : "recv";
  if (*sendUsed)
    TSR_RETURN_IF_ERROR(checkOpBuffer(call, sendName, comm, a.send, a.sendOffset, *sendBytes));
  if (*recvUsed)
    TSR_RETURN_IF_ERROR(checkOpBuffer(call, recvName, comm, a.recv, a.recvOffset, *recvBytes));
  if (!*sendUsed || !*recvUsed || a.send->root != a.recv->root || all == 0)
    return nullptr;
  const uint64_t s = a.send->offset + a.sendOffset, r = a.recv->offset + a.recvOffset;
  const uint64_t inPlaceAt = a.kind == OpKind::AllGather ? r + comm->rank * one : r;
  if (a.kind != OpKind::AllToAll && s == inPlaceAt)
    return nullptr;
  if (s < r + *recvBytes && r < s + *sendBytes)
    return TSR_FAIL(TSR_INVALID_ARGUMENT,
                    "%s: send [%" PRIu64 ", %" PRIu64 ") and recv [%" PRIu64 ", %" PRIu64
                    ") overlap in one allocation; %s",
                    call, s, s + *sendBytes, r, r + *recvBytes,
                    a.kind == OpKind::AllToAll ? "all_to_all is never in place"
                                               : "in place needs send at recv's own slot");
  return nullptr;
}

tsr_status_t enqueueOp(const char *call, tsr_comm_s *comm, tsr_stream_s *stream, const OpArgs &a) {
  bool sendUsed = false, recvUsed = false;
  uint64_t sendBytes = 0, recvBytes = 0;
  TSR_RETURN_IF_ERROR(
      validate(call, comm, stream, a, &sendUsed, &sendBytes, &recvUsed, &recvBytes));
  tsr_buffer_s *send = sendUsed ? a.send : nullptr;
  tsr_buffer_s *recv = recvUsed ? a.recv : nullptr;
  std::vector<Object *> used = {comm};
  if (send)
    used.push_back(send);
  if (recv)
    used.push_back(recv);
  if (comm->channel) {
    // The native channel orders the op on the stream itself: a plain driver enqueue.
    tsr_drv_collective_t op = {};
    op.kind = uint32_t(a.kind);
    op.type = a.type;
    op.op = isReduction(a.kind) ? a.op : TSR_REDUCE_SUM;
    op.root_or_peer = a.root;
    op.count = a.count;
    op.send = send ? send->handle : nullptr;
    op.send_offset = send ? send->offset + a.sendOffset : 0;
    op.recv = recv ? recv->handle : nullptr;
    op.recv_offset = recv ? recv->offset + a.recvOffset : 0;
    tsr_device_s *device = comm->device;
    tsr_drv_channel_t channel = comm->channel;
    return enqueueOnStream(stream, used, [=] {
      return TSR_CALL_DRIVER(call, *device->driver, stream_collective, device->handle,
                             stream->handle, channel, &op);
    });
  }
  auto op = std::make_unique<PendingOp>();
  op->comm = comm;
  op->stream = stream;
  op->host.desc.kind = a.kind;
  op->host.desc.type = a.type;
  op->host.desc.op = isReduction(a.kind) ? a.op : TSR_REDUCE_SUM;
  op->host.desc.root = a.root;
  op->host.desc.count = a.count;
  op->timeoutNs = comm->timeoutNs.load(std::memory_order_relaxed);
  op->bytes = std::max(sendBytes, recvBytes);
  op->sendBuffer = send;
  op->sendOffset = a.sendOffset;
  op->sendBytes = sendBytes;
  op->recvBuffer = recv;
  op->recvOffset = a.recvOffset;
  op->recvBytes = recvBytes;
  for (Object *object : used)
    object->retainInternal();
  op->used = std::move(used);
  return submit(std::move(op));
}

} // namespace

void tsr_comm_s::destroy() {
  stopWorker(this);
  transport.reset();
  if (channel)
    device->table().channel_destroy(device->handle, channel);
  device->releaseInternal();
}

extern "C" {

tsr_status_t tsr_comm_create_local(uint32_t count, const tsr_device_t *devices,
                                   tsr_comm_t *out_comms) {
  static const char *kCall = "tsr_comm_create_local";
  TSR_RETURN_IF_ERROR(checkPointer(kCall, "out_comms", out_comms));
  if (count == 0)
    return TSR_FAIL(TSR_INVALID_ARGUMENT, "%s: count is 0; a group needs at least one device",
                    kCall);
  for (uint32_t i = 0; i < count; ++i)
    out_comms[i] = nullptr;
  TSR_RETURN_IF_ERROR(checkPointer(kCall, "devices", devices));
  for (uint32_t i = 0; i < count; ++i) {
    char what[32];
    std::snprintf(what, sizeof what, "devices[%u]", i);
    TSR_RETURN_IF_ERROR(checkHandle(kCall, what, devices[i]));
    for (uint32_t j = 0; j < i; ++j)
      if (devices[j] == devices[i] || devices[j]->handle == devices[i]->handle)
        return TSR_FAIL(TSR_INVALID_ARGUMENT,
                        "%s: devices[%u] and devices[%u] are both '%s'; a device may appear "
                        "only once",
                        kCall, j, i, devices[i]->info.name);
  }
  if (createNativeChannels(count, devices, out_comms))
    return nullptr;
  std::vector<std::unique_ptr<Transport>> transports;
  makeLocalTransports(count, &transports);
  for (uint32_t i = 0; i < count; ++i)
    out_comms[i] = newComm(devices[i], std::move(transports[i]), nullptr, i, count);
  return nullptr;
}

tsr_status_t tsr_comm_unique_id(tsr_comm_unique_id_t *out_id) {
  static const char *kCall = "tsr_comm_unique_id";
  TSR_RETURN_IF_ERROR(checkPointer(kCall, "out_id", out_id));
  return annotate(kCall, makeUniqueId(out_id));
}

tsr_status_t tsr_comm_create_rank(tsr_device_t device, const tsr_comm_unique_id_t *id,
                                  uint32_t size, uint32_t rank, tsr_comm_t *out_comm) {
  static const char *kCall = "tsr_comm_create_rank";
  TSR_RETURN_IF_ERROR(checkPointer(kCall, "out_comm", out_comm));
  *out_comm = nullptr;
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "device", device));
  TSR_RETURN_IF_ERROR(checkPointer(kCall, "id", id));
  if (size == 0)
    return TSR_FAIL(TSR_INVALID_ARGUMENT, "%s: size is 0", kCall);
  if (rank >= size)
    return TSR_FAIL(TSR_OUT_OF_RANGE, "%s: rank %u is not below size %u", kCall, rank, size);
  std::unique_ptr<Transport> transport;
  TSR_RETURN_IF_ERROR(annotate(
      kCall, makeShmTransport(*id, size, rank, deadlineAfter(defaultTimeoutNs()), &transport)));
  *out_comm = newComm(device, std::move(transport), nullptr, rank, size);
  return nullptr;
}

tsr_status_t tsr_comm_create_with_transport(tsr_device_t device,
                                            const tsr_comm_transport_v1 *transport,
                                            void *transport_ctx, tsr_comm_t *out_comm) {
  static const char *kCall = "tsr_comm_create_with_transport";
  // The communicator owns transport_ctx even when the call fails.
  auto fail = [&](tsr_status_t status) {
    if (transport && transport->destroy)
      transport->destroy(transport_ctx);
    return status;
  };
  if (tsr_status_t s = checkPointer(kCall, "out_comm", out_comm))
    return fail(s);
  *out_comm = nullptr;
  if (tsr_status_t s = checkHandle(kCall, "device", device))
    return fail(s);
  if (tsr_status_t s = checkPointer(kCall, "transport", transport))
    return fail(s);
  std::unique_ptr<Transport> t;
  // makeTableTransport takes ctx over (destroy is called also on failure).
  TSR_RETURN_IF_ERROR(annotate(kCall, makeTableTransport(transport, transport_ctx, &t)));
  const uint32_t rank = t->rank(), size = t->size();
  *out_comm = newComm(device, std::move(t), nullptr, rank, size);
  return nullptr;
}

tsr_status_t tsr_comm_split(tsr_comm_t comm, int32_t color, int32_t key, tsr_comm_t *out_comm) {
  static const char *kCall = "tsr_comm_split";
  TSR_RETURN_IF_ERROR(checkPointer(kCall, "out_comm", out_comm));
  *out_comm = nullptr;
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "comm", comm));
  if (color < TSR_COMM_SPLIT_NOCOLOR)
    return TSR_FAIL(TSR_INVALID_ARGUMENT,
                    "%s: color %d is negative (use TSR_COMM_SPLIT_NOCOLOR to opt out)", kCall,
                    color);
  if (!comm->transport)
    return TSR_FAIL(TSR_UNIMPLEMENTED,
                    "%s: communicators on a native channel (device '%s') cannot split yet", kCall,
                    comm->device->info.name);
  std::unique_ptr<Transport> sub;
  TSR_RETURN_IF_ERROR(annotate(
      kCall, comm->transport->split(color, key, deadlineAfter(comm->timeoutNs.load()), &sub)));
  if (!sub)
    return nullptr;
  const uint32_t rank = sub->rank(), size = sub->size();
  *out_comm = newComm(comm->device, std::move(sub), nullptr, rank, size);
  return nullptr;
}

void tsr_comm_retain(tsr_comm_t comm) { retainHandle(comm, ObjectKind::Comm, "tsr_comm_retain"); }

void tsr_comm_release(tsr_comm_t comm) {
  releaseHandle(comm, ObjectKind::Comm, "tsr_comm_release");
}

tsr_status_t tsr_comm_rank(tsr_comm_t comm, uint32_t *out_rank) {
  static const char *kCall = "tsr_comm_rank";
  TSR_RETURN_IF_ERROR(checkPointer(kCall, "out_rank", out_rank));
  *out_rank = 0;
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "comm", comm));
  *out_rank = comm->rank;
  return nullptr;
}

tsr_status_t tsr_comm_size(tsr_comm_t comm, uint32_t *out_size) {
  static const char *kCall = "tsr_comm_size";
  TSR_RETURN_IF_ERROR(checkPointer(kCall, "out_size", out_size));
  *out_size = 0;
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "comm", comm));
  *out_size = comm->size;
  return nullptr;
}

tsr_status_t tsr_comm_device(tsr_comm_t comm, tsr_device_t *out_device) {
  static const char *kCall = "tsr_comm_device";
  TSR_RETURN_IF_ERROR(checkPointer(kCall, "out_device", out_device));
  *out_device = nullptr;
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "comm", comm));
  // The comm keeps its device alive, but a device whose public references are all gone is
  // poisoned: handing it out again would make a released handle live.
  if (!comm->device->isLive())
    return TSR_FAIL(TSR_FAILED_PRECONDITION,
                    "%s: the communicator's device '%s' was released by the caller", kCall,
                    comm->device->info.name);
  comm->device->retainPublic();
  *out_device = comm->device;
  return nullptr;
}

tsr_status_t tsr_comm_transport_name(tsr_comm_t comm, const char **out_name) {
  static const char *kCall = "tsr_comm_transport_name";
  TSR_RETURN_IF_ERROR(checkPointer(kCall, "out_name", out_name));
  *out_name = nullptr;
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "comm", comm));
  *out_name = comm->transport ? comm->transport->name() : "native";
  return nullptr;
}

tsr_status_t tsr_comm_set_timeout(tsr_comm_t comm, uint64_t timeout_ns) {
  static const char *kCall = "tsr_comm_set_timeout";
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "comm", comm));
  comm->timeoutNs.store(timeout_ns);
  return nullptr;
}

tsr_status_t tsr_comm_abort(tsr_comm_t comm) {
  static const char *kCall = "tsr_comm_abort";
  TSR_RETURN_IF_ERROR(checkHandle(kCall, "comm", comm));
  comm->aborted.store(true);
  if (comm->transport)
    comm->transport->abort();
  if (comm->channel && comm->device->table().channel_abort)
    comm->device->table().channel_abort(comm->device->handle, comm->channel);
  return nullptr;
}

tsr_status_t tsr_comm_all_reduce(tsr_comm_t comm, tsr_stream_t stream, tsr_buffer_t send,
                                 uint64_t send_offset, tsr_buffer_t recv, uint64_t recv_offset,
                                 uint64_t count, tsr_type_t type, tsr_reduce_op_t op) {
  return enqueueOp("tsr_comm_all_reduce", comm, stream,
                   {OpKind::AllReduce, send, send_offset, recv, recv_offset, count, type, op, 0});
}

tsr_status_t tsr_comm_all_gather(tsr_comm_t comm, tsr_stream_t stream, tsr_buffer_t send,
                                 uint64_t send_offset, tsr_buffer_t recv, uint64_t recv_offset,
                                 uint64_t count, tsr_type_t type) {
  return enqueueOp(
      "tsr_comm_all_gather", comm, stream,
      {OpKind::AllGather, send, send_offset, recv, recv_offset, count, type, TSR_REDUCE_SUM, 0});
}

tsr_status_t tsr_comm_reduce_scatter(tsr_comm_t comm, tsr_stream_t stream, tsr_buffer_t send,
                                     uint64_t send_offset, tsr_buffer_t recv, uint64_t recv_offset,
                                     uint64_t count, tsr_type_t type, tsr_reduce_op_t op) {
  return enqueueOp(
      "tsr_comm_reduce_scatter", comm, stream,
      {OpKind::ReduceScatter, send, send_offset, recv, recv_offset, count, type, op, 0});
}

tsr_status_t tsr_comm_broadcast(tsr_comm_t comm, tsr_stream_t stream, tsr_buffer_t send,
                                uint64_t send_offset, tsr_buffer_t recv, uint64_t recv_offset,
                                uint64_t count, tsr_type_t type, uint32_t root) {
  return enqueueOp(
      "tsr_comm_broadcast", comm, stream,
      {OpKind::Broadcast, send, send_offset, recv, recv_offset, count, type, TSR_REDUCE_SUM, root});
}

tsr_status_t tsr_comm_reduce(tsr_comm_t comm, tsr_stream_t stream, tsr_buffer_t send,
                             uint64_t send_offset, tsr_buffer_t recv, uint64_t recv_offset,
                             uint64_t count, tsr_type_t type, tsr_reduce_op_t op, uint32_t root) {
  return enqueueOp("tsr_comm_reduce", comm, stream,
                   {OpKind::Reduce, send, send_offset, recv, recv_offset, count, type, op, root});
}

tsr_status_t tsr_comm_all_to_all(tsr_comm_t comm, tsr_stream_t stream, tsr_buffer_t send,
                                 uint64_t send_offset, tsr_buffer_t recv, uint64_t recv_offset,
                                 uint64_t count, tsr_type_t type) {
  return enqueueOp(
      "tsr_comm_all_to_all", comm, stream,
      {OpKind::AllToAll, send, send_offset, recv, recv_offset, count, type, TSR_REDUCE_SUM, 0});
}

tsr_status_t tsr_comm_send(tsr_comm_t comm, tsr_stream_t stream, tsr_buffer_t buffer,
                           uint64_t offset, uint64_t count, tsr_type_t type, uint32_t peer) {
  return enqueueOp("tsr_comm_send", comm, stream,
                   {OpKind::Send, buffer, offset, nullptr, 0, count, type, TSR_REDUCE_SUM, peer});
}

tsr_status_t tsr_comm_recv(tsr_comm_t comm, tsr_stream_t stream, tsr_buffer_t buffer,
                           uint64_t offset, uint64_t count, tsr_type_t type, uint32_t peer) {
  return enqueueOp("tsr_comm_recv", comm, stream,
                   {OpKind::Recv, nullptr, 0, buffer, offset, count, type, TSR_REDUCE_SUM, peer});
}

} // extern "C"
