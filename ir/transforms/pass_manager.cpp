// The pass registry and the pass manager: parses a pipeline ("canonicalize,cse,dce"), runs
// it, hands the IR to a dump callback after every pass and verifies after every pass.
// Never runs a pass on a module that does not verify (passes may assume valid IR).
#include "ir/transforms/pass.h"

#include "ir/verify/verifier.h"

namespace tessera::ir {
namespace {

std::string_view trim(std::string_view s) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && space(s.front()))
    s.remove_prefix(1);
  while (!s.empty() && space(s.back()))
    s.remove_suffix(1);
  return s;
}

std::string availablePasses() {
  std::string out;
  for (const PassEntry &p : passRegistry()) {
    if (!out.empty())
      out += ", ";
    out += p.name;
  }
  return out;
}

} // namespace

const std::vector<PassEntry> &passRegistry() {
  static const std::vector<PassEntry> kPasses{
      {"canonicalize", "fold constants and apply exact algebraic identities", &canonicalize},
      {"cse", "eliminate common subexpressions of pure ops", &cse},
      {"dce", "remove ops whose results are unused and that have no effect", &dce},
      {"inline", "inline every call to a device function", &inlineCalls},
  };
  return kPasses;
}

bool PassManager::parsePipeline(std::string_view pipeline, std::string &error) {
  std::vector<PassEntry> parsed;
  if (trim(pipeline).empty()) {
    error.clear();
    return true; // an empty pipeline runs nothing
  }
  while (true) {
    size_t comma = pipeline.find(',');
    std::string_view name = trim(pipeline.substr(0, comma));
    if (name.empty()) {
      error = "empty pass name in pipeline (available: " + availablePasses() + ")";
      return false;
    }
    const PassEntry *found = nullptr;
    for (const PassEntry &p : passRegistry())
      if (p.name == name)
        found = &p;
    if (!found) {
      error = "unknown pass '" + std::string(name) + "' (available: " + availablePasses() + ")";
      return false;
    }
    parsed.push_back(*found);
    if (comma == std::string_view::npos)
      break;
    pipeline.remove_prefix(comma + 1);
  }
  passes_.insert(passes_.end(), parsed.begin(), parsed.end());
  error.clear();
  return true;
}

Diagnostics PassManager::run(Module &m, const DumpFn &dumpAfter) const {
  Diagnostics diags = verifyModule(m);
  if (!diags.empty())
    return diags; // the input is invalid: no pass is run
  for (const PassEntry &p : passes_) {
    p.run(m);
    if (dumpAfter)
      dumpAfter(p.name, m);
    diags = verifyModule(m);
    if (diags.empty())
      continue;
    for (Diagnostic &d : diags)
      d.message = "after pass '" + std::string(p.name) + "': " + d.message;
    return diags;
  }
  return {};
}

} // namespace tessera::ir
