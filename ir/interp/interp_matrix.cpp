// The reference interpreter's subgroup matrix ops: matrix_load, matrix_store, matrix_fill,
// matrix_mad and matrix_map (docs/ir.md, "Matrix ops").
//
// A matrix value belongs to a whole subgroup: each op runs once per subgroup, only when every
// lane of it is active, with the operands of its first lane after checking that all its lanes
// agree (the second line of defence behind the verifier's uniformity analysis), and every lane
// then points at the one immutable MatrixData it made. matrix_mad is the exact reference of
// the precision contract: products exact, c and the K products summed in long double in k
// order, one rounding to the accumulator type; i8 x i8 -> i32 exact and wrapping. matrix_map
// runs its region with the interpreter's own scalar semantics, up to one element per lane.
// This file must never share code with a backend.
#include "ir/core/diagnostic.h"
#include "ir/interp/interp_internal.h"
#include "ir/interp/numerics.h"
#include "ir/verify/matrix_launch.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <unordered_set>

namespace tessera::ir::interp {
namespace {

/// An integer operand read signed and widened to i64 (i1 reads 0 or 1).
int64_t readInt(const Literal &l, Scalar t) {
  return t == Scalar::I1 ? static_cast<int64_t>(l.i & 1) : numerics::signExtend(l.i, t);
}

bool sameScalar(const Literal &a, const Literal &b, Scalar t) {
  if (isIntScalar(t))
    return numerics::truncInt(a.i, t) == numerics::truncInt(b.i, t);
  return std::memcmp(&a.f, &b.f, sizeof a.f) == 0 || (std::isnan(a.f) && std::isnan(b.f));
}

std::string scalarText(const Literal &l, Scalar t) {
  if (isIntScalar(t))
    return std::to_string(readInt(l, t));
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", l.f);
  return buf;
}

std::string operandName(const Op &op, size_t k) {
  const Value *v = op.operands[k];
  return v->name.empty() ? "operand " + std::to_string(k + 1) : "operand %" + v->name;
}

} // namespace

bool Machine::checkMatrixLaunch(const Function &kernel) {
  std::string err = matrixLaunchError(kernel, lanes_, opts_.subgroupSize);
  if (err.empty())
    return true;
  // At the kernel: the launch dimensions may come from its launch spec or from the caller.
  error_ =
      Diagnostic{module_.filename.empty() ? "<input>" : module_.filename, kernel.loc, err}.str();
  return false;
}

/// Matrix ops need every lane of each subgroup that reaches them, and the same operand values
/// in all of them: checks both, then runs the op once per subgroup.
bool Machine::execMatrix(Frame &f, const COp &c, const Lanes &mask) {
  const Op &op = *c.op;
  if (f.mats.empty())
    return fail(op, kNoLane, "matrix op in a function without matrix values");
  uint32_t sg = opts_.subgroupSize;
  // Values the op reads besides its operands: the outer scalars a matrix_map region uses.
  std::vector<std::pair<uint32_t, const Value *>> outer;
  if (op.kind == OpKind::MatrixMap && !c.regions.empty()) {
    std::unordered_set<uint32_t> local(c.regions[0].args.begin(), c.regions[0].args.end());
    for (const COp &r : c.regions[0].ops)
      local.insert(r.results.begin(), r.results.end());
    for (const COp &r : c.regions[0].ops)
      for (size_t k = 0; k < r.operands.size(); ++k)
        if (!local.count(r.operands[k]))
          outer.push_back({r.operands[k], r.op->operands[k]});
  }
  for (size_t i = 0; i < mask.size();) {
    uint32_t id = mask[i] / sg;
    size_t j = i;
    while (j < mask.size() && mask[j] / sg == id)
      ++j;
    uint32_t base = id * sg, size = std::min(sg, lanes_ - base);
    if (j - i != size)
      return fail(op, kNoLane,
                  "reached by " + std::to_string(j - i) + " of " + std::to_string(size) +
                      " work-items of subgroup " + std::to_string(id) +
                      "; matrix ops need the whole subgroup");
    auto differs = [&](const std::string &what, uint32_t slot, const Type &t) -> bool {
      for (size_t q = i + 1; q < j; ++q) {
        bool same = t.isMatrix() ? mat(f, slot, mask[q]) == mat(f, slot, mask[i])
                                 : sameScalar(val(f, slot, mask[q]), val(f, slot, mask[i]), t.elem);
        if (same)
          continue;
        std::string values = t.isMatrix() ? "different matrices"
                                          : scalarText(val(f, slot, mask[i]), t.elem) + " and " +
                                                scalarText(val(f, slot, mask[q]), t.elem);
        return !fail(op, mask[q],
                     what + " is not subgroup-uniform at run time: subgroup " + std::to_string(id) +
                         " has " + values + " (lanes 0 and " + std::to_string(mask[q] - base) +
                         ")");
      }
      return false;
    };
    for (size_t k = 0; k < c.operands.size(); ++k)
      if (!op.operands[k]->type.isMemory() &&
          differs(operandName(op, k), c.operands[k], op.operands[k]->type))
        return false;
    for (auto &[slot, v] : outer)
      if (differs("the outer value" + (v->name.empty() ? std::string() : " %" + v->name), slot,
                  v->type))
        return false;
    MatrixPtr result;
    if (!execMatrixOnce(f, c, mask[i], j - i, result))
      return false;
    if (result)
      for (size_t q = i; q < j; ++q)
        mat(f, c.results[0], mask[q]) = result;
    i = j;
  }
  return true;
}

bool Machine::matrixAccess(Frame &f, const COp &c, uint32_t lane, unsigned memIdx, const MemRef *&m,
                           int64_t (&a)[4]) {
  const Op &op = *c.op;
  size_t n = c.operands.size();
  if (n != memIdx + 3u && n != memIdx + 5u)
    return fail(op, kNoLane, "malformed matrix memory op");
  if (!memOperand(f, c, memIdx, m))
    return false;
  for (unsigned k = 0; k < 4; ++k) {
    unsigned idx = memIdx + 1 + k;
    if (idx >= n)
      break;
    const Type &t = op.operands[idx]->type;
    if (!t.isInt())
      return fail(op, kNoLane, operandName(op, idx) + " must be an integer");
    a[k] = readInt(val(f, c.operands[idx], lane), t.elem);
  }
  return true;
}

bool Machine::execMatrixOnce(Frame &f, const COp &c, uint32_t lane, uint32_t width,
                             MatrixPtr &out) {
  const Op &op = *c.op;
  switch (op.kind) {
  case OpKind::MatrixFill: {
    if (c.operands.size() != 1 || c.results.size() != 1 || !op.results[0]->type.isMatrix())
      return fail(op, kNoLane, "malformed matrix_fill");
    const Type &t = op.results[0]->type;
    auto d = std::make_shared<MatrixData>();
    d->type = t;
    d->v.assign(size_t{t.rows} * t.cols, val(f, c.operands[0], lane));
    out = std::move(d);
    return true;
  }
  case OpKind::MatrixLoad:
  case OpKind::MatrixStore:
    return execMatrixMemory(f, c, lane, out);
  case OpKind::MatrixMad:
    return execMatrixMad(f, c, lane, out);
  case OpKind::MatrixMap:
    return execMatrixMap(f, c, lane, width, out);
  default:
    return fail(op, kNoLane, "unknown matrix op");
  }
}

bool Machine::execMatrixMemory(Frame &f, const COp &c, uint32_t lane, MatrixPtr &out) {
  const Op &op = *c.op;
  bool isLoad = op.kind == OpKind::MatrixLoad;
  unsigned memIdx = isLoad ? 0 : 1;
  const Type &t = isLoad ? op.results[0]->type : op.operands[0]->type;
  if (!t.isMatrix() || c.results.size() != (isLoad ? 1u : 0u))
    return fail(op, kNoLane, "malformed matrix memory op");
  const MemRef *m = nullptr;
  int64_t a[4] = {0, 0, t.rows, t.cols}; // off, ld, rows, cols
  if (!matrixAccess(f, c, lane, memIdx, m, a))
    return false;
  if (m->elem != t.elem)
    return fail(op, kNoLane,
                "the memory holds " + std::string(scalarName(m->elem)) + ", the matrix " +
                    std::string(scalarName(t.elem)));
  const MatrixData *src = nullptr;
  std::shared_ptr<MatrixData> dst;
  if (isLoad) {
    dst = std::make_shared<MatrixData>();
    dst->type = t;
    dst->v.assign(size_t{t.rows} * t.cols, Literal{}); // elements outside the bounds read 0
  } else {
    src = mat(f, c.operands[0], lane).get();
    if (!src)
      return fail(op, kNoLane, "the matrix operand has no value");
  }
  bool col = op.mods.colMajor;
  bool weigh = !isLoad && opts_.magnitudeSums && isFloatScalar(t.elem) && !src->terms.empty();
  int64_t rows = std::min<int64_t>(a[2], t.rows), cols = std::min<int64_t>(a[3], t.cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t q = 0; q < cols; ++q) {
      // Exact: off + r*ld + c needs up to 2^63 * 2^7 + 2 * 2^63; an index outside i64 is out of
      // range like any other.
      __int128 idx =
          static_cast<__int128>(a[0]) + static_cast<__int128>(col ? q : r) * a[1] + (col ? r : q);
      if (idx < 0 || idx >= m->size) {
        std::string at = idx > INT64_MAX || idx < INT64_MIN
                             ? "an index outside i64"
                             : "index " + std::to_string(static_cast<int64_t>(idx));
        return fail(op, kNoLane,
                    "element (" + std::to_string(r) + ", " + std::to_string(q) + ") is at " + at +
                        ", out of range for %" + op.operands[memIdx]->name + " of " +
                        std::to_string(m->size) + " elements");
      }
      size_t e = static_cast<size_t>(r * t.cols + q);
      if (isLoad) {
        if (!readable(op, lane, memIdx, *m, static_cast<int64_t>(idx)))
          return false;
        dst->v[e] = numerics::loadElement(m->base, static_cast<int64_t>(idx), m->elem);
        continue;
      }
      Literal v = src->v[e];
      if (weigh && src->terms[e] > 0) // the judge's weight: (K+1) S + (K+1) 2^-102
        v.f = numerics::roundToFloat((src->terms[e] + 1.0) * (std::fabs(v.f) + 0x1p-102), t.elem,
                                     Round::Rtp);
      numerics::storeElement(m->base, static_cast<int64_t>(idx), m->elem, v);
      if (m->written)
        m->written[static_cast<size_t>(idx)] = 1;
    }
  out = std::move(dst);
  return true;
}

bool Machine::execMatrixMad(Frame &f, const COp &c, uint32_t lane, MatrixPtr &out) {
  const Op &op = *c.op;
  if (c.operands.size() != 3 || c.results.size() != 1)
    return fail(op, kNoLane, "malformed matrix_mad");
  const MatrixData *a = mat(f, c.operands[0], lane).get(), *b = mat(f, c.operands[1], lane).get(),
                   *acc = mat(f, c.operands[2], lane).get();
  if (!a || !b || !acc)
    return fail(op, kNoLane, "a matrix operand has no value");
  const Type &ta = a->type, &tb = b->type, &tc = acc->type;
  int M = ta.rows, K = ta.cols, N = tb.cols;
  if (tb.rows != K || tc.rows != M || tc.cols != N || ta.elem != tb.elem)
    return fail(op, kNoLane, "operand shapes or element types disagree");
  bool isFloat = isFloatScalar(ta.elem) && tc.elem == Scalar::F32;
  bool isInt = ta.elem == Scalar::I8 && tc.elem == Scalar::I32;
  if (!isFloat && !isInt)
    return fail(op, kNoLane,
                "no multiply-accumulate for " + std::string(scalarName(ta.elem)) + " inputs and " +
                    std::string(scalarName(tc.elem)) + " accumulators");
  auto d = std::make_shared<MatrixData>();
  d->type = tc;
  d->v.resize(size_t(M) * N);
  bool magnitude = opts_.magnitudeSums && isFloat;
  if (magnitude)
    d->terms.assign(size_t(M) * N, 0);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      size_t e = size_t(i) * N + j;
      const Literal &cv = acc->v[e];
      if (isInt) { // exact in i64 (|sum| < 2^31 + 4096 * 2^14), then wrapped to i32
        int64_t s = numerics::signExtend(cv.i, Scalar::I32);
        for (int k = 0; k < K; ++k)
          s += numerics::signExtend(a->v[size_t(i) * K + k].i, Scalar::I8) *
               numerics::signExtend(b->v[size_t(k) * N + j].i, Scalar::I8);
        d->v[e].i = numerics::truncInt(static_cast<uint64_t>(s), Scalar::I32);
        continue;
      }
      // Each product of two f32 values needs 48 bits: exact in long double (64).
      long double s = magnitude ? std::fabs(static_cast<long double>(cv.f)) : cv.f;
      for (int k = 0; k < K; ++k) {
        long double p = static_cast<long double>(a->v[size_t(i) * K + k].f) *
                        static_cast<long double>(b->v[size_t(k) * N + j].f);
        s += magnitude ? std::fabs(p) : p;
      }
      if (!magnitude) {
        d->v[e].f = numerics::roundToFloat(s, tc.elem);
        continue;
      }
      d->v[e].f = numerics::roundToFloat(static_cast<double>(s), tc.elem, Round::Rtp);
      d->terms[e] = (acc->terms.empty() ? 0 : acc->terms[e]) + static_cast<uint32_t>(K);
    }
  out = std::move(d);
  return true;
}

