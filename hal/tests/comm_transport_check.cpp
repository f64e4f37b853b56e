// checkEveryOp (comm_transport_check.h): each op's inputs, the call on the transport, and the
// reference it must equal bit for bit.
#include "hal/tests/comm_transport_check.h"

#include <cstdio>

namespace tessera::hal::comm::testing {
namespace {

struct Checker {
  Transport &t;
  Deadline deadline;
  std::vector<std::string> errors;
  uint64_t seq = 0;
  uint32_t salt = 0;
  tsr_type_t type = TSR_TYPE_F32;
  uint64_t count = 0;
  size_t elem = 4;

  uint32_t n() const { return t.size(); }
  uint32_t me() const { return t.rank(); }
  uint64_t input(uint32_t rank, uint64_t i) const { return inputBits(type, rank, i, salt); }

  /// Elements [first, first + count) of this rank's input.
  std::vector<char> inputs(uint64_t elements) const {
    std::vector<char> buf(elements * elem);
    for (uint64_t i = 0; i < elements; ++i)
      putBits(buf, i, elem, input(me(), i));
    return buf;
  }

  uint64_t fold(tsr_reduce_op_t op, uint64_t i) const {
    std::vector<uint64_t> bits;
    for (uint32_t r = 0; r < n(); ++r)
      bits.push_back(input(r, i));
    return referenceFold(type, op, bits);
  }

  std::string label(const OpDesc &d, const char *variant) const {
    char buf[160];
    std::snprintf(buf, sizeof(buf), "rank %u/%u: %s%s (%s, %s, count %llu, root/peer %u)", me(),
                  n(), opKindName(d.kind), variant, tsr_type_name(type), tsr_reduce_op_name(d.op),
                  (unsigned long long)count, d.root);
    return buf;
  }

  bool run(const OpDesc &d, const void *send, void *recv, const char *variant) {
    HostOp op{d, send, recv};
    tsr_status_t st = t.run(op, deadline);
    if (!st)
      return true;
    errors.push_back(label(d, variant) + ": " + tsr_status_message(st));
    tsr_status_free(st);
    return false;
  }

  void expectEqual(const OpDesc &d, const char *variant, const std::vector<char> &got,
                   const std::vector<char> &want) {
    for (size_t i = 0; i * elem < want.size(); ++i) {
      uint64_t g = 0, w = 0;
      std::memcpy(&g, got.data() + i * elem, elem);
      std::memcpy(&w, want.data() + i * elem, elem);
      if (g == w)
        continue;
      char buf[96];
      std::snprintf(buf, sizeof(buf), ": element %zu is 0x%llx, expected 0x%llx", i,
                    (unsigned long long)g, (unsigned long long)w);
      errors.push_back(label(d, variant) + buf);
      return;
    }
  }

  OpDesc desc(OpKind kind, tsr_reduce_op_t op = TSR_REDUCE_SUM, uint32_t root = 0) {
    ++salt;
    OpDesc d;
    d.kind = kind;
    d.type = type;
    d.op = op;
    d.root = root;
    d.count = count;
    d.seq = kind == OpKind::Send || kind == OpKind::Recv ? 0 : seq++;
    return d;
  }

  std::vector<char> sentinel(uint64_t elements) const {
    return std::vector<char>(elements * elem, char(0xab));
  }

  void allReduce(tsr_reduce_op_t op, bool inPlace) {
    OpDesc d = desc(OpKind::AllReduce, op);
    std::vector<char> send = inputs(count), recv = sentinel(count), want(count * elem);
    for (uint64_t i = 0; i < count; ++i)
      putBits(want, i, elem, fold(op, i));
    std::vector<char> &out = inPlace ? send : recv;
    if (run(d, send.data(), out.data(), inPlace ? " in place" : ""))
      expectEqual(d, inPlace ? " in place" : "", out, want);
  }

  void reduce(tsr_reduce_op_t op, uint32_t root, bool inPlace) {
    OpDesc d = desc(OpKind::Reduce, op, root);
    std::vector<char> send = inputs(count), recv = sentinel(count), want(count * elem);
    for (uint64_t i = 0; i < count; ++i)
      putBits(want, i, elem, fold(op, i));
    bool mine = me() == root;
    std::vector<char> &out = inPlace ? send : recv;
    if (run(d, send.data(), mine ? out.data() : nullptr, inPlace ? " in place" : "") && mine)
      expectEqual(d, "", out, want);
  }

