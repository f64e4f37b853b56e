// A located error message, as printed by every IR tool: `file:line:col: error: message`.
#pragma once

#include "ir/core/ir.h"

#include <string>
#include <vector>

namespace tessera::ir {

struct Diagnostic {
  std::string file;
  Loc loc;
  std::string message;

  std::string str() const {
    return file + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col) +
           ": error: " + message;
  }
};

using Diagnostics = std::vector<Diagnostic>;

} // namespace tessera::ir
