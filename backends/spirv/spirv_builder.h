// A small, target-neutral SPIR-V module builder: ids, deduplicated types and constants,
// capabilities and extensions recorded when used, the module's sections in the order the
// spec (2.4 "Logical Layout of a Module") requires, entry points, decorations, and
// structured control flow (OpSelectionMerge / OpLoopMerge with header, continue and merge
// blocks) with phis whose incoming edges may be added later (loop back-edges).
//
// Two flavours share it: Shader (Vulkan: Logical addressing, GLSL450 memory model) and
// Kernel (OpenCL / Level Zero: Physical64 addressing, OpenCL memory model). It never knows
// about the kernel IR, a device or a runtime, and never links LLVM. Output is deterministic:
// ids are handed out in request order and sets are emitted sorted.
#pragma once

#include <spirv/unified1/spirv.hpp>

#include <cstdint>
#include <initializer_list>
#include <map>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera::spirv {

using Id = uint32_t;

enum class Flavour : uint8_t { Shader, Kernel };

/// A phi whose incoming edges may be completed after its block (loop headers).
struct PhiRef {
  size_t block = 0; // index into the current function's blocks
  size_t index = 0; // index into that block's phis
  Id id = 0;
};

/// The blocks of one structured selection (see beginIf).
struct IfBlocks {
  Id merge = 0;
  Id elseLabel = 0; // the false target: the else block, or `merge` without one
  Id thenEnd = 0;   // the block that ended the then-region (the phi's predecessor)
  Id elseEnd = 0;   // the block that ended the else-region (or the header without one)
};

/// The blocks of one structured loop (see beginLoop).
struct LoopBlocks {
  Id preheader = 0; // the block that branched into the header
  Id header = 0;
  Id cont = 0; // the continue target: its only job is the back-edge to the header
  Id merge = 0;
};

class ModuleBuilder {
public:
  /// `version` is the SPIR-V version word (0x00010500 = 1.5).
  explicit ModuleBuilder(Flavour flavour, uint32_t version = 0x00010500);

  Flavour flavour() const { return flavour_; }
  Id newId() { return nextId_++; }

  // --- module-level records -----------------------------------------------------------
  void capability(spv::Capability c) { capabilities_.insert(c); }
  bool hasCapability(spv::Capability c) const { return capabilities_.count(c) != 0; }
  const std::set<spv::Capability> &capabilities() const { return capabilities_; }
  void extension(std::string_view name) { extensions_.insert(std::string(name)); }
  /// Shader flavour: OpMemoryModel Vulkan (with its capability) instead of GLSL450, as
  /// SPV_KHR_cooperative_matrix requires. Device-scope operations then need
  /// VulkanMemoryModelDeviceScope, recorded here too.
  void useVulkanMemoryModel();
  /// OpExtInstImport of `name` ("GLSL.std.450", "OpenCL.std"), imported once.
  Id extInstSet(std::string_view name);
  /// OpName (debug names make the disassembly readable; they change no semantics).
  void name(Id target, std::string_view name);
  void decorate(Id target, spv::Decoration d, std::initializer_list<uint32_t> args = {});
  void memberDecorate(Id structType, uint32_t member, spv::Decoration d,
                      std::initializer_list<uint32_t> args = {});

  // --- types: deduplicated; a width that needs a capability records it ---------------
  Id typeVoid();
  Id typeBool();
  Id typeInt(uint32_t width, bool isSigned = false);
  Id typeFloat(uint32_t width);
  Id typeVector(Id component, uint32_t count);
  /// An array of `length` elements (the length becomes a 32-bit integer constant).
  Id typeArray(Id element, uint32_t length);
  /// A runtime array decorated with ArrayStride `stride` (deduplicated by both).
  Id typeRuntimeArray(Id element, uint32_t stride);
  /// Never deduplicated: a struct usually carries its own Block / Offset decorations.
  Id typeStruct(std::span<const Id> members);
  Id typePointer(spv::StorageClass sc, Id pointee);
  Id typeFunction(Id result, std::span<const Id> params = {});
  /// OpTypeCooperativeMatrixKHR (SPV_KHR_cooperative_matrix): `scope`, `rows`, `cols` and
  /// `use` are ids of 32-bit integer constants. Records the extension and its capability.
  Id typeCooperativeMatrix(Id component, Id scope, Id rows, Id cols, Id use);
  /// Width of an integer or float type made here (0 for others).
  uint32_t widthOf(Id type) const;

  // --- constants: deduplicated by type and bits ---------------------------------------
  Id constBool(bool v);
  /// An integer or float constant of `type` holding `bits` (truncated to the width).
  Id constant(Id type, uint64_t bits);
  Id constU32(uint32_t v) { return constant(typeInt(32), v); }
  Id constComposite(Id type, std::span<const Id> parts);
  /// OpSpecConstant of an integer `type` decorated with SpecId `specId` (never shared).
  Id specConstant(Id type, uint32_t value, uint32_t specId);
  Id specConstComposite(Id type, std::span<const Id> parts);
  /// OpSpecConstantOp: `opcode` (IMul, UDiv ...) over constants, folded at specialization.
  Id specConstantOp(Id type, spv::Op opcode, std::initializer_list<Id> operands);

