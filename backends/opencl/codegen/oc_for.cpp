// `for` loops of the OpenCL C codegen, in two forms.
//
// The general form is a C while loop that tests the IR's rules each iteration (docs/ir.md
// "Faults": a step <= 0 runs nothing, the loop ends when iv + step would wrap) and reads the
// cancel flag every kPollInterval iterations. It has several exits and its i32 index
// arithmetic wraps, so LLVM cannot vectorise it: PoCL ran row softmax's normalise loop
// scalar, 0.6x of the same algorithm written by hand (bench/opencl_bench).
//
// The fast form, for an innermost i32 loop without barriers or matrices, is taken when a test
// before the loop proves that nothing in it can overflow (iv stays in [start, ub - 1], a
// superset of its values that needs no iteration count: the division that counted them cost
// every work-item of PoCL's work-item loops more than it saved; where the index ranges bound
// the start by some lo >= 0 for the whole launch, [lo, ub - 1], so that the test is the same
// for every work-item and PoCL computes it once per work-group). The body runs in a plain
// `while (iv < end)` loop (one exit) over chunks of kPollInterval iterations with the cancel
// flag read between them, and `iv + step` as well as each `add` of the induction variable and
// a loop-invariant value are emitted as plain signed C adds (which then never overflow), so
// the index of a load is an affine expression the vectoriser understands; a load or store
// indexed by such a value whose whole index range is inside its memory loses its bounds check.
// Both forms run the same iterations, read the flag after the same iterations and compute the
// same values.
#include "backends/opencl/codegen/oc_emitter.h"
#include "ir/verify/verifier.h"

