// Vulkan streams and events: batched command recording, timeline-semaphore submission, the
// per-stream completion worker, and the stream entry points (fill, copies, synchronize,
// query, event record / wait). Launch lives in executable.cpp.
//
// Must never let a host copy observe stale data: host-to-device copies snapshot their source
// at enqueue time, so they first wait for earlier device-to-host copies that may write it.
#include "backends/kernel_fault_status.h"
#include "backends/vulkan/runtime/internal.h"

#include <atomic>
#include <cstring>

namespace tessera::vulkan {
namespace {

// A batch is submitted once it holds this many commands or this much staging memory, so
// long enqueue-only sequences keep the device busy and bound host memory.
constexpr uint32_t kMaxBatchCommands = 256;
constexpr uint64_t kMaxBatchStaging = uint64_t(256) << 20;
// How long a cancelled batch may take to reach its next cancellation point (a loop
// back-edge) before the deadline status says it did not stop.
constexpr uint64_t kCancelGraceNs = uint64_t(2000) * 1000000;

VkStream *streamOf(tsr_drv_stream_t s) { return as<VkStream>(s); }

void fullBarrier(const DeviceFns &fn, VkCommandBuffer cmd, VkPipelineStageFlags dstStage,
                 VkAccessFlags dstAccess) {
  VkMemoryBarrier mb = {};
  mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  mb.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT;
  mb.dstAccessMask = dstAccess;
  fn.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, dstStage, 0, 1, &mb, 0,
                          nullptr, 0, nullptr);
}

} // namespace

Timeline::~Timeline() { dev.fn.vkDestroySemaphore(dev.device, sem, nullptr); }

void Timeline::waitFor(uint64_t value) {
  std::unique_lock<std::mutex> lock(mutex);
  cv.wait(lock, [&] { return completed >= value; });
}

bool Timeline::reached(uint64_t value) {
  std::lock_guard<std::mutex> lock(mutex);
  return completed >= value;
}

VkStream::VkStream(VkDevice_ &dev, VkCommandPool pool, std::shared_ptr<Timeline> timeline)
    : dev_(dev), pool_(pool), timeline_(std::move(timeline)), worker_([this] { worker(); }) {}

