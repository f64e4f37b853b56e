// One kernel as an entry point: GLCompute with the interface of backends/gpu_module.h
// (Shader flavour) or Kernel with the parameters of backends/levelzero/levelzero_abi.h
// (Kernel flavour, see spirv_flavour.cpp); types and capability checks, and the walk over
// its ops.
//
// ABI: buffer parameter i -> DescriptorSet 0, Binding i, a Block struct holding a runtime
// array; scalars -> one push-constant Block (32-bit slots, 64-bit ones aligned to 8);
// workgroup size -> spec constants 0, 1, 2 (x, y, z), dispatched as a 1-D WorkgroupSize of
// x*y*z with the 3-D local ids rebuilt from LocalInvocationIndex (so subgroups are runs of
// consecutive linear ids on every implementation); the control buffer (cancel flag and fault
// record) -> Binding <parameter count>, when the kernel uses it. The interface of
// each entry point lists every global variable it references (SPIR-V 1.4+). Must never
// emit a capability the caps lack: every type is checked where an op first needs it.
#include "backends/spirv/spirv_lowering.h"
#include "ir/verify/verifier.h"

#include <spirv/unified1/GLSL.std.450.h>

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>

namespace tessera::spirv::detail {

// AcquireRelease | UniformMemory | WorkgroupMemory, as plain bits (spirv.hpp's operator|
// on the mask enum makes values outside the enum).
constexpr uint32_t kBarrierSemantics = 0x8 | 0x40 | 0x100;
// The Kernel flavour's barrier: SequentiallyConsistent | WorkgroupMemory |
// CrossWorkgroupMemory, as OpenCL's barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE).
constexpr uint32_t kKernelBarrierSemantics = 0x10 | 0x100 | 0x200;

using ir::OpForm;
using ir::OpKind;
using ir::Scalar;

Lowering::Lowering(spirv::ModuleBuilder &b, const ir::Module &m, const TargetCaps &caps,
                   tsr_bounds_mode bounds)
    : b_(b), module_(m), caps_(caps), bounds_(bounds),
      kernel_(b.flavour() == spirv::Flavour::Kernel) {}

// --------------------------------------------------------------- errors and checks

Id Lowering::fail(const std::string &msg) {
  if (!error_.empty())
    return 0; // keep the first error
  ir::Loc loc = curOp_ ? curOp_->loc : curFn_ ? curFn_->loc : ir::Loc{};
  std::string file = module_.filename.empty() ? "<module>" : module_.filename;
  error_ = file + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col) + ": error: ";
  if (!curOp_ && curFn_)
    error_ += "kernel @" + curFn_->name + ": ";
  error_ += msg;
  return 0;
}

bool Lowering::need(bool have, const std::string &what, const char *field) {
  if (have)
    return true;
  std::string who = curOp_ ? "'" + std::string(curOp_->info().name) + "'" : "the kernel";
  fail(who + " needs " + what + " (" + capsFieldName(field) + "), which the target lacks");
  return false;
}

bool Lowering::checkScalar(Scalar s) {
  switch (s) {
  case Scalar::I8:
    return need(caps_.int8, "8-bit integers", "int8");
  case Scalar::I16:
    return need(caps_.int16, "16-bit integers", "int16");
  case Scalar::I64:
    return need(caps_.int64, "64-bit integers", "int64");
  case Scalar::F16:
    return need(caps_.float16, "16-bit floats", "float16");
  case Scalar::F64:
    return need(caps_.float64, "64-bit floats", "float64");
  default:
    return true; // i1, i32, f32, and bf16 (an f32 register; bits in a u32)
  }
}

