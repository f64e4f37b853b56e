// strictMathCopy (strict_math.h): copy through the text form, decompose everything, and
// refuse a module in which a decomposable op survives (no shared expansion for its type yet),
// so that strict compilation never falls back to a backend's own math without saying so.
#include "ir/transforms/strict_math.h"

#include "ir/text/parser.h"
#include "ir/text/printer.h"
#include "ir/transforms/math_decompose.h"

#include <set>

namespace tessera::ir {

std::vector<std::string> undecomposedMath(const Module &m) {
  std::set<std::string> left; // sorted and unique: a stable message
  for (const auto &f : m.functions)
    walk(*f->body, [&](const Op &op) {
      if (isDecomposableMathOp(op.kind) && op.results.size() == 1)
        left.insert(std::string(op.info().name) + ":" +
                    std::string(scalarName(op.results[0]->type.elem)));
    });
  return {left.begin(), left.end()};
}

std::unique_ptr<Module> strictMathCopy(const Module &m, bool int64, std::string *error) {
  ParseResult pr = parseModule(printModule(m), m.filename);
  if (!pr.ok()) {
    *error = "strict: the module does not round-trip through its text form: " +
             (pr.diags.empty() ? std::string("no module") : pr.diags.front().str());
    return nullptr;
  }
  MathDecomposeOptions opts;
  opts.native = NativeMathSet::none();
  opts.int64 = int64;
  decomposeMath(*pr.module, opts);
  std::vector<std::string> left = undecomposedMath(*pr.module);
  if (left.empty())
    return std::move(pr.module);
  std::string list;
  for (const std::string &s : left)
    list += (list.empty() ? "" : ", ") + s;
  *error = "strict: no shared decomposition yet for " + list +
           " (ir/transforms/math_f32.cpp, math_f64.cpp); a backend's own math would make the "
           "result backend-specific";
  return nullptr;
}

} // namespace tessera::ir
