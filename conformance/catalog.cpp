// Catalog generation: variants from ir::allOps() x scalar types x modifiers, kept when the
// verifier accepts the kernel; then cases per variant (generators x lengths).
#include "conformance/catalog.h"

#include "ir/core/builder.h"
#include "ir/verify/verifier.h"

#include <array>

namespace tessera::conform {
namespace {

constexpr std::array kScalars = {ir::Scalar::I1,  ir::Scalar::I8,   ir::Scalar::I16,
                                 ir::Scalar::I32, ir::Scalar::I64,  ir::Scalar::F16,
                                 ir::Scalar::BF16, ir::Scalar::F32, ir::Scalar::F64};

constexpr std::array kRounds = {ir::Round::Rte, ir::Round::Rtz, ir::Round::Rtp, ir::Round::Rtn};

// Every modifier combination of an op's modifier family; the verifier prunes the ones that
// make no sense for a type.
std::vector<ir::Mods> modChoices(ir::ModSet s) {
  std::vector<ir::Mods> out;
  switch (s) {
  case ir::ModSet::Sign:
    out.push_back({});
    out.push_back({.isUnsigned = true});
    break;
  case ir::ModSet::Pred:
    for (int p = 0; p <= static_cast<int>(ir::CmpPred::Uno); ++p)
      out.push_back({.pred = static_cast<ir::CmpPred>(p)});
    break;
  case ir::ModSet::Conv:
    for (bool u : {false, true})
      for (bool sat : {false, true})
        out.push_back({.isUnsigned = u, .sat = sat});
    for (ir::Round r : kRounds)
      out.push_back({.round = r});
    break;
  default:
    out.push_back({});
  }
  return out;
}

std::string modSuffix(const ir::OpInfo &info, const ir::Mods &m) {
  std::string s;
  if (info.mods == ir::ModSet::Pred)
    s += "." + std::string(ir::cmpPredName(m.pred));
  if (m.isUnsigned)
    s += ".u";
  if (m.sat)
    s += ".sat";
  if (m.round != ir::Round::Default)
    s += "." + std::string(ir::roundName(m.round));
  return s;
}

bool isCatalogForm(ir::OpForm f) {
  switch (f) {
  case ir::OpForm::Unary:
  case ir::OpForm::Binary:
  case ir::OpForm::Ternary:
  case ir::OpForm::Predicate:
  case ir::OpForm::Compare:
  case ir::OpForm::Select:
  case ir::OpForm::Convert:
    return true;
  default:
    return false;
  }
}

// Operand and result types of an op of form `f` over scalar `t` (Convert: t -> d).
Variant shapeVariant(const ir::OpInfo &info, ir::Scalar t, ir::Scalar d, const ir::Mods &m) {
  Variant v;
  v.kind = info.kind;
  v.mods = m;
  v.family = std::string(info.name);
  switch (info.form) {
  case ir::OpForm::Unary:
    v.operands = {t};
    v.result = t;
    break;
  case ir::OpForm::Binary:
    v.operands = {t, t};
    v.result = t;
    break;
  case ir::OpForm::Ternary:
    v.operands = {t, t, t};
    v.result = t;
    break;
  case ir::OpForm::Predicate:
    v.operands = {t};
    v.result = ir::Scalar::I1;
    break;
  case ir::OpForm::Compare:
    v.operands = {t, t};
    v.result = ir::Scalar::I1;
    break;
  case ir::OpForm::Select:
    v.operands = {ir::Scalar::I1, t, t};
    v.result = t;
    break;
  default: // Convert
    v.operands = {t};
    v.result = d;
    break;
  }
  v.name = v.family + modSuffix(info, m) + "." + std::string(ir::scalarName(t));
  if (info.form == ir::OpForm::Convert)
    v.name += "." + std::string(ir::scalarName(d));
  return v;
}

bool isFloatOp(const Variant &v) { return ir::isFloatScalar(v.operands.back()); }

// Whether a variant gets the length sweep: the f32 and i32 variant of each op with default
// modifiers (compare: the lt predicates; convert: from f32 or i32).
bool sweepShapes(const Variant &v) {
  ir::Scalar t = v.operands.back();
  if (t != ir::Scalar::F32 && t != ir::Scalar::I32)
    return false;
  const ir::OpInfo &info = ir::opInfo(v.kind);
  if (info.mods == ir::ModSet::Pred)
    return v.mods.pred == ir::CmpPred::Slt || v.mods.pred == ir::CmpPred::Olt;
  return v.mods == ir::Mods{};
}

void addCase(Catalog &cat, size_t vi, Gen g, int64_t n, uint32_t wg) {
  Case c;
  c.variant = vi;
  c.gen = g;
  c.n = n;
  c.workgroup = wg;
  c.id = cat.variants[vi].name + "/" + genName(g) + "/n" + std::to_string(n);
  cat.cases.push_back(std::move(c));
}

} // namespace

const char *genName(Gen g) {
  switch (g) {
  case Gen::Uniform:
    return "uniform";
  case Gen::Special:
    return "special";
  case Gen::Hard:
    return "hard";
  }
  return "?";
}

std::unique_ptr<ir::Module> buildKernel(const Variant &v) {
  auto m = std::make_unique<ir::Module>();
  m->filename = "<conform " + v.name + ">";
  ir::Function *f = m->addFunction(true, "conform");
  std::vector<ir::Value *> ins;
  for (size_t k = 0; k < v.operands.size(); ++k)
    ins.push_back(f->body->addArg(ir::Type::buffer(v.operands[k], ir::Access::ReadOnly),
                                  "in" + std::to_string(k)));
  ir::Value *out = f->body->addArg(ir::Type::buffer(v.result, ir::Access::WriteOnly), "out");
  ir::Value *n = f->body->addArg(ir::Type::scalar(ir::Scalar::I32), "n");
  ir::Builder b(*f->body);
  ir::Value *i = b.workItem(ir::OpKind::GlobalId, 0);
  ir::Value *inRange = b.cmp(ir::CmpPred::Slt, i, n);
  b.ifOp(inRange, {}, [&](ir::Builder &ib, std::span<ir::Value *const>) {
    std::vector<ir::Value *> vals;
    for (ir::Value *in : ins)
      vals.push_back(ib.load(in, i));
    ir::Type rt = ir::Type::scalar(v.result);
    ir::Op *op = ib.create(v.kind, vals, std::span<const ir::Type>(&rt, 1), v.mods);
    ib.store(op->result(), out, i);
  });
  b.ret();
  return m;
}

const ir::Op *kernelOp(const ir::Module &m) {
  const ir::Op *found = nullptr;
  if (m.functions.empty())
    return nullptr;
  ir::walk(*m.functions[0]->body, [&](ir::Op &op) {
    if (!found && op.kind == ir::OpKind::Store && !op.operands.empty())
      found = op.operands[0]->def; // the stored value is the op under test
  });
  return found;
}

Catalog buildCatalog() {
  Catalog cat;
  for (const ir::OpInfo &info : ir::allOps()) {
    if (!isCatalogForm(info.form))
      continue;
    for (const ir::Mods &m : modChoices(info.mods))
      for (ir::Scalar t : kScalars)
        for (ir::Scalar d : kScalars) {
          if (info.form != ir::OpForm::Convert && d != kScalars[0])
            continue; // only convert has a second type
          Variant v = shapeVariant(info, t, d, m);
          auto mod = buildKernel(v);
          if (!ir::verifyModule(*mod).empty())
            continue;
          cat.variants.push_back(std::move(v));
        }
  }
  for (size_t vi = 0; vi < cat.variants.size(); ++vi) {
    const Variant &v = cat.variants[vi];
    addCase(cat, vi, Gen::Special, specialCount(v), 64);
    addCase(cat, vi, Gen::Uniform, 1000, 256);
    if (isFloatOp(v) && v.kind != ir::OpKind::Cmp && v.kind != ir::OpKind::Select)
      addCase(cat, vi, Gen::Hard, 1000, 64);
    if (sweepShapes(v)) {
      static constexpr std::array<std::pair<int64_t, uint32_t>, 5> kSweep = {
          {{0, 64}, {1, 256}, {7, 64}, {64, 64}, {4097, 256}}};
      for (auto [n, wg] : kSweep)
        addCase(cat, vi, Gen::Uniform, n, wg);
      if (v.name == "add.f32" || v.name == "exp.f32")
        addCase(cat, vi, Gen::Uniform, (int64_t{1} << 20) + 3, 256);
    }
  }
  return cat;
}

bool globMatch(std::string_view p, std::string_view s) {
  size_t pi = 0, si = 0, star = std::string_view::npos, mark = 0;
  while (si < s.size()) {
    if (pi < p.size() && (p[pi] == '?' || p[pi] == s[si])) {
      ++pi;
      ++si;
    } else if (pi < p.size() && p[pi] == '*') {
      star = pi++;
      mark = si;
    } else if (star != std::string_view::npos) {
      pi = star + 1;
      si = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '*')
    ++pi;
  return pi == p.size();
}

} // namespace tessera::conform
