// Fusion decisions (fuse.h): groups of nodes per kernel, materialised values, kernel order.
//
// Why these rules:
// - Recomputing a pointwise chain in each consumer is cheaper than a round trip through
//   memory on every device we target (memory bound), as in Inductor; a value is written only
//   where some kernel needs it from memory (outputs, views, GEMM operands, gather tables).
// - Row groups: one workgroup per row makes a pass over the row per reduction, so a whole
//   normalisation (max, sum of exp, divide) costs a few reads of the row and one write.
//   A row member that some other kernel reads is written by the row kernel.
// - Order: every kernel reads only values produced by kernels with a smaller anchor, so a
//   group only takes nodes whose external inputs come from kernels anchored before it.
#include "ir/graph/fuse.h"

#include <algorithm>
#include <functional>
#include <set>
#include <unordered_map>

namespace tessera::graph::detail {

bool isPointwise(OpKind op) {
  OpFamily f = opFamily(op);
  return f == OpFamily::Unary || f == OpFamily::Binary || f == OpFamily::Ternary;
}

bool isRowReduction(const Graph &g, const Node &n) {
  if (opFamily(n.op) != OpFamily::Reduction)
    return false;
  int r = g.typeOf(n.inputs[0]).rank();
  std::vector<int64_t> axes = n.attrs.getInts("axes");
  if (axes.empty())
    return false;
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] != r - static_cast<int64_t>(axes.size()) + static_cast<int64_t>(i))
      return false;
  return true;
}

int viewRoot(const Graph &g, int v) {
  while (!g.isParam(v) && opFamily(g.node(v).op) == OpFamily::View)
    v = g.node(v).inputs[0];
  return v;
}

const char *kernelKindName(FusedKernel::Kind k) {
  switch (k) {
  case FusedKernel::Kind::Pointwise:
    return "pointwise";
  case FusedKernel::Kind::Row:
    return "row";
  case FusedKernel::Kind::Column:
    return "reduce";
  case FusedKernel::Kind::Matmul:
    return "matmul";
  case FusedKernel::Kind::Cat:
    return "cat";
  case FusedKernel::Kind::Embedding:
    return "embedding";
  case FusedKernel::Kind::Copy:
    return "copy";
  }
  return "?";
}

namespace {

/// Inlined graph nodes in one kernel, at most (a node lowers to a few kernel IR ops; the IR
/// takes 32768 per function, and compile time grows faster than linearly with size).
constexpr size_t kMaxInlinedNodes = 2048;

class Fuser {
public:
  Fuser(const Graph &g, uint32_t maxBuffers) : g_(g), maxBuffers_(maxBuffers) {
    size_t n = static_cast<size_t>(g.numValues());
    f_.kernelOf.assign(n, -1);
    f_.materialise.assign(n, false);
    f_.users.assign(n, {});
    f_.isOutput.assign(n, false);
    for (int v = static_cast<int>(g.params.size()); v < g.numValues(); ++v)
      for (int in : g.node(v).inputs)
        f_.users[static_cast<size_t>(in)].push_back(v);
    for (int o : g.outputs)
      f_.isOutput[static_cast<size_t>(o)] = true;
    // Values computed from constants and iotas alone (a causal mask's iotas, torch.ones):
    // a few integer ops wherever they are read, so views of them are not materialised.
    f_.sourceOnly.assign(n, false);
    for (int v = static_cast<int>(g.params.size()); v < g.numValues(); ++v) {
      const Node &nd = g.node(v);
      bool s = nd.op == OpKind::Constant || nd.op == OpKind::Iota;
      if (!s && (isPointwise(nd.op) || opFamily(nd.op) == OpFamily::View)) {
        s = true; // a view of one is one too: recomputed through its index
        for (int in : nd.inputs)
          s = s && !g.isParam(in) && f_.sourceOnly[static_cast<size_t>(in)];
      }
      f_.sourceOnly[static_cast<size_t>(v)] = s;
    }
    // Only what the outputs depend on is computed.
    live_.assign(n, false);
    for (int o : g.outputs)
      live_[static_cast<size_t>(o)] = true;
    for (int v = g.numValues() - 1; v >= static_cast<int>(g.params.size()); --v)
      if (live_[static_cast<size_t>(v)])
        for (int in : g.node(v).inputs)
          live_[static_cast<size_t>(in)] = true;
  }

