// The graph IR verifier (verify.h). Op typing rules live in inferType (infer.cpp); this
// file checks what spans the graph: ids and order, names, parameter layouts, outputs.
// It must accept exactly the graphs that lowering and the evaluator can handle, and refuse
// everything else with a message, never crash (graphs may come from any front end).
#include "ir/graph/verify.h"

#include <limits>
#include <set>

namespace tessera::graph {

namespace {

struct Verifier {
  const Graph &g;
  std::string_view file;
  std::string *error;

  bool fail(int line, int col, const std::string &msg) const {
    if (!error)
      return false;
    std::string f = file.empty() ? "<graph>" : std::string(file);
    *error = line > 0
                 ? f + ":" + std::to_string(line) + ":" + std::to_string(col) + ": error: " + msg
                 : f + ": error: " + msg;
    return false;
  }

  bool params(std::set<std::string> *names) const {
    for (size_t i = 0; i < g.params.size(); ++i) {
      const Param &p = g.params[i];
      std::string what = "parameter %" + (p.name.empty() ? std::to_string(i) : p.name), msg;
      if (!p.name.empty() && !isValidName(p.name))
        return fail(0, 0, "parameter name '" + p.name + "' is not [A-Za-z0-9_.]+");
      if (!p.name.empty() && !names->insert(p.name).second)
        return fail(0, 0, "value name %" + p.name + " is used twice");
      if (!checkParamType(p.type, &msg))
        return fail(0, 0, what + ": " + msg);
    }
    return true;
  }

  bool nodes(std::set<std::string> *names) const {
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const Node &n = g.nodes[i];
      int id = static_cast<int>(g.params.size() + i);
      std::string what = "%" + (n.name.empty() ? std::to_string(id) : n.name);
      if (static_cast<int>(n.op) >= kNumOpKinds)
        return fail(n.line, n.col, what + ": unknown op");
      if (!n.name.empty() && !isValidName(n.name))
        return fail(n.line, n.col, "value name '" + n.name + "' is not [A-Za-z0-9_.]+");
      if (!n.name.empty() && !names->insert(n.name).second)
        return fail(n.line, n.col, "value name %" + n.name + " is used twice");
      for (int v : n.inputs)
        if (v < 0 || v >= id)
          return fail(n.line, n.col,
                      what + " = " + opName(n.op) + ": operand " + std::to_string(v) +
                          " is not a value defined before it (value ids must be topological)");
      if (!n.type.strides.empty())
        return fail(n.line, n.col,
                    what + ": only graph parameters may carry strides: " + typeToString(n.type));
      TensorType inferred;
      std::string err;
      if (!inferType(g, n.op, n.inputs, n.attrs, &inferred, &err))
        return fail(n.line, n.col, what + " = " + err);
      if (!(inferred == n.type))
        return fail(n.line, n.col,
                    what + " = " + opName(n.op) + ": the result type " + typeToString(n.type) +
                        " differs from the inferred " + typeToString(inferred));
    }
    return true;
  }

  bool run() const {
    if (!isValidName(g.name))
      return fail(0, 0, "graph name '" + g.name + "' is not [A-Za-z0-9_.]+");
    std::set<std::string> names;
    if (!params(&names) || !nodes(&names))
      return false;
    if (g.outputs.empty())
      return fail(0, 0, "the graph returns nothing (return needs at least one value)");
    for (int v : g.outputs)
      if (v < 0 || v >= g.numValues())
        return fail(0, 0, "output value " + std::to_string(v) + " does not exist");
    return true;
  }
};

} // namespace

bool checkParamType(const TensorType &t, std::string *message) {
  auto fail = [&](const std::string &m) {
    if (message)
      *message = m + ": " + typeToString(t);
    return false;
  };
  int64_t n;
  if (static_cast<size_t>(t.dtype) > static_cast<size_t>(DType::F64))
    return fail("unknown dtype");
  for (int64_t d : t.shape)
    if (d < 0)
      return fail("negative extent");
  if (!checkedNumel(t.shape, &n))
    return fail("more elements than fit in i64");
  if (t.strides.empty())
    return true;
  if (t.strides.size() != t.shape.size())
    return fail(std::to_string(t.strides.size()) + " strides for rank " + std::to_string(t.rank()));
  for (int64_t s : t.strides)
    if (s < 0)
      return fail("negative stride");
  if (t.storageElements() == std::numeric_limits<int64_t>::max())
    return fail("its strides span more elements than fit in i64");
  return true;
}

bool isValidName(std::string_view name) {
  if (name.empty())
    return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
          c == '.'))
      return false;
  return true;
}

bool verifyGraph(const Graph &g, std::string *error, std::string_view file) {
  return Verifier{g, file, error}.run();
}

} // namespace tessera::graph
