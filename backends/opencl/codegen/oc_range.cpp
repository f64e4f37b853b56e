// Index ranges of the OpenCL C codegen: which loads and stores are in range without a check.
//
// Before a kernel is emitted, a pass over its body bounds every i32 value by affine functions
// of one work-group size L (= local_size of one dimension): lo(L) <= v <= hi(L) for every
// launch, each bound num * L / 2^sh + b. local_id.d is in [0, L_d - 1], local_size.d is L_d,
// constants are themselves; add, sub, shr and `and` with a constant combine bounds (add and sub
// only when no wrap is possible for any L in [1, INT_MAX]); inside `if %c` with c = cmp a, b
// the bounds of a and b are narrowed by the comparison; the iteration values of `while` and
// `for` keep the bounds of their initial values when the body's yields stay inside them (an
// inductive invariant: otherwise they are unbounded), the induction variable of `for` is in
// [lo(lb), hi(ub) - 1] (docs/ir.md: it never wraps). That proves, for example, that the tree
// reduction `if (tid < s) red[tid + s]` with s = local_size >> 1, halved each level, reads
// below L: red's size N still has to be >= L, so the check becomes one test of the launch
// (`bound(L) < N || idx < N`). The driver builds the source once per launch workgroup size
// with L a constant (opencl_abi.h, "Per-size programs"), so the test folds in the front end,
// before LLVM could hoist it out of a loop and keep it per work-item (docs/performance.md); a
// sized compile (OpenCLCompileOptions::workgroupSize, `tessera compile --workgroup-size`)
// decides it here: the check is gone when bound(L) < N, plain otherwise. Indices whose bound
// does not depend on L are decided here too: a constant-bounded index inside a shared array
// loses its check. The range of each `for` loop's start is kept too: a lower bound >= 0 of it
// makes the guard of the loop's fast form (oc_for.cpp) the same for every work-item.
// Calls (inlined at each call site) and atomics keep their checks.
//
// Must only ever prove what holds for every launch: a wrong proof is an unchecked access.
#include "backends/opencl/codegen/oc_emitter.h"

#include <algorithm>
#include <climits>

namespace tessera::opencl::detail {

using ir::CmpPred;
using ir::OpKind;
using ir::Scalar;

namespace {

constexpr int64_t kMaxL = INT32_MAX; // the largest work-group size an i32 local_size holds

bool isI32(const ir::Value *v) { return v->type.isScalar() && v->type.elem == Scalar::I32; }

/// The i32 value of a constant (sign-extended from its 32 bits), if `v` is one.
std::optional<int64_t> constI32(const ir::Value *v) {
  if (!isConst(v) || !isI32(v))
    return std::nullopt;
  return static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(v->def->literal.i)));
}

/// The bound's value at L as a fraction num * L / 2^sh + b, compared through 128-bit
/// integers scaled by 2^sh (exact).
__int128 scaled(const IndexBound &x, int64_t L, int sh) {
  return static_cast<__int128>(x.num) * L * (static_cast<__int128>(1) << (sh - x.sh)) +
         static_cast<__int128>(x.b) * (static_cast<__int128>(1) << sh);
}

/// x <= y for every L in [1, kMaxL] (linear in L: the ends decide). Different dimensions
/// compare only where neither depends on L.
bool leq(const IndexBound &x, const IndexBound &y) {
  if (x.num != 0 && y.num != 0 && x.dim != y.dim)
    return false;
  int sh = std::max(x.sh, y.sh);
  return scaled(x, 1, sh) <= scaled(y, 1, sh) && scaled(x, kMaxL, sh) <= scaled(y, kMaxL, sh);
}

/// x's value stays in i32 for every L.
bool fitsI32(const IndexBound &x) {
  for (int64_t L : {int64_t{1}, kMaxL}) {
    __int128 v = scaled(x, L, x.sh), one = static_cast<__int128>(1) << x.sh;
    if (v < static_cast<__int128>(INT32_MIN) * one || v > static_cast<__int128>(INT32_MAX) * one)
      return false;
  }
  return true;
}

std::optional<IndexBound> combine(const IndexBound &x, const IndexBound &y, int sign) {
  if (x.num != 0 && y.num != 0 && x.dim != y.dim)
    return std::nullopt;
  int sh = std::max(x.sh, y.sh);
  IndexBound r;
  r.dim = x.num != 0 ? x.dim : y.dim;
  r.sh = sh;
  r.num = x.num * (int64_t{1} << (sh - x.sh)) + sign * y.num * (int64_t{1} << (sh - y.sh));
  r.b = x.b + sign * y.b;
  while (r.sh > 0 && r.num % 2 == 0) { // lowest terms: 2 * L / 2 is L
    r.num /= 2;
    --r.sh;
  }
  if (!fitsI32(r)) // the sum of two i32 bounds never overflows int64; outside i32: give up
    return std::nullopt;
  return r;
}