bool Lowering::checkStorage(Scalar s, bool shared) {
  std::string name(ir::scalarName(s));
  switch (s) {
  case Scalar::I1:
  case Scalar::I8:
    return need(caps_.int8, "8-bit integers to store " + name, "int8") &&
           (shared || need(caps_.storageBuffer8BitAccess, "8-bit storage buffer access for " + name,
                           "storageBuffer8BitAccess"));
  case Scalar::I16:
  case Scalar::BF16:
    return need(caps_.int16, "16-bit integers to store " + name, "int16") &&
           (shared || need(caps_.storageBuffer16BitAccess,
                           "16-bit storage buffer access for " + name, "storageBuffer16BitAccess"));
  case Scalar::F16:
    return checkScalar(s) &&
           (shared || need(caps_.storageBuffer16BitAccess,
                           "16-bit storage buffer access for " + name, "storageBuffer16BitAccess"));
  default:
    return checkScalar(s);
  }
}

// ----------------------------------------------------------------- types, constants

Id Lowering::regType(Scalar s) {
  switch (s) {
  case Scalar::I1:
    return boolT();
  case Scalar::I8:
    return b_.typeInt(8);
  case Scalar::I16:
    return b_.typeInt(16);
  case Scalar::I32:
    return u32T();
  case Scalar::I64:
    return b_.typeInt(64);
  case Scalar::F16:
  case Scalar::BF16:
  case Scalar::F32:
    return f32T();
  case Scalar::F64:
    return b_.typeFloat(64);
  }
  assert(false && "unknown scalar");
  return 0;
}

Id Lowering::memType(Scalar s) {
  switch (s) {
  case Scalar::I1:
    return b_.typeInt(8);
  case Scalar::F16: // Kernel: the bits (no half type there)
    return kernel_ ? b_.typeInt(16) : b_.typeFloat(16);
  case Scalar::BF16:
    return b_.typeInt(16);
  default:
    return regType(s);
  }
}

Id Lowering::bitsType(Id ft) { return b_.typeInt(b_.widthOf(ft)); }

Id Lowering::constFloat(Id ft, double v) {
  switch (b_.widthOf(ft)) {
  case 64:
    return b_.constant(ft, std::bit_cast<uint64_t>(v));
  case 32:
    return b_.constant(ft, std::bit_cast<uint32_t>(static_cast<float>(v)));
  default: // half: only exact small values are requested (0, ±max, 1)
    return b_.constant(ft, std::bit_cast<uint16_t>(static_cast<_Float16>(v)));
  }
}

Id Lowering::glsl(Id type, uint32_t inst, std::initializer_list<Id> args) {
  if (kernel_)
    return b_.extInst(type, b_.extInstSet("OpenCL.std"), openclInst(inst), args);
  if ((inst == GLSLstd450Floor || inst == GLSLstd450Ceil || inst == GLSLstd450Trunc ||
       inst == GLSLstd450RoundEven) &&
      b_.widthOf(type) == 64)
    return roundF64(inst, *args.begin(), type);
  return b_.extInst(type, b_.extInstSet("GLSL.std.450"), inst, args);
}

// ---------------------------------------------------------------- kernel interface

Id Lowering::workgroupSize() {
  if (wgSize_ || kernel_) // Kernel: wgDims_ are parameters, the driver sets the group size
    return wgSize_;
  Id u32 = u32T();
  for (uint32_t d = 0; d < 3; ++d)
    wgDims_[d] = b_.specConstant(u32, 1, d);
  b_.name(wgDims_[0], "local_size_x");
  b_.name(wgDims_[1], "local_size_y");
  b_.name(wgDims_[2], "local_size_z");
  // Vulkan leaves the subgroup layout of a 2-D/3-D workgroup to the implementation
  // (lavapipe cuts x-rows into pieces); a 1-D dispatch makes subgroups consecutive.
  Id xy = b_.specConstantOp(u32, spv::OpIMul, {wgDims_[0], wgDims_[1]});
  Id parts[3] = {b_.specConstantOp(u32, spv::OpIMul, {xy, wgDims_[2]}), constU32(1), constU32(1)};
  wgSize_ = b_.specConstComposite(b_.typeVector(u32, 3), parts);
  b_.decorate(wgSize_, spv::DecorationBuiltIn, {spv::BuiltInWorkgroupSize});
  b_.name(wgSize_, "workgroup_size");
  return wgSize_;
}

