// The graph IR: a small tensor-level IR between a framework graph (torch FX) and kernel IR.
//
// A Graph is a list of parameters (typed tensors, possibly strided) and nodes in topological
// order; every node is one op with value operands, attributes and one result of a concrete
// TensorType. Shapes are concrete: a framework front end specialises a graph per input
// signature, and lowering (lower.h) emits kernels whose sizes are kernel arguments, so a new
// batch size re-lowers the graph but reuses the compiled kernels.
//
// Value ids: parameters are 0 .. params.size()-1, node i defines value params.size() + i.
// The text format, every op's semantics and the verifier's rules: docs/graph_ir.md.
// Depends on nothing but the C++ standard library (and ir/core for nothing at all).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera::graph {

enum class DType : uint8_t { Bool, I32, I64, F16, BF16, F32, F64 };

const char *dtypeName(DType t);                   // "bool" "i32" "i64" "f16" "bf16" "f32" "f64"
bool parseDType(std::string_view name, DType *out);
int dtypeBytes(DType t);                          // bool: 1
bool isFloat(DType t);

struct TensorType {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;   // rank 0 = a scalar tensor; a 0 extent is allowed
  /// Element strides, one per dim; empty = contiguous row-major. Only graph parameters may
  /// carry strides (the verifier refuses them elsewhere); a stride may be 0 (broadcast
  /// input) but never negative.
  std::vector<int64_t> strides;

  int rank() const { return static_cast<int>(shape.size()); }
  int64_t numel() const;                  // product of the shape (1 for rank 0)
  std::vector<int64_t> contiguousStrides() const;
  /// strides if set, else contiguousStrides().
  std::vector<int64_t> effectiveStrides() const;
  /// Elements a buffer holding this (strided) tensor must have: 1 + sum (shape_i-1)*stride_i,
  /// 0 when numel() == 0.
  int64_t storageElements() const;
  bool operator==(const TensorType &o) const = default;
};

/// "tensor<f32, [4, 8]>" or "tensor<f32, [4, 8], strides [1, 4]>".
std::string typeToString(const TensorType &t);

enum class OpKind : uint8_t {
#define TESSERA_GRAPH_OP(kind, name, family) kind,
#include "ir/graph/ops.def"
#undef TESSERA_GRAPH_OP
};

/// How many ops ops.def defines (an OpKind is valid when below it).
constexpr int kNumOpKinds = 0
#define TESSERA_GRAPH_OP(kind, name, family) +1
#include "ir/graph/ops.def"
#undef TESSERA_GRAPH_OP
    ;

enum class OpFamily : uint8_t {
  Source,     // constant, iota: no operands
  Unary,      // pointwise, one operand
  Binary,     // pointwise, two operands, numpy broadcasting
  Ternary,    // where: three operands, broadcasting
  Reduction,  // sum mean prod amax amin var argmax over `axes`
  Matmul,     // matmul
  View,       // reshape permute expand slice: no data movement by themselves
  Data,       // cast clamp copy cat embedding: everything else
};

const char *opName(OpKind k);
OpFamily opFamily(OpKind k);
bool parseOpName(std::string_view name, OpKind *out);

struct Attr {
  enum class Kind : uint8_t { Int, Float, Bool, Ints, Str };
  Kind kind = Kind::Int;
  int64_t i = 0;
  double f = 0;        // Float; printed so that it reads back bit-exact (inf, nan allowed)
  bool b = false;
  std::vector<int64_t> ints;
  std::string s;

  static Attr integer(int64_t v);
  static Attr real(double v);
  static Attr boolean(bool v);
  static Attr list(std::vector<int64_t> v);
  static Attr str(std::string v);
};

/// Ordered attribute list (printed in this order; names unique).
struct Attrs {
  std::vector<std::pair<std::string, Attr>> items;
  const Attr *find(std::string_view name) const;
  void set(std::string name, Attr a);
  int64_t getInt(std::string_view name, int64_t dflt) const;
  double getFloat(std::string_view name, double dflt) const;   // an Int attr reads as double too
  bool getBool(std::string_view name, bool dflt) const;
  std::vector<int64_t> getInts(std::string_view name) const;   // empty when absent
  std::string getStr(std::string_view name, std::string dflt) const;
};

struct Node {
  OpKind op = OpKind::Add;
  std::vector<int> inputs;    // value ids, all < this node's own id
  Attrs attrs;
  TensorType type;            // the result
  std::string name;           // the text name without '%' ("" = printed as its number)
  int line = 0, col = 0;      // where the parser found it (0 = built in code)
};

struct Param {
  TensorType type;
  std::string name;           // without '%'
};

struct Graph {
  std::string name = "main";
  std::vector<Param> params;
  std::vector<Node> nodes;
  std::vector<int> outputs;   // value ids; the same value may appear twice; a param may be one

  int numValues() const { return static_cast<int>(params.size() + nodes.size()); }
  bool isParam(int v) const { return v >= 0 && v < static_cast<int>(params.size()); }
  const Node &node(int v) const { return nodes[static_cast<size_t>(v) - params.size()]; }
  const TensorType &typeOf(int v) const;

  int addParam(TensorType t, std::string name = "");
  /// Appends a node whose result type is inferred (inferType); -1 with *error on a bad op.
  int add(OpKind op, std::vector<int> inputs, Attrs attrs, std::string *error,
          std::string name = "");
};

/// The result type of `op` applied to `inputs` with `attrs` (docs/graph_ir.md gives the rule
/// for each op). For cast, the result dtype comes from attrs "dtype" (a Str attr). False with
/// *error naming the op and the problem.
bool inferType(const Graph &g, OpKind op, const std::vector<int> &inputs, const Attrs &attrs,
               TensorType *out, std::string *error);

/// Numpy broadcasting of two shapes; false when they do not broadcast.
bool broadcastShapes(const std::vector<int64_t> &a, const std::vector<int64_t> &b,
                     std::vector<int64_t> *out);

/// "[2, 3]" (as the text format writes a shape).
std::string shapeToString(const std::vector<int64_t> &shape);

/// The product of `shape` in *out; false when a dim is negative or the product overflows i64.
bool checkedNumel(const std::vector<int64_t> &shape, int64_t *out);

/// The extent of a Python slice [start:end:step] (step >= 1; negative start/end count from
/// the end; both clamped to [0, dim]); *normStart receives the normalised start.
int64_t sliceLength(int64_t dim, int64_t start, int64_t end, int64_t step, int64_t *normStart);

} // namespace tessera::graph
