// Scalar and memory types of the Tessera kernel IR.
//
// A Type is a small value (no interning, no context): scalars, buffer references
// (kernel parameters in global memory), shared-array references (workgroup memory) and
// subgroup-scope matrices (`matrix<T, R, C, U>`, owned by a whole subgroup; docs/ir.md).
// This header must never depend on anything outside the C++ standard library.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tessera::ir {

enum class Scalar : uint8_t { I1, I8, I16, I32, I64, F16, BF16, F32, F64 };

enum class Access : uint8_t { ReadWrite, ReadOnly, WriteOnly };

/// Role of a matrix in `matrix_mad`: `a` (M x K left operand), `b` (K x N right operand),
/// `acc` (M x N accumulator / result, and the only use `matrix_map` reads and writes).
enum class MatrixUse : uint8_t { A, B, Acc };

struct Type {
  enum class Kind : uint8_t { None, Scalar, Buffer, Shared, Matrix };

  Kind kind = Kind::None;
  Scalar elem = Scalar::I32; // the scalar, or the element type of a buffer / shared array / matrix
  Access access = Access::ReadWrite; // buffers only
  int64_t count = 0;                 // shared arrays only: number of elements
  uint16_t rows = 0, cols = 0;       // matrices only
  MatrixUse use = MatrixUse::A;      // matrices only

  static Type none() { return {}; }
  static Type scalar(Scalar s) { return make(Kind::Scalar, s, Access::ReadWrite, 0); }
  static Type buffer(Scalar e, Access a = Access::ReadWrite) { return make(Kind::Buffer, e, a, 0); }
  static Type shared(Scalar e, int64_t n) { return make(Kind::Shared, e, Access::ReadWrite, n); }
  /// `rows` and `cols` are stored as given (truncated to 16 bits); the verifier checks
  /// them against the allowed shapes (isValidMatrixType).
  static Type matrix(Scalar e, int rows, int cols, MatrixUse u) {
    Type t = make(Kind::Matrix, e, Access::ReadWrite, 0);
    t.rows = static_cast<uint16_t>(rows);
    t.cols = static_cast<uint16_t>(cols);
    t.use = u;
    return t;
  }

  bool isNone() const { return kind == Kind::None; }
  bool isScalar() const { return kind == Kind::Scalar; }
  bool isMemory() const { return kind == Kind::Buffer || kind == Kind::Shared; }
  bool isMatrix() const { return kind == Kind::Matrix; }
  bool isScalar(Scalar s) const { return isScalar() && elem == s; }
  bool isInt() const;   // i1..i64 scalar
  bool isFloat() const; // f16..f64 scalar
  bool isBool() const { return isScalar(Scalar::I1); }

  friend bool operator==(const Type &, const Type &) = default;

private:
  static Type make(Kind k, Scalar e, Access a, int64_t n) {
    Type t;
    t.kind = k;
    t.elem = e;
    t.access = a;
    t.count = n;
    return t;
  }
};

bool isIntScalar(Scalar s);
bool isFloatScalar(Scalar s);
/// Width in bits (i1 counts as 1).
int bitWidth(Scalar s);
/// Storage size in bytes of one element in a buffer (i1 is stored as one byte).
int byteSize(Scalar s);
/// Mantissa bits including the implicit bit (f16: 11, bf16: 8, f32: 24, f64: 53).
int mantissaBits(Scalar s);
/// Exponent of the largest finite value (f16: 15, bf16 and f32: 127, f64: 1023; 0 for
/// integers); the smallest normal's is 1 minus it.
int maxExponent(Scalar s);

std::string_view scalarName(Scalar s);
std::optional<Scalar> parseScalarName(std::string_view name);
std::string_view accessName(Access a);

std::string_view matrixUseName(MatrixUse u); // "a", "b", "acc"
std::optional<MatrixUse> parseMatrixUse(std::string_view name);
/// A matrix dimension (rows or cols) is one of 8, 16, 32, 64, 128.
bool isValidMatrixDim(int64_t n);
constexpr int64_t kMaxMatrixElements = 8192; // R * C <= this
/// Empty if `t` (a matrix type) has an allowed element type for its use and an allowed
/// shape (docs/ir.md, "Matrix ops"); else the reason, e.g. "rows must be one of 8, 16, 32,
/// 64, 128, got 12". `acc` accepts every matrix element type (f16/bf16/i8 ones are only
/// made by matrix_map, load and fill; the verifier checks that per op).
std::string matrixTypeError(const Type &t);

/// Canonical text: `f32`, `buffer<f32>`, `buffer<f16, readonly>`, `shared<f32, 256>`,
/// `matrix<f32, 64, 64, acc>`.
std::string toString(const Type &t);

} // namespace tessera::ir
