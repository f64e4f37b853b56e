// Internals shared by the verifier's translation units (verifier.cpp: structure, regions,
// visibility, calls; verify_ops.cpp: per-op typing against the op table; verify_matrix.cpp:
// matrix ops; verify_uniform.cpp: subgroup uniformity of matrix ops; verify_launch.cpp:
// launch specs). Must never be included outside ir/verify/, and nothing here may modify IR.
#pragma once

#include "ir/core/diagnostic.h"
#include "ir/core/ir.h"

#include <string>
#include <utility>

namespace tessera::ir::verify_detail {

/// Collects diagnostics located in the module's file.
class Reporter {
public:
  Reporter(const Module &m, Diagnostics &diags) : m_(m), diags_(diags) {}
  void error(Loc loc, std::string message) {
    diags_.push_back({m_.filename, loc, std::move(message)});
  }
  /// Diagnostics reported so far (to run an analysis only on IR that is otherwise valid).
  size_t errorCount() const { return diags_.size(); }
  const Module &module() const { return m_; }

private:
  const Module &m_;
  Diagnostics &diags_;
};

/// `'add'`: the op's mnemonic in quotes, as every message names it.
std::string quoted(const Op &op);
/// ` %x` for a named value, empty for an unnamed one (to append to a message).
std::string nameSuffix(const Value &v);
/// Whether `x` is exactly a value of float type `t` (NaN and infinities included).
bool isRepresentable(double x, Scalar t);
/// Whether the literal bits `bits` fit integer type `t` (already truncated to its width).
bool fitsInt(uint64_t bits, Scalar t);

/// Checks a modifier-carrying op's `.u`, `.sat`, rounding, predicate and dimension fields.
void verifyMods(Reporter &r, const Op &op);
/// Checks arity, operand types and result types of every op that has a fixed signature
/// (everything except for/if/while, terminators and calls). Operands are non-null and
/// visible when this is called.
void verifyFixedOp(Reporter &r, const Op &op);
/// Whether verifyFixedOp handles ops of this form.
bool hasFixedSignature(OpForm form);

/// Checks arity, operand, result and region-argument types of a matrix op (verify_matrix.cpp);
/// the body of a matrix_map region is walked by the caller. Operands are non-null and visible.
void verifyMatrixOp(Reporter &r, const Op &op);

/// Checks a kernel's launch spec against its parameters.
void verifyLaunch(Reporter &r, const Function &kernel);

} // namespace tessera::ir::verify_detail