  Fusion run() {
    int first = static_cast<int>(g_.params.size());
    for (int v = first; v < g_.numValues(); ++v) {
      if (f_.kernelOf[static_cast<size_t>(v)] >= 0 || !live_[static_cast<size_t>(v)])
        continue;
      const Node &n = g_.node(v);
      OpFamily fam = opFamily(n.op);
      if (fam == OpFamily::Reduction) {
        if (isRowReduction(g_, n))
          growRow(v);
        else
          add(FusedKernel::Kind::Column, v, {v}), needMemory(v);
      } else if (fam == OpFamily::Matmul) {
        growMatmul(v);
      } else if (n.op == OpKind::Cat) {
        add(FusedKernel::Kind::Cat, v, {v});
        needMemory(v);
      } else if (n.op == OpKind::Embedding) {
        add(FusedKernel::Kind::Embedding, v, {v});
        needMemory(v);
        needMemory(viewRoot(g_, n.inputs[0]));
      } else if (n.op == OpKind::Copy) {
        add(FusedKernel::Kind::Copy, v, {v});
        needMemory(v);
      } else if (fam == OpFamily::View) {
        // A view of a source-only value is recomputed where it is read, from the root's
        // coordinates (lower.cpp: the root gets a layout but no buffer).
        int root = viewRoot(g_, v);
        if (g_.isParam(root) || !f_.sourceOnly[static_cast<size_t>(root)])
          needMemory(root);
      }
    }
    for (int o : g_.outputs) // a returned view is copied to its output (lower.cpp)
      if (!g_.isParam(o) && opFamily(g_.node(o).op) != OpFamily::View)
        needMemory(o);
    // A kernel that reads a member of another row group reads it from memory.
    for (size_t k = 0; k < f_.kernels.size(); ++k)
      markLeaves(static_cast<int>(k));
    // Materialised pointwise/source nodes that no group computes get a kernel of their own.
    for (int v = first; v < g_.numValues(); ++v) {
      if (!f_.materialise[static_cast<size_t>(v)] || f_.kernelOf[static_cast<size_t>(v)] >= 0)
        continue;
      add(FusedKernel::Kind::Pointwise, v, {v});
      markLeaves(static_cast<int>(f_.kernels.size()) - 1);
    }
    fitKernels();
    order();
    f_.live = live_;
    return std::move(f_);
  }

private:
  bool inlinable(int v) const {
    if (g_.isParam(v) || f_.kernelOf[static_cast<size_t>(v)] >= 0)
      return false;
    OpKind op = g_.node(v).op;
    return isPointwise(op) || opFamily(op) == OpFamily::Source;
  }

  void needMemory(int v) {
    if (g_.isParam(v))
      return;
    f_.materialise[static_cast<size_t>(v)] = true;
  }

  int add(FusedKernel::Kind kind, int anchor, std::vector<int> members) {
    FusedKernel k;
    k.kind = kind;
    k.anchor = anchor;
    k.members = std::move(members);
    int id = static_cast<int>(f_.kernels.size());
    for (int m : k.members)
      f_.kernelOf[static_cast<size_t>(m)] = id;
    f_.kernels.push_back(std::move(k));
    return id;
  }

  /// The anchor of the kernel producing `v` as a leaf read from memory (-1 for params).
  int producerAnchor(int v) const {
    v = viewRoot(g_, v);
    if (g_.isParam(v))
      return -1;
    int k = f_.kernelOf[static_cast<size_t>(v)];
    return k >= 0 ? f_.kernels[static_cast<size_t>(k)].anchor : v; // ungrouped: its own kernel
  }

