// IR-to-IR passes and the pass manager.
//
// Each pass returns whether it changed the module. Passes never change the observable
// results of a kernel (canonicalize only applies identities that are exact in IEEE
// arithmetic). The pass manager runs a named pipeline, verifies after every pass, and can
// hand the IR after each pass to a dump callback (`tessera ir opt --dump-after`).
#pragma once

#include "ir/core/diagnostic.h"
#include "ir/core/ir.h"

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::ir {

bool canonicalize(Module &m); // constant folding + exact algebraic identities
bool cse(Module &m);          // common subexpressions of pure ops, scoped by region nesting
bool dce(Module &m);          // removes pure ops whose results are unused
bool inlineCalls(Module &m);  // inlines every call to a device function

struct PassEntry {
  std::string_view name;
  std::string_view description;
  bool (*run)(Module &);
};
/// Every registered pass, in a stable order.
const std::vector<PassEntry> &passRegistry();

class PassManager {
public:
  using DumpFn = std::function<void(std::string_view passName, const Module &m)>;

  /// Parses "canonicalize,cse,dce". Returns false and sets `error` for an unknown name.
  bool parsePipeline(std::string_view pipeline, std::string &error);
  void addPass(const PassEntry &p) { passes_.push_back(p); }
  /// Runs every pass; verifies after each. Diagnostics are returned when verification fails
  /// (naming the pass that broke the module).
  Diagnostics run(Module &m, const DumpFn &dumpAfter = nullptr) const;

private:
  std::vector<PassEntry> passes_;
};

} // namespace tessera::ir
