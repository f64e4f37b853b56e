// libFuzzer target of the IR text format: parse (with verification); if the input is
// accepted, print it, re-parse the printed text (must succeed) and print again (must be
// identical). Any other outcome traps. Must never suppress a parser or printer failure.
#include "ir/text/parser.h"
#include "ir/text/printer.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace tessera::ir;
  std::string_view text(reinterpret_cast<const char *>(data), size);
  ParseResult r = parseModule(text, "fuzz.tir", /*verify=*/true);
  if (!r.ok()) {
    if (r.diags.empty() || r.module)
      __builtin_trap(); // a failed parse must explain itself and return no module
    return 0;
  }
  std::string once = printModule(*r.module);
  ParseResult again = parseModule(once, "printed.tir", /*verify=*/true);
  if (!again.ok()) {
    std::fprintf(stderr, "printed text does not re-parse: %s\n--- printed:\n%s\n",
                 again.diags.empty() ? "?" : again.diags[0].str().c_str(), once.c_str());
    __builtin_trap();
  }
  std::string twice = printModule(*again.module);
  if (twice != once) {
    std::fprintf(stderr, "printing is not a fixed point\n--- first:\n%s\n--- second:\n%s\n",
                 once.c_str(), twice.c_str());
    __builtin_trap();
  }
  return 0;
}