  void growRow(int r0) {
    const Node &red = g_.node(r0);
    FusedKernel k;
    k.kind = FusedKernel::Kind::Row;
    k.anchor = r0;
    k.space = g_.typeOf(red.inputs[0]).shape;
    k.q = static_cast<int>(red.attrs.getInts("axes").size());
    std::vector<int64_t> rowShape = k.space;
    for (int i = 0; i < k.q; ++i)
      rowShape[rowShape.size() - 1 - static_cast<size_t>(i)] = 1;
    int id = static_cast<int>(f_.kernels.size());
    f_.kernels.push_back(k);
    std::vector<int> &members = f_.kernels.back().members;
    auto join = [&](int v) {
      members.push_back(v);
      f_.kernelOf[static_cast<size_t>(v)] = id;
    };
    join(r0);
    // depends: -1 unknown, 0 no, 1 yes (memo over values for this group).
    std::vector<int8_t> dep(static_cast<size_t>(g_.numValues()), -1);
    std::function<bool(int)> dependsOnGroup = [&](int v) -> bool {
      int8_t &d = dep[static_cast<size_t>(v)];
      if (d >= 0)
        return d == 1;
      bool r = f_.kernelOf[static_cast<size_t>(v)] == id;
      if (!r && inlinable(v))
        for (int in : g_.node(v).inputs)
          r = r || dependsOnGroup(in);
      d = r ? 1 : 0;
      return r;
    };
    // Whether the group can compute (or load) `v` for a member.
    std::function<bool(int)> computable = [&](int v) -> bool {
      if (f_.kernelOf[static_cast<size_t>(v)] == id) {
        const std::vector<int64_t> &s = g_.typeOf(v).shape;
        return s == k.space || s == rowShape; // a keepdim=false result is read from memory
      }
      if (inlinable(v)) {
        if (dependsOnGroup(v))
          return false; // depends on the group through a shape the row space cannot index
        for (int in : g_.node(v).inputs)
          if (!computable(in))
            return false;
        return true;
      }
      int root = viewRoot(g_, v);
      if (!g_.isParam(root) && f_.kernelOf[static_cast<size_t>(root)] == id)
        return false; // a view of a member: the member would be written and read in one kernel
      return producerAnchor(v) < r0;
    };
    for (int v = r0 + 1; v < g_.numValues(); ++v) {
      if (f_.kernelOf[static_cast<size_t>(v)] >= 0 || !live_[static_cast<size_t>(v)])
        continue;
      const Node &n = g_.node(v);
      bool ok = false;
      if (opFamily(n.op) == OpFamily::Reduction) {
        ok = isRowReduction(g_, n) && g_.typeOf(n.inputs[0]).shape == k.space &&
             static_cast<int>(n.attrs.getInts("axes").size()) == k.q && computable(n.inputs[0]);
      } else if (isPointwise(n.op) && (n.type.shape == k.space || n.type.shape == rowShape)) {
        bool touches = false, all = true;
        for (int in : n.inputs) {
          touches = touches || dependsOnGroup(in);
          all = all && computable(in);
        }
        ok = touches && all;
      }
      if (ok) {
        join(v);
        // Within the device's buffers, counting every member as written (a bound).
        if (maxBuffers_ > 0 &&
            leavesFrom(id, members, nullptr).size() + members.size() > maxBuffers_) {
          members.pop_back();
          f_.kernelOf[static_cast<size_t>(v)] = -1;
          continue;
        }
        std::fill(dep.begin(), dep.end(), int8_t(-1));
      }
    }
    absorbPrologue(id, r0, computable);
  }

  /// Whether `v` must be in memory whatever kernel computes it: a graph output or an
  /// operand of a kernel that reads memory.
  bool wantsMemory(int v) const {
    if (f_.isOutput[static_cast<size_t>(v)])
      return true;
    for (int u : f_.users[static_cast<size_t>(v)]) {
      OpKind op = g_.node(u).op;
      if (opFamily(op) == OpFamily::Matmul || op == OpKind::Cat || op == OpKind::Embedding)
        return true;
    }
    return false;
  }

