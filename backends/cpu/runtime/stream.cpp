// CPU streams: a worker thread per stream that runs an in-order queue (a thread that
// synchronizes runs the queued items itself, still one at a time and in order), and the stream
// entry points (fill, copies, launch, synchronize, query, set_timeout) that enqueue into it.
// A launch's kernel fault or deadline is kept on the stream until a synchronize reports it.
//
// Every enqueue returns before its work runs and copies everything it needs from the
// caller's arguments. Must never run two items of one stream at once or out of order.
#include "backends/cpu/runtime/entry_points.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <new>

namespace tessera::cpu {

CpuStream::CpuStream() : worker_([this] { run(); }) {}

CpuStream::~CpuStream() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  workCv_.notify_one();
  worker_.join();
}

void CpuStream::enqueue(std::function<void()> work) {
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    wake = queue_.empty() && !deferred_;
    queue_.push_back(std::move(work));
    ++submitted_;
  }
  // Only the first item wakes the worker: with items queued it is awake already, or asleep
  // because a synchronizing thread runs one, which wakes it afterwards (runFront). A wake-up
  // is a syscall and, on a busy host, a context switch per enqueue. In a deferred span none
  // does: the caller's synchronize runs the items, or setDeferred(false) hands them over.
  if (wake)
    workCv_.notify_one();
}

void CpuStream::run() {
  keepSubnormals(); // kernels run on this thread too (TSR_FEATURE_DENORM_PRESERVE)
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    // busy_: a synchronizing thread runs an item; the next one must wait for it (in order).
    // deferred_: the items are the synchronizing caller's (a worker that happens to be awake,
    // or starts up, must not take them), until the span ends or the stream is destroyed.
    workCv_.wait(lock, [this] {
      return (stopping_ && queue_.empty()) ||
             (!queue_.empty() && !busy_ && (!deferred_ || stopping_));
    });
    if (queue_.empty())
      return; // stopping, and everything enqueued has run
    runFront(lock, true);
  }
}

void CpuStream::runFront(std::unique_lock<std::mutex> &lock, bool onWorker) {
  std::function<void()> work = std::move(queue_.front());
  queue_.pop_front();
  busy_ = true;
  lock.unlock();
  work();
  work = nullptr; // drop captured state before reporting completion
  lock.lock();
  busy_ = false;
  ++completed_;
  // Only when some synchronize's target is reached: a waiter woken per item would find the
  // next one running and sleep again (a futex round trip each, on the core the kernels use).
  if (completed_ >= wakeAt_) {
    wakeAt_ = UINT64_MAX;
    idleCv_.notify_all();
  }
  // The worker may have skipped the next item (or its exit) while this one ran on a
  // synchronizing thread. That thread runs the next item itself as long as it waits, and
  // hands the rest to the worker when it leaves (synchronize): waking the worker here would
  // cost a futex wake-up and, on a busy host, a context switch per item for nothing.
  if (onWorker && (!queue_.empty() || stopping_))
    workCv_.notify_one();
}

void CpuStream::synchronize() {
  std::unique_lock<std::mutex> lock(mutex_);
  uint64_t target = submitted_;
  while (completed_ < target) {
    // The caller blocks anyway: it runs the queued items itself, in order, rather than
    // waiting for the worker to wake up for each (two thread hand-offs per small launch,
    // which dominated small graphs' run time). Enqueue still returns before the work runs.
    if (!busy_ && !queue_.empty()) {
      SubnormalScope keep; // this thread's MXCSR is the caller's: kernels must keep subnormals
      runFront(lock, false);
      continue;
    }
    // wakeAt_ is the smallest target of the waiting threads; each re-registers after a wake.
    wakeAt_ = std::min(wakeAt_, target);
    idleCv_.wait(lock);
  }
  // Items enqueued after `target` (by other threads) are the worker's again (see runFront).
  if (!busy_ && (!queue_.empty() || stopping_))
    workCv_.notify_one();
}

void CpuStream::setDeferred(bool deferred) {
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    deferred_ = deferred;
    wake = !deferred && !busy_ && !queue_.empty();
  }
  if (wake) // what the span left queued runs without a synchronize from now on
    workCv_.notify_one();
}

bool CpuStream::idle() {
  std::lock_guard<std::mutex> lock(mutex_);
  return completed_ == submitted_;
}

void CpuStream::setFault(tsr_status_t status) {
  if (!status)
    return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!fault_)
    fault_ = Fault{tsr_status_code(status), tsr_status_message(status)};
  tsr_status_free(status);
}

tsr_status_t CpuStream::takeFault() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!fault_)
    return nullptr;
  tsr_status_t status = fault_->status();
  fault_.reset();
  return status;
}

std::optional<Fault> CpuStream::peekFault() {
  std::lock_guard<std::mutex> lock(mutex_);
  return fault_;
}

namespace {

char *bytes(tsr_drv_buffer_t buffer, uint64_t offset) {
  return static_cast<char *>(as<CpuBuffer>(buffer)->data) + offset;
}

void fillPattern(char *dst, uint64_t length, uint32_t pattern, uint32_t patternSize) {
  if (patternSize == 1) {
    std::memset(dst, int(pattern & 0xff), size_t(length));
    return;
  }
  for (uint64_t i = 0; i < length; i += patternSize)
    std::memcpy(dst + i, &pattern, patternSize);
}

} // namespace

namespace {
// Enqueueing allocates (the closure, the queue node): out of memory becomes a status here,
// never an exception crossing the C ABI.
template <typename F> tsr_status_t tryEnqueue(tsr_drv_stream_t stream, const char *what, F &&work) {
  try {
    as<CpuStream>(stream)->enqueue(std::function<void()>(std::forward<F>(work)));
    return nullptr;
  } catch (const std::bad_alloc &) {
    return tsr_status_make(TSR_RESOURCE_EXHAUSTED, "cpu driver: out of host memory enqueueing %s",
                           what);
  }
}
} // namespace

