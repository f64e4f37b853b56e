// GEMM lowering (lowerMatmul, lower_internal.h): checks a MatmulGroup, brings it into the
// normal form of lower_matmul.h (operands aligned to the output's batch dims, broadcasts as
// stride 0, each 2-D operand classified by how a tile of it can be loaded), picks the matrix-op
// kernel or the SIMT kernel and the tile shape from the device's capabilities and the dtype
// only, and binds the launch: buffers, then sizes and strides as arguments (i32 when all fit,
// else i64). An operand with no unit stride is read by the SIMT kernel, not copied: a copy
// needs a plan buffer, which the fusion pass owns. The kernel text itself is
// lower_matmul_kernels.cpp. Must never let a size or stride value reach the text
// (docs/graph_ir.md, "Lowering": one module per graph structure).
#include "ir/graph/lower_matmul.h"

#include <algorithm>
#include <climits>

namespace tessera::graph::detail {

namespace {

const TensorType &valueType(const Graph &g, int v) {
  return g.isParam(v) ? g.params[static_cast<size_t>(v)].type : g.node(v).type;
}

std::string describe(const Graph &g, int v) {
  if (v < 0 || v >= g.numValues())
    return "matmul (value " + std::to_string(v) + ")";
  if (g.isParam(v))
    return "matmul %" + g.params[static_cast<size_t>(v)].name;
  const Node &n = g.node(v);
  std::string s = "matmul %" + (n.name.empty() ? std::to_string(v) : n.name);
  if (n.line > 0)
    s += " (line " + std::to_string(n.line) + ":" + std::to_string(n.col) + ")";
  return s;
}

std::string shapeString(const std::vector<int64_t> &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

// Aligns `op` (logical [batch'..., R, C], right-aligned against the output's batch dims) to
// `batch` x rows x cols: a dim the operand lacks, or of extent 1 against a larger one, reads
// with stride 0. `broadcastMat` allows that for the 2-D part too (extras only).
bool alignOperand(const Operand &op, const char *what, const std::vector<int64_t> &batch,
                  int64_t rows, int64_t cols, bool broadcastMat, const std::string &where,
                  GemmOperand *out, std::string *error) {
  const size_t rank = op.shape.size();
  if (op.strides.size() != rank || rank < (broadcastMat ? 0u : 2u) || rank > batch.size() + 2) {
    *error = where + ": " + what + " has shape " + shapeString(op.shape) + " with " +
             std::to_string(op.strides.size()) + " strides; it cannot be read as [batch..., " +
             std::to_string(rows) + ", " + std::to_string(cols) + "]";
    return false;
  }
  if (op.buffer < 0) {
    *error = where + ": " + what + " has no buffer";
    return false;
  }
  std::vector<int64_t> want = batch;
  want.push_back(rows);
  want.push_back(cols);
  std::vector<int64_t> strides(want.size(), 0);
  const size_t lead = want.size() - rank;
  for (size_t i = 0; i < rank; ++i) {
    const size_t d = lead + i;
    const bool mat = d >= batch.size();
    if (op.shape[i] == want[d]) {
      strides[d] = want[d] == 1 ? 0 : op.strides[i];
      continue;
    }
    if (op.shape[i] == 1 && (!mat || broadcastMat))
      continue; // broadcast: stride 0
    *error = where + ": " + what + " of shape " + shapeString(op.shape) +
             " does not broadcast to " + shapeString(want);
    return false;
  }
  for (int64_t s : op.strides)
    if (s < 0) {
      *error = where + ": " + what + " has a negative stride";
      return false;
    }
  out->buffer = op.buffer;
  out->dtype = op.dtype;
  out->offset = op.offset;
  out->batchStrides.assign(strides.begin(), strides.begin() + static_cast<long>(batch.size()));
  out->rowStride = strides[batch.size()];
  out->colStride = strides[batch.size() + 1];
  // A tile loads as rows when its columns are unit-stride, as columns when its rows are; a
  // dim of extent 1 (stride 0 here) reads one element whatever its stride, so it counts as
  // unit. Both strides 0 (an extra broadcast over the whole tile): one scalar.
  if (broadcastMat && out->rowStride == 0 && out->colStride == 0)
    out->layout = TileLayout::Scalar;
  else if (out->colStride == 1 || cols == 1)
    out->layout = TileLayout::Row;
  else if (out->rowStride == 1 || rows == 1)
    out->layout = TileLayout::Col;
  else
    out->layout = TileLayout::Strided;
  return true;
}

bool buildForm(const Graph &g, const MatmulGroup &mm, GemmForm *f, std::string *error) {
  f->where = describe(g, mm.matmul);
  if (mm.matmul < static_cast<int>(g.params.size()) || mm.matmul >= g.numValues() ||
      g.node(mm.matmul).op != OpKind::Matmul) {
    *error = f->where + ": the group's matmul value is not a matmul node";
    return false;
  }
  if (mm.result < 0 || mm.result >= g.numValues()) {
    *error = f->where + ": the group has no result value";
    return false;
  }
  const std::vector<int64_t> &os = mm.out.shape;
  if (os.size() < 2 || mm.a.shape.size() < 2 || mm.b.shape.size() < 2) {
    *error = f->where + ": operands and output need rank >= 2 (a " + shapeString(mm.a.shape) +
             ", b " + shapeString(mm.b.shape) + ", out " + shapeString(os) + ")";
    return false;
  }
  f->M = os[os.size() - 2];
  f->N = os.back();
  f->K = mm.a.shape.back();
  f->batch.assign(os.begin(), os.end() - 2);
  if (mm.a.shape[mm.a.shape.size() - 2] != f->M || mm.b.shape.back() != f->N ||
      mm.b.shape[mm.b.shape.size() - 2] != f->K) {
    *error = f->where + ": shapes do not multiply: " + shapeString(mm.a.shape) + " x " +
             shapeString(mm.b.shape) + " -> " + shapeString(os);
    return false;
  }
  f->inType = mm.a.dtype;
  f->productType = g.node(mm.matmul).type.dtype;
  if (mm.b.dtype != mm.a.dtype || !isFloat(mm.a.dtype)) {
    *error = f->where + ": operands must be float of one dtype, got " + dtypeName(mm.a.dtype) +
             " and " + dtypeName(mm.b.dtype);
    return false;
  }
  if (!alignOperand(mm.a, "operand a", f->batch, f->M, f->K, false, f->where, &f->a, error) ||
      !alignOperand(mm.b, "operand b", f->batch, f->K, f->N, false, f->where, &f->b, error) ||
      !alignOperand(mm.out, "the output", f->batch, f->M, f->N, false, f->where, &f->out, error))
    return false;
  // The output is written contiguously (its strides are derived in the kernel).
  bool contiguous = f->out.colStride == (f->N == 1 ? 0 : 1);
  int64_t expectStride = f->N;
  contiguous = contiguous && f->out.rowStride == (f->M == 1 ? 0 : expectStride);
  expectStride *= f->M;
  for (size_t d = f->batch.size(); d-- > 0;) {
    contiguous = contiguous && f->out.batchStrides[d] == (f->batch[d] == 1 ? 0 : expectStride);
    expectStride *= f->batch[d];
  }
  int64_t outElems = f->M * f->N;
  for (int64_t d : f->batch)
    outElems *= d;
  if (!contiguous && outElems != 0) {
    *error = f->where + ": the output buffer must be contiguous " + shapeString(mm.out.shape);
    return false;
  }
  if (mm.out.dtype != valueType(g, mm.result).dtype) {
    *error = f->where + ": the output buffer is " + dtypeName(mm.out.dtype) +
             " but the result is " + dtypeName(valueType(g, mm.result).dtype);
    return false;
  }
  for (size_t i = 0; i < mm.extras.size(); ++i) {
    GemmOperand e;
    std::string what = "epilogue operand " + std::to_string(i);
    if (!alignOperand(mm.extras[i], what.c_str(), f->batch, f->M, f->N, true, f->where, &e, error))
      return false;
    f->extras.push_back(e);
  }
  return true;
}

// Whether the matrix kernel can take the GEMM: matrix element types exist for every tile
// (docs/ir.md, "Matrix ops": a/b f16 bf16 f32; acc also f16 bf16 i8 (bool) and i32), and every
// tile loads as rows, columns or one broadcast scalar.
bool matrixCapable(const GemmForm &f, const MatmulGroup &mm, const Graph &g) {
  auto accType = [](DType t) {
    return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::I32 ||
           t == DType::Bool;
  };
  if (f.inType != DType::F32 && f.inType != DType::F16 && f.inType != DType::BF16)
    return false;
  if (f.a.layout == TileLayout::Strided || f.b.layout == TileLayout::Strided ||
      f.out.layout != TileLayout::Row || !accType(f.out.dtype))
    return false;
  for (const GemmOperand &e : f.extras) {
    if (e.layout == TileLayout::Strided)
      return false;
    // A scalar is broadcast over the subgroup as an f32 value; a tile needs an acc type.
    if (e.layout == TileLayout::Scalar ? !isFloat(e.dtype) || e.dtype == DType::F64
                                       : !accType(e.dtype))
      return false;
  }
  for (int v : mm.epilogue)
    if (g.node(v).op == OpKind::Iota) // needs the element's index, which a matrix_map lacks
      return false;
  return true;
}

// The smallest power of two >= n, clamped to [lo, hi] (tile dims the matrix ops allow).
int fitDim(int64_t n, int lo, int hi) {
  int d = lo;
  while (d < hi && d < n)
    d *= 2;
  return d;
}

// Tile shapes measured per backend (docs/performance.md): lavapipe 32 x 128 x 8 with two
// subgroups (bench/vulkan_gemm); elsewhere 32 x 32 x 16, the shape the CUDA and ROCm matrix
// lowering keeps in registers. The CPU (one subgroup per workgroup, AVX-512 microkernels) fits
// its tile to the GEMM (gemm_bench --shapes, the shapes of bench/torch_models.py; no loss at
// 1024^3 / 2048^3): tm up to 128, tn and tk up to 64, each the smallest power of two covering
// its dim. 128 rows load each B tile (a linear layer's weight: an in-register transpose per
// `.col` load) for twice the rows of 64 (256 x 256 x 768: 1.9x); a dim below 64 gets a tile
// its size (attention's 64 x 64 x 32 bmm computed half its tile on zero padding: 3x slower);
// and while the launch has fewer than kCpuMinTiles tiles the larger of tm / tn is halved (down
// to 16), so that a 64 x 128 linear layer keeps two cores busy. 128-deep K steps measured no
// better. So the CPU text depends on size buckets (powers of two and the tile count), like
// matrixMinFlops: a new batch size may pick another bucket and compile another kernel.
constexpr int64_t kCpuMinTiles = 4;

GemmTiles pickTiles(const ScheduleCaps &caps, const GemmForm &f, int64_t batch) {
  if (caps.backend == "cpu") {
    GemmTiles t{fitDim(f.M, 16, 128), fitDim(f.N, 16, 64), fitDim(f.K, 8, 64), 1};
    auto tiles = [&] { return (f.M + t.m - 1) / t.m * ((f.N + t.n - 1) / t.n) * batch; };
    while (tiles() < kCpuMinTiles && (t.m > 16 || t.n > 16)) {
      if (t.m >= t.n)
        t.m /= 2;
      else
        t.n /= 2;
    }
    return t;
  }
  GemmTiles t = caps.backend == "vulkan" ? GemmTiles{32, 128, 8, 2} : GemmTiles{32, 32, 16, 2};
  while (t.subgroups > 1 && uint64_t(t.subgroups) * caps.subgroupSize > caps.maxWorkgroupSize)
    --t.subgroups;
  return t;
}

// The scalar arguments' values in gemmScalarNames order.
std::vector<int64_t> scalarArgs(const GemmForm &f) {
  std::vector<int64_t> v = {f.M, f.N, f.K};
  v.insert(v.end(), f.batch.begin(), f.batch.end());
  auto operand = [&](const GemmOperand &o) {
    v.push_back(o.offset);
    v.push_back(o.rowStride);
    v.push_back(o.colStride);
    v.insert(v.end(), o.batchStrides.begin(), o.batchStrides.end());
  };
  operand(f.a);
  operand(f.b);
  for (const GemmOperand &e : f.extras)
    operand(e);
  v.push_back(f.out.offset);
  return v;
}

// Arguments in gemmParams order: buffers, then the scalars.
void bindArgs(const GemmForm &f, PlanLaunch *launch) {
  auto buf = [&](int b) {
    PlanArg a;
    a.kind = PlanArg::Kind::Buffer;
    a.buffer = b;
    launch->args.push_back(a);
  };
  buf(f.a.buffer);
  buf(f.b.buffer);
  for (const GemmOperand &e : f.extras)
    buf(e.buffer);
  buf(f.out.buffer);
  for (int64_t v : scalarArgs(f)) {
    PlanArg a;
    a.kind = f.narrowArgs ? PlanArg::Kind::I32 : PlanArg::Kind::I64;
    a.i = v;
    launch->args.push_back(a);
  }
}

// Grid extents stay within 65535 per dimension (the smallest limit of the targets); the
// kernels' grid-stride loops over tiles and batch entries cover the rest.
uint32_t gridExtent(int64_t n) { return static_cast<uint32_t>(std::clamp<int64_t>(n, 1, 65535)); }

int64_t batchCount(const GemmForm &f) {
  int64_t n = 1;
  for (int64_t d : f.batch)
    n *= d;
  return n;
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

PlanGemmOperand planOperand(const GemmOperand &o) {
  return {o.buffer, o.offset, o.rowStride, o.colStride, o.batchStrides};
}

// The normal form as the runtime sees it (PlanGemm); "epilogue empty" means the kernel
// stores the product itself: no epilogue node, no extra operand, and no rounding step
// (the product's dtype is the inputs' and the output's).
PlanGemm describeGemm(const Graph &g, const GemmForm &f, const MatmulGroup &mm) {
  PlanGemm d;
  d.dtype = f.inType;
  d.outDtype = f.out.dtype;
  d.M = f.M;
  d.N = f.N;
  d.K = f.K;
  d.batch = f.batch;
  d.a = planOperand(f.a);
  d.b = planOperand(f.b);
  d.out = planOperand(f.out);
  d.epilogueEmpty = mm.epilogue.empty() && mm.extras.empty() && mm.result == mm.matmul &&
                    f.productType == f.inType && f.out.dtype == f.inType;
  // A bias add as the whole epilogue (addmm): one add of the product and the one extra.
  if (mm.epilogue.size() == 1 && mm.extras.size() == 1 && mm.result == mm.epilogue[0] &&
      f.inType == DType::F32 && f.productType == DType::F32 && f.out.dtype == DType::F32 &&
      f.extras[0].dtype == DType::F32) {
    const Node &n = g.node(mm.epilogue[0]);
    auto extra = mm.extraOf.find(n.inputs.size() == 2 && n.inputs[0] == mm.matmul ? n.inputs[1]
                                                                                  : n.inputs[0]);
    if (n.op == OpKind::Add && n.type.dtype == DType::F32 && n.inputs.size() == 2 &&
        (n.inputs[0] == mm.matmul) != (n.inputs[1] == mm.matmul) && extra != mm.extraOf.end() &&
        extra->second == 0)
      d.bias = planOperand(f.extras[0]);
  }
  return d;
}

// Appends a complete kernel built apart (a refused one must not leave half a kernel behind).
void appendKernel(KernelText &module, const KernelText &kernel) {
  std::string_view text = kernel.str();
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    module.line(text.substr(0, eol));
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
  }
}

// The separate epilogue kernel (emitEpilogueKernel) appended to `module` and its launch, when
// the vendor GEMM can store the product where the epilogue reads it: f32 in, product and out
// (the product then passes through C unrounded), no extra aliasing the output (the GEMM would
// overwrite it before the epilogue reads it), and columns within one grid dimension.
std::optional<PlanLaunch> epilogueLaunch(const Graph &g, const MatmulGroup &mm, const GemmForm &f,
                                         const ScheduleCaps &caps, const std::string &name,
                                         const PlanLaunch &gemm, KernelText &module) {
  if (f.inType != DType::F32 || f.productType != DType::F32 || f.out.dtype != DType::F32)
    return std::nullopt;
  for (const GemmOperand &e : f.extras)
    if (e.buffer == f.out.buffer)
      return std::nullopt;
  // As the pointwise kernels: up to 256 work-items, a multiple of the subgroup, and no more
  // than the columns need (the text reads local_size, so this is no part of it).
  const int64_t sg = std::max<uint32_t>(1, caps.subgroupSize);
  int64_t w = std::min<int64_t>(256, std::max<int64_t>(sg, caps.maxWorkgroupSize)) / sg * sg;
  w = std::clamp<int64_t>(ceilDiv(f.N, sg) * sg, sg, std::max(sg, w));
  const int64_t rows = f.M * batchCount(f); // workgroups y + 65535 z
  if (ceilDiv(f.N, w) > 65535 || ceilDiv(rows, 65535) > 65535)
    return std::nullopt;
  KernelText k;
  std::string error;
  if (!emitEpilogueKernel(k, g, mm, f, name, &error))
    return std::nullopt; // the fused kernel has the same epilogue: it reported any error
  PlanLaunch l;
  l.kernel = name;
  l.args = gemm.args;
  l.workgroup[0] = static_cast<uint32_t>(w);
  l.grid[0] = gridExtent(ceilDiv(f.N, w));
  l.grid[1] = gridExtent(rows);
  l.grid[2] = gridExtent(ceilDiv(rows, 65535));
  appendKernel(module, k);
  return l;
}

} // namespace

std::vector<std::string> gemmScalarNames(const GemmForm &f) {
  std::vector<std::string> n = {"M", "N", "K"};
  for (size_t d = 0; d < f.batch.size(); ++d)
    n.push_back("D" + std::to_string(d));
  auto operand = [&](const std::string &p) {
    for (const char *s : {"_off", "_rs", "_cs"})
      n.push_back(p + s);
    for (size_t d = 0; d < f.batch.size(); ++d)
      n.push_back(p + "_bs" + std::to_string(d));
  };
  operand("a");
  operand("b");
  for (size_t i = 0; i < f.extras.size(); ++i)
    operand("e" + std::to_string(i));
  n.push_back("c_off");
  return n;
}

void gemmPrologue(KernelText &k, const GemmForm &f) {
  if (f.narrowArgs)
    for (const std::string &n : gemmScalarNames(f))
      k.line("%" + n + " = convert %" + n + "_32 : i32 -> i64");
  k.line("%c_cs = const 1 : i64");
  k.line("%g_czero = const 0 : i64");
  k.line("%c_rs = add %N, %g_czero : i64");
  if (f.batch.empty())
    return;
  // %c_bs<d>: the elements of one step of batch dim d, innermost first.
  k.line("%c_bs" + std::to_string(f.batch.size() - 1) + " = mul %M, %N : i64");
  for (size_t d = f.batch.size() - 1; d-- > 0;)
    k.line("%c_bs" + std::to_string(d) + " = mul %c_bs" + std::to_string(d + 1) + ", %D" +
           std::to_string(d + 1) + " : i64");
}

std::string gemmParams(const GemmForm &f, const char *cAccess) {
  auto buffer = [](const std::string &name, DType t, const char *access) {
    return "%" + name + ": buffer<" + storageType(t) + ", " + access + ">";
  };
  std::string p = buffer("A", f.a.dtype, "readonly") + ", " + buffer("B", f.b.dtype, "readonly");
  for (size_t i = 0; i < f.extras.size(); ++i)
    p += ", " + buffer("E" + std::to_string(i), f.extras[i].dtype, "readonly");
  p += ", " + buffer("C", f.out.dtype, cAccess);
  for (const std::string &n : gemmScalarNames(f))
    p += ", %" + n + (f.narrowArgs ? "_32: i32" : ": i64");
  return p;
}

bool emitEpilogue(KernelText &k, const Graph &g, const MatmulGroup &mm, const GemmForm &f,
                  const std::string &product, const std::vector<std::string> &extras,
                  std::string *result, std::string *error) {
  std::map<int, std::string> env;
  // Every node's result is rounded to its dtype, as in the other fused kernels, the reference
  // evaluator and eager torch (an f16/bf16 mm returns f16/bf16; f32 and f64 pass through).
  const std::string p = emitRound(k, f.productType, product);
  env[mm.matmul] = p;
  for (const auto &[value, index] : mm.extraOf) {
    if (index < 0 || static_cast<size_t>(index) >= extras.size()) {
      *error = f.where + ": epilogue operand index " + std::to_string(index) + " out of range";
      return false;
    }
    env[value] = extras[static_cast<size_t>(index)];
  }
  for (int v : mm.epilogue) {
    if (v < static_cast<int>(g.params.size()) || v >= g.numValues()) {
      *error = f.where + ": epilogue value " + std::to_string(v) + " is not a node";
      return false;
    }
    const Node &n = g.node(v);
    if (n.op == OpKind::Constant) {
      env[v] = emitValueConst(k, n.attrs, n.type.dtype);
      continue;
    }
    const OpFamily fam = opFamily(n.op);
    if (fam != OpFamily::Unary && fam != OpFamily::Binary && fam != OpFamily::Ternary) {
      *error = f.where + ": " + opName(n.op) + " cannot be fused into a GEMM epilogue";
      return false;
    }
    std::vector<std::string> ins;
    for (int in : n.inputs) {
      auto it = env.find(in);
      if (it == env.end()) {
        *error = f.where + ": epilogue node " + opName(n.op) + " reads value " +
                 std::to_string(in) + ", which is neither the product, an earlier epilogue " +
                 "node nor an epilogue operand";
        return false;
      }
      ins.push_back(it->second);
    }
    env[v] = emitRound(k, n.type.dtype, emitScalarOp(k, g, n, ins));
  }
  auto it = env.find(mm.result);
  if (it == env.end()) {
    *error = f.where + ": the group's result is not computed by its epilogue";
    return false;
  }
  *result = it->second;
  return true;
}

bool lowerMatmul(const Graph &g, const MatmulGroup &mm, const ScheduleCaps &caps,
                 const std::string &name, KernelText &module, PlanLaunch *launch,
                 std::string *error, PlanGemm *gemm) {
  GemmForm f;
  if (!buildForm(g, mm, &f, error))
    return false;
  if (!caps.i64) { // the kernels' index math is i64 (sizes past 2^31 elements stay correct)
    *error = f.where + ": the device has no i64 support, which GEMM index math needs";
    return false;
  }
  if ((f.inType == DType::F64 && !caps.f64) || (f.inType == DType::F16 && !caps.f16) ||
      (f.inType == DType::BF16 && !caps.bf16)) {
    *error = f.where + ": the device has no " + dtypeName(f.inType) + " support";
    return false;
  }
  f.narrowArgs = true;
  for (int64_t v : scalarArgs(f))
    f.narrowArgs = f.narrowArgs && v >= INT32_MIN && v <= INT32_MAX;
  launch->kernel = name;
  launch->args.clear();
  const int64_t batch = batchCount(f);
  // The kernel is built apart and appended only when complete: a refused epilogue must not
  // leave half a kernel in the module.
  KernelText kernel;
  const double flops = 2.0 * static_cast<double>(f.M) * static_cast<double>(f.N) *
                       static_cast<double>(f.K) * static_cast<double>(batch);
  if (caps.matrixOps && flops >= static_cast<double>(caps.matrixMinFlops) &&
      matrixCapable(f, mm, g)) {
    GemmTiles t = pickTiles(caps, f, batch);
    if (!emitMatrixGemm(kernel, g, mm, f, t, name, error))
      return false;
    const int64_t tiles = ceilDiv(f.M, t.m) * ceilDiv(f.N, t.n);
    launch->grid[0] = gridExtent(ceilDiv(tiles, t.subgroups));
    launch->workgroup[0] = static_cast<uint32_t>(t.subgroups) * caps.subgroupSize;
  } else {
    // 16 x 16 work-items when the device allows 256 per workgroup, else 8 x 8.
    const int tile = caps.maxWorkgroupSize >= 256 ? 16 : 8;
    if (!emitSimtGemm(kernel, g, mm, f, tile, name, error))
      return false;
    launch->grid[0] = gridExtent(ceilDiv(f.M, tile) * ceilDiv(f.N, tile));
    launch->workgroup[0] = launch->workgroup[1] = static_cast<uint32_t>(tile);
  }
  launch->grid[2] = gridExtent(batch);
  bindArgs(f, launch);
  if (gemm) {
    *gemm = describeGemm(g, f, mm);
    if (!gemm->epilogueEmpty && !gemm->bias && caps.externGemm)
      gemm->epilogue = epilogueLaunch(g, mm, f, caps, name + "_epilogue", *launch, kernel);
  }
  appendKernel(module, kernel);
  return true;
}

} // namespace tessera::graph::detail
