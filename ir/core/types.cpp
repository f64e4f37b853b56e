// Names, sizes and text of IR types.
#include "ir/core/types.h"

#include <array>
#include <utility>

namespace tessera::ir {
namespace {
struct ScalarRow {
  Scalar s;
  std::string_view name;
  int bits;
  int bytes;
  int mantissa;
  int maxExponent;
};
constexpr std::array<ScalarRow, 9> kScalars{{
    {Scalar::I1, "i1", 1, 1, 0, 0},
    {Scalar::I8, "i8", 8, 1, 0, 0},
    {Scalar::I16, "i16", 16, 2, 0, 0},
    {Scalar::I32, "i32", 32, 4, 0, 0},
    {Scalar::I64, "i64", 64, 8, 0, 0},
    {Scalar::F16, "f16", 16, 2, 11, 15},
    {Scalar::BF16, "bf16", 16, 2, 8, 127},
    {Scalar::F32, "f32", 32, 4, 24, 127},
    {Scalar::F64, "f64", 64, 8, 53, 1023},
}};
const ScalarRow &row(Scalar s) { return kScalars[static_cast<size_t>(s)]; }
} // namespace

bool isIntScalar(Scalar s) { return s <= Scalar::I64; }
bool isFloatScalar(Scalar s) { return s >= Scalar::F16; }
int bitWidth(Scalar s) { return row(s).bits; }
int byteSize(Scalar s) { return row(s).bytes; }
int mantissaBits(Scalar s) { return row(s).mantissa; }
int maxExponent(Scalar s) { return row(s).maxExponent; }
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

std::string_view matrixUseName(MatrixUse u) {
  switch (u) {
  case MatrixUse::A:
    return "a";
  case MatrixUse::B:
    return "b";
  case MatrixUse::Acc:
    return "acc";
  }
  return "?";
}

std::optional<MatrixUse> parseMatrixUse(std::string_view name) {
  for (MatrixUse u : {MatrixUse::A, MatrixUse::B, MatrixUse::Acc})
    if (matrixUseName(u) == name)
      return u;
  return std::nullopt;
}

bool isValidMatrixDim(int64_t n) { return n == 8 || n == 16 || n == 32 || n == 64 || n == 128; }

std::string matrixTypeError(const Type &t) {
  if (!t.isMatrix())
    return toString(t) + " is not a matrix type";
  Scalar e = t.elem;
  bool elemOk = false;
  switch (t.use) {
  case MatrixUse::A:
  case MatrixUse::B:
    elemOk = e == Scalar::F16 || e == Scalar::BF16 || e == Scalar::F32 || e == Scalar::I8;
    break;
  case MatrixUse::Acc:
    elemOk = e == Scalar::F32 || e == Scalar::I32 || e == Scalar::F16 || e == Scalar::BF16 ||
             e == Scalar::I8;
    break;
  }
  if (!elemOk)
    return "element type " + std::string(scalarName(e)) + " is not allowed for use '" +
           std::string(matrixUseName(t.use)) +
           (t.use == MatrixUse::Acc ? "' (allowed: f32, i32, f16, bf16, i8)"
                                    : "' (allowed: f16, bf16, f32, i8)");
  for (auto [n, what] : {std::pair<int64_t, const char *>{t.rows, "rows"}, {t.cols, "cols"}})
    if (!isValidMatrixDim(n))
      return std::string(what) + " must be one of 8, 16, 32, 64, 128, got " + std::to_string(n);
  if (int64_t{t.rows} * t.cols > kMaxMatrixElements)
    return "a matrix has at most " + std::to_string(kMaxMatrixElements) + " elements, " +
           std::to_string(t.rows) + " x " + std::to_string(t.cols) + " has " +
           std::to_string(int64_t{t.rows} * t.cols);
  return {};
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
  case Type::Kind::Matrix:
    return "matrix<" + std::string(scalarName(t.elem)) + ", " + std::to_string(t.rows) + ", " +
           std::to_string(t.cols) + ", " + std::string(matrixUseName(t.use)) + ">";
  }
  return "?";
}

} // namespace tessera::ir