IndexBound constant(int64_t k) { return IndexBound{0, 0, k, 0}; }

IndexRange exact(int64_t k) { return {constant(k), constant(k)}; }

/// a <= b in value for every launch, per the ranges.
bool rangeWithin(const IndexRange &inner, const IndexRange &outer) {
  bool loOk = !outer.lo || (inner.lo && leq(*outer.lo, *inner.lo));
  bool hiOk = !outer.hi || (inner.hi && leq(*inner.hi, *outer.hi));
  return loOk && hiOk;
}

IndexRange join(const IndexRange &x, const IndexRange &y) {
  IndexRange r;
  if (x.lo && y.lo)
    r.lo = leq(*x.lo, *y.lo) ? x.lo : leq(*y.lo, *x.lo) ? y.lo : std::nullopt;
  if (x.hi && y.hi)
    r.hi = leq(*y.hi, *x.hi) ? x.hi : leq(*x.hi, *y.hi) ? y.hi : std::nullopt;
  return r;
}

} // namespace

bool IndexRange::nonNegative() const { return lo && leq(constant(0), *lo); }

IndexRange RangeAnalysis::of(const ir::Value *v) const {
  if (auto k = constI32(v))
    return exact(*k);
  auto it = env_.find(v);
  return it == env_.end() ? IndexRange{} : it->second;
}

void RangeAnalysis::set(const ir::Value *v, const IndexRange &r) {
  if (isI32(v))
    env_[v] = r;
}

void RangeAnalysis::narrow(const ir::Value *cond, bool holds) {
  const ir::Op *c = cond->def;
  if (!c || c->kind != OpKind::Cmp || !isI32(c->operands[0]))
    return;
  const ir::Value *a = c->operands[0], *b = c->operands[1];
  IndexRange ra = of(a), rb = of(b);
  CmpPred p = c->mods.pred;
  // Unsigned compares order like signed ones when both sides are known non-negative.
  bool unsignedOk = ra.nonNegative() && rb.nonNegative();
  int rel; // a < b: -2, a <= b: -1, a >= b: 1, a > b: 2
  switch (p) {
  case CmpPred::Slt:
    rel = -2;
    break;
  case CmpPred::Sle:
    rel = -1;
    break;
  case CmpPred::Sgt:
    rel = 2;
    break;
  case CmpPred::Sge:
    rel = 1;
    break;
  case CmpPred::Ult:
    rel = unsignedOk ? -2 : 0;
    break;
  case CmpPred::Ule:
    rel = unsignedOk ? -1 : 0;
    break;
  case CmpPred::Ugt:
    rel = unsignedOk ? 2 : 0;
    break;
  case CmpPred::Uge:
    rel = unsignedOk ? 1 : 0;
    break;
  default:
    rel = 0;
  }
  if (rel == 0)
    return;
  if (!holds) // not (a < b) is a >= b, not (a <= b) is a > b, and the mirrors
    rel = rel == -2 ? 1 : rel == -1 ? 2 : rel == 1 ? -2 : -1;
  // Now a < b (-2), a <= b (-1), a >= b (1) or a > b (2): a below b, or the mirror.
  const ir::Value *small = rel < 0 ? a : b, *big = rel < 0 ? b : a;
  int64_t gap = (rel == -2 || rel == 2) ? 1 : 0;
  IndexRange rs = of(small), rbig = of(big);
  if (rbig.hi)
    if (auto h = combine(*rbig.hi, constant(gap), -1); h && (!rs.hi || leq(*h, *rs.hi)))
      rs.hi = h;
  if (rs.lo)
    if (auto l = combine(*rs.lo, constant(gap), 1); l && (!rbig.lo || leq(*rbig.lo, *l)))
      rbig.lo = l;
  set(small, rs);
  set(big, rbig);
}

