// Printer of the graph IR text format (text.h). Its output is canonical: parsing it gives
// the same graph back (names, attribute order and every float bit for bit), and printing
// that again gives the same bytes. Output is deterministic (no pointer-keyed iteration).
#include "ir/graph/text.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

namespace tessera::graph {

std::string formatFloat(double v) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v < 0 ? "-inf" : "inf";
  char buf[40];
  for (int prec = 1; prec <= 17; ++prec) { // the shortest text that reads back exactly
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v &&
        std::signbit(std::strtod(buf, nullptr)) == std::signbit(v))
      break;
  }
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos)
    s += ".0"; // so that it reads back as a float, not an integer
  return s;
}

namespace {

std::string attrText(const Attr &a) {
  switch (a.kind) {
  case Attr::Kind::Int:
    return std::to_string(a.i);
  case Attr::Kind::Float:
    return formatFloat(a.f);
  case Attr::Kind::Bool:
    return a.b ? "true" : "false";
  case Attr::Kind::Ints:
    return shapeToString(a.ints);
  case Attr::Kind::Str: {
    std::string s = "\"";
    for (char c : a.s) {
      if (c == '"' || c == '\\')
        s += '\\';
      s += c;
    }
    return s + "\"";
  }
  }
  return "?";
}

// The printed name of every value: its own, or its id made unique against the named ones.
std::vector<std::string> valueNames(const Graph &g) {
  std::set<std::string> used;
  for (const Param &p : g.params)
    used.insert(p.name);
  for (const Node &n : g.nodes)
    used.insert(n.name);
  std::vector<std::string> names(static_cast<size_t>(g.numValues()));
  for (int v = 0; v < g.numValues(); ++v) {
    const std::string &own = g.isParam(v) ? g.params[static_cast<size_t>(v)].name : g.node(v).name;
    if (!own.empty()) {
      names[static_cast<size_t>(v)] = own;
      continue;
    }
    std::string n = std::to_string(v);
    while (used.count(n))
      n += "_";
    used.insert(n);
    names[static_cast<size_t>(v)] = n;
  }
  return names;
}

} // namespace

std::string printGraph(const Graph &g) {
  std::vector<std::string> names = valueNames(g);
  auto ref = [&](int v) {
    return v >= 0 && v < g.numValues() ? "%" + names[static_cast<size_t>(v)]
                                       : "%<bad " + std::to_string(v) + ">";
  };
  std::vector<std::string> params;
  size_t width = 8 + g.name.size();
  for (size_t i = 0; i < g.params.size(); ++i) {
    params.push_back(ref(static_cast<int>(i)) + ": " + typeToString(g.params[i].type));
    width += params.back().size() + 2;
  }
  std::string out = "graph @" + g.name + "(";
  bool oneLine = width <= 100;
  for (size_t i = 0; i < params.size(); ++i) {
    if (!oneLine)
      out += "\n    ";
    out += params[i];
    if (i + 1 < params.size())
      out += oneLine ? ", " : ",";
  }
  out += ") {\n";
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node &n = g.nodes[i];
    out += "  " + ref(static_cast<int>(g.params.size() + i)) + " = " + opName(n.op);
    for (size_t k = 0; k < n.inputs.size(); ++k)
      out += (k ? ", " : " ") + ref(n.inputs[k]);
    if (!n.attrs.items.empty()) {
      out += " {";
      for (size_t k = 0; k < n.attrs.items.size(); ++k)
        out += (k ? ", " : "") + n.attrs.items[k].first + " = " + attrText(n.attrs.items[k].second);
      out += "}";
    }
    out += " : " + typeToString(n.type) + "\n";
  }
  out += "  return";
  for (size_t k = 0; k < g.outputs.size(); ++k)
    out += (k ? ", " : " ") + ref(g.outputs[k]);
  return out + "\n}\n";
}

} // namespace tessera::graph