VkStream::~VkStream() {
  {
    std::lock_guard<std::mutex> lock(stateMutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  worker_.join();
  if (current_) { // recorded but never submitted (the HAL synchronizes first; be safe)
    for (auto &s : current_->staging)
      dev_.destroyBuffer(s);
    for (auto &c : current_->controls)
      dev_.controls.release(c.slot);
  }
  tsr_status_free(error_);
  dev_.fn.vkDestroyCommandPool(dev_.device, pool_, nullptr); // frees every command buffer
}

void VkStream::recycle() {
  std::vector<std::unique_ptr<Batch>> done;
  {
    std::lock_guard<std::mutex> lock(stateMutex_);
    done.swap(done_);
  }
  for (auto &b : done)
    freeCmds_.push_back(b->cmd);
}

tsr_status_t VkStream::recording(Batch **out) {
  if (current_) {
    fullBarrier(dev_.fn, current_->cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT);
    ++current_->commands;
    *out = current_.get();
    return nullptr;
  }
  recycle();
  auto batch = std::make_unique<Batch>();
  if (!freeCmds_.empty()) {
    batch->cmd = freeCmds_.back();
    freeCmds_.pop_back();
  } else {
    VkCommandBufferAllocateInfo ai = {};
    ai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
    ai.commandPool = pool_;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    if (VkResult r = dev_.fn.vkAllocateCommandBuffers(dev_.device, &ai, &batch->cmd))
      return vkStatus("vkAllocateCommandBuffers", r);
  }
  VkCommandBufferBeginInfo bi = {};
  bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  if (VkResult r = dev_.fn.vkBeginCommandBuffer(batch->cmd, &bi)) { // resets it too
    freeCmds_.push_back(batch->cmd);
    return vkStatus("vkBeginCommandBuffer", r);
  }
  batch->commands = 1;
  current_ = std::move(batch);
  *out = current_.get();
  return nullptr;
}

tsr_status_t VkStream::commandDone() {
  if (current_->commands < kMaxBatchCommands && current_->stagingBytes < kMaxBatchStaging)
    return nullptr;
  uint64_t ignored = 0;
  return flush(&ignored);
}

tsr_status_t VkStream::flush(uint64_t *outValue) {
  if (!current_) {
    *outValue = nextValue_;
    return nullptr;
  }
  std::unique_ptr<Batch> b = std::move(current_);
  // Make every write of the batch visible to the host (maps and device-to-host staging).
  fullBarrier(dev_.fn, b->cmd, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
  VkResult r = dev_.fn.vkEndCommandBuffer(b->cmd);
  b->value = ++nextValue_;
  b->waits = std::move(waits_);
  waits_.clear();
  if (currentHostReads_)
    lastHostRead_ = b->value;
  currentHostReads_ = false;

  std::vector<VkSemaphore> waitSems;
  std::vector<uint64_t> waitValues;
  std::vector<VkPipelineStageFlags> waitStages;
  if (b->value > 1) { // the previous batch of this stream: batches run in order
    waitSems.push_back(timeline_->sem);
    waitValues.push_back(b->value - 1);
  }
  for (const auto &[tl, v] : b->waits) {
    waitSems.push_back(tl->sem);
    waitValues.push_back(v);
  }
  waitStages.assign(waitSems.size(), VK_PIPELINE_STAGE_ALL_COMMANDS_BIT);
  VkTimelineSemaphoreSubmitInfo ts = {};
  ts.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO;
  ts.waitSemaphoreValueCount = uint32_t(waitValues.size());
  ts.pWaitSemaphoreValues = waitValues.data();
  ts.signalSemaphoreValueCount = 1;
  ts.pSignalSemaphoreValues = &b->value;
  VkSubmitInfo si = {};
  si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  si.pNext = &ts;
  si.waitSemaphoreCount = uint32_t(waitSems.size());
  si.pWaitSemaphores = waitSems.data();
  si.pWaitDstStageMask = waitStages.data();
  si.commandBufferCount = 1;
  si.pCommandBuffers = &b->cmd;
  si.signalSemaphoreCount = 1;
  si.pSignalSemaphores = &timeline_->sem;
  tsr_status_t failure = nullptr;
  if (r != VK_SUCCESS) {
    failure = vkStatus("vkEndCommandBuffer", r);
  } else {
    std::lock_guard<std::mutex> lock(dev_.queueMutex);
    r = dev_.fn.vkQueueSubmit(dev_.queue, 1, &si, VK_NULL_HANDLE);
    if (r != VK_SUCCESS)
      failure = vkStatus("vkQueueSubmit", r);
  }
  if (failure) {
    // The batch will never run: signal its value from the host so waits end, drop its host
    // actions, and report the failure at the next synchronize.
    b->onDone.clear();
    VkSemaphoreSignalInfo sig = {};
    sig.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO;
    sig.semaphore = timeline_->sem;
    sig.value = b->value;
    dev_.fn.vkSignalSemaphore(dev_.device, &sig);
  }
  {
    std::lock_guard<std::mutex> lock(stateMutex_);
    if (failure && !error_)
      error_ = failure;
    else
      tsr_status_free(failure);
    inflight_.push_back(std::move(b));
  }
  cv_.notify_all();
  *outValue = nextValue_;
  return nullptr;
}

void VkStream::worker() {
  for (;;) {
    Batch *b = nullptr;
    {
      std::unique_lock<std::mutex> lock(stateMutex_);
      cv_.wait(lock, [&] { return stopping_ || !inflight_.empty(); });
      if (inflight_.empty())
        return; // stopping, and everything submitted has completed
      b = inflight_.front().get();
    }
    bool completed = false;
    tsr_status_t failure = awaitBatch(*b, &completed);
    // A kernel fault (the batch completed) is also kept for event_synchronize.
    bool fault = failure && completed;
    tsr_status_code_t faultCode = fault ? tsr_status_code(failure) : TSR_OK;
    std::string faultMessage = fault ? tsr_status_message(failure) : "";
    // A kernel fault or a deadline leaves defined outputs (robust semantics): the batch's
    // copies still run. A device error does not.
    if (completed)
      for (auto &action : b->onDone)
        action();
    for (auto &s : b->staging)
      dev_.destroyBuffer(s);
    for (auto &c : b->controls) // the batch completed: the device is done with them
      dev_.controls.release(c.slot);
    b->staging.clear();
    b->controls.clear();
    b->deadlineNs = 0;
    b->unbounded = false;
    b->firstKernel.clear();
    b->launches = 0;
    b->onDone.clear();
    b->waits.clear();
    // Read before the batch is handed over: once it is in done_, the recording thread may
    // recycle (free) it at any time, and a stale read here once marked a later batch done.
    uint64_t value = b->value;
    {
      std::lock_guard<std::mutex> lock(stateMutex_);
      if (failure && !error_)
        error_ = failure;
      else
        tsr_status_free(failure);
      done_.push_back(std::move(inflight_.front()));
      inflight_.pop_front();
    }
    {
      std::lock_guard<std::mutex> lock(timeline_->mutex);
      if (fault && timeline_->faultValue == 0) {
        timeline_->faultValue = value;
        timeline_->faultCode = faultCode;
        timeline_->faultMessage = std::move(faultMessage);
      }
      timeline_->completed = value;
    }
    timeline_->cv.notify_all();
  }
}

tsr_status_t VkStream::awaitBatch(Batch &b, bool *completed) {
  auto wait = [&](uint64_t ns) {
    VkSemaphoreWaitInfo wi = {};
    wi.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO;
    wi.semaphoreCount = 1;
    wi.pSemaphores = &timeline_->sem;
    wi.pValues = &b.value;
    return dev_.fn.vkWaitSemaphores(dev_.device, &wi, ns);
  };
  // The deadline runs from when this batch is the stream's oldest unfinished one.
  VkResult r = wait(b.unbounded || b.deadlineNs == 0 ? UINT64_MAX : b.deadlineNs);
  bool cancelled = r == VK_TIMEOUT;
  bool stopped = true;
  if (cancelled) {
    // Every dynamic loop of the batch's kernels polls this flag and leaves the kernel.
    for (auto &c : b.controls)
      std::atomic_ref<uint32_t>(c.slot.words[0]).store(1, std::memory_order_release);
    r = wait(kCancelGraceNs);
    if (r == VK_TIMEOUT) { // never free what the device may still use: wait it out
      stopped = false;
      r = wait(UINT64_MAX);
    }
  }
  if (r != VK_SUCCESS) // VK_ERROR_DEVICE_LOST among others: a status, never success
    return vkStatus("vkWaitSemaphores", r);
  *completed = true;
  for (auto &c : b.controls) {
    tsr_kernel_fault f;
    std::memcpy(&f, c.slot.words + 1, sizeof f);
    if (f.kind != TSR_FAULT_NONE)
      return kernelFaultStatus(c.kernel.c_str(), f, c.timeoutNs);
  }
  if (!cancelled)
    return nullptr;
  // Cancelled, yet no kernel reached a cancellation point: it ended late, or never did.
  // A kernel without dynamic loops has no cancellation point: llvmpipe runs every invocation.
  std::string who = b.firstKernel.empty() ? "a kernel" : "@" + b.firstKernel;
  if (b.launches > 1)
    who = "a batch of " + std::to_string(b.launches) + " launches from " + who;
  return tsr_status_make(
      TSR_DEADLINE_EXCEEDED, "vulkan: %s ran past its deadline of %.3f ms%s", who.c_str(),
      double(b.deadlineNs) / 1e6,
      stopped ? ""
              : " and did not stop when cancelled (only its `while` loops and `for` loops with "
                "bounds or step not constant poll the flag)");
}

void VkStream::addWait(const TimelinePoint &p) {
  if (p.first == timeline_ || p.second == 0)
    return; // in order already / nothing recorded
  waits_.push_back(p);
  hostDeps_.push_back(p);
}

tsr_status_t VkStream::hostSync() {
  if (currentHostReads_) {
    uint64_t v = 0;
    if (tsr_status_t st = flush(&v))
      return st;
  }
  timeline_->waitFor(lastHostRead_);
  for (const auto &[tl, v] : hostDeps_)
    tl->waitFor(v);
  hostDeps_.clear();
  return nullptr;
}

tsr_status_t VkStream::takeError() {
  std::lock_guard<std::mutex> lock(stateMutex_);
  tsr_status_t st = error_;
  error_ = nullptr;
  if (st) { // reported now: events recorded later no longer report it
    std::lock_guard<std::mutex> tl(timeline_->mutex);
    timeline_->faultValue = 0;
  }
  return st;
}

// --- entry points ----------------------------------------------------------------------------

tsr_status_t streamCreate(tsr_drv_device_t device, tsr_drv_stream_t *out) {
  auto *dev = as<VkDevice_>(device);
  VkSemaphoreTypeCreateInfo ti = {};
  ti.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO;
  ti.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  VkSemaphoreCreateInfo si = {};
  si.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO;
  si.pNext = &ti;
  VkSemaphore sem = VK_NULL_HANDLE;
  if (VkResult r = dev->fn.vkCreateSemaphore(dev->device, &si, nullptr, &sem))
    return vkStatus("vkCreateSemaphore", r);
  auto timeline = std::make_shared<Timeline>(*dev, sem);
  VkCommandPoolCreateInfo pi = {};
  pi.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pi.queueFamilyIndex = dev->phys->queueFamily;
  VkCommandPool pool = VK_NULL_HANDLE;
  if (VkResult r = dev->fn.vkCreateCommandPool(dev->device, &pi, nullptr, &pool))
    return vkStatus("vkCreateCommandPool", r);
  *out = handleOf<tsr_drv_stream_t>(new VkStream(*dev, pool, std::move(timeline)));
  return nullptr;
}

void streamDestroy(tsr_drv_device_t, tsr_drv_stream_t stream) { delete streamOf(stream); }

tsr_status_t streamFill(tsr_drv_device_t device, tsr_drv_stream_t stream, tsr_drv_buffer_t buffer,
                        uint64_t offset, uint64_t length, uint32_t pattern, uint32_t patternSize) {
  auto *dev = as<VkDevice_>(device);
  auto *s = streamOf(stream);
  auto *buf = as<VkBufferObj>(buffer);
  uint32_t word = pattern;
  if (patternSize == 1)
    word = (pattern & 0xffu) * 0x01010101u;
  else if (patternSize == 2)
    word = (pattern & 0xffffu) * 0x00010001u;
  // vkCmdFillBuffer needs 4-byte aligned offset and size: fill the aligned middle, copy the
  // (at most 3-byte) ends from a staging buffer holding the pattern. The offset is a multiple
  // of the pattern size, so the pattern's phase at any 4-aligned address is 0.
  uint64_t mid = (offset + 3) & ~uint64_t(3);
  uint64_t end = offset + length;
  uint64_t midEnd = end & ~uint64_t(3);
  std::lock_guard<std::mutex> lock(s->mutex);
  Batch *b = nullptr;
  if (tsr_status_t st = s->recording(&b))
    return st;
  if (mid < midEnd)
    dev->fn.vkCmdFillBuffer(b->cmd, buf->buffer, mid, midEnd - mid, word);
  if (mid >= midEnd) { // no aligned middle: the range lies within 4-byte words
    mid = midEnd = end;
  }
  std::vector<std::pair<uint64_t, uint64_t>> ends;
  if (offset < mid)
    ends.push_back({offset, mid - offset});
  if (midEnd < end && midEnd >= mid)
    ends.push_back({midEnd, end - midEnd});
  if (!ends.empty()) {
    VkBufferObj staging;
    if (tsr_status_t st = dev->createStaging(8, &staging))
      return st;
    // The staging word at byte k holds the pattern byte of phase k % 4 (aligned to 0).
    uint32_t words[2] = {word, word};
    std::memcpy(staging.alloc.mapped, words, sizeof words);
    for (const auto &[at, n] : ends) {
      VkBufferCopy c = {at % 4, at, n};
      dev->fn.vkCmdCopyBuffer(b->cmd, staging.buffer, buf->buffer, 1, &c);
    }
    b->staging.push_back(staging);
  }
  return s->commandDone();
}

tsr_status_t streamCopyH2D(tsr_drv_device_t device, tsr_drv_stream_t stream, const void *src,
                           tsr_drv_buffer_t dst, uint64_t dstOffset, uint64_t length) {
  auto *dev = as<VkDevice_>(device);
  auto *s = streamOf(stream);
  std::lock_guard<std::mutex> lock(s->mutex);
  if (tsr_status_t st = s->hostSync())
    return st;
  VkBufferObj staging;
  if (tsr_status_t st = dev->createStaging(length, &staging))
    return st;
  std::memcpy(staging.alloc.mapped, src, length);
  Batch *b = nullptr;
  if (tsr_status_t st = s->recording(&b)) {
    dev->destroyBuffer(staging);
    return st;
  }
  VkBufferCopy c = {0, dstOffset, length};
  dev->fn.vkCmdCopyBuffer(b->cmd, staging.buffer, as<VkBufferObj>(dst)->buffer, 1, &c);
  b->staging.push_back(staging);
  b->stagingBytes += length;
  return s->commandDone();
}

tsr_status_t streamCopyD2H(tsr_drv_device_t device, tsr_drv_stream_t stream, tsr_drv_buffer_t src,
                           uint64_t srcOffset, void *dst, uint64_t length) {
  auto *dev = as<VkDevice_>(device);
  auto *s = streamOf(stream);
  std::lock_guard<std::mutex> lock(s->mutex);
  VkBufferObj staging;
  if (tsr_status_t st = dev->createStaging(length, &staging))
    return st;
  Batch *b = nullptr;
  if (tsr_status_t st = s->recording(&b)) {
    dev->destroyBuffer(staging);
    return st;
  }
  VkBufferCopy c = {srcOffset, 0, length};
  dev->fn.vkCmdCopyBuffer(b->cmd, as<VkBufferObj>(src)->buffer, staging.buffer, 1, &c);
  void *from = staging.alloc.mapped;
  b->onDone.push_back([dst, from, length] { std::memcpy(dst, from, length); });
  b->staging.push_back(staging);
  b->stagingBytes += length;
  s->currentHostReads_ = true;
  return s->commandDone();
}

tsr_status_t streamCopyD2D(tsr_drv_device_t device, tsr_drv_stream_t stream, tsr_drv_buffer_t src,
                           uint64_t srcOffset, tsr_drv_buffer_t dst, uint64_t dstOffset,
                           uint64_t length) {
  auto *dev = as<VkDevice_>(device);
  auto *s = streamOf(stream);
  std::lock_guard<std::mutex> lock(s->mutex);
  Batch *b = nullptr;
  if (tsr_status_t st = s->recording(&b))
    return st;
  VkBufferCopy c = {srcOffset, dstOffset, length};
  dev->fn.vkCmdCopyBuffer(b->cmd, as<VkBufferObj>(src)->buffer, as<VkBufferObj>(dst)->buffer, 1,
                          &c);
  return s->commandDone();
}

tsr_status_t streamSynchronize(tsr_drv_device_t, tsr_drv_stream_t stream) {
  auto *s = streamOf(stream);
  uint64_t v = 0;
  {
    std::lock_guard<std::mutex> lock(s->mutex);
    if (tsr_status_t st = s->flush(&v))
      return st;
  }
  s->timeline()->waitFor(v);
  return s->takeError();
}

tsr_status_t streamQuery(tsr_drv_device_t, tsr_drv_stream_t stream, bool *out) {
  auto *s = streamOf(stream);
  uint64_t v = 0;
  {
    std::lock_guard<std::mutex> lock(s->mutex);
    if (tsr_status_t st = s->flush(&v))
      return st;
  }
  *out = s->timeline()->reached(v);
  return nullptr;
}

tsr_status_t streamSetTimeout(tsr_drv_device_t, tsr_drv_stream_t stream, uint64_t timeout_ns) {
  streamOf(stream)->timeoutNs.store(timeout_ns, std::memory_order_relaxed);
  return nullptr;
}

tsr_status_t streamRecordEvent(tsr_drv_device_t, tsr_drv_stream_t stream, tsr_drv_event_t event) {
  auto *s = streamOf(stream);
  auto *e = as<VkEventObj>(event);
  uint64_t v = 0;
  {
    std::lock_guard<std::mutex> lock(s->mutex);
    if (tsr_status_t st = s->flush(&v))
      return st;
  }
  std::lock_guard<std::mutex> lock(e->mutex);
  e->latest = {s->timeline(), v};
  return nullptr;
}

tsr_status_t streamWaitEvent(tsr_drv_device_t, tsr_drv_stream_t stream, tsr_drv_event_t event) {
  auto *s = streamOf(stream);
  auto *e = as<VkEventObj>(event);
  TimelinePoint p;
  {
    std::lock_guard<std::mutex> lock(e->mutex);
    p = e->latest;
  }
  if (!p.first)
    return nullptr; // never recorded: no wait
  std::lock_guard<std::mutex> lock(s->mutex);
  s->addWait(p);
  return nullptr;
}

tsr_status_t eventCreate(tsr_drv_device_t, tsr_drv_event_t *out) {
  *out = handleOf<tsr_drv_event_t>(new VkEventObj);
  return nullptr;
}

void eventDestroy(tsr_drv_device_t, tsr_drv_event_t event) { delete as<VkEventObj>(event); }

tsr_status_t eventSynchronize(tsr_drv_device_t, tsr_drv_event_t event) {
  auto *e = as<VkEventObj>(event);
  TimelinePoint p;
  {
    std::lock_guard<std::mutex> lock(e->mutex);
    p = e->latest;
  }
  if (!p.first)
    return nullptr;
  p.first->waitFor(p.second);
  // A kernel fault of the work before the record, not yet reported by stream synchronize.
  std::lock_guard<std::mutex> lock(p.first->mutex);
  if (p.first->faultValue == 0 || p.first->faultValue > p.second)
    return nullptr;
  return tsr_status_make(p.first->faultCode, "%s", p.first->faultMessage.c_str());
}

tsr_status_t eventQuery(tsr_drv_device_t, tsr_drv_event_t event, bool *out) {
  auto *e = as<VkEventObj>(event);
  std::lock_guard<std::mutex> lock(e->mutex);
  *out = !e->latest.first || e->latest.first->reached(e->latest.second);
  return nullptr;
}

} // namespace tessera::vulkan