void Lowering::emitEntryIds() {
  workgroupSize();
  Id u32 = u32T();
  // Kernel: the driver dispatches x*y*z work-items in x alone, so LocalInvocationId.x is
  // the linear id.
  Id lin = kernel_ ? b_.op(spv::OpCompositeExtract, u32,
                           {loadBuiltin(spv::BuiltInLocalInvocationId, true), 0})
                   : loadBuiltin(spv::BuiltInLocalInvocationIndex, false);
  if (!coop_ && usesMatrices(module_, *curFn_->body, 0) && caps_.subgroupSize > 0) {
    lane_ = b_.op(spv::OpUMod, u32, {lin, constU32(caps_.subgroupSize)});
    subgroupsUsed_ = true;
  }
  Id q = b_.op(spv::OpUDiv, u32, {lin, wgDims_[0]});
  localIds_[0] = b_.op(spv::OpUMod, u32, {lin, wgDims_[0]});
  localIds_[1] = b_.op(spv::OpUMod, u32, {q, wgDims_[1]});
  localIds_[2] = b_.op(spv::OpUDiv, u32, {q, wgDims_[1]});
  groupIds_ = loadBuiltin(spv::BuiltInWorkgroupId, true);
}

Id Lowering::builtinVar(spv::BuiltIn bi, bool vec3) {
  auto it = builtins_.find(bi);
  if (it == builtins_.end()) {
    Id t = vec3 ? b_.typeVector(u32T(), 3) : u32T();
    if (kernel_ && builtinIsSizeT(bi)) // size_t under Physical64
      t = vec3 ? b_.typeVector(b_.typeInt(64), 3) : b_.typeInt(64);
    Id var = b_.globalVariable(b_.typePointer(spv::StorageClassInput, t), spv::StorageClassInput);
    b_.decorate(var, spv::DecorationBuiltIn, {static_cast<uint32_t>(bi)});
    it = builtins_.emplace(bi, var).first;
  }
  interface_.insert(it->second);
  return it->second;
}

Id Lowering::loadBuiltin(spv::BuiltIn bi, bool vec3) {
  Id var = builtinVar(bi, vec3);
  Id u32 = u32T(), want = vec3 ? b_.typeVector(u32, 3) : u32;
  if (!kernel_ || !builtinIsSizeT(bi))
    return b_.op(spv::OpLoad, want, {var});
  Id u64 = b_.typeInt(64);
  Id wide = b_.op(spv::OpLoad, vec3 ? b_.typeVector(u64, 3) : u64, {var});
  return b_.op(spv::OpUConvert, want, {wide});
}

Id Lowering::bufferVar(MemRef &m) {
  if (m.var)
    return m.var;
  if (!checkStorage(m.elem, false))
    return 0;
  Id memT = memType(m.elem);
  uint32_t width = b_.widthOf(memT);
  if (width == 8)
    b_.capability(spv::CapabilityStorageBuffer8BitAccess);
  if (width == 16)
    b_.capability(spv::CapabilityStorageBuffer16BitAccess);
  Id block = runtimeArrayBlock(memT, static_cast<uint32_t>(ir::byteSize(m.elem)));
  Id ptr = b_.typePointer(spv::StorageClassStorageBuffer, block);
  m.var = b_.globalVariable(ptr, spv::StorageClassStorageBuffer);
  b_.decorate(m.var, spv::DecorationDescriptorSet, {0});
  b_.decorate(m.var, spv::DecorationBinding, {m.param->index});
  if (m.param->type.access == ir::Access::ReadOnly)
    b_.decorate(m.var, spv::DecorationNonWritable);
  if (!m.param->name.empty())
    b_.name(m.var, m.param->name);
  interface_.insert(m.var);
  return m.var;
}

