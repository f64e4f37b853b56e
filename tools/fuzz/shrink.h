// Delta-debugging of a failing kernel module (`tessera fuzz`): greedily applies
// simplifications (delete dead code, replace a value by a constant or by one of its operands,
// hoist one branch of an `if` out of it, drop unused parameters and functions, halve the grid,
// the workgroup and the buffers, plainer buffer initialisers) and keeps each one under which
// the failure persists, until none applies or the time is up.
//
// Works on text: every candidate is parsed, mutated, printed and handed to the predicate,
// which re-parses and verifies it, so an invalid candidate is simply rejected. Must never
// return a text for which the predicate did not answer true (except the input itself).
#pragma once

#include <functional>
#include <string>

namespace tessera::fuzz {

struct ShrinkStats {
  int attempts = 0; // predicate calls
  int accepted = 0; // simplifications kept
  bool timedOut = false;
};

/// True when the candidate module text still shows the failure being minimised.
using StillFails = std::function<bool(const std::string &text)>;

/// Returns the smallest failing text found, starting from `text` (which must fail).
std::string shrinkModule(const std::string &text, const StillFails &stillFails, double seconds,
                         ShrinkStats *stats = nullptr);

/// Number of ops (region ops and terminators included) in a module's text; -1 if it does
/// not parse. For reports and tests.
int countOps(const std::string &text);

} // namespace tessera::fuzz
