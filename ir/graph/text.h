// The graph IR's text format (docs/graph_ir.md, "Text format"): parse and print.
// print(parse(text)) is canonical and parse(print(g)) gives g back exactly (floats bit-exact).
// A malformed text gives "FILE:LINE:COL: error: MESSAGE", never a crash, for any input.
#pragma once

#include "ir/graph/graph.h"

#include <string>
#include <string_view>

namespace tessera::graph {

/// Parses one `graph @name(...) { ... }` and verifies it (verifyGraph). `file` names the
/// text in messages ("<string>" when empty). On failure *g is unspecified and *error holds the
/// first problem as "FILE:LINE:COL: error: MESSAGE" (lines and columns from 1).
bool parseGraph(std::string_view text, std::string_view file, Graph *g, std::string *error);

/// Reads FILE and parses it (parseGraph); an unreadable file is "FILE: error: cannot read".
bool parseGraphFile(const std::string &path, Graph *g, std::string *error);

/// The canonical text of `g`: every result type written, one statement per line, unnamed
/// values named by their id (made unique against the named ones).
std::string printGraph(const Graph &g);

/// The text of a float attribute: the shortest decimal that reads back to the same double,
/// always with a '.' or an exponent ("1.0", "-0.0", "1e+20", "inf", "-inf", "nan").
std::string formatFloat(double v);

} // namespace tessera::graph