  // --- globals and entry points ---------------------------------------------------------
  /// A module-scope OpVariable of pointer type `ptrType` in storage class `sc`.
  Id globalVariable(Id ptrType, spv::StorageClass sc);
  /// `interface`: since SPIR-V 1.4 every global variable the entry point references.
  void entryPoint(spv::ExecutionModel model, Id function, std::string_view name,
                  std::span<const Id> interface);
  void executionMode(Id function, spv::ExecutionMode mode,
                     std::initializer_list<uint32_t> args = {});

  // --- functions and blocks -------------------------------------------------------------
  /// Emits OpFunction and opens its first block. Returns the function's id.
  Id beginFunction(Id resultType, Id functionType, Id id = 0);
  /// OpFunctionParameter of the open function (call before its first instruction).
  Id functionParameter(Id type);
  void endFunction();
  /// Opens a new block labelled `label` (the previous one must be terminated).
  void startBlock(Id label);
  Id currentBlock() const;
  bool blockOpen() const { return blockOpen_; }

  /// An instruction with a result: returns the result id.
  Id op(spv::Op opcode, Id resultType, std::span<const uint32_t> operands);
  Id op(spv::Op opcode, Id resultType, std::initializer_list<uint32_t> operands) {
    return op(opcode, resultType, std::span<const uint32_t>(operands.begin(), operands.size()));
  }
  /// An instruction without a result (OpStore, OpControlBarrier ...).
  void opVoid(spv::Op opcode, std::initializer_list<uint32_t> operands);
  /// OpExtInst `inst` of the imported set `set`.
  Id extInst(Id resultType, Id set, uint32_t inst, std::initializer_list<Id> args);

  /// A phi at the top of the current block; more incoming edges with addIncoming.
  PhiRef phi(Id type, std::initializer_list<std::pair<Id, Id>> incoming = {});
  void addIncoming(const PhiRef &p, Id value, Id predecessor);

  // --- terminators and structured control flow ----------------------------------------
  void branch(Id target);
  void branchConditional(Id cond, Id trueLabel, Id falseLabel);
  void returnVoid();

  /// Ends the current block as a selection header (OpSelectionMerge + conditional branch)
  /// and opens the then-block. Without an else the false edge goes to the merge block.
  IfBlocks beginIf(Id cond, bool withElse);
  /// Closes the then-region (branch to merge) and opens the else-block.
  void beginElse(IfBlocks &b);
  /// Closes the open region (branch to merge) and opens the merge block.
  void endIf(IfBlocks &b);

  /// Branches into a new loop header and opens it (emit the header's phis next).
  LoopBlocks beginLoop();
  /// Ends the header: OpLoopMerge, then a conditional exit (`cond` false leaves the loop)
  /// or, with cond == 0, a plain branch; opens the first block of the loop body.
  void loopHeaderEnd(LoopBlocks &l, Id cond);
  /// A conditional break in the body: continues in a new block when `cond` is true,
  /// otherwise leaves for the merge block (no OpSelectionMerge: a break edge).
  void breakUnless(LoopBlocks &l, Id cond);
  /// Closes the body (branch to the continue target) and opens the continue block.
  void beginContinue(LoopBlocks &l);
  /// Closes the continue block with the back-edge and opens the merge block.
  void endLoop(LoopBlocks &l);

  /// The finished module: header, then every section in spec order.
  std::vector<uint32_t> finish() const;

private:
  struct Phi {
    Id type = 0, id = 0;
    std::vector<uint32_t> incoming; // (value, predecessor) pairs
  };
  struct Block {
    Id label = 0;
    std::vector<Phi> phis; // emitted first: OpPhi must lead its block
    std::vector<uint32_t> words;
  };
  struct Function {
    std::vector<uint32_t> header; // OpFunction (and parameters)
    std::vector<Block> blocks;
  };

  static void emit(std::vector<uint32_t> &out, spv::Op opcode, std::span<const uint32_t> ops);
  static void emitString(std::vector<uint32_t> &out, std::string_view s);
  Id type(spv::Op opcode, std::vector<uint32_t> operands);
  Block &block();

  Flavour flavour_;
  uint32_t version_;
  Id nextId_ = 1;
  std::set<spv::Capability> capabilities_;
  std::set<std::string> extensions_;
  std::map<std::string, Id, std::less<>> extSets_;
  std::vector<uint32_t> entryPoints_, executionModes_, debugNames_, annotations_, globals_;
  std::map<std::vector<uint32_t>, Id> types_;       // (opcode, operands) -> id
  std::map<std::pair<Id, uint64_t>, Id> constants_; // (type, bits) -> id
  std::map<std::vector<uint32_t>, Id> composites_;  // (type, parts) -> id
  std::map<Id, uint32_t> widths_;                   // int/float type -> width
  std::map<Id, Id> valueTypes_;                     // value (constant, result ...) -> type
  std::vector<Function> functions_;
  bool blockOpen_ = false;
  bool vulkanMemoryModel_ = false;
};

} // namespace tessera::spirv
