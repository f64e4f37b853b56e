// Memory, atomics, work-item queries and subgroups of the OpenCL C codegen.
//
// Buffers are typed pointers into the view (base + offset) with n = bytes / sizeof(T)
// elements; shared arrays are `__local` arrays of the kernel. f16 is ushort bits through
// tsr_f16_from_bits / tsr_f16_bits (vload_half / vstore_half, NaN bits kept), bf16 ushort
// bits, i1 a uchar. Robust and checked modes bound every index (read signed) by the element
// count: a load out of range reads 0, a store or atomic is dropped (the atomic returns 0),
// and checked mode records the first fault.
// Subgroups have size 1 (opencl_abi.h): every reduction, shuffle and broadcast is the value.
// Must never touch memory outside the view in robust or checked mode.
#include "backends/opencl/codegen/oc_emitter.h"

namespace tessera::opencl::detail {

using ir::OpKind;
using ir::Scalar;

MemRef *Emitter::mem(const ir::Value *v) {
  auto it = mems_.find(v);
  if (it != mems_.end())
    return &it->second;
  fail("internal error: memory %" + v->name + " is not bound");
  return nullptr;
}

std::string Emitter::loadElem(const MemRef &m, const std::string &idx) {
  switch (m.elem) {
  case Scalar::F16: // NaN bits kept (oc_prelude.cpp)
    need("tsr_f16_from_bits");
    return "tsr_f16_from_bits(" + m.ptr + "[" + idx + "])";
  case Scalar::BF16:
    return "as_float((uint)" + m.ptr + "[" + idx + "] << 16)";
  case Scalar::I1:
    return "(" + m.ptr + "[" + idx + "] != 0)";
  default:
    return m.ptr + "[" + idx + "]";
  }
}

std::string Emitter::storeElem(const MemRef &m, const std::string &idx, const std::string &v) {
  switch (m.elem) {
  case Scalar::F16: // v holds an f16 value: exact, NaN bits kept
    need("tsr_f16_bits");
    return m.ptr + "[" + idx + "] = tsr_f16_bits(" + v + ");";
  case Scalar::BF16:
    return m.ptr + "[" + idx + "] = (ushort)(as_uint(" + v + ") >> 16);";
  case Scalar::I1:
    return m.ptr + "[" + idx + "] = (uchar)" + v + ";";
  default:
    return m.ptr + "[" + idx + "] = " + v + ";";
  }
}

std::string Emitter::boundsFault(const MemRef &m, const std::string &kind, const std::string &idx) {
  need("tsr_fault");
  return faultCall(m.shared ? "4u /* TSR_FAULT_SHARED_OUT_OF_BOUNDS */" : kind, m.param, idx,
                   m.count);
}

namespace {
/// The bounds test of an access at `idx`, short-cut by a uniform test `fits` that the whole
/// launch's indices are inside `m` (oc_range.cpp; PoCL folds it for a known work-group size).
std::string inRangeOk(const std::string &fits, const std::string &idx, const MemRef &m) {
  std::string ok = "(ulong)" + idx + " < (ulong)" + m.count;
  return fits.empty() ? ok : "(" + fits + " || " + ok + ")";
}

const char *kLoadFault = "1u /* TSR_FAULT_LOAD_OUT_OF_BOUNDS */";
const char *kStoreFault = "2u /* TSR_FAULT_STORE_OUT_OF_BOUNDS */";
const char *kAtomicFault = "3u /* TSR_FAULT_ATOMIC_OUT_OF_BOUNDS */";
} // namespace

bool Emitter::emitLoad(const ir::Op &op) {
  MemRef *m = mem(op.operands[0]);
  if (!m)
    return false;
  std::string idx = fresh();
  line("long " + idx + " = (long)" + val(op.operands[1]) + "; // " + loc() + " load");
  // In range: proved before the loop (oc_for.cpp) or for every launch (oc_range.cpp).
  std::string fits = bounded() ? inRangeTest(op, *m, op.operands[1]) : "";
  if (!bounded() || inRangeMem_.count(&op) || fits == "true") {
    def(op.result(), loadElem(*m, idx));
    return true;
  }
  std::string ok = inRangeOk(fits, idx, *m);
  if (checked()) {
    line("if (!(" + ok + "))");
    line("  " + boundsFault(*m, kLoadFault, idx));
  }
  std::string zero = op.result()->type.isBool() ? "false" : "(" + regType(m->elem) + ")0";
  def(op.result(), ok + " ? " + loadElem(*m, idx) + " : " + zero);
  return true;
}

bool Emitter::emitStore(const ir::Op &op) {
  MemRef *m = mem(op.operands[1]);
  if (!m)
    return false;
  std::string v = val(op.operands[0]);
  std::string idx = fresh();
  line("long " + idx + " = (long)" + val(op.operands[2]) + "; // " + loc() + " store");
  std::string fits = bounded() ? inRangeTest(op, *m, op.operands[2]) : "";
  if (!bounded() || inRangeMem_.count(&op) || fits == "true") {
    line(storeElem(*m, idx, v));
    return true;
  }
  std::string ok = inRangeOk(fits, idx, *m);
  line("if (" + ok + ")");
  line("  " + storeElem(*m, idx, v));
  if (checked()) {
    line("else");
    line("  " + boundsFault(*m, kStoreFault, idx));
  }
  return true;
}

bool Emitter::emitAtomic(const ir::Op &op) {
  MemRef *m = mem(op.operands[0]);
  if (!m)
    return false;
  Scalar t = op.result()->type.elem;
  if (t == Scalar::I64 && !opts_.caps.int64Atomics)
    return fail("64-bit atomics need cl_khr_int64_base_atomics, which the device lacks "
                "(opencl.int64Atomics=0)");
  std::string idx = fresh();
  line("long " + idx + " = (long)" + val(op.operands[1]) + "; // " + loc() + " " +
       std::string(op.info().name));
  std::string v = val(op.operands[2]);
  std::string sp = m->space, tag = m->shared ? "l" : "g";
  std::string T = regType(t);
  std::string ptr = "&" + m->ptr + "[" + idx + "]";
  auto typed = [&](const std::string &ty) { return "(volatile " + sp + " " + ty + " *)" + ptr; };
  bool is64 = t == Scalar::I64;
  std::string pre = is64 ? "atom_" : "atomic_";
  std::string e;
  switch (op.kind) {
  case OpKind::AtomicAdd:
    if (t == Scalar::F32) {
      need("tsr_atomic_add_f32_" + tag);
      e = "tsr_atomic_add_f32_" + tag + "(" + typed("float") + ", " + v + ")";
    } else {
      e = pre + "add(" + typed(T) + ", " + v + ")";
    }
    break;
  case OpKind::AtomicXchg:
    e = pre + "xchg(" + typed(T) + ", " + v + ")";
    break;
  case OpKind::AtomicCas:
    e = pre + "cmpxchg(" + typed(T) + ", " + v + ", " + val(op.operands[3]) + ")";
    break;
  case OpKind::AtomicMin:
  case OpKind::AtomicMax: {
    bool isMin = op.kind == OpKind::AtomicMin, u = op.mods.isUnsigned;
    if (is64) {
      std::string h =
          std::string("tsr_atomic_") + (u ? "u" : "s") + (isMin ? "min" : "max") + "64_" + tag;
      need(h);
      e = h + "(" + typed("long") + ", " + v + ")";
    } else if (u) {
      e = "(int)" + pre + (isMin ? "min(" : "max(") + typed("uint") + ", (uint)" + v + ")";
    } else {
      e = pre + (isMin ? "min(" : "max(") + typed("int") + ", " + v + ")";
    }
    break;
  }
  default:
    return fail("not an atomic");
  }
  if (!bounded()) {
    def(op.result(), e);
    return true;
  }
  std::string ok = "(ulong)" + idx + " < (ulong)" + m->count;
  if (checked()) {
    line("if (!(" + ok + "))");
    line("  " + boundsFault(*m, kAtomicFault, idx));
  }
  def(op.result(), ok + " ? " + e + " : (" + T + ")0");
  return true;
}

bool Emitter::emitSharedAlloc(const ir::Op &op) {
  const ir::Type &t = op.result()->type;
  std::string n = fresh();
  line("__local " + storeType(t.elem) + " " + n + "[" + std::to_string(t.count) + "]; // " + loc() +
       " shared_alloc");
  MemRef m;
  m.ptr = n;
  m.count = std::to_string(t.count) + "l";
  m.space = "__local";
  m.elem = t.elem;
  m.shared = true;
  mems_[op.result()] = m;
  return true;
}

bool Emitter::emitWorkItem(const ir::Op &op) {
  std::string T = regType(op.result()->type.elem);
  std::string d = std::to_string(op.mods.dim);
  std::string e;
  switch (op.kind) {
  case OpKind::GlobalId:
    e = "get_global_id(" + d + ")";
    break;
  case OpKind::LocalId:
    e = "get_local_id(" + d + ")";
    break;
  case OpKind::GroupId:
    e = "get_group_id(" + d + ")";
    break;
  case OpKind::LocalSize:
    e = localSize(op.mods.dim);
    break;
  case OpKind::NumGroups:
    e = "get_num_groups(" + d + ")";
    break;
  case OpKind::SubgroupSize:
    e = "1";
    break; // opencl_abi.h: one work-item per subgroup
  case OpKind::SubgroupLocalId:
    e = "0";
    break;
  case OpKind::SubgroupId: // the linear local id: each work-item is its own subgroup
    e = "get_local_id(0) + " + localSize(0) + " * (get_local_id(1) + " + localSize(1) +
        " * get_local_id(2))";
    break;
  default:
    return fail("not a work-item query");
  }
  def(op.result(), "(" + T + ")(" + e + ")");
  return true;
}

bool Emitter::emitSubgroup(const ir::Op &op) {
  // Subgroup size 1: the one active lane's value (a shuffle of another lane would read a
  // missing lane, which the IR leaves undefined).
  def(op.result(), val(op.operands[0]));
  return true;
}

} // namespace tessera::opencl::detail
