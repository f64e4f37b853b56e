// The shared-memory segment under the shm transport (shm_transport.cpp): its layout, the
// rendezvous that creates or joins it, and the one wait loop every blocking step uses.
//
// Layout (all offsets in the header, so every rank agrees with the creator):
//   Header | RankState[size] | data slots: size x 2 halves of halfBytes | p2p: size x p2pBytes
// A rank writes only its own RankState and slots (a receiver also acknowledges in its
// sender's RankState); it reads everyone's.
//
// Must never wait without a deadline check, and must never touch memory of the segment
// beyond what the creator published (header.totalBytes), so a bad id or a rank count that
// disagrees is an error, not a SIGBUS.
#pragma once

#include "hal/src/comm/transport.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <sched.h>
#include <string>
#include <vector>

namespace tessera::hal::comm::shm {

static_assert(std::atomic<uint64_t>::is_always_lock_free, "shm needs address-free atomics");
static_assert(std::atomic<uint32_t>::is_always_lock_free, "shm needs address-free atomics");

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/// What tsr_comm_unique_id_t holds for this transport.
constexpr uint32_t kMagic = 0x4d485354; // "TSHM"
constexpr uint32_t kVersion = 1;
struct IdBlob {
  uint32_t magic;
  uint32_t version;
  char name[64]; // "/tessera-<32 hex digits>"
};
static_assert(sizeof(IdBlob) <= TSR_COMM_UNIQUE_ID_BYTES, "unique id too small");

/// One rank's state. Cache-line separated so a rank's spinning reads do not bounce the line
/// another rank is writing.
struct alignas(64) RankState {
  std::atomic<uint32_t> joined;
  std::atomic<uint32_t> failed; // 0, or the tsr_status_code_t that ended this rank's use
  std::atomic<uint32_t> left;   // the rank destroyed its transport (a normal end)
  int32_t pid;
  uint64_t pidNamespace; // st_ino of /proc/self/ns/pid: liveness checks only within one
  alignas(64) std::atomic<uint64_t> epoch; // barriers this rank has arrived at
  alignas(64) OpDesc desc[2];              // the op being checked, by op parity
  // Point to point, this rank as the sender: one message in flight at a time (ops of a rank
  // run in order and a send returns only once its receiver took the last piece).
  alignas(64) std::atomic<uint64_t> postSeq; // pieces posted
  std::atomic<uint32_t> postDst;
  uint64_t postBytes;
  OpDesc postDesc;
  alignas(64) std::atomic<uint64_t> ackSeq; // pieces taken (written by the receiver)
  std::atomic<uint32_t> nack;               // the receiver refused: its desc is nackDesc
  OpDesc nackDesc;
};

struct Header {
  uint32_t magic;
  uint32_t version;
  uint32_t size;
  uint32_t reserved;
  uint64_t totalBytes;
  uint64_t halfBytes; // one half of a rank's double-buffered data slot
  uint64_t p2pBytes;  // a rank's point-to-point buffer
  uint64_t ranksOffset, dataOffset, p2pOffset;
  std::atomic<uint32_t> ready; // == magic once the creator initialised everything above
  std::atomic<uint32_t> joinedCount;
  std::atomic<uint32_t> wake;     // the futex word: bumped by notify()
  std::atomic<uint32_t> sleepers; // ranks in a futex wait (notify skips the syscall at 0)
};

/// A mapped, joined segment. Destruction unmaps (and unlinks if the rendezvous never
/// completed, so a failed start leaks nothing).
class Segment {
public:
  ~Segment();
  static tsr_status_t join(const tsr_comm_unique_id_t &id, uint32_t size, uint32_t rank,
                           Deadline deadline, std::unique_ptr<Segment> *out);

  uint32_t size() const { return header_->size; }
  uint32_t rank() const { return rank_; }
  RankState &state(uint32_t r) const { return ranks_[r]; }
  RankState &self() const { return ranks_[rank_]; }
  uint64_t halfBytes() const { return header_->halfBytes; }
  uint64_t p2pBytes() const { return header_->p2pBytes; }
  char *half(uint32_t r, uint32_t which) const {
    return base_ + header_->dataOffset + (2 * uint64_t(r) + which) * header_->halfBytes;
  }
  char *p2p(uint32_t r) const { return base_ + header_->p2pOffset + r * header_->p2pBytes; }

  /// Waits until done() holds. pending(r) says whether rank r is still awaited (named in a
  /// DEADLINE_EXCEEDED message and checked for being alive). Fails with ABORTED when this
  /// rank was aborted (`aborted`), with the peer's code when a peer gave up, with
  /// DEADLINE_EXCEEDED "rank r (pid p) died" for a dead awaited peer, and at `deadline`.
  /// `what` starts every message ("all_reduce #3").
  ///
  /// Spins briefly, yields for kYieldNs, then sleeps on the segment's futex until a peer
  /// changes something (notify()) or 2 ms pass: with four ranks on two cores, a waiting
  /// rank must leave the core to the rank everyone waits for.
  template <typename Done, typename Pending>
  tsr_status_t waitFor(Done done, Pending pending, Deadline deadline,
                       const std::atomic<bool> &aborted, const std::string &what) const {
    for (uint32_t spin = 0; spin < 64; ++spin) {
      if (done())
        return nullptr;
      cpuRelax();
    }
    WaitState w;
    w.start = nowNs();
    std::vector<uint32_t> waitingOn;
    while (!done()) {
      waitingOn.clear();
      for (uint32_t r = 0; r < size(); ++r)
        if (pending(r))
          waitingOn.push_back(r);
      if (tsr_status_t st = check(w, waitingOn, deadline, aborted, what)) {
        // The peer may have finished (and then left) between done() and the check.
        if (!done())
          return st;
        tsr_status_free(st);
        return nullptr;
      }
      if (nowNs() - w.start < kYieldNs) {
        sched_yield();
        continue;
      }
      uint32_t seen = sleepBegin();
      if (!done())
        sleepUntilNotified(seen, deadline);
      sleepEnd();
    }
    return nullptr;
  }

  /// Wakes the ranks sleeping in waitFor; called after every change a peer may wait for
  /// (arrival, barrier counter, p2p post and acknowledgement, failure, leaving).
  void notify() const;

private:
  static constexpr uint64_t kYieldNs = 50000;
  struct WaitState {
    uint64_t start = 0;
    uint64_t lastLivenessNs = 0;
  };
  /// The checks of one waiting step (abort, peers' failures, deaths, deadline); no sleeping.
  tsr_status_t check(WaitState &w, const std::vector<uint32_t> &waitingOn, Deadline deadline,
                     const std::atomic<bool> &aborted, const std::string &what) const;
  uint32_t sleepBegin() const;
  void sleepUntilNotified(uint32_t seen, Deadline deadline) const;
  void sleepEnd() const;

  Segment() = default;
  bool peerDead(uint32_t r) const;

  std::string name_;
  char *base_ = nullptr;
  size_t mapped_ = 0;
  Header *header_ = nullptr;
  RankState *ranks_ = nullptr;
  uint32_t rank_ = 0;
  bool unlinked_ = false;
};

/// "1, 3": ranks for messages.
std::string rankList(const std::vector<uint32_t> &ranks);

} // namespace tessera::hal::comm::shm
