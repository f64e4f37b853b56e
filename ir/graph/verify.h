// The graph IR verifier: the rules every graph must satisfy before anything lowers or
// evaluates it (docs/graph_ir.md, "Verifier"). parseGraph runs it; code that builds graphs
// should run it before lowering.
#pragma once

#include "ir/graph/graph.h"

#include <string>
#include <string_view>

namespace tessera::graph {

/// True when `g` is well formed: value names valid and unique, parameter shapes and strides
/// non-negative with element counts that fit in i64, every node's operands defined before it,
/// its attributes present, typed and in range and its result type equal to inferType's (with
/// no strides), and at least one output, each an existing value. Otherwise false with *error
/// for the first problem: "FILE:LINE:COL: error: MESSAGE" for a node the parser located,
/// "FILE: error: MESSAGE" otherwise (FILE = `file`, "<graph>" when empty).
bool verifyGraph(const Graph &g, std::string *error, std::string_view file = "");

/// Checks a graph parameter's type: extents non-negative, strides absent or one per dim and
/// non-negative, element count and storage span within i64. False with *message (no location).
bool checkParamType(const TensorType &t, std::string *message);

/// True when `name` can be written as a value or graph name: [A-Za-z0-9_.]+.
bool isValidName(std::string_view name);

} // namespace tessera::graph