namespace {

/// A scalar parameter from its 32-bit push-constant slot (value bits in the low bits).
Id fromSlot(Lowering &L, Id raw, Scalar s) {
  spirv::ModuleBuilder &b = L.b_;
  switch (s) {
  case Scalar::I1:
    return b.op(spv::OpINotEqual, L.boolT(), {raw, L.constU32(0)});
  case Scalar::I8:
  case Scalar::I16:
    return b.op(spv::OpUConvert, L.regType(s), {raw});
  case Scalar::F32:
    return b.op(spv::OpBitcast, L.f32T(), {raw});
  case Scalar::BF16:
    return L.bf16BitsToF32(raw);
  case Scalar::F16: {
    // UnpackHalf2x16 widens exactly and needs neither Int16 nor a half type.
    Id v2 = L.glsl(b.typeVector(L.f32T(), 2), GLSLstd450UnpackHalf2x16, {raw});
    return b.op(spv::OpCompositeExtract, L.f32T(), {v2, 0});
  }
  default:
    return raw; // i32; i64 and f64 have 8-byte slots of their own type
  }
}

} // namespace

bool Lowering::declareParams(const ir::Function &f, KernelInfo &info) {
  std::vector<Id> members;
  std::vector<uint32_t> offsets;
  std::vector<const ir::Value *> scalars;
  for (const ir::Value *p : f.params())
    info.params.push_back(p->type);
  uint32_t end = pushConstantLayout(info.params, &info.paramOffsets);
  for (size_t i = 0; i < info.params.size(); ++i) {
    const ir::Value *p = f.params()[i];
    if (p->type.kind == ir::Type::Kind::Buffer) {
      mems_[p] = MemRef{p, 0, p->type.elem, false};
      continue;
    }
    if (!p->type.isScalar())
      return fail("parameter %" + p->name + " of type " + ir::toString(p->type) +
                  " cannot be a kernel parameter on " + targetName());
    if (!checkScalar(p->type.elem))
      return false;
    offsets.push_back(info.paramOffsets[i]);
    members.push_back(ir::bitWidth(p->type.elem) == 64 ? regType(p->type.elem) : u32T());
    scalars.push_back(p);
  }
  info.pushConstantBytes = end;
  if (end > caps_.maxPushConstantsSize)
    return fail("the scalar parameters need " + std::to_string(end) +
                " bytes of push constants; the target allows " +
                std::to_string(caps_.maxPushConstantsSize) + " (caps.maxPushConstantsSize)");
  if (members.empty())
    return true;
  Id block = b_.typeStruct(members);
  b_.decorate(block, spv::DecorationBlock);
  for (uint32_t k = 0; k < members.size(); ++k)
    b_.memberDecorate(block, k, spv::DecorationOffset, {offsets[k]});
  Id var = b_.globalVariable(b_.typePointer(spv::StorageClassPushConstant, block),
                             spv::StorageClassPushConstant);
  b_.name(var, "params");
  interface_.insert(var);
  for (uint32_t k = 0; k < members.size(); ++k) {
    Id ptr = b_.op(spv::OpAccessChain, b_.typePointer(spv::StorageClassPushConstant, members[k]),
                   {var, constU32(k)});
    Id raw = b_.op(spv::OpLoad, members[k], {ptr});
    define(scalars[k], fromSlot(*this, raw, scalars[k]->type.elem));
  }
  return true;
}

