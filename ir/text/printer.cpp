// Canonical printer of the kernel IR (docs/ir.md). Deterministic: names are assigned in
// text order from the values' hints, never from pointer values or hash-map iteration.
// Must never print anything the parser cannot read back to the same module.
#include "ir/text/printer.h"

#include <cassert>
#include <charconv>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

namespace tessera::ir {
namespace {

bool isValidHint(const std::string &s) {
  if (s.empty())
    return false;
  bool allDigits = true;
  for (char c : s) {
    bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok)
      return false;
    allDigits &= (c >= '0' && c <= '9');
  }
  return !allDigits;
}

std::string formatDouble(double v) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v < 0 ? "-inf" : "inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".e") == std::string::npos)
    s += ".0";
  return s;
}

std::string formatFloat32(float v) {
  if (std::isnan(v) || std::isinf(v))
    return formatDouble(v);
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".e") == std::string::npos)
    s += ".0";
  return s;
}

class Printer {
public:
  std::string out;

  void function(const Function &f) {
    names_.clear();
    used_.clear();
    next_ = 0;
    out += f.isKernel ? "kernel @" : "func @";
    out += f.name + "(";
    for (size_t i = 0; i < f.body->args.size(); ++i) {
      const Value *a = f.body->args[i].get();
      if (i)
        out += ", ";
      out += define(a) + ": " + toString(a->type);
    }
    out += ")";
    if (!f.isKernel && !f.resultTypes.empty())
      out += " -> " + typeList(f.resultTypes, /*parensForOne=*/false);
    out += " {\n";
    block(*f.body, 1);
    out += "}\n";
    if (f.launch)
      launch(f, *f.launch);
  }

private:
  std::unordered_map<const Value *, std::string> names_;
  std::unordered_set<std::string> used_;
  unsigned next_ = 0;

  std::string define(const Value *v, const std::string *forced = nullptr) {
    std::string name;
    if (forced) {
      name = *forced;
    } else if (isValidHint(v->name) && !used_.count(v->name)) {
      name = v->name;
    } else {
      name = std::to_string(next_++);
    }
    used_.insert(name);
    names_[v] = name;
    return "%" + name;
  }

  std::string use(const Value *v) const {
    auto it = names_.find(v);
    if (it == names_.end())
      return "%<undefined>"; // only reachable for IR that fails verification
    return "%" + it->second;
  }

  static std::string typeList(const std::vector<Type> &types, bool parensForOne) {
    std::string s;
    bool parens = parensForOne || types.size() != 1;
    if (parens)
      s += "(";
    for (size_t i = 0; i < types.size(); ++i)
      s += (i ? ", " : "") + toString(types[i]);
    if (parens)
      s += ")";
    return s;
  }

  std::string uses(const std::vector<Value *> &vals, size_t from = 0) const {
    std::string s;
    for (size_t i = from; i < vals.size(); ++i)
      s += (i > from ? ", " : "") + use(vals[i]);
    return s;
  }

  static bool isImplicitTerminator(const Op &op, const Block &b) {
    if (op.info().form != OpForm::Terminator || !op.operands.empty())
      return false;
    if (op.kind == OpKind::Return)
      return b.parentOp == nullptr;
    return op.kind == OpKind::Yield && b.parentOp != nullptr;
  }

  void block(const Block &b, int depth) {
    for (auto &op : b.ops) {
      if (op.get() == b.ops.back().get() && isImplicitTerminator(*op, b))
        continue;
      out.append(2 * depth, ' ');
      this->op(*op, depth);
      out += "\n";
    }
  }

  // A region is empty in text when it holds nothing but an implicit terminator.
  static bool isEmptyRegion(const Block &b) {
    return b.ops.empty() || (b.ops.size() == 1 && isImplicitTerminator(*b.ops[0], b));
  }

  void regionBody(const Block &b, int depth) {
    out += "{\n";
    block(b, depth + 1);
    out.append(2 * depth, ' ');
    out += "}";
  }

  static std::string mods(const Op &op) {
    const OpInfo &info = op.info();
    std::string s;
    switch (info.mods) {
    case ModSet::None:
      break;
    case ModSet::Sign:
      if (op.mods.isUnsigned)
        s += ".u";
      break;
    case ModSet::Pred:
      s += "." + std::string(cmpPredName(op.mods.pred));
      break;
    case ModSet::Conv:
      if (op.mods.isUnsigned)
        s += ".u";
      if (op.mods.sat)
        s += ".sat";
      if (op.mods.round != Round::Default)
        s += "." + std::string(roundName(op.mods.round));
      break;
    case ModSet::Dim:
      s += "." + std::string(1, "xyz"[op.mods.dim % 3]);
      break;
    case ModSet::Layout:
      if (op.mods.colMajor)
        s += ".col";
      break;
    }
    return s;
  }

  std::string mem(const Op &op, size_t memIdx) const {
    return use(op.operands[memIdx]) + "[" + use(op.operands[memIdx + 1]) + "]";
  }