  /// Whether every reader of `v` (directly or through inlined pointwise nodes) is in row
  /// group `id` or not yet in any kernel and after its anchor, so that a kernel reading `v`
  /// from memory runs after the row kernel writes it.
  bool readersFollow(int v, int id, int r0) const {
    for (int u : f_.users[static_cast<size_t>(v)]) {
      int k = f_.kernelOf[static_cast<size_t>(u)];
      if (k == id)
        continue;
      if (k >= 0 || u < r0)
        return false;
      if (inlinable(u) && !readersFollow(u, id, r0))
        return false;
    }
    return true;
  }

  /// A pointwise node over the row space that the row group inlines (a prologue, e.g. the
  /// gelu before a layer_norm) and that must be written anyway (a value saved for backward,
  /// a GEMM operand) joins the group: the row kernel's final pass writes it, instead of a
  /// pointwise kernel of its own writing it and the row kernel recomputing it.
  void absorbPrologue(int id, int r0, const std::function<bool(int)> &computable) {
    const std::vector<int64_t> space = f_.kernels[static_cast<size_t>(id)].space;
    std::vector<bool> seen(static_cast<size_t>(g_.numValues()), false);
    std::vector<int> todo = f_.kernels[static_cast<size_t>(id)].members, absorbed;
    while (!todo.empty()) {
      int v = todo.back();
      todo.pop_back();
      for (int in : g_.node(v).inputs) {
        if (seen[static_cast<size_t>(in)] || !inlinable(in))
          continue;
        seen[static_cast<size_t>(in)] = true;
        todo.push_back(in);
        if (g_.typeOf(in).shape == space && wantsMemory(in) && computable(in) &&
            readersFollow(in, id, r0))
          absorbed.push_back(in);
      }
    }
    std::vector<int> &members = f_.kernels[static_cast<size_t>(id)].members;
    for (int v : absorbed) {
      members.push_back(v);
      f_.kernelOf[static_cast<size_t>(v)] = id;
    }
    // Members in graph order: the row lowering evaluates them in this order.
    std::sort(members.begin(), members.end());
  }

  bool isConstant(int v) const {
    return !g_.isParam(v) && g_.node(v).op == OpKind::Constant &&
           f_.kernelOf[static_cast<size_t>(v)] < 0;
  }

  void growMatmul(int m) {
    int id = add(FusedKernel::Kind::Matmul, m, {m});
    for (int in : g_.node(m).inputs)
      needMemory(viewRoot(g_, in));
    const std::vector<int64_t> &shape = g_.node(m).type.shape;
    // The epilogue is a DAG of pointwise nodes over the product's shape (silu decomposed as
    // x * sigmoid(x) reads the product twice), grown in graph order from the readers of the
    // group. The kernel writes one value, so the group is cut back to the longest prefix in
    // which only its last node is read outside the group (or returned).
    std::vector<int> nodes; // tentative epilogue nodes, in graph order
    std::vector<bool> in(static_cast<size_t>(g_.numValues()), false);
    in[static_cast<size_t>(m)] = true;
    size_t closed = 0; // nodes[0, closed) is the longest valid prefix
    auto readOutside = [&](int v) {
      if (f_.isOutput[static_cast<size_t>(v)])
        return true;
      for (int u : f_.users[static_cast<size_t>(v)])
        if (!in[static_cast<size_t>(u)])
          return true;
      return false;
    };
    while (nodes.size() < 64) {
      int next = -1; // the first reader of the group outside it
      auto consider = [&](int v) {
        for (int u : f_.users[static_cast<size_t>(v)])
          if (!in[static_cast<size_t>(u)] && (next < 0 || u < next))
            next = u;
      };
      consider(m);
      for (int v : nodes)
        consider(v);
      if (next < 0 || !live_[static_cast<size_t>(next)])
        break;
      const Node &n = g_.node(next);
      if (!isPointwise(n.op) || n.type.shape != shape ||
          f_.kernelOf[static_cast<size_t>(next)] >= 0)
        break;
      // Extras are read from memory and must exist before the GEMM runs; a `constant` is a
      // literal of the epilogue instead (listed before its first reader, not a member: other
      // kernels keep recomputing it).
      bool ok = true;
      for (int x : n.inputs)
        if (!in[static_cast<size_t>(x)] && !isConstant(x) && producerAnchor(x) >= m)
          ok = false;
      if (!ok)
        break;
      nodes.push_back(next);
      in[static_cast<size_t>(next)] = true;
      bool valid = true;
      for (size_t i = 0; i + 1 < nodes.size() && valid; ++i)
        valid = !readOutside(nodes[i]);
      if (valid && !readOutside(m))
        closed = nodes.size();
    }
    nodes.resize(closed);
    FusedKernel &k = f_.kernels[static_cast<size_t>(id)];
    for (int u : nodes) {
      for (int x : g_.node(u).inputs) {
        if (x == m || std::find(nodes.begin(), nodes.end(), x) != nodes.end())
          continue;
        if (!isConstant(x))
          needMemory(viewRoot(g_, x));
        else if (std::find(k.epilogue.begin(), k.epilogue.end(), x) == k.epilogue.end())
          k.epilogue.push_back(x);
      }
      k.members.push_back(u);
      k.epilogue.push_back(u);
      f_.kernelOf[static_cast<size_t>(u)] = id;
    }
    k.result = nodes.empty() ? m : nodes.back();
    needMemory(k.result);
  }