IndexRange RangeAnalysis::result(const ir::Op &op) const {
  IndexRange r;
  switch (op.kind) {
  case OpKind::LocalId:
    r.lo = constant(0);
    r.hi = IndexBound{1, 0, -1, op.mods.dim};
    return r;
  case OpKind::LocalSize:
    r.lo = r.hi = IndexBound{1, 0, 0, op.mods.dim};
    return r;
  case OpKind::SubgroupLocalId: // subgroups of one work-item (opencl_abi.h)
    return exact(0);
  case OpKind::Add:
  case OpKind::Sub: {
    IndexRange x = of(op.operands[0]), y = of(op.operands[1]);
    int s = op.kind == OpKind::Add ? 1 : -1;
    const auto &yl = s > 0 ? y.lo : y.hi, &yh = s > 0 ? y.hi : y.lo;
    // A wrap anywhere makes both ends wrong: keep the range only with both ends proved.
    if (!x.lo || !x.hi || !yl || !yh)
      return r;
    auto lo = combine(*x.lo, *yl, s), hi = combine(*x.hi, *yh, s);
    if (lo && hi) {
      r.lo = lo;
      r.hi = hi;
    }
    return r;
  }
  case OpKind::Shr: {
    auto k = constI32(op.operands[1]);
    IndexRange x = of(op.operands[0]);
    if (!k || !x.nonNegative()) // a non-negative value shifts the same signed or unsigned
      return r;
    int n = static_cast<int>(*k & 31); // the emitted shift masks the amount to 5 bits
    r.lo = constant(0);
    if (x.lo && x.lo->num == 0)
      r.lo = constant(x.lo->b >> n);
    if (x.hi && x.hi->sh + n <= 40) {
      IndexBound h = *x.hi; // floor(v / 2^n) <= num * L / 2^(sh+n) + ceil(b / 2^n)
      h.sh += n;
      h.b = (h.b + (int64_t{1} << n) - 1) >> n;
      if (h.num == 0)
        h.sh = 0;
      r.hi = h;
    }
    return r;
  }
  case OpKind::And: { // with a non-negative constant: in [0, the constant]
    for (int i = 0; i < 2; ++i)
      if (auto k = constI32(op.operands[i]); k && *k >= 0) {
        r.lo = constant(0);
        r.hi = constant(*k);
      }
    return r;
  }
  default:
    return r;
  }
}

void RangeAnalysis::walk(const ir::Block &b) {
  for (const auto &op : b.ops) {
    switch (op->kind) {
    case OpKind::Load:
      ranges_[op.get()] = of(op->operands[1]);
      continue;
    case OpKind::Store:
      ranges_[op.get()] = of(op->operands[2]);
      continue;
    case OpKind::If:
      walkIf(*op);
      continue;
    case OpKind::For:
      ranges_[op.get()] = of(op->operands[0]); // its start, for the fast form's guard
      walkLoop(*op);
      continue;
    case OpKind::While:
      walkLoop(*op);
      continue;
    default:
      break;
    }
    if (op->results.size() == 1 && isI32(op->result()) && op->regions.empty())
      set(op->result(), result(*op));
  }
}

void RangeAnalysis::walkIf(const ir::Op &op) {
  std::vector<IndexRange> out(op.results.size());
  for (size_t k = 0; k < op.regions.size(); ++k) {
    auto saved = env_;
    narrow(op.operands[0], k == 0);
    walk(*op.regions[k]);
    const ir::Op *t = op.regions[k]->terminator();
    for (size_t i = 0; i < out.size(); ++i) {
      IndexRange y = t && i < t->operands.size() ? of(t->operands[i]) : IndexRange{};
      out[i] = k == 0 ? y : join(out[i], y);
    }
    env_ = std::move(saved);
  }
  if (op.regions.size() < 2) // no else: the results are undefined there; claim nothing
    out.assign(out.size(), IndexRange{});
  for (size_t i = 0; i < out.size(); ++i)
    set(op.result(i), out[i]);
}

