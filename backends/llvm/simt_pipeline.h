// The one compile pipeline of the SIMT GPU targets (CUDA, ROCm), as named stages:
//
//   kir -> llvm -> [llvm.linked] -> llvm.opt -> <machine code> -> [<final tool's image>]
//
// kernel IR lowered in SIMT mode with the target's hooks, verified, the device library
// linked for the math the module calls, everything but the kernels internalised, optimised,
// machine code from LLVM's backend, then the final tool (ptxas, ld.lld) as a subprocess.
// A target is a plain description (SimtTarget: triple, arch table, device library, final
// tool, each with where it is looked for) plus what the caller's options override per
// compile (SimtJob), so that the two targets differ only in data and in their hooks.
//
// Internal: only .cpp files of backends/llvm and of a GPU codegen include this header (it
// pulls in LLVM). It must never name a target: the descriptions live in the backends.
#pragma once

#include "backends/llvm/lowering_impl.h"
#include "ir/transforms/math_decompose.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::llvmgen {

/// One architecture of a SIMT target: a row of its arch table.
struct SimtArch {
  const char *name;                           // --arch and LLVM's CPU: "sm_80", "gfx90a"
  const char *features;                       // LLVM target features: "+ptx70", "+wavefrontsize64"
  uint32_t subgroupSize;                      // warp / wavefront lanes
  uint32_t isaVersion = 0;                    // the device library's ISA version number; 0 if none
  std::vector<std::string> libraryFiles = {}; // the device library's files for this arch,
                                              // linked when present (before the common ones)
};

/// Where a file is looked for. "{root}" in a candidate stands for the first variable of
/// rootEnv that is set and not empty, else defaultRoot; the first candidate that exists
/// wins (for a tool, a bare name is looked up on PATH).
struct SimtSearch {
  std::vector<const char *> rootEnv;
  std::string defaultRoot;
  std::vector<std::string> candidates;
};

/// A module flag: `key` = `value`.
struct SimtModuleFlag {
  const char *key;
  uint32_t value;
};

/// A stage whose bytes come from LLVM's backend or a tool: its name and file extension.
struct SimtStageName {
  const char *name; // "ptx", "obj", "cubin", "hsaco"
  const char *ext;  // "ptx", "o", "cubin", "hsaco"
};

/// The device library (libdevice; ocml + ockl): when it is needed, where it is, what to
/// link, and what follows linking.
struct SimtDeviceLibrary {
  const char *prefix;                // the module needs the library if it calls a function named so
  const char *notFound;              // the message when no folder holds the library
  SimtSearch folders;                // the first that holds files[0] holds the library
  std::vector<std::string> files;    // linked in order
  std::vector<std::string> controls; // linked after them (and the arch's files) when present
  std::vector<SimtModuleFlag> flags; // set (Override) at the link step, needed or not
  /// What the library needs once linked (may be null): definitions it leaves to the
  /// compiler, markers to drop. `dir` is the library's folder, for messages.
  llvm::Error (*afterLink)(llvm::Module &m, const SimtArch &arch, const std::string &dir);
};

/// The final tool: machine code in, the loadable image out. Its arguments use "{in}" and
/// "{out}" (the files, see runTool) and "{arch}" (the arch's name, inside any argument).
struct SimtTool {
  SimtStageName stage;
  std::vector<std::string> args;
  std::string inName, outName; // the files' fixed names, so outputs never vary
  SimtSearch search;
  const char *notFound; // null: the tool is optional (no image without it); else the error
};

/// A SIMT target: everything the pipeline needs to know that is not per compile.
struct SimtTarget {
  const char *vendor;       // "CUDA": in messages
  const char *loweringName; // "cuda": SimtConfig::targetName, in the lowering's messages
  const char *codegenName;  // "NVPTX": "<name> code generation failed: ..."
  const char *triple;
  std::vector<SimtArch> archs;
  void (*initialize)(); // registers LLVM's target (idempotent, thread-safe)
  std::unique_ptr<SimtTargetHooks> (*makeHooks)(llvm::Module &m, const SimtArch &arch);
  std::vector<SimtModuleFlag> moduleFlags; // set (Error) before lowering
  bool tagFunctions;        // every defined function gets target-cpu / target-features attributes
  uint64_t maxStaticShared; // bytes of static shared memory per workgroup; 0: the IR's limit
  SimtDeviceLibrary library;
  bool dumpLinked; // a "llvm.linked" stage between linking and optimising
  SimtStageName machine;
  bool machineIsObject; // an object file (else assembly text)
  SimtTool tool;
};

/// One compile: the arch, and what the caller's options set instead of the searches.
struct SimtJob {
  const SimtArch *arch = nullptr;
  unsigned optLevel = 3;
  std::string libraryFile; // set: the one library file (CUDA's libdevicePath)
  std::string libraryDir;  // set: the library's folder, not searched (ROCm's deviceLibDir)
  std::string toolPath;    // set: the final tool, not searched
  bool runTool = true;     // false: no final stage
  /// The target's native math (its nativeMath(options)): the rest is decomposed on a copy.
  ir::MathDecomposeOptions math;
  /// The strict profile (docs/ir.md): no fused mul-add, subnormals kept, and no math op left
  /// for the device library (math must arrive decomposed: nativeMath is empty under strict).
  bool strict = false;
  /// Matrix ops through the target's matrix instructions (SimtConfig::matrixInstructions).
  bool matrixInstructions = true;
};

/// The stages of one compile, in order, and its kernels.
struct SimtOutput {
  struct Stage {
    std::string name, ext, bytes;
  };
  std::vector<Stage> stages;
  std::vector<LoweredKernel> kernels;

  /// The bytes of a stage; empty for a stage that did not run or is unknown.
  const std::string &stage(std::string_view name) const;
  /// Writes every stage that ran into `dir` as "<index>-<name>.<ext>".
  bool writeStages(const std::string &dir, std::string *error) const;
};

/// The stage names a target can produce, in order.
std::vector<std::string> simtStageNames(const SimtTarget &t);
/// The accepted arch names, in table order.
std::vector<std::string> simtArchNames(const SimtTarget &t);
/// The row of `name`, or null.
const SimtArch *findSimtArch(const SimtTarget &t, std::string_view name);
/// The row of `name` if it is one and `optLevel` is 0..3; else an error naming the choices.
llvm::Expected<const SimtArch *> selectSimtArch(const SimtTarget &t, const std::string &name,
                                                unsigned optLevel);
/// "path:size", or "none": enough to tell two installations apart in a cache key.
std::string fileIdentity(const std::string &path);
/// The library's folder by its search; empty if none holds it.
std::string findSimtLibraryDir(const SimtTarget &t);
/// The final tool by its search; empty if none is found.
std::string findSimtTool(const SimtTarget &t);

/// Runs the pipeline. On failure `out` holds the stages that ran.
llvm::Error compileSimt(const SimtTarget &t, const ir::Module &m, const SimtJob &job,
                        SimtOutput &out);

} // namespace tessera::llvmgen
