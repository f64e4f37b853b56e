// Structured control flow of the kernel generator: `if` with results, `for` and `while`
// with carried values (bounded trip counts), and barriers under uniform loops and branches.
// The statement dispatch is in kernel_gen.cpp; the taint rules in value_gen.cpp.
#include "tools/fuzz/gen_internal.h"

namespace tessera::fuzz::detail {
namespace {

using ir::OpKind;
using ir::Scalar;
using Vals = std::vector<ir::Value *>;

// Region bodies pass their yields back through these.
struct Yielded {
  Vals vals;
  std::vector<bool> exact, nanSafe;
};

} // namespace

// 0-2 carried values of random types (added to `inits`), returned as IR values.
Vals Gen::carriedInits(ir::Builder &b, std::vector<GV> &inits) {
  for (int i = rng.range(0, 2); i > 0; --i)
    inits.push_back(pick(b, randType(), false));
  Vals vals;
  for (const GV &g : inits)
    vals.push_back(g.v);
  return vals;
}

void Gen::genIf(ir::Builder &b, int depth) {
  ir::Value *c = pick(b, Scalar::I1, true).v;
  std::vector<ir::Type> types;
  for (int i = rng.range(0, 2); i > 0; --i)
    types.push_back(ir::Type::scalar(randType()));
  Yielded ys[2];
  bool withElse = !types.empty() || rng.chance(40);
  auto region = [&](int which) {
    return [&, which](ir::Builder &rb, std::span<ir::Value *const>) {
      scopes.emplace_back();
      genBlock(rb, depth + 1, rng.range(1, 4));
      for (const ir::Type &t : types) {
        GV g = pick(rb, t.elem, false);
        ys[which].vals.push_back(g.v);
        ys[which].exact.push_back(g.exact);
        ys[which].nanSafe.push_back(g.nanSafe);
      }
      scopes.pop_back();
      rb.yield(ys[which].vals);
    };
  };
  Vals res = b.ifOp(c, types, region(0), withElse ? ir::Builder::RegionFn(region(1)) : nullptr);
  for (size_t i = 0; i < res.size(); ++i)
    push({res[i], ys[0].exact[i] && ys[1].exact[i], ys[0].nanSafe[i] && ys[1].nanSafe[i]});
  --opsLeft;
}

// Trip counts of at most 8 (4 when nested): the interpreter runs every work-item.
void Gen::genFor(ir::Builder &b, int depth) {
  Scalar it = randIntType(false);
  int64_t mask = depth <= 1 ? 7 : 3;
  ir::Value *lb = b.binary(OpKind::And, pick(b, it, true).v, b.constInt(3, it));
  ir::Value *ub = b.binary(OpKind::And, pick(b, it, true).v, b.constInt(mask, it));
  ir::Value *step = b.constInt(rng.range(1, 3), it);
  if (o.hostile && rng.chance(20)) // may be <= 0: such a loop runs no iteration
    step = b.binary(OpKind::Sub, b.binary(OpKind::And, pick(b, it, true).v, b.constInt(3, it)),
                    b.constInt(1, it));
  std::vector<GV> inits;
  Vals initVals = carriedInits(b, inits);
  opsLeft -= 6;
  Vals res = b.forLoop(lb, ub, step, initVals, [&](ir::Builder &lbld, auto args) {
    scopes.emplace_back();
    push({args[0], true, true});
    for (size_t i = 0; i < inits.size(); ++i)
      push({args[i + 1], inits[i].exact, false});
    genBlock(lbld, depth + 1, rng.range(1, 5));
    Vals next;
    for (const GV &g : inits)
      next.push_back(pick(lbld, g.v->type.elem, g.exact).v);
    scopes.pop_back();
    lbld.yield(next);
  });
  for (size_t i = 0; i < res.size(); ++i)
    push({res[i], inits[i].exact, false});
}

void Gen::genWhile(ir::Builder &b, int depth) {
  ir::Value *bound = b.binary(OpKind::And, pick(b, Scalar::I32, true).v,
                              b.constInt(depth <= 1 ? 7 : 3, Scalar::I32));
  std::vector<GV> inits{{b.constInt(0, Scalar::I32), true, true}};
  Vals initVals = carriedInits(b, inits);
  opsLeft -= 6;
  auto enter = [&](std::span<ir::Value *const> args) {
    scopes.emplace_back();
    for (size_t i = 0; i < inits.size(); ++i)
      push({args[i], inits[i].exact, i == 0});
  };
  Vals res = b.whileLoop(
      initVals,
      [&](ir::Builder &cb, auto args) {
        enter(args);
        ir::Value *c = cb.cmp(ir::CmpPred::Slt, args[0], bound);
        if (rng.chance(30)) { // an extra exit condition computed in the first region
          genValue(cb, Scalar::I1);
          c = cb.binary(OpKind::And, c, pick(cb, Scalar::I1, true).v);
        }
        scopes.pop_back();
        cb.condition(c);
      },
      [&](ir::Builder &db, auto args) {
        enter(args);
        genBlock(db, depth + 1, rng.range(1, 4));
        Vals next{db.add(args[0], db.constInt(1, Scalar::I32))};
        for (size_t i = 1; i < inits.size(); ++i)
          next.push_back(pick(db, inits[i].v->type.elem, inits[i].exact).v);
        scopes.pop_back();
        db.yield(next);
      });
  for (size_t i = 1; i < res.size(); ++i)
    push({res[i], inits[i].exact, false});
}

// Barriers under uniform control flow: a loop whose trip count is the same for every
// work-item (from constants and scalar parameters), maybe inside a uniform `if`, exchanging a
// carried value through shared memory each iteration. The CPU backend splits work-item loops
// at barriers; barriers inside loops and branches are its hardest case.
void Gen::genUniformBarrierLoop(ir::Builder &b, uint32_t wgLinear) {
  std::vector<ir::Value *> uniform;
  for (const GV &g : scopes.front())
    if (g.v->type.isScalar(Scalar::I32) && g.v->owner) // scalar parameters (%n included)
      uniform.push_back(g.v);
  auto uniformI32 = [&](ir::Builder &ub) {
    return uniform.empty() || rng.chance(40) ? ub.constInt(rng.range(0, 5), Scalar::I32)
                                             : rng.pick(uniform);
  };
  Scalar t = rng.chance(70) ? randIntType(false) : randFloatType();
  ir::Value *sh = b.sharedAlloc(t, wgLinear);
  GV init = pick(b, t, false);
  auto loop = [&](ir::Builder &lb) {
    ir::Value *ub = lb.binary(OpKind::And, uniformI32(lb), lb.constInt(3, Scalar::I32));
    ir::Value *inits[] = {init.v};
    ir::Value *res =
        lb.forLoop(lb.constInt(0, Scalar::I32), lb.add(ub, lb.constInt(1, Scalar::I32)),
                   lb.constInt(1, Scalar::I32), inits, [&](ir::Builder &fb, auto args) {
                     fb.store(args[1], sh, lid);
                     fb.barrier();
                     ir::Value *off = fb.binary(
                         OpKind::And, fb.add(args[0], fb.constInt(rng.range(1, 9), Scalar::I32)),
                         fb.constInt(63, Scalar::I32));
                     ir::Mods u;
                     u.isUnsigned = true;
                     ir::Value *w = fb.load(sh, fb.binary(OpKind::Rem, fb.add(lid, off), lsize, u));
                     fb.barrier(); // the next iteration overwrites the slots
                     // add wraps exactly on ints; max never amplifies an error
                     ir::Value *next[] = {
                         ir::isFloatScalar(t)
                             ? fb.binary(OpKind::Max, args[1], w)
                             : fb.binary(rng.chance(50) ? OpKind::Add : OpKind::Xor, args[1], w)};
                     fb.yield(next);
                   })[0];
    return res;
  };
  opsLeft -= 12;
  if (rng.chance(50)) {
    push({loop(b), init.exact, false});
    return;
  }
  ir::Value *c = b.cmp(ir::CmpPred::Sle, uniformI32(b), b.constInt(2, Scalar::I32));
  ir::Type types[] = {ir::Type::scalar(t)};
  ir::Value *r = b.ifOp(
      c, types,
      [&](ir::Builder &tb, auto) {
        ir::Value *v[] = {loop(tb)};
        tb.yield(v);
      },
      [&](ir::Builder &eb, auto) {
        eb.barrier(); // uniform: every work-item of the workgroup takes this branch
        ir::Value *v[] = {init.v};
        eb.yield(v);
      })[0];
  push({r, init.exact, false});
}

} // namespace tessera::fuzz::detail
