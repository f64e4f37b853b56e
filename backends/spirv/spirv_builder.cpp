// ModuleBuilder: SPIR-V words assembled section by section (see spirv_builder.h).
//
// Every section is its own word vector and finish() concatenates them in the spec's order,
// so callers may declare a type or a decoration at any time while emitting a function.
// Must stay free of the kernel IR and of LLVM; misuse (an instruction outside a block, a
// block left unterminated) is a programmer error and asserts.
#include "backends/spirv/spirv_builder.h"

#include <cassert>

namespace tessera::spirv {

namespace {
constexpr uint32_t kMagic = 0x07230203;
constexpr uint32_t kGenerator = 0; // no registered generator id (yet)
} // namespace

ModuleBuilder::ModuleBuilder(Flavour flavour, uint32_t version)
    : flavour_(flavour), version_(version) {
  if (flavour == Flavour::Shader) {
    capability(spv::CapabilityShader);
    return;
  }
  capability(spv::CapabilityKernel);
  capability(spv::CapabilityAddresses);
  capability(spv::CapabilityInt64); // Physical64 pointers are 64-bit integers
}

// ------------------------------------------------------------------------ encoding

void ModuleBuilder::emit(std::vector<uint32_t> &out, spv::Op opcode,
                         std::span<const uint32_t> ops) {
  uint32_t count = static_cast<uint32_t>(ops.size() + 1);
  assert(count <= 0xffff && "instruction too long for a SPIR-V word count");
  out.push_back(count << 16 | static_cast<uint32_t>(opcode));
  out.insert(out.end(), ops.begin(), ops.end());
}

void ModuleBuilder::emitString(std::vector<uint32_t> &out, std::string_view s) {
  // Literal string: UTF-8 bytes, NUL-terminated, padded with NULs to a word, little-endian.
  size_t words = s.size() / 4 + 1;
  size_t start = out.size();
  out.resize(start + words, 0);
  for (size_t i = 0; i < s.size(); ++i)
    out[start + i / 4] |= static_cast<uint32_t>(static_cast<uint8_t>(s[i])) << (8 * (i % 4));
}

// ------------------------------------------------------------------ module records

Id ModuleBuilder::extInstSet(std::string_view name) {
  auto it = extSets_.find(name);
  if (it != extSets_.end())
    return it->second;
  Id id = newId();
  extSets_.emplace(std::string(name), id);
  return id;
}

void ModuleBuilder::name(Id target, std::string_view name) {
  std::vector<uint32_t> ops = {target};
  emitString(ops, name);
  emit(debugNames_, spv::OpName, ops);
}

void ModuleBuilder::decorate(Id target, spv::Decoration d, std::initializer_list<uint32_t> args) {
  std::vector<uint32_t> ops = {target, static_cast<uint32_t>(d)};
  ops.insert(ops.end(), args);
  emit(annotations_, spv::OpDecorate, ops);
}

void ModuleBuilder::memberDecorate(Id structType, uint32_t member, spv::Decoration d,
                                   std::initializer_list<uint32_t> args) {
  std::vector<uint32_t> ops = {structType, member, static_cast<uint32_t>(d)};
  ops.insert(ops.end(), args);
  emit(annotations_, spv::OpMemberDecorate, ops);
}

// -------------------------------------------------------------------------- types

Id ModuleBuilder::typeCooperativeMatrix(Id component, Id scope, Id rows, Id cols, Id use) {
  // The SPIR-V headers of this build predate the extension: its numbers from the registry.
  constexpr auto kOpTypeCooperativeMatrixKHR = static_cast<spv::Op>(4456);
  constexpr auto kCapabilityCooperativeMatrixKHR = static_cast<spv::Capability>(6022);
  capability(kCapabilityCooperativeMatrixKHR);
  extension("SPV_KHR_cooperative_matrix");
  return type(kOpTypeCooperativeMatrixKHR, {component, scope, rows, cols, use});
}

void ModuleBuilder::useVulkanMemoryModel() {
  vulkanMemoryModel_ = true;
  capability(spv::CapabilityVulkanMemoryModel);
  capability(spv::CapabilityVulkanMemoryModelDeviceScope);
}

Id ModuleBuilder::type(spv::Op opcode, std::vector<uint32_t> operands) {
  std::vector<uint32_t> key = operands;
  key.insert(key.begin(), static_cast<uint32_t>(opcode));
  auto it = types_.find(key);
  if (it != types_.end())
    return it->second;
  Id id = newId();
  operands.insert(operands.begin(), id);
  emit(globals_, opcode, operands);
  types_.emplace(std::move(key), id);
  return id;
}

Id ModuleBuilder::typeVoid() { return type(spv::OpTypeVoid, {}); }
Id ModuleBuilder::typeBool() { return type(spv::OpTypeBool, {}); }

Id ModuleBuilder::typeInt(uint32_t width, bool isSigned) {
  assert((width == 8 || width == 16 || width == 32 || width == 64) && "bad integer width");
  if (width == 8)
    capability(spv::CapabilityInt8);
  if (width == 16)
    capability(spv::CapabilityInt16);
  if (width == 64)
    capability(spv::CapabilityInt64);
  Id id = type(spv::OpTypeInt, {width, isSigned ? 1u : 0u});
  widths_[id] = width;
  return id;
}

Id ModuleBuilder::typeFloat(uint32_t width) {
  assert((width == 16 || width == 32 || width == 64) && "bad float width");
  if (width == 16)
    capability(spv::CapabilityFloat16);
  if (width == 64)
    capability(spv::CapabilityFloat64);
  Id id = type(spv::OpTypeFloat, {width});
  widths_[id] = width;
  return id;
}

uint32_t ModuleBuilder::widthOf(Id t) const {
  auto it = widths_.find(t);
  return it == widths_.end() ? 0 : it->second;
}

Id ModuleBuilder::typeVector(Id component, uint32_t count) {
  return type(spv::OpTypeVector, {component, count});
}

Id ModuleBuilder::typeArray(Id element, uint32_t length) {
  Id len = constU32(length);
  return type(spv::OpTypeArray, {element, len});
}

Id ModuleBuilder::typeRuntimeArray(Id element, uint32_t stride) {
  // The stride is a decoration, not an operand: key on both so that two strides (never
  // the case for one element type today) would get two types.
  std::vector<uint32_t> key = {static_cast<uint32_t>(spv::OpTypeRuntimeArray), element, stride};
  auto it = types_.find(key);
  if (it != types_.end())
    return it->second;
  Id id = newId();
  emit(globals_, spv::OpTypeRuntimeArray, std::vector<uint32_t>{id, element});
  decorate(id, spv::DecorationArrayStride, {stride});
  types_.emplace(std::move(key), id);
  return id;
}

Id ModuleBuilder::typeStruct(std::span<const Id> members) {
  Id id = newId();
  std::vector<uint32_t> ops = {id};
  ops.insert(ops.end(), members.begin(), members.end());
  emit(globals_, spv::OpTypeStruct, ops);
  return id;
}

Id ModuleBuilder::typePointer(spv::StorageClass sc, Id pointee) {
  return type(spv::OpTypePointer, {static_cast<uint32_t>(sc), pointee});
}

Id ModuleBuilder::typeFunction(Id result, std::span<const Id> params) {
  std::vector<uint32_t> ops = {result};
  ops.insert(ops.end(), params.begin(), params.end());
  return type(spv::OpTypeFunction, ops);
}

// ---------------------------------------------------------------------- constants

Id ModuleBuilder::constBool(bool v) {
  Id t = typeBool();
  auto key = std::make_pair(t, static_cast<uint64_t>(v));
  auto it = constants_.find(key);
  if (it != constants_.end())
    return it->second;
  Id id = newId();
  emit(globals_, v ? spv::OpConstantTrue : spv::OpConstantFalse, std::vector<uint32_t>{t, id});
  constants_.emplace(key, id);
  return id;
}

Id ModuleBuilder::constant(Id type, uint64_t bits) {
  uint32_t width = widthOf(type);
  assert(width != 0 && "constant() needs an integer or float type made by this builder");
  if (width < 64)
    bits &= (uint64_t{1} << width) - 1;
  auto key = std::make_pair(type, bits);
  auto it = constants_.find(key);
  if (it != constants_.end())
    return it->second;
  Id id = newId();
  std::vector<uint32_t> ops = {type, id, static_cast<uint32_t>(bits)};
  if (width == 64)
    ops.push_back(static_cast<uint32_t>(bits >> 32));
  emit(globals_, spv::OpConstant, ops);
  constants_.emplace(key, id);
  valueTypes_[id] = type;
  return id;
}

Id ModuleBuilder::constComposite(Id type, std::span<const Id> parts) {
  std::vector<uint32_t> key = {type};
  key.insert(key.end(), parts.begin(), parts.end());
  auto it = composites_.find(key);
  if (it != composites_.end())
    return it->second;
  Id id = newId();
  std::vector<uint32_t> ops = {type, id};
  ops.insert(ops.end(), parts.begin(), parts.end());
  emit(globals_, spv::OpConstantComposite, ops);
  composites_.emplace(std::move(key), id);
  return id;
}

Id ModuleBuilder::specConstant(Id type, uint32_t value, uint32_t specId) {
  assert(widthOf(type) == 32 && "only 32-bit specialization constants are supported");
  Id id = newId();
  emit(globals_, spv::OpSpecConstant, std::vector<uint32_t>{type, id, value});
  decorate(id, spv::DecorationSpecId, {specId});
  return id;
}

Id ModuleBuilder::specConstComposite(Id type, std::span<const Id> parts) {
  Id id = newId();
  std::vector<uint32_t> ops = {type, id};
  ops.insert(ops.end(), parts.begin(), parts.end());
  emit(globals_, spv::OpSpecConstantComposite, ops);
  return id;
}

Id ModuleBuilder::specConstantOp(Id type, spv::Op opcode, std::initializer_list<Id> operands) {
  Id id = newId();
  std::vector<uint32_t> ops = {type, id, static_cast<uint32_t>(opcode)};
  ops.insert(ops.end(), operands.begin(), operands.end());
  emit(globals_, spv::OpSpecConstantOp, ops);
  return id;
}

// ------------------------------------------------------------ globals, entry points

Id ModuleBuilder::globalVariable(Id ptrType, spv::StorageClass sc) {
  Id id = newId();
  emit(globals_, spv::OpVariable, std::vector<uint32_t>{ptrType, id, static_cast<uint32_t>(sc)});
  return id;
}

void ModuleBuilder::entryPoint(spv::ExecutionModel model, Id function, std::string_view name,
                               std::span<const Id> interface) {
  std::vector<uint32_t> ops = {static_cast<uint32_t>(model), function};
  emitString(ops, name);
  ops.insert(ops.end(), interface.begin(), interface.end());
  emit(entryPoints_, spv::OpEntryPoint, ops);
}

void ModuleBuilder::executionMode(Id function, spv::ExecutionMode mode,
                                  std::initializer_list<uint32_t> args) {
  std::vector<uint32_t> ops = {function, static_cast<uint32_t>(mode)};
  ops.insert(ops.end(), args);
  emit(executionModes_, spv::OpExecutionMode, ops);
}

// --------------------------------------------------------------- functions, blocks

Id ModuleBuilder::beginFunction(Id resultType, Id functionType, Id id) {
  assert(!blockOpen_ && "the previous function is still open");
  if (id == 0)
    id = newId();
  Function f;
  emit(f.header, spv::OpFunction,
       std::vector<uint32_t>{resultType, id, spv::FunctionControlMaskNone, functionType});
  functions_.push_back(std::move(f));
  startBlock(newId());
  return id;
}

Id ModuleBuilder::functionParameter(Id type) {
  assert(!functions_.empty() && "functionParameter() outside a function");
  Id id = newId();
  emit(functions_.back().header, spv::OpFunctionParameter, std::vector<uint32_t>{type, id});
  valueTypes_[id] = type;
  return id;
}

void ModuleBuilder::endFunction() {
  assert(!blockOpen_ && "a function ends with an unterminated block");
}

void ModuleBuilder::startBlock(Id label) {
  assert(!functions_.empty() && "a block outside a function");
  assert(!blockOpen_ && "the previous block has no terminator");
  functions_.back().blocks.push_back(Block{label, {}, {}});
  blockOpen_ = true;
}

ModuleBuilder::Block &ModuleBuilder::block() {
  assert(blockOpen_ && "an instruction outside a block");
  return functions_.back().blocks.back();
}

Id ModuleBuilder::currentBlock() const {
  assert(blockOpen_ && "no open block");
  return functions_.back().blocks.back().label;
}

Id ModuleBuilder::op(spv::Op opcode, Id resultType, std::span<const uint32_t> operands) {
  bool shift = opcode == spv::OpShiftLeftLogical || opcode == spv::OpShiftRightLogical ||
               opcode == spv::OpShiftRightArithmetic;
  if (flavour_ == Flavour::Kernel && shift && operands.size() == 2) {
    // SPIR-V lets a shift's amount have another width than its base; OpenCL consumers
    // (llvm-spirv, LLVM IR underneath) do not: widen or narrow a scalar amount to match.
    auto t = valueTypes_.find(operands[1]);
    uint32_t want = widthOf(resultType), have = t == valueTypes_.end() ? 0 : widthOf(t->second);
    if (want && have && want != have) {
      Id amount = op(spv::OpUConvert, resultType, {operands[1]});
      return op(opcode, resultType, {operands[0], amount});
    }
  }
  Id id = newId();
  std::vector<uint32_t> ops = {resultType, id};
  ops.insert(ops.end(), operands.begin(), operands.end());
  emit(block().words, opcode, ops);
  valueTypes_[id] = resultType;
  return id;
}

void ModuleBuilder::opVoid(spv::Op opcode, std::initializer_list<uint32_t> operands) {
  emit(block().words, opcode, std::span<const uint32_t>(operands.begin(), operands.size()));
}

Id ModuleBuilder::extInst(Id resultType, Id set, uint32_t inst, std::initializer_list<Id> args) {
  std::vector<uint32_t> ops = {set, inst};
  ops.insert(ops.end(), args);
  return op(spv::OpExtInst, resultType, ops);
}

PhiRef ModuleBuilder::phi(Id type, std::initializer_list<std::pair<Id, Id>> incoming) {
  Block &b = block();
  Phi p{type, newId(), {}};
  valueTypes_[p.id] = type;
  for (auto [value, pred] : incoming) {
    p.incoming.push_back(value);
    p.incoming.push_back(pred);
  }
  b.phis.push_back(std::move(p));
  return PhiRef{functions_.back().blocks.size() - 1, b.phis.size() - 1, b.phis.back().id};
}

void ModuleBuilder::addIncoming(const PhiRef &p, Id value, Id predecessor) {
  Phi &phi = functions_.back().blocks.at(p.block).phis.at(p.index);
  phi.incoming.push_back(value);
  phi.incoming.push_back(predecessor);
}

// -------------------------------------------------------------------- terminators

void ModuleBuilder::branch(Id target) {
  emit(block().words, spv::OpBranch, std::vector<uint32_t>{target});
  blockOpen_ = false;
}

void ModuleBuilder::branchConditional(Id cond, Id trueLabel, Id falseLabel) {
  emit(block().words, spv::OpBranchConditional, std::vector<uint32_t>{cond, trueLabel, falseLabel});
  blockOpen_ = false;
}

void ModuleBuilder::returnVoid() {
  emit(block().words, spv::OpReturn, {});
  blockOpen_ = false;
}

IfBlocks ModuleBuilder::beginIf(Id cond, bool withElse) {
  IfBlocks b;
  b.merge = newId();
  Id thenLabel = newId();
  b.elseLabel = withElse ? newId() : b.merge;
  b.elseEnd = currentBlock(); // without an else, the header is the merge's other predecessor
  opVoid(spv::OpSelectionMerge, {b.merge, spv::SelectionControlMaskNone});
  branchConditional(cond, thenLabel, b.elseLabel);
  startBlock(thenLabel);
  return b;
}

void ModuleBuilder::beginElse(IfBlocks &b) {
  assert(b.elseLabel != b.merge && "beginElse() on an if without an else");
  b.thenEnd = currentBlock();
  branch(b.merge);
  startBlock(b.elseLabel);
}

void ModuleBuilder::endIf(IfBlocks &b) {
  bool inElse = b.thenEnd != 0;
  assert((inElse || b.elseLabel == b.merge) && "endIf() before beginElse() on an if/else");
  (inElse ? b.elseEnd : b.thenEnd) = currentBlock();
  branch(b.merge);
  startBlock(b.merge);
}

LoopBlocks ModuleBuilder::beginLoop() {
  LoopBlocks l;
  l.preheader = currentBlock();
  l.header = newId();
  l.cont = newId();
  l.merge = newId();
  branch(l.header);
  startBlock(l.header);
  return l;
}

void ModuleBuilder::loopHeaderEnd(LoopBlocks &l, Id cond) {
  Id body = newId();
  opVoid(spv::OpLoopMerge, {l.merge, l.cont, spv::LoopControlMaskNone});
  if (cond)
    branchConditional(cond, body, l.merge);
  else
    branch(body);
  startBlock(body);
}

void ModuleBuilder::breakUnless(LoopBlocks &l, Id cond) {
  Id next = newId();
  branchConditional(cond, next, l.merge);
  startBlock(next);
}

void ModuleBuilder::beginContinue(LoopBlocks &l) {
  branch(l.cont);
  startBlock(l.cont);
}

void ModuleBuilder::endLoop(LoopBlocks &l) {
  branch(l.header);
  startBlock(l.merge);
}

// ------------------------------------------------------------------------- finish

std::vector<uint32_t> ModuleBuilder::finish() const {
  assert(!blockOpen_ && "finish() with an open block");
  std::vector<uint32_t> out = {kMagic, version_, kGenerator, nextId_, 0};
  for (spv::Capability c : capabilities_)
    emit(out, spv::OpCapability, std::vector<uint32_t>{static_cast<uint32_t>(c)});
  for (const std::string &e : extensions_) {
    std::vector<uint32_t> ops;
    emitString(ops, e);
    emit(out, spv::OpExtension, ops);
  }
  for (const auto &[setName, id] : extSets_) {
    std::vector<uint32_t> ops = {id};
    emitString(ops, setName);
    emit(out, spv::OpExtInstImport, ops);
  }
  bool shader = flavour_ == Flavour::Shader;
  emit(out, spv::OpMemoryModel,
       std::vector<uint32_t>{shader ? spv::AddressingModelLogical : spv::AddressingModelPhysical64,
                             !shader              ? spv::MemoryModelOpenCL
                             : vulkanMemoryModel_ ? spv::MemoryModelVulkan
                                                  : spv::MemoryModelGLSL450});
  for (const auto *section :
       {&entryPoints_, &executionModes_, &debugNames_, &annotations_, &globals_})
    out.insert(out.end(), section->begin(), section->end());
  for (const Function &f : functions_) {
    out.insert(out.end(), f.header.begin(), f.header.end());
    for (const Block &b : f.blocks) {
      emit(out, spv::OpLabel, std::vector<uint32_t>{b.label});
      for (const Phi &p : b.phis) {
        std::vector<uint32_t> ops = {p.type, p.id};
        ops.insert(ops.end(), p.incoming.begin(), p.incoming.end());
        emit(out, spv::OpPhi, ops);
      }
      out.insert(out.end(), b.words.begin(), b.words.end());
    }
    emit(out, spv::OpFunctionEnd, {});
  }
  return out;
}

} // namespace tessera::spirv
