// Parser of the kernel IR text format (docs/ir.md).
//
// Never crashes and never throws on bad input: every problem becomes a Diagnostic with the
// position of the offending token (`file:line:col: error: ...`). Parsing stops at the first
// error. On success the module is verified (ir/verify) unless `verify` is false.
#pragma once

#include "ir/core/diagnostic.h"
#include "ir/core/ir.h"

#include <memory>
#include <string>
#include <string_view>

namespace tessera::ir {

struct ParseResult {
  std::unique_ptr<Module> module; // null when diags is not empty
  Diagnostics diags;
  bool ok() const { return module != nullptr && diags.empty(); }
};

ParseResult parseModule(std::string_view text, std::string filename, bool verify = true);
/// Reads and parses a file; an unreadable file is a diagnostic at 0:0.
ParseResult parseFile(const std::string &path, bool verify = true);
/// The bytes of `path`, at most kMaxFileBytes (ir/core/limits.h); false with the reason in
/// *error ("cannot open file", or the file is too large).
bool readTextFile(const std::string &path, std::string *text, std::string *error);

} // namespace tessera::ir