bool Machine::execMatrixMap(Frame &f, const COp &c, uint32_t lane, uint32_t width, MatrixPtr &out) {
  const Op &op = *c.op;
  if (c.regions.size() != 1 || c.results.size() != 1 || !op.results[0]->type.isMatrix())
    return fail(op, kNoLane, "malformed matrix_map");
  const CBlock &body = c.regions[0];
  const COp *yield = body.term();
  if (!yield || yield->operands.size() != 1 || body.args.size() != c.operands.size())
    return fail(op, kNoLane, "the region must take one argument per operand and yield one value");
  for (size_t k = 0; k < body.bodySize(); ++k)
    if (!isScalarForm(body.ops[k].op->info().form))
      return fail(*body.ops[k].op, kNoLane, "only pure scalar ops may appear in a matrix_map");
  const Type &t = op.results[0]->type;
  size_t n = size_t{t.rows} * t.cols;
  std::vector<const MatrixData *> in;
  for (uint32_t slot : c.operands) {
    const MatrixData *m = mat(f, slot, lane).get();
    if (!m || m->v.size() != n)
      return fail(op, kNoLane, "the operands must be matrices of the result's shape");
    in.push_back(m);
  }
  auto d = std::make_shared<MatrixData>();
  d->type = t;
  d->v.resize(n);
  bool weighed = std::any_of(in.begin(), in.end(), [](auto *m) { return !m->terms.empty(); });
  if (weighed)
    d->terms.assign(n, 0);
  // The subgroup's lanes each take one element per pass: the region sees the outer values of
  // its own lane, which the caller checked are the same in all of them.
  Lanes lanes;
  for (size_t e0 = 0; e0 < n; e0 += width) {
    uint32_t count = static_cast<uint32_t>(std::min<size_t>(width, n - e0));
    lanes.resize(count);
    for (uint32_t q = 0; q < count; ++q) {
      lanes[q] = lane + q;
      for (size_t k = 0; k < in.size(); ++k)
        val(f, body.args[k], lane + q) = in[k]->v[e0 + q];
    }
    if (!execBlock(f, body, lanes))
      return false;
    for (uint32_t q = 0; q < count; ++q) {
      d->v[e0 + q] = val(f, yield->operands[0], lane + q);
      for (size_t k = 0; weighed && k < in.size(); ++k)
        if (!in[k]->terms.empty())
          d->terms[e0 + q] = std::max(d->terms[e0 + q], in[k]->terms[e0 + q]);
    }
  }
  out = std::move(d);
  return true;
}

} // namespace tessera::ir::interp
