// The strict profile's math (strict_math.h): what is left after decomposing with an empty
// native set, and the error that refuses it.
#include "ir/transforms/strict_math.h"

#include "ir/transforms/math_decompose.h"
#include "ir/transforms/rewrite.h"

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

std::string strictMathError(const Module &decomposed) {
  std::string list;
  for (const std::string &s : undecomposedMath(decomposed))
    list += (list.empty() ? "" : ", ") + s;
  if (list.empty())
    return "";
  return "strict: no shared decomposition yet for " + list +
         " (ir/transforms/math_*.cpp); a backend's own math would make the result "
         "backend-specific";
}

std::unique_ptr<Module> strictMathCopy(const Module &m, bool int64, std::string *error) {
  auto copy = std::make_unique<Module>(cloneModule(m));
  decomposeMath(*copy, {NativeMathSet::none(), int64});
  *error = strictMathError(*copy);
  return error->empty() ? std::move(copy) : nullptr;
}

} // namespace tessera::ir