tsr_status_t streamCreate(tsr_drv_device_t, tsr_drv_stream_t *out_stream) {
  *out_stream = handleOf<tsr_drv_stream_t>(new CpuStream);
  return nullptr;
}

void streamDestroy(tsr_drv_device_t, tsr_drv_stream_t stream) { delete as<CpuStream>(stream); }

tsr_status_t streamFill(tsr_drv_device_t, tsr_drv_stream_t stream, tsr_drv_buffer_t buffer,
                        uint64_t offset, uint64_t length, uint32_t pattern, uint32_t pattern_size) {
  char *dst = bytes(buffer, offset);
  return tryEnqueue(stream, "a fill", [=] { fillPattern(dst, length, pattern, pattern_size); });
}

tsr_status_t streamCopyH2D(tsr_drv_device_t, tsr_drv_stream_t stream, const void *src,
                           tsr_drv_buffer_t dst, uint64_t dst_offset, uint64_t length) {
  char *to = bytes(dst, dst_offset);
  return tryEnqueue(stream, "a copy", [=] { std::memcpy(to, src, size_t(length)); });
}

tsr_status_t streamCopyD2H(tsr_drv_device_t, tsr_drv_stream_t stream, tsr_drv_buffer_t src,
                           uint64_t src_offset, void *dst, uint64_t length) {
  const char *from = bytes(src, src_offset);
  return tryEnqueue(stream, "a copy", [=] { std::memcpy(dst, from, size_t(length)); });
}

tsr_status_t streamCopyD2D(tsr_drv_device_t, tsr_drv_stream_t stream, tsr_drv_buffer_t src,
                           uint64_t src_offset, tsr_drv_buffer_t dst, uint64_t dst_offset,
                           uint64_t length) {
  const char *from = bytes(src, src_offset);
  char *to = bytes(dst, dst_offset);
  return tryEnqueue(stream, "a copy", [=] { std::memcpy(to, from, size_t(length)); });
}

tsr_status_t streamLaunch(tsr_drv_device_t device, tsr_drv_stream_t stream, tsr_drv_kernel_t kernel,
                          const uint32_t grid[3], const uint32_t workgroup[3],
                          const tsr_drv_arg_t *args, uint32_t arg_count) {
  CpuDevice *dev = as<CpuDevice>(device);
  const CpuKernel *k = as<CpuKernel>(kernel);
  if (k->check)
    if (tsr_status_t st = k->check(*k, grid, workgroup, args, arg_count))
      return st;
  // One 8-byte slot per argument: a buffer's data pointer or a scalar's bits; and the bytes
  // of each buffer view, which bound robust and checked accesses.
  std::vector<uint64_t> slots, viewBytes;
  try {
    slots.assign(arg_count, 0);
    viewBytes.assign(arg_count, 0);
  } catch (const std::bad_alloc &) {
    return tsr_status_make(TSR_RESOURCE_EXHAUSTED, "cpu driver: out of host memory for a launch");
  }
  for (uint32_t i = 0; i < arg_count; ++i) {
    if (args[i].kind == TSR_TYPE_BUFFER) {
      void *pointer = bytes(args[i].value.buffer.buf, args[i].value.buffer.offset);
      std::memcpy(&slots[i], &pointer, sizeof(pointer));
      viewBytes[i] = args[i].value.buffer.length;
      continue;
    }
    std::memcpy(&slots[i], &args[i].value, sizeof(uint64_t));
  }
  std::array<uint32_t, 3> g = {grid[0], grid[1], grid[2]};
  std::array<uint32_t, 3> wg = {workgroup[0], workgroup[1], workgroup[2]};
  // The pointer table is built in the enqueue thread (in the same allocation as the slots'
  // closure), so the worker never allocates.
  std::vector<void *> pointers;
  try {
    pointers.resize(slots.size());
  } catch (const std::bad_alloc &) {
    return tsr_status_make(TSR_RESOURCE_EXHAUSTED, "cpu driver: out of host memory for a launch");
  }
  CpuStream *s = as<CpuStream>(stream);
  uint64_t timeoutNs = s->timeoutNs.load(std::memory_order_relaxed);
  return tryEnqueue(stream, "a launch",
                    [dev, k, g, wg, s, timeoutNs, slots = std::move(slots),
                     viewBytes = std::move(viewBytes), pointers = std::move(pointers)]() mutable {
                      for (size_t i = 0; i < slots.size(); ++i)
                        pointers[i] = &slots[i];
                      s->setFault(runLaunch(*dev, *k, g.data(), wg.data(), pointers.data(),
                                            viewBytes.data(), timeoutNs));
                    });
}

tsr_status_t streamSynchronize(tsr_drv_device_t, tsr_drv_stream_t stream) {
  CpuStream *s = as<CpuStream>(stream);
  s->synchronize();
  return s->takeFault(); // once: later work on the stream runs and reports normally
}

tsr_status_t streamSetTimeout(tsr_drv_device_t, tsr_drv_stream_t stream, uint64_t timeout_ns) {
  as<CpuStream>(stream)->timeoutNs.store(timeout_ns, std::memory_order_relaxed);
  return nullptr;
}

tsr_status_t streamSetDeferred(tsr_drv_device_t, tsr_drv_stream_t stream, bool deferred) {
  as<CpuStream>(stream)->setDeferred(deferred);
  return nullptr;
}

tsr_status_t streamQuery(tsr_drv_device_t, tsr_drv_stream_t stream, bool *out_idle) {
  *out_idle = as<CpuStream>(stream)->idle();
  return nullptr;
}

} // namespace tessera::cpu
