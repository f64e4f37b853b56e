// The shm transport's segment: rendezvous (create-or-join by name), the layout, unlinking
// once every rank has it mapped, and the slow half of the wait loop (abort, peers that gave
// up or died, the deadline; the futex sleep and wake). See shm_segment.h.
//
// Must never leave a segment name behind once the rendezvous ended (completed or failed), so
// that a kill -9 later leaks nothing: the mapping dies with the last process.
#include "hal/src/comm/shm_segment.h"
#include "hal/src/validation.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

namespace tessera::hal::comm::shm {
namespace {

constexpr uint64_t kDefaultHalfBytes = 4ull << 20;
constexpr uint64_t kMaxP2pBytes = 1ull << 20;

uint64_t roundUp(uint64_t value, uint64_t to) { return (value + to - 1) / to * to; }

/// One half of a rank's data slot: TESSERA_COMM_SHM_SLOT_BYTES (tests make it small so that
/// small messages take many pieces), at least 4 KiB.
uint64_t halfBytesFromEnv() {
  const char *env = std::getenv("TESSERA_COMM_SHM_SLOT_BYTES");
  if (!env || !*env)
    return kDefaultHalfBytes;
  uint64_t value = std::strtoull(env, nullptr, 10);
  return roundUp(value < 4096 ? 4096 : value, 64);
}

uint64_t pidNamespace() {
  struct stat st {};
  return stat("/proc/self/ns/pid", &st) == 0 ? uint64_t(st.st_ino) : 0;
}

void sleepNs(long ns) {
  timespec ts{0, ns};
  nanosleep(&ts, nullptr);
}

tsr_status_t parseId(const tsr_comm_unique_id_t &id, std::string *name) {
  IdBlob blob;
  std::memcpy(&blob, id.internal, sizeof(blob));
  size_t len = strnlen(blob.name, sizeof(blob.name));
  if (blob.magic != kMagic || blob.version != kVersion || len == sizeof(blob.name) ||
      std::strncmp(blob.name, "/tessera-", 9) != 0)
    return TSR_FAIL(TSR_INVALID_ARGUMENT,
                    "tsr_comm_create_rank: id is not a unique id made by tsr_comm_unique_id "
                    "(version %u)",
                    kVersion);
  *name = std::string(blob.name, len);
  return nullptr;
}

} // namespace

std::string rankList(const std::vector<uint32_t> &ranks) {
  std::string out;
  for (uint32_t r : ranks)
    out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

Segment::~Segment() {
  if (ranks_) {
    self().left.store(1, std::memory_order_release);
    notify();
  }
  if (base_)
    munmap(base_, mapped_);
  if (!unlinked_ && !name_.empty())
    shm_unlink(name_.c_str());
}

tsr_status_t Segment::join(const tsr_comm_unique_id_t &id, uint32_t size, uint32_t rank,
                           Deadline deadline, std::unique_ptr<Segment> *out) {
  std::unique_ptr<Segment> seg(new Segment());
  TSR_RETURN_IF_ERROR(parseId(id, &seg->name_));
  if (size == 0 || rank >= size)
    return TSR_FAIL(TSR_INVALID_ARGUMENT, "tsr_comm_create_rank: rank %u is not below size %u",
                    rank, size);
  const char *name = seg->name_.c_str();
  int fd = -1;
  bool creator = false;
  // The first rank to arrive creates and sizes the segment; the others retry until it exists
  // and the creator marked it ready.
  while (fd < 0) {
    fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd >= 0) {
      creator = true;
      break;
    }
    if (errno != EEXIST)
      return TSR_FAIL(TSR_UNAVAILABLE, "tsr_comm_create_rank: shm_open(%s): %s", name,
                      std::strerror(errno));
    fd = shm_open(name, O_RDWR, 0600);
    if (fd >= 0)
      break;
    if (nowNs() >= deadline)
      return TSR_FAIL(TSR_DEADLINE_EXCEEDED, "tsr_comm_create_rank: rank %u could not open %s",
                      rank, name);
    sleepNs(100000);
  }
  uint64_t total = 0;
  if (creator) {
    Header layout{};
    layout.size = size;
    layout.halfBytes = halfBytesFromEnv();
    layout.p2pBytes = std::min(kMaxP2pBytes, layout.halfBytes);
    layout.ranksOffset = roundUp(sizeof(Header), 64);
    layout.dataOffset = roundUp(layout.ranksOffset + size * sizeof(RankState), 4096);
    layout.p2pOffset = layout.dataOffset + 2 * uint64_t(size) * layout.halfBytes;
    total = layout.p2pOffset + uint64_t(size) * layout.p2pBytes;
    // posix_fallocate reserves the pages now, so a full /dev/shm is an error here rather
    // than a SIGBUS on first touch.
    int rc = ftruncate(fd, off_t(total)) == 0 ? posix_fallocate(fd, 0, off_t(total)) : errno;
    if (rc != 0) {
      close(fd);
      shm_unlink(name);
      return TSR_FAIL(TSR_RESOURCE_EXHAUSTED,
                      "tsr_comm_create_rank: cannot reserve %llu bytes of shared memory for "
                      "%u ranks (%s): %s",
                      (unsigned long long)total, size, name, std::strerror(rc));
    }
    void *base = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (base == MAP_FAILED) {
      shm_unlink(name);
      return TSR_FAIL(TSR_RESOURCE_EXHAUSTED, "tsr_comm_create_rank: mmap of %s: %s", name,
                      std::strerror(errno));
    }
    seg->base_ = static_cast<char *>(base);
    seg->mapped_ = total;
    seg->header_ = new (base) Header();
    Header &h = *seg->header_;
    h.magic = kMagic;
    h.version = kVersion;
    h.size = size;
    h.totalBytes = total;
    h.halfBytes = layout.halfBytes;
    h.p2pBytes = layout.p2pBytes;
    h.ranksOffset = layout.ranksOffset;
    h.dataOffset = layout.dataOffset;
    h.p2pOffset = layout.p2pOffset;
    for (uint32_t r = 0; r < size; ++r)
      new (seg->base_ + h.ranksOffset + r * sizeof(RankState)) RankState();
    h.ready.store(kMagic, std::memory_order_release);
  } else {
    // Map only the header until the creator published the layout: its size tells the rest.
    struct stat st {};
    while (fstat(fd, &st) == 0 && uint64_t(st.st_size) < sizeof(Header)) {
      if (nowNs() >= deadline) {
        close(fd);
        return TSR_FAIL(TSR_DEADLINE_EXCEEDED,
                        "tsr_comm_create_rank: rank %u: %s was never initialised", rank, name);
      }
      sleepNs(100000);
    }
    void *head = mmap(nullptr, sizeof(Header), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (head == MAP_FAILED) {
      close(fd);
      return TSR_FAIL(TSR_UNAVAILABLE, "tsr_comm_create_rank: mmap of %s: %s", name,
                      std::strerror(errno));
    }
    auto *h = static_cast<Header *>(head);
    while (h->ready.load(std::memory_order_acquire) != kMagic && nowNs() < deadline)
      sleepNs(100000);
    bool ready = h->ready.load(std::memory_order_acquire) == kMagic;
    uint32_t theirSize = h->size;
    total = h->totalBytes;
    munmap(head, sizeof(Header));
    if (!ready || theirSize != size || uint64_t(st.st_size) < total) {
      close(fd);
      if (!ready)
        return TSR_FAIL(TSR_DEADLINE_EXCEEDED,
                        "tsr_comm_create_rank: rank %u: %s was never initialised", rank, name);
      return TSR_FAIL(TSR_INVALID_ARGUMENT,
                      "tsr_comm_create_rank: rank %u was given size %u, but the group was "
                      "created with size %u",
                      rank, size, theirSize);
    }
    void *base = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (base == MAP_FAILED)
      return TSR_FAIL(TSR_UNAVAILABLE, "tsr_comm_create_rank: mmap of %s: %s", name,
                      std::strerror(errno));
    seg->base_ = static_cast<char *>(base);
    seg->mapped_ = total;
    seg->header_ = static_cast<Header *>(base);
  }
  seg->ranks_ = reinterpret_cast<RankState *>(seg->base_ + seg->header_->ranksOffset);
  seg->rank_ = rank;
  RankState &me = seg->self();
  // One atomic claim: two processes given the same rank must not both pass a check.
  if (me.joined.exchange(1, std::memory_order_acq_rel)) {
    // Not ours: leave the other process's state alone, and the name too (unlinking it would
    // strand the ranks still to come of the group that owns this rank).
    seg->ranks_ = nullptr;
    seg->unlinked_ = true;
    return TSR_FAIL(TSR_INVALID_ARGUMENT, "tsr_comm_create_rank: rank %u joined %s twice", rank,
                    name);
  }
  me.pid = int32_t(getpid());
  me.pidNamespace = pidNamespace();
  // The last rank to map the segment removes its name: from now on only mappings keep it.
  if (seg->header_->joinedCount.fetch_add(1, std::memory_order_acq_rel) + 1 == size) {
    shm_unlink(name);
    seg->unlinked_ = true;
  }
  seg->notify();
  static const std::atomic<bool> notAborted{false};
  Segment &s = *seg;
  TSR_RETURN_IF_ERROR(seg->waitFor(
      [&] { return s.header_->joinedCount.load(std::memory_order_acquire) >= size; },
      [&](uint32_t r) { return !s.state(r).joined.load(std::memory_order_acquire); }, deadline,
      notAborted,
      "tsr_comm_create_rank (rank " + std::to_string(rank) + " of " + std::to_string(size) + ")"));
  *out = std::move(seg);
  return nullptr;
}

bool Segment::peerDead(uint32_t r) const {
  const RankState &st = state(r);
  if (st.pid <= 0 || st.pidNamespace != self().pidNamespace)
    return false; // not joined yet, or another pid namespace: pids mean nothing here
  if (kill(st.pid, 0) == -1 && errno == ESRCH)
    return true;
  // A killed child stays a zombie until its parent reaps it: dead all the same.
  std::string path = "/proc/" + std::to_string(st.pid) + "/stat";
  FILE *f = std::fopen(path.c_str(), "r");
  if (!f) // reaped since the kill() above (the parent waits for its children at any time)
    return kill(st.pid, 0) == -1 && errno == ESRCH;
  char buf[512];
  size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[n] = 0;
  const char *paren = std::strrchr(buf, ')');
  return paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X');
}

tsr_status_t Segment::check(WaitState &w, const std::vector<uint32_t> &waitingOn, Deadline deadline,
                            const std::atomic<bool> &aborted, const std::string &what) const {
  if (aborted.load(std::memory_order_acquire))
    return TSR_FAIL(TSR_ABORTED, "%s: the communicator was aborted on this rank", what.c_str());
  // Which awaited rank left, read before the failure codes: a rank sets its code before it
  // leaves, so a rank seen gone is seen with its code (read the other way round, a peer that
  // failed and left in between would pass for one that merely destroyed its transport).
  uint32_t leftRank = size();
  for (uint32_t r : waitingOn)
    if (leftRank == size() && state(r).left.load(std::memory_order_acquire))
      leftRank = r;
  uint32_t failedRank = size(), code = 0;
  for (uint32_t r = 0; r < size() && code == 0; ++r) {
    code = r == rank_ ? 0 : state(r).failed.load(std::memory_order_acquire);
    failedRank = r;
  }
  uint64_t now = nowNs();
  // Liveness of the awaited ranks every 5 ms. When a peer gave up, most likely on a dead
  // rank, every rank is checked at once and the dead one is named rather than the messenger:
  // this rank may be past the barrier where the dead rank stopped and wait on the peer that
  // failed, and that peer may itself have exited since. Only a rank that died without saying
  // so (no failure code, never left) counts: the others are reported as what they said.
  if (code != 0 || now - w.lastLivenessNs > 5000000) {
    w.lastLivenessNs = now;
    // Death first: a dead rank's flags are final, while a live one may still set them and
    // exit between a read of the flags and the look at /proc.
    auto diedSilently = [&](uint32_t r) {
      const RankState &st = state(r);
      return peerDead(r) && !st.left.load(std::memory_order_acquire) &&
             st.failed.load(std::memory_order_acquire) == 0;
    };
    auto died = [&](uint32_t r) {
      return TSR_FAIL(TSR_DEADLINE_EXCEEDED, "%s: rank %u (pid %d) died", what.c_str(), r,
                      state(r).pid);
    };
    for (uint32_t r : waitingOn)
      if (diedSilently(r))
        return died(r);
    for (uint32_t r = 0; code != 0 && r < size(); ++r)
      if (r != rank_ && diedSilently(r))
        return died(r);
  }
  // A failed or aborted rank ends the communicator for all; one that merely destroyed its
  // transport only fails those still waiting for it.
  if (code != 0)
    return TSR_FAIL(tsr_status_code_t(code), "%s: rank %u left the communicator (%s)", what.c_str(),
                    failedRank, tsr_status_code_name(tsr_status_code_t(code)));
  if (leftRank != size())
    return TSR_FAIL(TSR_ABORTED, "%s: rank %u destroyed its communicator", what.c_str(), leftRank);
  if (now >= deadline)
    return TSR_FAIL(TSR_DEADLINE_EXCEEDED, "%s: timed out waiting for rank(s) %s", what.c_str(),
                    rankList(waitingOn).c_str());
  return nullptr;
}

// The futex protocol: a sleeper counts itself in `sleepers`, reads `wake`, re-checks its
// condition and sleeps only while `wake` is unchanged; a notifier changes its state, bumps
// `wake`, and calls FUTEX_WAKE if anyone sleeps. Sequentially consistent on both sides, so
// either the notifier sees the sleeper or the sleeper sees the new state.
uint32_t Segment::sleepBegin() const {
  header_->sleepers.fetch_add(1, std::memory_order_seq_cst);
  return header_->wake.load(std::memory_order_seq_cst);
}

void Segment::sleepEnd() const { header_->sleepers.fetch_sub(1, std::memory_order_seq_cst); }

void Segment::sleepUntilNotified(uint32_t seen, Deadline deadline) const {
  uint64_t now = nowNs(), wait = 2000000; // wake up every 2 ms for the liveness checks
  if (deadline != kNoDeadline)
    wait = std::min(wait, deadline > now ? deadline - now : 0);
  timespec ts{0, long(wait)};
  // Not FUTEX_PRIVATE: the word is shared between processes.
  syscall(SYS_futex, &header_->wake, FUTEX_WAIT, seen, &ts, nullptr, 0);
}

void Segment::notify() const {
  header_->wake.fetch_add(1, std::memory_order_seq_cst);
  if (header_->sleepers.load(std::memory_order_seq_cst) != 0)
    syscall(SYS_futex, &header_->wake, FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}

} // namespace tessera::hal::comm::shm