  /// Walks the inline trees a kernel reads and marks members of other groups it reaches as
  /// materialised (they become loads).
  void markLeaves(int kid) {
    const FusedKernel &k = f_.kernels[static_cast<size_t>(kid)];
    if (k.kind == FusedKernel::Kind::Matmul) {
      for (int e : k.epilogue)
        for (int in : g_.node(e).inputs)
          if (f_.kernelOf[static_cast<size_t>(in)] != kid &&
              std::find(k.epilogue.begin(), k.epilogue.end(), in) == k.epilogue.end())
            needMemory(viewRoot(g_, in));
      return;
    }
    for (int v : leavesFrom(kid, k.members, nullptr))
      needMemory(v); // params are skipped; a view's root is materialised already (run())
  }

  /// The buffers kernel `kid` reads: params and materialised values reached through the
  /// values it inlines (views by their roots), from `roots`; `inlined` gets the inlined
  /// pointwise values met on the way (candidates to materialise).
  std::set<int> leavesFrom(int kid, const std::vector<int> &roots, std::vector<int> *inlined) {
    std::set<int> leaves;
    std::vector<bool> seen(static_cast<size_t>(g_.numValues()), false);
    std::vector<int> todo = roots;
    while (!todo.empty()) {
      int v = todo.back();
      todo.pop_back();
      if (seen[static_cast<size_t>(v)])
        continue;
      seen[static_cast<size_t>(v)] = true;
      if (g_.isParam(v)) {
        leaves.insert(v);
        continue;
      }
      int owner = f_.kernelOf[static_cast<size_t>(v)];
      bool view = opFamily(g_.node(v).op) == OpFamily::View;
      if (owner == kid || inlinable(v)) {
        if (owner != kid && inlined && isPointwise(g_.node(v).op))
          inlined->push_back(v);
        if (owner == kid || !view)
          for (int in : g_.node(v).inputs)
            todo.push_back(in);
        continue;
      }
      if (!view) {
        leaves.insert(v);
        continue;
      }
      // A view reads its root's buffer, unless the root is recomputed where it is read.
      int root = viewRoot(g_, v);
      if (g_.isParam(root) || !f_.sourceOnly[static_cast<size_t>(root)])
        leaves.insert(root);
    }
    return leaves;
  }

