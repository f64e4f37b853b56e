// Names, sizes and text of IR types.
#include "ir/core/types.h"

#include <array>

namespace tessera::ir {
namespace {
struct ScalarRow {
  Scalar s;
  std::string_view name;
  int bits;
  int bytes;
  int mantissa;
};
constexpr std::array<ScalarRow, 9> kScalars{{
    {Scalar::I1, "i1", 1, 1, 0},
    {Scalar::I8, "i8", 8, 1, 0},
    {Scalar::I16, "i16", 16, 2, 0},
    {Scalar::I32, "i32", 32, 4, 0},
    {Scalar::I64, "i64", 64, 8, 0},
    {Scalar::F16, "f16", 16, 2, 11},
    {Scalar::BF16, "bf16", 16, 2, 8},
    {Scalar::F32, "f32", 32, 4, 24},
    {Scalar::F64, "f64", 64, 8, 53},
}};
const ScalarRow &row(Scalar s) { return kScalars[static_cast<size_t>(s)]; }
} // namespace

bool isIntScalar(Scalar s) { return s <= Scalar::I64; }
bool isFloatScalar(Scalar s) { return s >= Scalar::F16; }
int bitWidth(Scalar s) { return row(s).bits; }
int byteSize(Scalar s) { return row(s).bytes; }
int mantissaBits(Scalar s) { return row(s).mantissa; }
std::string_view scalarName(Scalar s) { return row(s).name; }

std::optional<Scalar> parseScalarName(std::string_view name) {
  for (const auto &r : kScalars)
    if (r.name == name)
      return r.s;
  return std::nullopt;
}

std::string_view accessName(Access a) {
  switch (a) {
  case Access::ReadWrite:
    return "readwrite";
  case Access::ReadOnly:
    return "readonly";
  case Access::WriteOnly:
    return "writeonly";
  }
  return "?";
}

bool Type::isInt() const { return isScalar() && isIntScalar(elem); }
bool Type::isFloat() const { return isScalar() && isFloatScalar(elem); }

std::string toString(const Type &t) {
  switch (t.kind) {
  case Type::Kind::None:
    return "none";
  case Type::Kind::Scalar:
    return std::string(scalarName(t.elem));
  case Type::Kind::Buffer: {
    std::string s = "buffer<" + std::string(scalarName(t.elem));
    if (t.access != Access::ReadWrite)
      s += ", " + std::string(accessName(t.access));
    return s + ">";
  }
  case Type::Kind::Shared:
    return "shared<" + std::string(scalarName(t.elem)) + ", " + std::to_string(t.count) + ">";
  }
  return "?";
}

} // namespace tessera::ir