bool Lowering::lowerKernel(const ir::Function &f, KernelInfo &info) {
  curFn_ = &f;
  curOp_ = nullptr;
  vals_.clear();
  mems_.clear();
  mats_.clear();
  lane_ = 0;
  subgroupsUsed_ = false;
  interface_.clear();
  sharedBytes_ = 0;
  control_ = 0;
  cutLoop_ = cutLine_ = cutCol_ = 0;
  votes_ = divSeen_ = divLine_ = divCol_ = divYes_ = divAll_ = 0;
  uniformDecisions_ = ir::workgroupUniformDecisions(f);
  info = KernelInfo{};
  info.name = f.name;
  Id voidT = b_.typeVoid();
  Id fn = kernel_ ? beginKernelFunction(f) : b_.beginFunction(voidT, b_.typeFunction(voidT));
  if (!fn)
    return false;
  b_.name(fn, f.name);
  bool loops = ir::containsLoop(module_, *f.body);
  bool dynamicLoops = ir::containsLoop(module_, *f.body, /*dynamicOnly=*/true);
  if (loops)
    declareLoopState();
  bool votes = ir::anyBarrierVote(module_, uniformDecisions_, *f.body);
  if (votes)
    declareVoteState();
  coop_ = false;
  coopVars_.clear();
  if (chooseCooperative(f)) {
    b_.useVulkanMemoryModel();
    declareCoopVariables(f); // function variables lead the first block
  }
  emitEntryIds(); // the workgroup size is always present: the driver specializes it
  if (!(kernel_ ? declareKernelParams(f, info) : declareParams(f, info)))
    return false;
  if (votes)
    initVotes(); // before any exit: every work-item reaches its barrier
  if (dynamicLoops)
    leaveIf(loadCancelFlag()); // workgroups that start past the deadline end at once
  if (!emitBlock(*f.body, nullptr))
    return false;
  if (loops)
    recordCutLoop();
  if (votes)
    recordDivergence();
  b_.returnVoid();
  b_.endFunction();
  curOp_ = nullptr;
  // Every buffer gets its binding even when unused: the driver binds every argument.
  for (const ir::Value *p : f.params())
    if (p->type.kind == ir::Type::Kind::Buffer && !bufferVar(mems_.at(p)))
      return false;
  info.sharedBytes = sharedBytes_;
  if (control_ && !kernel_)
    info.controlBinding = static_cast<uint32_t>(f.params().size());
  std::vector<Id> iface(interface_.begin(), interface_.end());
  if (kernel_) {
    // SPIR-V 1.2: the interface lists Input variables only (the builtins); the control
    // pointer is always the last parameter (levelzero_abi.h): controlBinding names it.
    info.controlBinding = static_cast<uint32_t>(kparams_.size() - 1);
    iface.clear();
    for (const auto &[bi, var] : builtins_)
      if (interface_.count(var))
        iface.push_back(var);
    std::sort(iface.begin(), iface.end());
    b_.entryPoint(spv::ExecutionModelKernel, fn, f.name, iface);
    // No contraction anywhere (docs/ir.md: an IR mul then add rounds twice); OpenCL's
    // counterpart of the Shader flavour's NoContraction on every float op.
    b_.executionMode(fn, spv::ExecutionModeContractionOff);
    if (subgroupsUsed_) {
      // The lowering (matrix lanes) and the device's record assume caps.subgroupSize: a
      // Level Zero device otherwise picks its own SIMD width per kernel.
      b_.capability(spv::CapabilitySubgroupDispatch);
      b_.executionMode(fn, spv::ExecutionModeSubgroupSize, {caps_.subgroupSize});
    }
    return true;
  }
  b_.entryPoint(spv::ExecutionModelGLCompute, fn, f.name, iface);
  b_.executionMode(fn, spv::ExecutionModeLocalSize, {1, 1, 1}); // overridden by the built-in
  if (caps_.signedZeroInfNanPreserve) {
    // IEEE semantics for x * 0.0, x / 0.0 and -0.0 (docs/ir.md, "Floats"): without this mode
    // a Vulkan compiler may assume no NaN, infinity or signed zero (llvmpipe folds x * 0.0 to
    // 0). Declared for every float width the device has; the caps guarantee each is supported.
    b_.capability(spv::CapabilitySignedZeroInfNanPreserve);
    for (uint32_t width : {16u, 32u, 64u})
      if (width == 32 || (width == 16 && caps_.float16) || (width == 64 && caps_.float64))
        b_.executionMode(fn, spv::ExecutionModeSignedZeroInfNanPreserve, {width});
  }
  if (strict_ && caps_.denormPreserve) {
    // Strict results are bitwise those of every other backend, which keep subnormals; without
    // this mode a Vulkan device may flush them (the runner reports it where it lacks it).
    b_.capability(spv::CapabilityDenormPreserve);
    for (uint32_t width : {16u, 32u, 64u})
      if (width == 32 || (width == 16 && caps_.float16) || (width == 64 && caps_.float64))
        b_.executionMode(fn, spv::ExecutionModeDenormPreserve, {width});
  }
  return true;
}

