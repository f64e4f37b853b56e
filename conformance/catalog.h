// The conformance catalog: every case the suite runs, generated from the op table.
//
// A *variant* is one op instance with its types and modifiers (`exp.f32`, `div.u.i16`,
// `cmp.olt.f64`, `convert.rtz.f32.i8`); it compiles to one kernel
//   out[i] = op(in0[i], in1[i], ...)   for i < n   (bounds-checked; n is a parameter)
// A *case* is a variant run on one input set: a generator (uniform, special, hard) and a
// length n. Variants come from ir::allOps() filtered by the verifier, never from a hand list.
#pragma once

#include "ir/core/ir.h"
#include "ir/interp/interpreter.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tessera::conform {

struct Variant {
  ir::OpKind kind = ir::OpKind::Add;
  ir::Mods mods;
  std::vector<ir::Scalar> operands; // operand types, in order
  ir::Scalar result = ir::Scalar::F32;
  std::string name; // "exp.f32", "div.u.i32", "cmp.olt.f32", "convert.rtz.f32.i8"
  std::string family; // the op's mnemonic: one row of the summary matrix
};

enum class Gen : uint8_t { Uniform, Special, Hard };
const char *genName(Gen g);

struct Case {
  std::string id; // "<variant>/<gen>/n<N>", what --filter and xfail globs match
  size_t variant = 0; // index into Catalog::variants
  Gen gen = Gen::Uniform;
  int64_t n = 0;
  uint32_t workgroup = 64;
};

struct Catalog {
  std::vector<Variant> variants;
  std::vector<Case> cases;
};

/// Every variant the op table and the verifier allow, and their cases. Deterministic.
Catalog buildCatalog();

/// The kernel of a variant: @conform(%in0.., %out, %n: i32) in a fresh module.
std::unique_ptr<ir::Module> buildKernel(const Variant &v);

/// The scalar op of a kernel built by buildKernel (for re-evaluating elements).
const ir::Op *kernelOp(const ir::Module &m);

/// Input buffers for a case (one per operand), seeded by (seed, case id): identical on every
/// machine. Integer divisors are steered away from the undefined 0 and MIN / -1.
std::vector<ir::HostBuffer> makeInputs(const Variant &v, const Case &c, uint64_t seed);

/// Length of a variant's `special` case: the cross product of its operands' special values.
int64_t specialCount(const Variant &v);

/// Shell-style glob: `*` any run, `?` one character. Whole-string match.
bool globMatch(std::string_view pattern, std::string_view text);

} // namespace tessera::conform
