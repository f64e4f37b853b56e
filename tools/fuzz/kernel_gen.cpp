// The kernel generator's structure: launch shape, parameters and their launch-spec
// initialisers, device functions, shared-memory phases with barriers, subgroup data movement,
// the partial-workgroup guard, statements with nested if / for / while, calls and atomics.
// Scalar ops and the taint rules live in value_gen.cpp.
#include "tools/fuzz/gen_internal.h"

#include <algorithm>
#include <string>

namespace tessera::fuzz {
namespace detail {
namespace {

using ir::OpKind;
using ir::Scalar;
using Vals = std::vector<ir::Value *>;

struct Shape {
  uint32_t x, y, z;
};
// Workgroup shapes: powers of two (full subgroups on every device) and odd ones (a partial
// last subgroup, and partial workgroups under the `gid < n` guard).
const Shape kWorkgroups[] = {{64, 1, 1},  {32, 2, 1}, {8, 8, 1}, {16, 2, 2}, {4, 4, 4},
                             {128, 1, 1}, {7, 1, 1},  {5, 3, 1}, {3, 3, 3},  {1, 1, 1},
                             {13, 1, 1},  {33, 1, 1}, {6, 5, 2}, {2, 2, 2},  {17, 3, 1}};

ir::ArgInit bufferInit(Rng &rng, const std::string &name, Scalar t, int64_t count) {
  ir::ArgInit a;
  a.param = name;
  a.count = count;
  int r = static_cast<int>(rng.below(100));
  if (ir::isFloatScalar(t)) {
    if (r < 40) {
      a.kind = ir::ArgInit::Kind::Uniform, a.a = -4, a.b = 4;
    } else if (r < 55) {
      a.kind = ir::ArgInit::Kind::Normal, a.a = 0, a.b = 3;
    } else if (r < 80) {
      a.kind = ir::ArgInit::Kind::Special;
    } else {
      a.kind = ir::ArgInit::Kind::Iota, a.a = -8, a.b = 0.25;
    }
    return a;
  }
  if (t == Scalar::I1) {
    a.kind = ir::ArgInit::Kind::Uniform, a.a = 0, a.b = 1;
  } else if (r < 50) {
    a.kind = ir::ArgInit::Kind::Uniform, a.a = -100, a.b = 100;
  } else if (r < 80) {
    a.kind = ir::ArgInit::Kind::Special;
  } else {
    a.kind = ir::ArgInit::Kind::Iota, a.a = -5, a.b = 3;
  }
  return a;
}

ir::ArgInit fillInit(const std::string &name, int64_t count, double value) {
  ir::ArgInit a;
  a.param = name;
  a.count = count;
  a.kind = ir::ArgInit::Kind::Fill;
  a.a = value;
  return a;
}

} // namespace

void Gen::genBlock(ir::Builder &b, int depth, int count) {
  for (int i = 0; i < count && opsLeft > 0; ++i)
    genStmt(b, depth);
}

// One statement. Control flow nests at most 3 deep; loops at most 2 (bounded trip counts).
void Gen::genStmt(ir::Builder &b, int depth) {
  int r = static_cast<int>(rng.below(100));
  bool nest = depth < 3 && opsLeft > 6;
  if (inKernel && r < 10 && !ins.empty()) { // load an input at a masked index
    const InBuf &in = rng.pick(ins);
    push({b.load(in.buf, indexInto(b, in.len)), true, true});
    --opsLeft;
    return;
  }
  if (inKernel && r < 18 && !outs.empty()) { // store to this work-item's own element
    const OutBuf &out = rng.pick(outs);
    b.store(pick(b, out.t, false).v, out.buf, slotIndex(b, rng.below(kSlots)));
    --opsLeft;
    return;
  }
  if (inKernel && r < 21 && !outs.empty()) { // read it back (whatever was stored: tainted)
    const OutBuf &out = rng.pick(outs);
    push({b.load(out.buf, slotIndex(b, rng.below(kSlots))), false, false});
    --opsLeft;
    return;
  }
  if (nest && r < 29)
    return genIf(b, depth);
  bool loopOk = nest && opsLeft > 8;
  if (loopOk && r < 35)
    return genFor(b, depth);
  if (loopOk && r < 39)
    return genWhile(b, depth);
  if (inKernel && r < 45 && !funcs.empty()) {
    const FuncSig &fs = rng.pick(funcs);
    Vals args;
    for (Scalar p : fs.params)
      args.push_back(pick(b, p, true).v);
    push({b.call(*fs.f, args)[0], fs.resultExact, false});
    --opsLeft;
    return;
  }
  if (inKernel && r < 48 && !outs.empty()) { // an atomic on an own slot: its old value is defined
    const OutBuf &out = rng.pick(outs);
    bool isInt = out.t == Scalar::I32 || out.t == Scalar::I64;
    if (isInt || (out.t == Scalar::F32 && o.floatAtomics)) {
      ir::Value *idx = slotIndex(b, rng.below(kSlots));
      ir::Value *old;
      if (isInt && rng.chance(20)) {
        old = b.atomicCas(out.buf, idx, pick(b, out.t, true).v, pick(b, out.t, true).v);
      } else {
        // A float slot may hold an approximate value: no arithmetic on it, only exchange.
        std::vector<OpKind> ks{OpKind::AtomicXchg};
        if (isInt)
          ks.insert(ks.end(), {OpKind::AtomicAdd, OpKind::AtomicMin, OpKind::AtomicMax});
        ir::Mods m;
        m.isUnsigned = isInt && rng.chance(40);
        OpKind k = rng.pick(ks);
        if (k == OpKind::AtomicAdd || k == OpKind::AtomicXchg)
          m.isUnsigned = false;
        old = b.atomic(k, out.buf, idx, pick(b, out.t, true).v, m);
      }
      // The slot may hold a tainted value stored earlier.
      push({old, false, false});
      opsLeft -= 2;
      return;
    }
  }
  if (inKernel && r < 52 && (!accs.empty() || !sharedAccs.empty())) {
    bool shared = accs.empty() || (!sharedAccs.empty() && rng.chance(50));
    const AccMem &a = shared ? rng.pick(sharedAccs) : rng.pick(accs);
    ir::Value *idx = indexInto(b, a.len);
    ir::Mods m;
    m.isUnsigned = a.isUnsigned;
    opsLeft -= 2;
    // Old values are order-dependent: never used.
    if (a.kind == OpKind::AtomicCas) {
      b.atomicCas(a.mem, idx, b.constInt(a.c1, a.t), b.constInt(a.c2, a.t));
    } else if (a.kind == OpKind::AtomicXchg) {
      ir::Value *v = ir::isFloatScalar(a.t) ? b.constFloat(static_cast<double>(a.c1), a.t)
                                            : b.constInt(a.c1, a.t);
      b.atomic(a.kind, a.mem, idx, v, m);
    } else if (ir::isFloatScalar(a.t)) { // small whole numbers: every order sums exactly
      ir::Value *small =
          b.binary(OpKind::And, pick(b, Scalar::I32, true).v, b.constInt(15, Scalar::I32));
      b.atomic(a.kind, a.mem, idx, b.convert(small, a.t), m);
    } else {
      b.atomic(a.kind, a.mem, idx, pick(b, a.t, true).v, m);
    }
    return;
  }
  if (inKernel && r < 57 && o.subgroups) {
    Scalar t = randType();
    if (t == Scalar::I1)
      t = Scalar::I32;
    const OpKind ks[] = {OpKind::SubgroupAdd, OpKind::SubgroupMin, OpKind::SubgroupMax};
    OpKind k = ks[rng.below(3)];
    bool floatAdd = k == OpKind::SubgroupAdd && ir::isFloatScalar(t);
    ir::Mods m;
    m.isUnsigned = !ir::isFloatScalar(t) && k != OpKind::SubgroupAdd && rng.chance(50);
    // A float sum's rounding depends on the device's lane order, and with cancellation or an
    // intermediate overflow (32768 + 32768 = inf in f16) no ULP budget covers it: float sums
    // add small whole numbers, exact in every order (long run 2, seed 200547).
    GV x = floatAdd ? GV{b.convert(b.binary(OpKind::And, pick(b, Scalar::I32, true).v,
                                            b.constInt(15, Scalar::I32)),
                                   t),
                         true, true}
                    : pick(b, t, false);
    push({b.subgroup(k, x.v, m), x.exact, false});
    --opsLeft;
    return;
  }
  genValue(b, randType());
}

ir::Value *Gen::slotIndex(ir::Builder &b, uint64_t slot) {
  return b.add(slotBase, b.constInt(static_cast<int64_t>(slot), Scalar::I32));
}

// Stores the most recent values (of any type: exact ones converted, approximate floats only
// rounded to a type at most as precise) into every slot of every output, so that as much of
// the computation as possible is compared.
void Gen::observe(ir::Builder &b) {
  std::vector<GV> recent;
  for (const auto &scope : scopes)
    for (const GV &g : scope)
      if (g.v->type.isScalar())
        recent.push_back(g);
  size_t next = recent.size();
  for (const OutBuf &out : outs)
    for (uint64_t slot = 0; slot < kSlots; ++slot) {
      ir::Value *v = nullptr;
      while (!v && next > 0) {
        const GV &g = recent[--next];
        Scalar s = g.v->type.elem;
        if (s == out.t)
          v = g.v;
        else if (g.exact)
          v = b.convert(g.v, out.t);
        else if (ir::isFloatScalar(s) && ir::isFloatScalar(out.t) &&
                 ir::mantissaBits(out.t) <= ir::mantissaBits(s))
          v = b.convert(g.v, out.t);
      }
      if (!v)
        v = pick(b, out.t, false).v;
      b.store(v, out.buf, slotIndex(b, slot));
    }
}

void Gen::buildModule() {
  const Shape &wg = kWorkgroups[rng.below(std::size(kWorkgroups))];
  Shape grid{static_cast<uint32_t>(rng.range(1, 4)), rng.chance(30) ? 2u : 1u,
             rng.chance(20) ? 2u : 1u};
  uint32_t wgLinear = wg.x * wg.y * wg.z;
  int64_t total = int64_t(wgLinear) * grid.x * grid.y * grid.z;
  bool fullSubgroups = wgLinear % 64 == 0;

  // Device functions: pure scalar code with nested control flow.
  inKernel = false;
  for (int fi = rng.range(0, 2); fi > 0; --fi) {
    FuncSig fs;
    fs.f = m.addFunction(false, "fn" + std::to_string(funcs.size()));
    fs.result = randType();
    fs.f->resultTypes = {ir::Type::scalar(fs.result)};
    scopes.assign(1, {});
    for (int p = rng.range(1, 3); p > 0; --p) {
      fs.params.push_back(randType());
      ir::Value *v = fs.f->body->addArg(ir::Type::scalar(fs.params.back()),
                                        "a" + std::to_string(fs.params.size() - 1));
      push({v, true, false});
    }
    ir::Builder fb(*fs.f->body);
    int saved = opsLeft;
    opsLeft = std::max(8, o.maxOps / 4);
    genBlock(fb, 1, rng.range(2, 6));
    GV r = pick(fb, fs.result, false);
    fs.resultExact = r.exact;
    ir::Value *rv[] = {r.v};
    fb.ret(rv);
    opsLeft = saved;
    funcs.push_back(fs);
  }

  inKernel = true;
  ir::Function *k = m.addFunction(true, "fuzz");
  ir::LaunchSpec spec;
  spec.grid = {grid.x, grid.y, grid.z};
  spec.workgroup = {wg.x, wg.y, wg.z};
  spec.seed = rng.below(1000);
  auto param = [&](ir::Type t, const std::string &name) { return k->body->addArg(t, name); };
  for (int i = rng.range(1, 3); i > 0; --i) {
    InBuf in{nullptr, randType(), 64};
    std::string name = "in" + std::to_string(ins.size());
    in.buf = param(ir::Type::buffer(in.t, ir::Access::ReadOnly), name);
    spec.args.push_back(bufferInit(rng, name, in.t, in.len));
    ins.push_back(in);
  }
  for (int i = rng.range(1, 3); i > 0; --i) {
    OutBuf out{nullptr, randType()};
    std::string name = "out" + std::to_string(outs.size());
    out.buf = param(ir::Type::buffer(out.t), name);
    spec.args.push_back(rng.chance(50) ? fillInit(name, total * kSlots, 0)
                                       : bufferInit(rng, name, out.t, total * kSlots));
    outs.push_back(out);
  }
  auto makeAcc = [&]() {
    AccMem a;
    std::vector<Scalar> ts{Scalar::I32};
    if (hasType(Scalar::I64))
      ts.push_back(Scalar::I64);
    if (o.floatAtomics)
      ts.push_back(Scalar::F32);
    a.t = rng.pick(ts);
    std::vector<OpKind> kinds{OpKind::AtomicAdd, OpKind::AtomicXchg};
    if (!ir::isFloatScalar(a.t))
      kinds.insert(kinds.end(), {OpKind::AtomicMin, OpKind::AtomicMax, OpKind::AtomicCas});
    a.kind = rng.pick(kinds);
    a.isUnsigned = (a.kind == OpKind::AtomicMin || a.kind == OpKind::AtomicMax) && rng.chance(50);
    a.c1 = rng.range(0, 3);
    a.c2 = rng.range(-9, 9);
    return a;
  };
  for (int i = rng.chance(50) ? rng.range(1, 2) : 0; i > 0; --i) {
    AccMem a = makeAcc();
    std::string name = "acc" + std::to_string(accs.size());
    a.mem = param(ir::Type::buffer(a.t), name);
    spec.args.push_back(rng.chance(50) ? fillInit(name, a.len, 0) : [&] {
      ir::ArgInit it = fillInit(name, a.len, 0);
      it.kind = ir::ArgInit::Kind::Iota, it.a = 0, it.b = 1;
      return it;
    }());
    accs.push_back(a);
  }
  // Shared accumulators are read back through one extra output each.
  std::vector<ir::Value *> sharedOuts;
  std::vector<AccMem> sharedPlan;
  for (int i = rng.chance(35) ? 1 : 0; i > 0; --i) {
    AccMem a = makeAcc();
    a.len = 8;
    std::string name = "sacc_out" + std::to_string(sharedPlan.size());
    sharedOuts.push_back(param(ir::Type::buffer(a.t), name));
    spec.args.push_back(fillInit(name, total, 0));
    sharedPlan.push_back(a);
  }
  scopes.assign(1, {});
  for (int i = rng.range(0, 2); i > 0; --i) {
    Scalar t = randType();
    std::string name = "s" + std::to_string(i);
    push({param(ir::Type::scalar(t), name), true, true});
    ir::ArgInit a;
    a.param = name;
    if (ir::isFloatScalar(t))
      a.scalar.f = static_cast<double>(rng.range(-40, 40)) / 8;
    else
      a.scalar.i = t == Scalar::I1
                       ? rng.below(2)
                       : static_cast<uint64_t>(rng.range(-50, 50)) &
                             (ir::bitWidth(t) == 64 ? ~0ull : (1ull << ir::bitWidth(t)) - 1);
    spec.args.push_back(a);
  }
  ir::Value *n = param(ir::Type::scalar(Scalar::I32), "n");
  push({n, true, true});
  {
    ir::ArgInit a;
    a.param = "n";
    int64_t cut =
        rng.chance(60) ? static_cast<int64_t>(rng.below(std::min<int64_t>(wgLinear, total))) : 0;
    a.scalar.i = static_cast<uint64_t>(std::max<int64_t>(1, total - cut));
    spec.args.push_back(a);
  }
  k->launch = spec;

  ir::Builder b(*k->body);
  // Linear ids over up to three dimensions.
  auto wi = [&](OpKind kind, int d) { return b.workItem(kind, d); };
  ir::Value *sizeX = b.mul(wi(OpKind::NumGroups, 0), wi(OpKind::LocalSize, 0));
  ir::Value *sizeY = b.mul(wi(OpKind::NumGroups, 1), wi(OpKind::LocalSize, 1));
  gid = b.add(wi(OpKind::GlobalId, 0),
              b.mul(sizeX, b.add(wi(OpKind::GlobalId, 1), b.mul(sizeY, wi(OpKind::GlobalId, 2)))));
  ir::Value *lx = wi(OpKind::LocalSize, 0), *ly = wi(OpKind::LocalSize, 1);
  lid = b.add(wi(OpKind::LocalId, 0),
              b.mul(lx, b.add(wi(OpKind::LocalId, 1), b.mul(ly, wi(OpKind::LocalId, 2)))));
  lsize = b.mul(b.mul(lx, ly), wi(OpKind::LocalSize, 2));
  push({gid, true, true});
  slotBase = b.mul(gid, b.constInt(kSlots, Scalar::I32));
  push({lid, true, true});

  for (AccMem a : sharedPlan) { // zero (or c1) every element, cooperatively, then sync
    a.mem = b.sharedAlloc(a.t, a.len);
    ir::Value *init = ir::isFloatScalar(a.t) ? b.constFloat(0, a.t) : b.constInt(0, a.t);
    Vals none;
    b.forLoop(lid, b.constInt(a.len, Scalar::I32), lsize, none,
              [&](ir::Builder &lb, auto args) { lb.store(init, a.mem, args[0]); });
    sharedAccs.push_back(a);
  }
  if (!sharedPlan.empty())
    b.barrier();

  for (const InBuf &in : ins) // every input feeds the kernel, at a per-work-item index
    push({b.load(in.buf, b.binary(OpKind::And, gid, b.constInt(in.len - 1, Scalar::I32))), true,
          true});
  genBlock(b, 0, rng.range(2, 6));
  if (rng.chance(50)) { // a shared-memory exchange: write own slot, sync, read another's
    for (int round = rng.range(1, 2); round > 0; --round) {
      Scalar t = randType();
      ir::Value *sh = b.sharedAlloc(t, wgLinear);
      GV v = pick(b, t, false);
      b.store(v.v, sh, lid);
      b.barrier();
      ir::Value *off =
          b.binary(OpKind::And, pick(b, Scalar::I32, true).v, b.constInt(63, Scalar::I32));
      ir::Mods u;
      u.isUnsigned = true;
      ir::Value *idx = b.binary(OpKind::Rem, b.add(lid, off), lsize, u);
      push({b.load(sh, idx), v.exact, v.nanSafe});
      b.barrier(); // the next round (or nothing) may overwrite the slots
      genBlock(b, 0, rng.range(1, 3));
    }
  }
  if (rng.chance(40))
    genUniformBarrierLoop(b, wgLinear);
  if (o.subgroups && rng.chance(60)) { // every lane is active here
    for (int i = rng.range(1, 3); i > 0; --i) {
      GV v = pick(b, randType(), false);
      ir::Value *sgMask = b.sub(b.workItem(OpKind::SubgroupSize), b.constInt(1, Scalar::I32));
      ir::Value *r;
      int which = fullSubgroups ? static_cast<int>(rng.below(3)) : 2;
      if (which == 0) {
        ir::Value *lane = b.binary(
            OpKind::And, b.add(b.workItem(OpKind::SubgroupLocalId), pick(b, Scalar::I32, true).v),
            sgMask);
        r = b.shuffle(OpKind::Shuffle, v.v, lane);
      } else if (which == 1) {
        r = b.shuffle(OpKind::ShuffleXor, v.v,
                      b.binary(OpKind::And, b.constInt(rng.range(1, 31), Scalar::I32), sgMask));
      } else { // lane 0 exists in every subgroup, even a partial last one
        r = b.shuffle(OpKind::Broadcast, v.v, b.constInt(0, Scalar::I32));
      }
      push({r, v.exact, v.nanSafe});
      opsLeft -= 4;
    }
  }
  ir::Value *inRange = b.cmp(ir::CmpPred::Slt, gid, n);
  bool withElse = rng.chance(25);
  b.ifOp(
      inRange, {},
      [&](ir::Builder &tb, auto) {
        scopes.emplace_back();
        genBlock(tb, 1, 1000);
        observe(tb);
        scopes.pop_back();
      },
      withElse ? ir::Builder::RegionFn([&](ir::Builder &eb, auto) {
        scopes.emplace_back();
        opsLeft = std::max(opsLeft, 4);
        genBlock(eb, 1, rng.range(1, 3));
        scopes.pop_back();
      })
               : nullptr);
  if (!sharedAccs.empty()) {
    b.barrier();
    for (size_t i = 0; i < sharedAccs.size(); ++i) {
      const AccMem &a = sharedAccs[i];
      ir::Value *idx = b.binary(OpKind::And, lid, b.constInt(a.len - 1, Scalar::I32));
      b.store(b.load(a.mem, idx), sharedOuts[i], gid);
    }
  }
}

} // namespace detail

std::unique_ptr<ir::Module> generateModule(const GenOptions &opts) {
  auto m = std::make_unique<ir::Module>();
  m->filename = "fuzz.tir";
  detail::Gen g(opts, *m);
  g.buildModule();
  // The kernel is the module's last function: functions come first in the printed text.
  return m;
}

} // namespace tessera::fuzz
