// Scalar and memory types of the Tessera kernel IR.
//
// A Type is a small value (no interning, no context): scalars, buffer references
// (kernel parameters in global memory) and shared-array references (workgroup memory).
// This header must never depend on anything outside the C++ standard library.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tessera::ir {

enum class Scalar : uint8_t { I1, I8, I16, I32, I64, F16, BF16, F32, F64 };

enum class Access : uint8_t { ReadWrite, ReadOnly, WriteOnly };

struct Type {
  enum class Kind : uint8_t { None, Scalar, Buffer, Shared };

  Kind kind = Kind::None;
  Scalar elem = Scalar::I32; // the scalar, or the element type of a buffer / shared array
  Access access = Access::ReadWrite; // buffers only
  int64_t count = 0;                 // shared arrays only: number of elements

  static Type none() { return {}; }
  static Type scalar(Scalar s) { return {Kind::Scalar, s, Access::ReadWrite, 0}; }
  static Type buffer(Scalar e, Access a = Access::ReadWrite) { return {Kind::Buffer, e, a, 0}; }
  static Type shared(Scalar e, int64_t n) { return {Kind::Shared, e, Access::ReadWrite, n}; }

  bool isNone() const { return kind == Kind::None; }
  bool isScalar() const { return kind == Kind::Scalar; }
  bool isMemory() const { return kind == Kind::Buffer || kind == Kind::Shared; }
  bool isScalar(Scalar s) const { return isScalar() && elem == s; }
  bool isInt() const;   // i1..i64 scalar
  bool isFloat() const; // f16..f64 scalar
  bool isBool() const { return isScalar(Scalar::I1); }

  friend bool operator==(const Type &, const Type &) = default;
};

bool isIntScalar(Scalar s);
bool isFloatScalar(Scalar s);
/// Width in bits (i1 counts as 1).
int bitWidth(Scalar s);
/// Storage size in bytes of one element in a buffer (i1 is stored as one byte).
int byteSize(Scalar s);
/// Mantissa bits including the implicit bit (f16: 11, bf16: 8, f32: 24, f64: 53).
int mantissaBits(Scalar s);

std::string_view scalarName(Scalar s);
std::optional<Scalar> parseScalarName(std::string_view name);
std::string_view accessName(Access a);

/// Canonical text: `f32`, `buffer<f32>`, `buffer<f16, readonly>`, `shared<f32, 256>`.
std::string toString(const Type &t);

} // namespace tessera::ir
