// Graph rewrites run before fusion (lower.cpp): see rewrite.h.
#include "ir/graph/rewrite.h"

#include <algorithm>

namespace tessera::graph {
namespace {

int64_t product(const std::vector<int64_t> &v, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i)
    p *= v[i];
  return p;
}

// When `v` (a matmul operand of rank 3 or more) is a reshape of a tensor X of higher rank
// that only merges X's leading dims into v's batch dims (the last two dims unchanged), X's
// leading dims; otherwise empty.
std::vector<int64_t> mergedBatch(const Graph &g, int v) {
  if (g.isParam(v) || g.node(v).op != OpKind::Reshape)
    return {};
  const std::vector<int64_t> &to = g.typeOf(v).shape;
  const std::vector<int64_t> &from = g.typeOf(g.node(v).inputs[0]).shape;
  if (to.size() < 3 || from.size() <= to.size() ||
      !std::equal(to.end() - 2, to.end(), from.end() - 2) ||
      product(to, 0, to.size() - 2) != product(from, 0, from.size() - 2))
    return {};
  return {from.begin(), from.end() - 2};
}

struct Rebuild {
  const Graph &g;
  Graph out;
  std::vector<int> map; // old value id -> new value id

  explicit Rebuild(const Graph &graph) : g(graph), map(static_cast<size_t>(graph.numValues())) {
    out.name = g.name;
    out.params = g.params;
    for (size_t p = 0; p < g.params.size(); ++p)
      map[p] = static_cast<int>(p);
  }

  int id(int oldValue) const { return map[static_cast<size_t>(oldValue)]; }

  // A new node where `from` was, with its location; -1 when the type does not infer.
  int add(const Node &from, OpKind op, std::vector<int> inputs, Attrs attrs, std::string name) {
    std::string error;
    int v = out.add(op, std::move(inputs), std::move(attrs), &error, std::move(name));
    if (v >= 0) {
      out.nodes.back().line = from.line;
      out.nodes.back().col = from.col;
    }
    return v;
  }

  int reshape(const Node &from, int v, const std::vector<int64_t> &shape, std::string name) {
    if (out.typeOf(v).shape == shape)
      return v;
    Attrs a;
    a.set("shape", Attr::list(shape));
    return add(from, OpKind::Reshape, {v}, a, std::move(name));
  }

  // The matmul `v` over X's batch dims instead of the merged ones (rewrite.h); false when it
  // does not apply.
  bool splitBatch(int v, const std::vector<std::vector<int>> &users) {
    const Node &n = g.node(v);
    const std::vector<int64_t> &shape = n.type.shape;
    if (shape.size() < 3 || std::find(g.outputs.begin(), g.outputs.end(), v) != g.outputs.end() ||
        users[static_cast<size_t>(v)].empty())
      return false;
    for (int u : users[static_cast<size_t>(v)])
      if (g.node(u).op != OpKind::Reshape)
        return false;
    std::vector<int64_t> lead;
    for (int in : n.inputs) {
      std::vector<int64_t> m = mergedBatch(g, in);
      if (m.empty())
        continue;
      // the merged dims must be the product's own batch dims, not broadcast against others
      if ((!lead.empty() && m != lead) || g.typeOf(in).shape.size() != shape.size())
        return false;
      lead = m;
    }
    if (lead.empty())
      return false;
    // Each operand over `lead`: X itself, a rank-2 operand as it is (it broadcasts), or one
    // with the matmul's own batch dims split by a reshape (always a view).
    std::vector<int> ins;
    for (int in : n.inputs) {
      const std::vector<int64_t> &s = g.typeOf(in).shape;
      if (!mergedBatch(g, in).empty()) {
        ins.push_back(id(g.node(in).inputs[0]));
      } else if (s.size() == 2) {
        ins.push_back(id(in));
      } else if (std::equal(s.begin(), s.end() - 2, shape.begin(), shape.end() - 2) &&
                 s.size() == shape.size()) {
        std::vector<int64_t> split = lead;
        split.insert(split.end(), s.end() - 2, s.end());
        int r = reshape(n, id(in), split, "");
        if (r < 0)
          return false;
        ins.push_back(r);
      } else {
        return false; // broadcast batch dims: left as they are
      }
    }
    int mm = add(n, OpKind::Matmul, ins, n.attrs, "");
    if (mm < 0)
      return false;
    int r = reshape(n, mm, shape, n.name);
    if (r < 0)
      return false;
    map[static_cast<size_t>(v)] = r;
    return true;
  }
};

} // namespace

Graph splitMatmulBatches(const Graph &g) {
  std::vector<std::vector<int>> users(static_cast<size_t>(g.numValues()));
  for (int v = static_cast<int>(g.params.size()); v < g.numValues(); ++v)
    for (int in : g.node(v).inputs)
      users[static_cast<size_t>(in)].push_back(v);
  Rebuild b(g);
  bool changed = false;
  for (int v = static_cast<int>(g.params.size()); v < g.numValues(); ++v) {
    const Node &n = g.node(v);
    if (n.op == OpKind::Matmul) {
      // A failed attempt may have added a reshape of an operand: roll it back.
      const size_t mark = b.out.nodes.size();
      if (b.splitBatch(v, users)) {
        changed = true;
        continue;
      }
      b.out.nodes.resize(mark);
    }
    Node copy = n;
    for (int &in : copy.inputs)
      in = b.id(in);
    b.out.nodes.push_back(std::move(copy));
    b.map[static_cast<size_t>(v)] = b.out.numValues() - 1;
  }
  if (!changed)
    return g;
  for (int o : g.outputs)
    b.out.outputs.push_back(b.id(o));
  return std::move(b.out);
}

} // namespace tessera::graph