  void reduceScatter(tsr_reduce_op_t op) {
    OpDesc d = desc(OpKind::ReduceScatter, op);
    std::vector<char> send = inputs(n() * count), recv = sentinel(count), want(count * elem);
    for (uint64_t i = 0; i < count; ++i)
      putBits(want, i, elem, fold(op, me() * count + i));
    if (run(d, send.data(), recv.data(), ""))
      expectEqual(d, "", recv, want);
  }

  void allGather(bool inPlace) {
    OpDesc d = desc(OpKind::AllGather);
    std::vector<char> send = inputs(count), recv = sentinel(n() * count), want(n() * count * elem);
    for (uint32_t r = 0; r < n(); ++r)
      for (uint64_t i = 0; i < count; ++i)
        putBits(want, r * count + i, elem, input(r, i));
    const char *in = send.data();
    if (inPlace && count) {
      std::memcpy(recv.data() + me() * count * elem, send.data(), send.size());
      in = recv.data() + me() * count * elem;
    }
    if (run(d, in, recv.data(), inPlace ? " in place" : ""))
      expectEqual(d, inPlace ? " in place" : "", recv, want);
  }

  void broadcast(uint32_t root, bool inPlace) {
    OpDesc d = desc(OpKind::Broadcast, TSR_REDUCE_SUM, root);
    std::vector<char> send = inputs(count), recv = sentinel(count), want(count * elem);
    for (uint64_t i = 0; i < count; ++i)
      putBits(want, i, elem, input(root, i));
    bool mine = me() == root;
    std::vector<char> &out = inPlace && mine ? send : recv;
    if (run(d, mine ? send.data() : nullptr, out.data(), inPlace ? " in place" : ""))
      expectEqual(d, inPlace ? " in place" : "", out, want);
  }

  void allToAll() {
    OpDesc d = desc(OpKind::AllToAll);
    std::vector<char> send = inputs(n() * count), recv = sentinel(n() * count),
                      want(n() * count * elem);
    for (uint32_t r = 0; r < n(); ++r)
      for (uint64_t i = 0; i < count; ++i)
        putBits(want, r * count + i, elem, input(r, me() * count + i));
    if (run(d, send.data(), recv.data(), ""))
      expectEqual(d, "", recv, want);
  }

  // A ring: rank r sends to r+1 and receives from r-1; even ranks send first.
  void sendRecvRing() {
    if (n() < 2)
      return;
    uint32_t next = (me() + 1) % n(), prev = (me() + n() - 1) % n();
    OpDesc s = desc(OpKind::Send, TSR_REDUCE_SUM, next);
    OpDesc r = s;
    r.kind = OpKind::Recv;
    r.root = prev;
    std::vector<char> send = inputs(count), recv = sentinel(count), want(count * elem);
    for (uint64_t i = 0; i < count; ++i)
      putBits(want, i, elem, input(prev, i));
    bool ok = me() % 2 == 0 ? run(s, send.data(), nullptr, "") && run(r, nullptr, recv.data(), "")
                            : run(r, nullptr, recv.data(), "") && run(s, send.data(), nullptr, "");
    if (ok)
      expectEqual(r, "", recv, want);
  }
};

} // namespace

std::vector<std::string> checkEveryOp(Transport &t, Deadline deadline,
                                      const std::vector<uint64_t> &counts) {
  Checker c{t, deadline, {}};
  for (tsr_type_t type : kAllTypes) {
    for (uint64_t count : counts) {
      c.type = type;
      c.count = count;
      c.elem = tsr_type_size(type);
      bool isInt = type == TSR_TYPE_I8 || type == TSR_TYPE_I16 || type == TSR_TYPE_I32 ||
                   type == TSR_TYPE_I64;
      for (tsr_reduce_op_t op : {TSR_REDUCE_SUM, TSR_REDUCE_PROD, TSR_REDUCE_MIN, TSR_REDUCE_MAX,
                                 TSR_REDUCE_AVG, TSR_REDUCE_UMIN, TSR_REDUCE_UMAX})
        if (isInt || (op != TSR_REDUCE_UMIN && op != TSR_REDUCE_UMAX))
          c.allReduce(op, false);
      c.allReduce(TSR_REDUCE_SUM, true);
      c.reduce(TSR_REDUCE_SUM, t.size() - 1, false);
      c.reduce(TSR_REDUCE_MAX, 0, true);
      c.reduceScatter(TSR_REDUCE_SUM);
      c.reduceScatter(TSR_REDUCE_AVG);
      c.allGather(false);
      c.allGather(true);
      c.broadcast(t.size() - 1, false);
      c.broadcast(0, true);
      c.allToAll();
      c.sendRecvRing();
      if (c.errors.size() > 20)
        return c.errors;
    }
  }
  return c.errors;
}

} // namespace tessera::hal::comm::testing
