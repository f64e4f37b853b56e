// Matrix ops of the OpenCL C codegen (docs/ir.md "Matrix ops"). The subgroup is one
// work-item (opencl_abi.h), so the work-item holds the whole matrix: a private array
// `T vN[R * C]`, row-major, of the register type (f16 / bf16 elements as floats holding the
// narrow value). matrix_mad sums c and the K products in k order with one fma each (within
// the contract's bound), i8 x i8 -> i32 wraps. Loads and stores compute each element's index
// exactly (tsr_mat_index) and follow the bounds mode like scalar loads and stores.
//
// The private arrays of one kernel are limited to OpenCLCompileOptions::maxMatrixBytes: a
// larger kernel is refused with an error naming the op, rather than left to exhaust the
// device's private memory.
#include "backends/opencl/codegen/oc_emitter.h"

namespace tessera::opencl::detail {

using ir::OpKind;
using ir::Scalar;

std::string Emitter::declareMatrix(const ir::Type &t, std::string *name) {
  *name = fresh();
  uint64_t n = static_cast<uint64_t>(t.rows) * t.cols;
  matrixBytes_ += n * (ir::bitWidth(t.elem) <= 8                        ? 1
                       : t.elem == Scalar::F64 || t.elem == Scalar::I64 ? 8
                                                                        : 4);
  return regType(t.elem) + " " + *name + "[" + std::to_string(n) + "]; // " + ir::toString(t);
}

std::string Emitter::copyMatrix(const ir::Type &t, const std::string &dst, const std::string &src) {
  uint64_t n = static_cast<uint64_t>(t.rows) * t.cols;
  return "for (int e = 0; e < " + std::to_string(n) + "; ++e) " + dst + "[e] = " + src + "[e];";
}

namespace {

std::string matrixName(const std::map<const ir::Value *, std::string> &vals, const ir::Value *v) {
  auto it = vals.find(v);
  return it == vals.end() ? std::string() : it->second;
}

} // namespace

bool Emitter::emitMatrix(const ir::Op &op) {
  auto matrix = [&](const ir::Value *v) {
    std::string n = matrixName(vals_, v);
    if (n.empty())
      fail("internal error: matrix %" + v->name + " used before it is defined");
    return n;
  };
  auto limit = [&]() {
    if (matrixBytes_ <= opts_.maxMatrixBytes)
      return true;
    return fail("the kernel's matrices need " + std::to_string(matrixBytes_) +
                " bytes of private memory, more than the OpenCL backend's limit of " +
                std::to_string(opts_.maxMatrixBytes) +
                " (each work-item holds whole matrices: "
                "subgroup size 1); use smaller tiles");
  };
  switch (op.kind) {
  case OpKind::MatrixFill: {
    const ir::Type &t = op.result()->type;
    std::string n;
    line(declareMatrix(t, &n) + " (" + loc() + " matrix_fill)");
    line("for (int e = 0; e < " + std::to_string(t.rows * t.cols) + "; ++e) " + n +
         "[e] = " + val(op.operands[0]) + ";");
    vals_[op.result()] = n;
    return limit();
  }
  case OpKind::MatrixMad: {
    const ir::Type &ta = op.operands[0]->type, &t = op.result()->type;
    std::string a = matrix(op.operands[0]), b = matrix(op.operands[1]), c = matrix(op.operands[2]);
    int M = t.rows, N = t.cols, K = ta.cols;
    std::string n;
    line(declareMatrix(t, &n) + " (" + loc() + " matrix_mad)");
    std::string A = a + "[i * " + std::to_string(K) + " + k]",
                B = b + "[k * " + std::to_string(N) + " + j]";
    bool isInt = t.elem == Scalar::I32;
    line("for (int i = 0; i < " + std::to_string(M) + "; ++i)");
    line("  for (int j = 0; j < " + std::to_string(N) + "; ++j) {");
    line(std::string("    ") + (isInt ? "int" : "float") + " s = " + c + "[i * " +
         std::to_string(N) + " + j];");
    line("    for (int k = 0; k < " + std::to_string(K) + "; ++k)");
    if (isInt)
      line("      s = (int)((uint)s + (uint)((int)" + A + " * (int)" + B + "));");
    else
      line("      s = fma(" + A + ", " + B + ", s);");
    line("    " + n + "[i * " + std::to_string(N) + " + j] = s;");
    line("  }");
    vals_[op.result()] = n;
    return limit();
  }
  case OpKind::MatrixMap: {
    const ir::Type &t = op.result()->type;
    std::string n;
    line(declareMatrix(t, &n) + " (" + loc() + " matrix_map)");
    std::vector<std::string> ins;
    for (const ir::Value *v : op.operands)
      ins.push_back(matrix(v));
    line("for (int e = 0; e < " + std::to_string(t.rows * t.cols) + "; ++e) {");
    ++indent_;
    const ir::Block &region = op.region(0);
    for (size_t k = 0; k < region.args.size(); ++k)
      def(region.args[k].get(), ins[k] + "[e]");
    std::vector<std::string> ys;
    if (!emitBlock(region, &ys))
      return false;
    curOp_ = &op;
    if (ys.empty())
      return fail("internal error: the region yields nothing");
    line(n + "[e] = " + ys[0] + ";");
    --indent_;
    line("}");
    vals_[op.result()] = n;
    return limit();
  }
  default:
    break;
  }
  // matrix_load / matrix_store
  bool isLoad = op.kind == OpKind::MatrixLoad;
  size_t base = isLoad ? 0 : 1;
  const ir::Type &t = isLoad ? op.result()->type : op.operands[0]->type;
  MemRef *m = mem(op.operands[base]);
  if (!m)
    return false;
  std::string off = val(op.operands[base + 1]), ld = val(op.operands[base + 2]);
  bool hasBounds = op.operands.size() > base + 3;
  std::string n, src;
  if (isLoad)
    line(declareMatrix(t, &n) + " (" + loc() + " matrix_load)");
  else
    src = matrix(op.operands[0]);
  const char *ri = op.mods.colMajor ? "c" : "r", *ci = op.mods.colMajor ? "r" : "c";
  line("for (int r = 0; r < " + std::to_string(t.rows) + "; ++r)");
  line("  for (int c = 0; c < " + std::to_string(t.cols) + "; ++c) {");
  indent_ += 2;
  std::string el = (isLoad ? n : src) + "[r * " + std::to_string(t.cols) + " + c]";
  if (isLoad)
    line(el + " = " + (t.elem == Scalar::I1 ? "false" : "(" + regType(t.elem) + ")0") + ";");
  if (hasBounds)
    line("if (r < (long)" + val(op.operands[base + 3]) + " && c < (long)" +
         val(op.operands[base + 4]) + ") {");
  else
    line("{");
  ++indent_;
  line("long idx;");
  if (!bounded()) {
    line("idx = (long)((ulong)(long)" + off + " + (ulong)" + ri + " * (ulong)(long)" + ld +
         " + (ulong)" + ci + ");");
    line(isLoad ? el + " = " + loadElem(*m, "idx") + ";" : storeElem(*m, "idx", el));
  } else {
    need("tsr_mat_index");
    line("int ok = tsr_mat_index((long)" + off + ", (long)" + ld + ", " + ri + ", " + ci +
         ", &idx);");
    line("if (ok && (ulong)idx < (ulong)" + m->count + ")");
    line(std::string("  ") +
         (isLoad ? el + " = " + loadElem(*m, "idx") + ";" : storeElem(*m, "idx", el)));
    if (checked()) {
      line("else");
      line("  " + boundsFault(*m,
                              isLoad ? "1u /* TSR_FAULT_LOAD_OUT_OF_BOUNDS */"
                                     : "2u /* TSR_FAULT_STORE_OUT_OF_BOUNDS */",
                              "ok ? idx : LONG_MAX"));
    }
  }
  --indent_;
  line("}");
  indent_ -= 2;
  line("  }");
  if (isLoad) {
    vals_[op.result()] = n;
    return limit();
  }
  return true;
}

} // namespace tessera::opencl::detail