  void op(const Op &op, int depth) {
    const OpInfo &info = op.info();
    if (!op.results.empty()) {
      for (size_t i = 0; i < op.results.size(); ++i)
        out += (i ? ", " : "") + define(op.results[i].get());
      out += " = ";
    }
    out += std::string(info.name) + mods(op);
    auto operandType = [&](size_t i) {
      return i < op.operands.size() ? toString(op.operands[i]->type) : std::string("none");
    };
    auto resultType = [&]() {
      return op.results.empty() ? std::string("none") : toString(op.results[0]->type);
    };
    switch (info.form) {
    case OpForm::Unary:
    case OpForm::Predicate:
    case OpForm::SubgroupReduce:
    case OpForm::Binary:
    case OpForm::Ternary:
    case OpForm::Compare:
    case OpForm::Shuffle:
      out += " " + uses(op.operands) + " : " + operandType(0);
      return;
    case OpForm::Select:
      out += " " + uses(op.operands) + " : " + operandType(1);
      return;
    case OpForm::Convert:
    case OpForm::Bitcast:
      out += " " + uses(op.operands) + " : " + operandType(0) + " -> " + resultType();
      return;
    case OpForm::Const: {
      Scalar t = op.results.empty() ? Scalar::I32 : op.results[0]->type.elem;
      out += " " + printLiteral(op.literal, t) + " : " + resultType();
      return;
    }
    case OpForm::WorkItem:
    case OpForm::SharedAlloc:
      out += " : " + resultType();
      return;
    case OpForm::Load:
      out += " " + mem(op, 0) + " : " + resultType();
      return;
    case OpForm::Store:
      out += " " + use(op.operands[0]) + ", " + mem(op, 1) + " : " + operandType(0);
      return;
    case OpForm::Atomic:
    case OpForm::AtomicCas:
      out += " " + mem(op, 0) + ", " + uses(op.operands, 2) + " : " + operandType(2);
      return;
    case OpForm::Barrier:
      return;
    case OpForm::Terminator:
      if (!op.operands.empty())
        out += " " + uses(op.operands);
      return;
    case OpForm::Call: {
      out += " @" + op.callee + "(" + uses(op.operands) + ")";
      if (!op.results.empty()) {
        std::vector<Type> types;
        for (auto &r : op.results)
          types.push_back(r->type);
        out += " -> " + typeList(types, false);
      }
      return;
    }
    case OpForm::For:
      forOp(op, depth);
      return;
    case OpForm::If:
      ifOp(op, depth);
      return;
    case OpForm::While:
      whileOp(op, depth);
      return;
    case OpForm::MatrixLoad:
      out += " " + matrixAccess(op, 0) + " : " + resultType();
      return;
    case OpForm::MatrixStore:
      out += " " + use(op.operands[0]) + ", " + matrixAccess(op, 1) + " : " + operandType(0);
      return;
    case OpForm::MatrixFill:
      out += " " + uses(op.operands) + " : " + resultType();
      return;
    case OpForm::MatrixMad:
      out += " " + uses(op.operands) + " : " + operandType(0) + ", " + operandType(1) + ", " +
             operandType(2);
      return;
    case OpForm::MatrixMap:
      matrixMapOp(op, depth);
      return;
    }
  }

  /// `%A[%off] stride %ld [bounds %rows, %cols]` of a matrix load (memIdx 0) or store (1).
  std::string matrixAccess(const Op &op, size_t memIdx) const {
    if (op.operands.size() < memIdx + 3)
      return "<malformed>"; // only reachable for IR that fails verification
    std::string s = mem(op, memIdx) + " stride " + use(op.operands[memIdx + 2]);
    if (op.operands.size() >= memIdx + 5)
      s += " bounds " + use(op.operands[memIdx + 3]) + ", " + use(op.operands[memIdx + 4]);
    return s;
  }

  void matrixMapOp(const Op &op, int depth) {
    if (op.regions.empty()) {
      out += "(<malformed: no region>)"; // only reachable for IR that fails verification
      return;
    }
    const Block &body = op.region(0);
    out += "(";
    for (size_t i = 0; i < op.operands.size(); ++i)
      out += (i ? ", " : "") +
             (i < body.args.size() ? define(body.args[i].get()) : std::string("%<missing>")) +
             " = " + use(op.operands[i]);
    out += ") -> " + (op.results.empty() ? std::string("none") : toString(op.result(0)->type));
    out += " ";
    regionBody(body, depth);
  }

  void forOp(const Op &op, int depth) {
    const Block &body = op.region(0);
    out += " " + define(body.args[0].get()) + " = " + use(op.operands[0]) + " to " +
           use(op.operands[1]) + " step " + use(op.operands[2]);
    if (op.operands.size() > 3) {
      out += " iter(";
      for (size_t i = 3; i < op.operands.size(); ++i)
        out += (i > 3 ? ", " : "") + define(body.args[i - 2].get()) + " = " + use(op.operands[i]);
      out += ")";
    }
    out += " : " + toString(op.operands[0]->type) + " ";
    regionBody(body, depth);
  }

