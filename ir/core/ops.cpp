// The op table materialised from ops.def, plus predicate and rounding names.
#include "ir/core/ops.h"

#include <array>

namespace tessera::ir {
namespace {
constexpr OpInfo kOps[] = {
#define OP(Enum, Name, Form, Operands, Mods, Pure, F16, BF16, F32, F64)                            \
  {OpKind::Enum, Name, OpForm::Form, TypeClass::Operands, ModSet::Mods, Pure != 0,               \
   {F16, BF16, F32, F64}},
#include "ir/core/ops.def"
#undef OP
};

constexpr std::array<std::string_view, 24> kPredNames{
    "eq",  "ne",  "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge", "oeq", "one",
    "olt", "ole", "ogt", "oge", "ord", "ueq", "une", "ult", "ule", "ugt", "uge", "uno"};
} // namespace

std::optional<double> OpInfo::ulpBudget(Scalar s) const {
  if (!isFloatScalar(s))
    return std::nullopt;
  double u = ulp[static_cast<int>(s) - static_cast<int>(Scalar::F16)];
  if (u < 0)
    return std::nullopt;
  return u;
}

bool isScalarForm(OpForm f) {
  switch (f) {
  case OpForm::Const:
  case OpForm::Unary:
  case OpForm::Binary:
  case OpForm::Ternary:
  case OpForm::Predicate:
  case OpForm::Compare:
  case OpForm::Select:
  case OpForm::Convert:
  case OpForm::Bitcast:
    return true;
  default:
    return false;
  }
}

bool isMatrixForm(OpForm f) {
  return f == OpForm::MatrixLoad || f == OpForm::MatrixStore || f == OpForm::MatrixFill ||
         f == OpForm::MatrixMad || f == OpForm::MatrixMap;
}

const OpInfo &opInfo(OpKind k) { return kOps[static_cast<size_t>(k)]; }
std::span<const OpInfo> allOps() { return kOps; }

std::optional<OpKind> lookupOp(std::string_view mnemonic) {
  for (const auto &info : kOps)
    if (info.name == mnemonic)
      return info.kind;
  return std::nullopt;
}

std::string_view cmpPredName(CmpPred p) { return kPredNames[static_cast<size_t>(p)]; }
bool isIntPred(CmpPred p) { return p <= CmpPred::Uge; }

// `ult`, `ule`, `ugt`, `uge` spell both an integer and a float predicate (as in LLVM's
// icmp/fcmp); this returns the integer one and the parser switches by operand type.
std::optional<CmpPred> parseCmpPred(std::string_view name) {
  for (size_t i = 0; i < kPredNames.size(); ++i)
    if (kPredNames[i] == name)
      return static_cast<CmpPred>(i);
  return std::nullopt;
}

std::string_view roundName(Round r) {
  switch (r) {
  case Round::Default:
    return "";
  case Round::Rte:
    return "rte";
  case Round::Rtz:
    return "rtz";
  case Round::Rtp:
    return "rtp";
  case Round::Rtn:
    return "rtn";
  }
  return "";
}

std::optional<Round> parseRound(std::string_view name) {
  for (Round r : {Round::Rte, Round::Rtz, Round::Rtp, Round::Rtn})
    if (roundName(r) == name)
      return r;
  return std::nullopt;
}

} // namespace tessera::ir