void RangeAnalysis::walkLoop(const ir::Op &op) {
  bool isFor = op.kind == OpKind::For;
  const ir::Block &first = op.region(0);
  size_t skip = isFor ? 1 : 0; // the induction variable of `for`
  std::vector<IndexRange> assumed;
  // Each loop may walk its body more than once, so nested loops multiply: 22 nested loops of
  // one iteration took 9 s to compile (2x per level). Past kMaxRewalkDepth, iteration values
  // start unbounded (one walk, stable at once; ranges only ever remove checks).
  constexpr int kMaxRewalkDepth = 6;
  bool shallow = loopDepth_ < kMaxRewalkDepth;
  for (size_t k = skip; k < first.args.size(); ++k)
    assumed.push_back(shallow ? of(op.operands[(isFor ? 3 : 0) + k - skip]) : IndexRange{});
  ++loopDepth_;
  // Assume each iteration value keeps its initial range; a yield outside it drops the
  // assumption for that value (unbounded) and the body is walked again. Each round drops at
  // least one, so this ends; the last walk's ranges are the ones recorded.
  for (;;) {
    auto saved = env_;
    for (size_t k = skip; k < first.args.size(); ++k) {
      set(first.args[k].get(), assumed[k - skip]);
      if (!isFor && k < op.region(1).args.size())
        set(op.region(1).args[k].get(), assumed[k - skip]);
    }
    if (isFor) {
      IndexRange iv, lb = of(op.operands[0]), ub = of(op.operands[1]);
      iv.lo = lb.lo; // iv >= lb and iv < ub: the loop never wraps (docs/ir.md "Faults")
      if (ub.hi)
        iv.hi = combine(*ub.hi, constant(1), -1);
      set(first.args[0].get(), iv);
    }
    walk(first);
    const ir::Block &last = isFor ? first : op.region(1);
    if (!isFor)
      walk(last);
    const ir::Op *t = last.terminator();
    bool stable = true;
    for (size_t k = 0; k < assumed.size(); ++k) {
      IndexRange y = t && k < t->operands.size() ? of(t->operands[k]) : IndexRange{};
      if (!rangeWithin(y, assumed[k]) && (assumed[k].lo || assumed[k].hi)) {
        assumed[k] = IndexRange{};
        stable = false;
      }
    }
    env_ = std::move(saved);
    if (stable)
      break;
  }
  --loopDepth_;
  for (size_t k = 0; k < op.results.size() && k < assumed.size(); ++k)
    set(op.result(k), assumed[k]);
}

void RangeAnalysis::run(const ir::Block &body) {
  env_.clear();
  ranges_.clear();
  walk(body);
}

const IndexRange *RangeAnalysis::index(const ir::Op &op) const {
  auto it = ranges_.find(&op);
  return it == ranges_.end() ? nullptr : &it->second;
}

std::string Emitter::localSize(int d) const {
  if (opts_.sized())
    return std::to_string(opts_.workgroupSize[d]);
  return "TSR_OPENCL_LOCAL_SIZE_" + std::to_string(d);
}

std::optional<IndexBound> Emitter::forThisCompile(IndexBound h) const {
  // A sized compile knows L: the bound (which holds for every L) is a constant for this one.
  if (h.num == 0 || !opts_.sized())
    return h;
  __int128 v = (static_cast<__int128>(h.num) * opts_.workgroupSize[h.dim] >> h.sh) + h.b;
  if (v > INT32_MAX || v < INT32_MIN) // not an i32 value: nothing is proved
    return std::nullopt;
  return constant(static_cast<int64_t>(v));
}

std::string Emitter::boundText(const IndexBound &h) const {
  if (h.num == 0)
    return std::to_string(h.b) + "l";
  // floor(num * L / 2^sh) + b, a uniform value; the generic source reads L through a macro
  // that a per-size build makes a constant, so that a test of it folds in the front end
  // (opencl_abi.h, "Per-size programs").
  std::string L = "(long)" + localSize(h.dim);
  std::string top = h.num == 1 ? L : L + " * " + std::to_string(h.num) + "l";
  if (h.sh)
    top = "(" + top + " >> " + std::to_string(h.sh) + ")";
  if (h.b)
    top = "(" + top + (h.b < 0 ? " - " : " + ") + std::to_string(h.b < 0 ? -h.b : h.b) + "l)";
  return top;
}

std::string Emitter::inRangeTest(const ir::Op &op, const MemRef &m, const ir::Value *index) {
  const IndexRange *r = ranges_.index(op);
  if (!r || !isI32(index) || !r->nonNegative() || !r->hi || r->hi->num < 0)
    return "";
  std::optional<IndexBound> h = forThisCompile(*r->hi);
  if (!h)
    return "";
  if (h->num == 0) { // a constant bound: decided here for a shared array
    if (m.shared)
      return h->b < static_cast<int64_t>(std::stoll(m.count)) ? "true" : "";
    if (r->lo->num == 0 && r->lo->b == h->b) // one index: the plain check is as cheap
      return "";
    return "(" + std::to_string(h->b) + "l < (long)" + m.count + ")";
  }
  return "(" + boundText(*h) + " < (long)" + m.count + ")";
}

std::string Emitter::startLowerBound(const ir::Op &forOp) const {
  const IndexRange *r = ranges_.index(forOp);
  if (!r || !r->nonNegative() || r->lo->num < 0 || !isI32(forOp.operands[0]))
    return "";
  std::optional<IndexBound> lo = forThisCompile(*r->lo);
  return lo ? boundText(*lo) : "";
}

} // namespace tessera::opencl::detail