  void ifOp(const Op &op, int depth) {
    out += " " + use(op.operands[0]);
    if (!op.results.empty()) {
      std::vector<Type> types;
      for (auto &r : op.results)
        types.push_back(r->type);
      out += " -> " + typeList(types, true);
    }
    out += " ";
    regionBody(op.region(0), depth);
    if (op.regions.size() > 1 && !isEmptyRegion(op.region(1))) {
      out += " else ";
      regionBody(op.region(1), depth);
    }
  }

  void whileOp(const Op &op, int depth) {
    const Block &before = op.region(0);
    const Block &after = op.region(1);
    if (!op.operands.empty()) {
      out += " iter(";
      for (size_t i = 0; i < op.operands.size(); ++i)
        out += (i ? ", " : "") + define(before.args[i].get()) + " = " + use(op.operands[i]);
      out += ")";
    }
    // The `do` region's arguments share the names of the first region's.
    for (size_t i = 0; i < after.args.size() && i < before.args.size(); ++i)
      names_[after.args[i].get()] = names_[before.args[i].get()];
    out += " ";
    regionBody(before, depth);
    out += " do ";
    regionBody(after, depth);
  }

  static std::string dims(const std::array<uint32_t, 3> &d) {
    int n = d[2] != 1 ? 3 : d[1] != 1 ? 2 : 1;
    std::string s = "(";
    for (int i = 0; i < n; ++i)
      s += (i ? ", " : "") + std::to_string(d[i]);
    return s + ")";
  }

  /// A generator parameter: as an integer when it was written as one that a double cannot
  /// hold (i64 above 2^53), else as a double (the form every existing file prints in).
  static std::string param(double v, const IntParam &exact) {
    if (!exact.set)
      return formatDouble(v);
    double m = static_cast<double>(exact.magnitude);
    if (m < 0x1p53 && m == std::fabs(v))
      return formatDouble(v);
    return (exact.negative ? "-" : "") + std::to_string(exact.magnitude);
  }

  void launch(const Function &f, const LaunchSpec &l) {
    out += "\nlaunch @" + f.name + " grid" + dims(l.grid) + " workgroup" + dims(l.workgroup);
    if (l.seed)
      out += " seed(" + std::to_string(l.seed) + ")";
    out += " {\n";
    // Initialisers are stored in parameter order; print each under the name the printer
    // gave its parameter (hints may be empty or clash).
    auto params = f.params();
    for (size_t i = 0; i < l.args.size(); ++i) {
      const ArgInit &a = l.args[i];
      const Value *p = i < params.size() ? params[i] : nullptr;
      out += "  " + (p ? use(p) : "%" + a.param);
      switch (a.kind) {
      case ArgInit::Kind::Scalar:
        out += " = " + printLiteral(a.scalar, p ? p->type.elem : Scalar::F64);
        break;
      case ArgInit::Kind::Uniform:
        out += "[" + std::to_string(a.count) + "] = uniform(" + param(a.a, a.ia) + ", " +
               param(a.b, a.ib) + ")";
        break;
      case ArgInit::Kind::Normal:
        out += "[" + std::to_string(a.count) + "] = normal(" + param(a.a, a.ia) + ", " +
               param(a.b, a.ib) + ")";
        break;
      case ArgInit::Kind::Iota:
        out += "[" + std::to_string(a.count) + "] = iota(" + param(a.a, a.ia) + ", " +
               param(a.b, a.ib) + ")";
        break;
      case ArgInit::Kind::Fill:
        out += "[" + std::to_string(a.count) + "] = fill(" + param(a.a, a.ia) + ")";
        break;
      case ArgInit::Kind::Special:
        out += "[" + std::to_string(a.count) + "] = special";
        break;
      }
      out += "\n";
    }
    out += "}\n";
  }
};

} // namespace

std::string printLiteral(const Literal &lit, Scalar t) {
  if (t == Scalar::I1)
    return (lit.i & 1) ? "true" : "false";
  if (isIntScalar(t)) {
    int bits = bitWidth(t);
    uint64_t v = lit.i;
    int64_t s = bits == 64 ? static_cast<int64_t>(v)
                           : static_cast<int64_t>(v << (64 - bits)) >> (64 - bits);
    return std::to_string(s);
  }
  if (t == Scalar::F32)
    return formatFloat32(static_cast<float>(lit.f));
  return formatDouble(lit.f);
}

std::string printFunction(const Function &f) {
  Printer p;
  p.function(f);
  return p.out;
}

std::string printModule(const Module &m) {
  std::string out;
  for (size_t i = 0; i < m.functions.size(); ++i) {
    if (i)
      out += "\n";
    out += printFunction(*m.functions[i]);
  }
  return out;
}

} // namespace tessera::ir