void Lowering::workgroupBarrier() {
  b_.opVoid(spv::OpControlBarrier,
            {constU32(spv::ScopeWorkgroup), constU32(spv::ScopeWorkgroup),
             constU32(kernel_ ? kKernelBarrierSemantics : kBarrierSemantics)});
}

// ----------------------------------------------------------------------- op walk

Id Lowering::val(const ir::Value *v) {
  auto it = vals_.find(v);
  if (it != vals_.end())
    return it->second;
  return fail("internal error: value %" + v->name + " has no SPIR-V id");
}

MemRef *Lowering::mem(const ir::Value *v) {
  auto it = mems_.find(v);
  if (it != mems_.end())
    return &it->second;
  fail("internal error: memory %" + v->name + " has no SPIR-V variable");
  return nullptr;
}

void Lowering::define(const ir::Value *v, Id id) {
  vals_[v] = id;
  if (!v->name.empty() && (!v->def || v->def->kind != OpKind::Const))
    b_.name(id, v->name); // constants are shared: naming them would mislead
}

bool Lowering::emitBlock(const ir::Block &blk, std::vector<Id> *terminatorValues) {
  for (const auto &opPtr : blk.ops) {
    const ir::Op &op = *opPtr;
    if (op.info().form != OpForm::Terminator) {
      if (!emitOp(op))
        return false;
      continue;
    }
    if (!terminatorValues)
      continue;
    for (const ir::Value *v : op.operands)
      if (!flatVal(v, *terminatorValues))
        return false;
  }
  return true;
}

bool Lowering::emitOp(const ir::Op &op) {
  curOp_ = &op;
  for (const ir::Value *v : op.operands)
    if (v->type.isScalar() && !checkScalar(v->type.elem))
      return false;
  for (const auto &r : op.results)
    if (r->type.isScalar() && !checkScalar(r->type.elem))
      return false;
  switch (op.info().form) {
  case OpForm::WorkItem:
    return emitWorkItem(op);
  case OpForm::Load:
  case OpForm::Store:
    return emitLoadStore(op);
  case OpForm::SharedAlloc:
    return emitSharedAlloc(op);
  case OpForm::Atomic:
  case OpForm::AtomicCas:
    return emitAtomic(op);
  case OpForm::Barrier:
    // Workgroup execution barrier; acquire-release on shared (Workgroup) and global
    // (Uniform = storage buffers under the GLSL450 memory model) memory.
    // Kernel: sequentially consistent on local and global memory, as OpenCL's barrier().
    workgroupBarrier();
    return true;
  case OpForm::SubgroupReduce:
    return emitSubgroupReduce(op);
  case OpForm::Shuffle:
    return emitShuffle(op);
  case OpForm::If:
    return emitIf(op);
  case OpForm::For:
    return emitFor(op);
  case OpForm::While:
    return emitWhile(op);
  case OpForm::Call:
    return emitCall(op);
  case OpForm::MatrixLoad:
  case OpForm::MatrixStore:
  case OpForm::MatrixFill:
  case OpForm::MatrixMad:
  case OpForm::MatrixMap:
    return emitMatrix(op);
  case OpForm::Terminator:
    return true;
  default:
    break;
  }
  if (!ir::isScalarForm(op.info().form))
    return fail("op '" + std::string(op.info().name) + "' cannot be lowered to SPIR-V");
  std::vector<Id> args;
  for (const ir::Value *v : op.operands) {
    args.push_back(val(v));
    if (!args.back())
      return false;
  }
  if (op.kind == OpKind::Div || op.kind == OpKind::Rem)
    checkDivision(op, args[0], args[1]);
  Id r = emitScalar(op, args);
  if (!r)
    return false;
  define(op.result(0), r);
  return true;
}

} // namespace tessera::spirv::detail