  /// Keeps every pointwise, row and column kernel within maxBuffers_ buffers (inputs and
  /// outputs) and within kMaxInlinedNodes inlined nodes: where one needs more, an inlined
  /// value is materialised and computed by a pointwise kernel of its own, until all fit. For
  /// buffers, the one with the most inputs that still fit in one kernel (x0 + x1 + ... + x32
  /// on a device that binds 32: two kernels); for size, the largest inlined subtree that
  /// fits (a chain of 20000 relus built one kernel past the IR's 32768 ops per function). A
  /// kernel whose own members need more buffers is left as it is (the driver names it).
  void fitKernels() {
    for (size_t rounds = 0; rounds <= static_cast<size_t>(g_.numValues()); ++rounds) {
      bool changed = false;
      for (size_t k = 0; k < f_.kernels.size() && !changed; ++k) {
        const FusedKernel &kernel = f_.kernels[k];
        using Kind = FusedKernel::Kind;
        if (kernel.kind != Kind::Pointwise && kernel.kind != Kind::Row &&
            kernel.kind != Kind::Column)
          continue;
        int kid = static_cast<int>(k);
        std::vector<int> inlined;
        size_t need = leavesFrom(kid, kernel.members, &inlined).size();
        for (int m : kernel.members)
          need += f_.materialise[static_cast<size_t>(m)] ? 1 : 0;
        int best = -1;
        if (inlined.size() > kMaxInlinedNodes)
          best = largestSubtreeThatFits(inlined);
        else if (maxBuffers_ > 0 && need > maxBuffers_)
          best = widestSubtreeThatFits(inlined, need);
        if (best < 0)
          continue;
        needMemory(best);
        markLeaves(add(Kind::Pointwise, best, {best}));
        changed = true;
      }
      if (!changed)
        return;
    }
  }

  /// The inlined value (of `inlined`, one kernel's) whose own inline tree, counted as a tree
  /// within `inlined` (saturating), is the largest of at most kMaxInlinedNodes.
  int largestSubtreeThatFits(std::vector<int> inlined) const {
    std::sort(inlined.begin(), inlined.end()); // inputs before their readers
    std::unordered_map<int, size_t> size;
    for (int v : inlined)
      size[v] = 0;
    int best = -1;
    size_t bestSize = 0;
    for (int v : inlined) {
      size_t n = 1;
      for (int in : g_.node(v).inputs)
        if (auto it = size.find(in); it != size.end())
          n = std::min<size_t>(n + it->second, size_t(1) << 40);
      size[v] = n;
      if (n <= kMaxInlinedNodes && n > bestSize)
        best = v, bestSize = n;
    }
    return best;
  }

  /// The inlined value with the most buffers of its own that still fit in a kernel (else the
  /// most below `need`), so that splitting it off shrinks a kernel that needs `need`.
  int widestSubtreeThatFits(const std::vector<int> &inlined, size_t need) {
    int best = -1;
    size_t bestLeaves = 0;
    bool bestFits = false;
    for (int v : inlined) {
      size_t n = leavesFrom(-2, {v}, nullptr).size(); // -2: no kernel owns its members
      bool fits = n + 1 <= maxBuffers_;
      if (n < 2 || n + 1 >= need)
        continue; // splitting it off would not shrink this kernel
      if (best < 0 || (fits && !bestFits) || (fits == bestFits && n > bestLeaves))
        best = v, bestLeaves = n, bestFits = fits;
    }
    return best;
  }

  void order() {
    std::vector<size_t> idx(f_.kernels.size());
    for (size_t i = 0; i < idx.size(); ++i)
      idx[i] = i;
    std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { // anchors are distinct node ids
      return f_.kernels[a].anchor < f_.kernels[b].anchor;
    });
    std::vector<FusedKernel> sorted;
    std::vector<int> newId(idx.size());
    for (size_t i = 0; i < idx.size(); ++i) {
      newId[idx[i]] = static_cast<int>(i);
      sorted.push_back(std::move(f_.kernels[idx[i]]));
    }
    for (int &k : f_.kernelOf)
      if (k >= 0)
        k = newId[static_cast<size_t>(k)];
    f_.kernels = std::move(sorted);
  }

  const Graph &g_;
  uint32_t maxBuffers_ = 0;
  Fusion f_;
  std::vector<bool> live_;
};

} // namespace

Fusion fuse(const Graph &g, uint32_t maxBuffers) { return Fuser(g, maxBuffers).run(); }

} // namespace tessera::graph::detail