namespace tessera::opencl::detail {

using ir::OpKind;
using ir::Scalar;

namespace {

/// Whether `b` holds a loop, a call or a matrix: the fast form emits its body twice (once in
/// each form), which must not nest, and twice the private arrays of matrices overflow the
/// work-item's stack where the private memory limit (maxMatrixBytes) is what one form fits.
bool unfitForTwoForms(const ir::Block &b) {
  for (const auto &a : b.args)
    if (a->type.isMatrix())
      return true;
  for (const auto &op : b.ops) {
    if (op->kind == OpKind::For || op->kind == OpKind::While || op->kind == OpKind::Call ||
        ir::isMatrixForm(op->info().form))
      return true;
    for (const auto &r : op->regions)
      if (unfitForTwoForms(*r))
        return true;
  }
  return false;
}

/// The values defined in `b`: its arguments, its ops' results and those of nested regions.
void definedIn(const ir::Block &b, std::set<const ir::Value *> *out) {
  for (const auto &a : b.args)
    out->insert(a.get());
  for (const auto &op : b.ops) {
    for (const auto &r : op->results)
      out->insert(r.get());
    for (const auto &r : op->regions)
      definedIn(*r, out);
  }
}

/// The i32 adds in `b` (or its ifs) of `iv` and a value not in `inner`, with that value.
void ivAdds(const ir::Block &b, const ir::Value *iv, const std::set<const ir::Value *> &inner,
            std::vector<std::pair<const ir::Op *, const ir::Value *>> *out) {
  for (const auto &op : b.ops) {
    if (op->kind == OpKind::Add && op->result()->type.isScalar() &&
        op->result()->type.elem == Scalar::I32) {
      const ir::Value *x = op->operands[0], *y = op->operands[1];
      if (x == iv && y != iv && !inner.count(y))
        out->push_back({op.get(), y});
      else if (y == iv && x != iv && !inner.count(x))
        out->push_back({op.get(), x});
    }
    for (const auto &r : op->regions)
      ivAdds(*r, iv, inner, out);
  }
}

/// The loads and stores in `b` (or its ifs), each with its index operand.
void memOps(const ir::Block &b, std::vector<std::pair<const ir::Op *, const ir::Value *>> *out) {
  for (const auto &op : b.ops) {
    if (op->kind == OpKind::Load)
      out->push_back({op.get(), op->operands[1]});
    else if (op->kind == OpKind::Store)
      out->push_back({op.get(), op->operands[2]});
    for (const auto &r : op->regions)
      memOps(*r, out);
  }
}

} // namespace

bool Emitter::fastForGuard(const ir::Op &op, const std::string &iv, const std::string &ub,
                           const std::string &step, bool stepKnownPositive, std::string *fast) {
  const ir::Block &body = op.region(0);
  if (body.args[0]->type.elem != Scalar::I32 || containsBarrier(body) || unfitForTwoForms(body))
    return false;
  std::set<const ir::Value *> inner;
  definedIn(body, &inner);
  std::vector<std::pair<const ir::Op *, const ir::Value *>> adds;
  ivAdds(body, body.args[0].get(), inner, &adds);
  // Every value of iv is in [start, hi] with hi = ub - 1 (a superset of the values it takes:
  // no iteration count, whose division per work-item cost PoCL's work-item loops more than the
  // checks it saved), and iv + step <= hi + step. An add of a loop-invariant x runs in
  // [x + start, x + hi]. A constant step > 1 makes hi the last value exactly (a remainder by
  // a constant: a multiply), so that an unrolled body's x[iv + step - 1] stays provable.
  bool stepAboveOne = stepKnownPositive && op.operands[2]->def->literal.i != 1;
  std::string hi = "((long)" + ub + " - 1l)";
  if (stepAboveOne)
    hi = "((long)" + ub + " - 1l - ((long)" + ub + " - 1l - (long)" + iv + ") % " +
         std::to_string(static_cast<int32_t>(op.operands[2]->def->literal.i)) + "l)";
  // Where the index ranges bound the start by lo >= 0 for the whole launch (a loop from
  // local_id, a constant: oc_range.cpp), the low ends are taken from lo instead of the
  // work-item's own start: a stricter test (the general form runs where it fails) whose terms
  // do not depend on the work-item where x does not, and lo >= 0 makes the tests of iv >= 0
  // and x + iv >= INT_MIN true. Nor does the test whether the loop runs at all stay (the fast
  // form of a loop that runs nothing runs nothing). PoCL then computes the guard once per
  // work-group instead of once per work-item and loop: row softmax runs three loops of 8
  // iterations, and the per-work-item guards cost it about 10 % (docs/performance.md). With a
  // step > 1, hi depends on the start: the guard stays per work-item.
  std::string lo = stepAboveOne ? "" : startLowerBound(op);
  bool uniform = !lo.empty();
  if (!uniform)
    lo = "(long)" + iv;
  auto plus = [&](const std::string &x) { return lo == "0l" ? x : x + " + " + lo; };
  *fast = fresh();
  line("bool " + *fast + " = false; // nothing in the loop can overflow");
  std::string runs = stepKnownPositive ? "" : step + " > 0";
  if (!uniform)
    runs += (runs.empty() ? "" : " && ") + iv + " < " + ub;
  int indented = runs.empty() ? 0 : 1;
  if (indented)
    line("if (" + runs + ")");
  indent_ += indented;
  std::string pad(padding() + 4, ' ');
  std::string cond = hi + " + (long)" + step + " <= (long)INT_MAX";
  for (const auto &[add, x] : adds) {
    std::string xs = "(long)" + val(x);
    cond += " &&\n" + pad;
    if (!uniform) // else x + iv >= x >= INT_MIN
      cond += plus(xs) + " >= (long)INT_MIN && ";
    cond += xs + " + " + hi + " <= (long)INT_MAX";
    nswAdds_.insert(add);
  }
  // A load or store indexed by iv or by one of those adds stays inside its buffer or shared
  // array when both ends of that range do: then the fast form leaves out its check (the
  // general form runs, and checks, whenever one might not).
  if (bounded()) {
    std::vector<std::pair<const ir::Op *, const ir::Value *>> mems;
    memOps(body, &mems);
    for (const auto &[m, index] : mems) {
      auto ref = mems_.find(m->operands[m->kind == OpKind::Load ? 0 : 1]);
      if (ref == mems_.end())
        continue;
      std::string low, top;
      if (index == body.args[0].get()) {
        low = uniform ? "" : lo + " >= 0l && ";
        top = hi;
      } else {
        for (const auto &[add, x] : adds)
          if (add->result() == index) {
            low = plus("(long)" + val(x)) + " >= 0l && ";
            top = "(long)" + val(x) + " + " + hi;
          }
      }
      if (top.empty())
        continue;
      cond += " &&\n" + pad + low + "(ulong)(" + top + ") < (ulong)" + ref->second.count;
      inRangeMem_.insert(m);
    }
  }
  line(*fast + " = " + cond + ";");
  indent_ -= indented;
  return true;
}

bool Emitter::emitFor(const ir::Op &op) {
  const ir::Block &body = op.region(0);
  Scalar it = body.args[0]->type.elem;
  std::string lb = val(op.operands[0]), ub = val(op.operands[1]), step = val(op.operands[2]);
  std::vector<std::string> iters;
  std::vector<ir::Type> types = typesOf(body.args, 1);
  for (size_t k = 0; k + 1 < body.args.size(); ++k) {
    const ir::Value *init = op.operands[3 + k];
    iters.push_back(declareVar(init->type, init->type.isMatrix() ? vals_[init] : val(init)));
    vals_[body.args[k + 1].get()] = iters.back();
  }
  std::string iv = fresh();
  line(regType(it) + " " + iv + " = " + lb + "; // " + loc() + " for");
  vals_[body.args[0].get()] = iv;
  // Constant bounds are polled too when the loop runs more than kShortLoop iterations or
  // holds another loop (three nested constant 4096-loops ran for minutes past a 500 ms
  // deadline): only a short innermost constant loop, which the compiler unrolls, is not. A
  // loop around a barrier is left early only by all work-items at once: it polls uniformly
  // (emitUniformPoll; before, it was not polled, and an endless one ran past every deadline).
  bool allConst = isConst(op.operands[0]) && isConst(op.operands[1]) && isConst(op.operands[2]);
  bool polled = !allConst || constTripCount(op) > kShortLoop || ir::containsLoop(module_, body);
  bool cancellable = polled && !containsBarrier(body);
  bool uniformPoll = polled && !cancellable;
  std::string stop = hasBarrier_ && cancellable ? "!tsr_stop && " : "";
  bool stepIsOne = isConst(op.operands[2]) && op.operands[2]->def->literal.i == 1;
  bool stepKnownPositive = isConst(op.operands[2]); // the verifier refuses a constant <= 0
  if (!stepKnownPositive && checked()) {
    need("tsr_fault");
    line("if (" + step + " <= 0)");
    line("  " + faultCall("7u /* TSR_FAULT_LOOP_STEP */", UINT32_MAX, step, "0"));
  }

  std::string fast;
  bool twoForms = fastForGuard(op, iv, ub, step, stepKnownPositive, &fast);
  if (twoForms) {
    // The fast form: a plain `while (iv < end) { body; iv += step; }` over chunks of kPollInterval
    // iterations (end = iv + kPollInterval * step, or ub for the last chunk), the flag read
    // after each chunk that is not the last (where the general form reads it).
    line("if (" + fast + ") {");
    ++indent_;
    std::string end = fresh(), n = std::to_string(kPollInterval) + "l";
    if (cancellable) {
      line(std::string(hasBarrier_ ? "while (!tsr_stop)" : "for (;;)") + " {");
      ++indent_;
      line("int " + end + " = (long)" + ub + " - (long)" + iv + " > " + n + " * (long)" + step +
           " ? (int)((long)" + iv + " + " + n + " * (long)" + step + ") : " + ub + ";");
    } else {
      line("int " + end + " = " + ub + ";");
    }
    line("while (" + iv + " < " + end + ") {");
    ++indent_;
    std::vector<std::string> ys;
    bool ok = emitBlock(body, &ys);
    nswAdds_.clear();
    inRangeMem_.clear();
    if (!ok)
      return false;
    curOp_ = &op;
    if (ys.size() < iters.size())
      return fail("internal error: 'for' body yields too few values");
    assignVars(iters, ys, types);
    line(iv + " += " + step + "; // no overflow: checked before the loop");
    --indent_;
    line("}");
    if (cancellable) {
      line("if (" + iv + " >= " + ub + ")");
      line("  break;");
      emitCancelExit();
      --indent_;
      line("}");
    }
    --indent_;
    line("} else {");
    ++indent_;
  }

  std::string counter;
  if (cancellable || uniformPoll) {
    counter = fresh();
    line("uint " + counter + " = 0u;");
  }
  if (needsVote(op)) { // a barrier inside and bounds that may differ per work-item
    line("for (;;) {");
    ++indent_;
    std::string c = emitVote((stepKnownPositive ? "" : step + " > 0 && ") + iv + " < " + ub);
    line("if (!" + c + ")");
    line("  break;");
  } else {
    line(std::string(stepKnownPositive ? "" : "if (" + step + " > 0) ") + "while (" + stop + iv +
         " < " + ub + ") {");
    ++indent_;
  }
  std::vector<std::string> ys;
  if (!emitBlock(body, &ys))
    return false;
  curOp_ = &op;
  if (ys.size() < iters.size())
    return fail("internal error: 'for' body yields too few values");
  assignVars(iters, ys, types);
  if (stepIsOne) {
    line(iv + " = (" + regType(it) + ")(" + iv + " + 1);");
  } else {
    // Go on while iv + step < ub without wrapping: as iv < ub and step > 0 here, that is
    // step < ub - iv, unsigned at the IR width.
    std::string u = unsignedType(it);
    line("if (!((" + u + ")" + step + " < (" + u + ")((" + u + ")" + ub + " - (" + u + ")" + iv +
         ")))");
    line("  break;");
    line(iv + " = (" + regType(it) + ")((" + u + ")" + iv + " + (" + u + ")" + step + ");");
  }
  if (cancellable)
    emitPoll(counter);
  else if (uniformPoll)
    emitUniformPoll(counter);
  --indent_;
  line("}");
  if (twoForms) {
    --indent_;
    line("}");
  }
  for (size_t k = 0; k < iters.size(); ++k)
    vals_[op.result(k)] = iters[k];
  return true;
}

uint64_t constTripCount(const ir::Op &forOp) {
  const ir::Value *lb = forOp.operands[0], *ub = forOp.operands[1], *st = forOp.operands[2];
  int bits = ir::bitWidth(lb->type.elem);
  auto value = [&](const ir::Value *v) { // sign-extended from the type's width
    uint64_t x = v->def->literal.i;
    return bits >= 64 ? static_cast<int64_t>(x)
                      : static_cast<int64_t>(x << (64 - bits)) >> (64 - bits);
  };
  int64_t lo = value(lb), hi = value(ub), step = value(st);
  if (hi <= lo || step <= 0)
    return 0;
  return (static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) - 1) / static_cast<uint64_t>(step) +
         1;
}

} // namespace tessera::opencl::detail
