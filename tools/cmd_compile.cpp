// `tessera compile FILE --target cpu|spirv-vulkan|ptx|hsaco [--arch ARCH] [-o OUT] [--dump-dir
// DIR]`: kernel IR -> target artefact, with every intermediate stage written to --dump-dir. Needs
// no device: PTX and code objects are produced without a GPU or vendor runtime.
#include "backends/cpu/codegen/cpu_codegen.h"
#include "backends/cuda/codegen/cuda_codegen.h"
#include "backends/rocm/codegen/rocm_codegen.h"
#include "backends/vulkan/codegen/vulkan_codegen.h"
#include "ir/text/parser.h"
#include "tessera/artefact.h"
#include "tools/cli.h"
#include "tools/commands.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <unistd.h>

namespace tessera::cli {
namespace {

std::string joined(const std::vector<std::string> &v) {
  std::string s;
  for (const std::string &x : v)
    s += (s.empty() ? "" : ", ") + x;
  return s;
}

std::string compileHelp() {
  return "usage: tessera compile FILE --target TARGET [--arch ARCH] [-o OUT] [--dump-dir DIR]\n"
         "                       [--subgroup-size N] [--profile default|strict]\n\n"
         "Compiles every kernel of FILE for TARGET and writes the artefact to OUT; `-o -`\n"
         "prints it (binary targets only to a pipe, never to a terminal) and the summary goes\n"
         "to stderr. Without -o nothing is written to disk: ptx (text) is printed to stdout,\n"
         "the binary targets only compile, validate and print their summary.\n\n"
         "targets:\n"
         "  cpu       x86-64 object for this host (-march=native), loaded by the CPU driver's JIT\n"
         "  spirv-vulkan  (or spirv) Vulkan SPIR-V (.spv, Shader flavour, validated for Vulkan\n"
         "            1.2) for a device with lavapipe's features; at run time Program compiles\n"
         "            for the real device's features\n"
         "  ptx       NVIDIA PTX (.ptx); with ptxas installed also a cubin, in --dump-dir\n"
         "            --arch: " +
         joined(cuda::supportedArchs()) +
         "\n"
         "  hsaco     AMD code object v4 (.hsaco), linked with ld.lld\n"
         "            --arch: " +
         joined(rocm::supportedArchs()) +
         "\n\n"
         "  -o OUT.tsrx for a GPU target writes the container instead: kernel metadata and every\n"
         "  image (ptx: cubin and PTX), as the compile cache keeps it\n\n"
         "options:\n"
         "  --arch ARCH          GPU architecture (required for ptx and hsaco)\n"
         "  --dump-dir DIR       write each stage:\n"
         "                         cpu:   0-kir.tir 1-llvm.ll 2-llvm.opt.ll 3-obj.o\n"
         "                         spirv-vulkan: 0-kir.tir 1-spirv.spv 2-spirv.dis.txt\n"
         "                         ptx:   0-kir.tir 1-llvm.ll 2-llvm.opt.ll 3-ptx.ptx "
         "[4-cubin.cubin]\n"
         "                         hsaco: 0-kir.tir 1-llvm.ll 2-llvm.linked.ll 3-llvm.opt.ll "
         "4-obj.o\n"
         "                                5-hsaco.hsaco\n"
         "  --subgroup-size N    CPU subgroup width the work-item loops are written for (default\n"
         "                       16); GPU subgroups are the warp (32) or the wavefront (64 on\n"
         "                       gfx90a / gfx942, 32 on gfx1100)\n"
         "  --profile strict     the strict profile (docs/ir.md, \"Strict profile\"): every\n"
         "                       transcendental through the shared IR decompositions, no\n"
         "                       contraction, correctly rounded div and sqrt, subnormals kept:\n"
         "                       results bitwise identical on every backend (default: default)\n";
}

struct Request {
  std::string file, target, arch, out, dumpDir;
  uint32_t subgroup = 0; // 0: not given
  bool strict = false;   // --profile strict
  FILE *info = stdout;   // the summary: stderr when the artefact itself goes to stdout
};

// "" writes nothing (no -o for a binary target), "-" writes to stdout.
bool writeFile(const std::string &path, const void *data, size_t size) {
  if (path.empty())
    return true;
  if (path == "-")
    return std::fwrite(data, 1, size, stdout) == size && std::fflush(stdout) == 0;
  std::ofstream f(path, std::ios::binary);
  f.write(static_cast<const char *>(data), static_cast<std::streamsize>(size));
  return static_cast<bool>(f);
}

// How the summary names the destination.
std::string shownPath(const std::string &out) {
  return out.empty() ? "(not written: -o FILE writes it)" : out == "-" ? "stdout" : out;
}

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

/// Writes the artefact and the stage dumps; prints the error and returns false on failure.
template <typename Compiled>
bool writeOutputs(const Request &rq, const Compiled &cm, const std::string &out, const void *data,
                  size_t size) {
  if (!writeFile(out, data, size)) {
    std::fprintf(stderr, "tessera compile: cannot write '%s'\n", shownPath(out).c_str());
    return false;
  }
  std::string err;
  if (!rq.dumpDir.empty() && !cm.writeStages(rq.dumpDir, &err)) {
    std::fprintf(stderr, "tessera compile: %s\n", err.c_str());
    return false;
  }
  return true;
}

/// As writeOutputs; an OUT ending in .tsrx gets the container (tessera/artefact.h: kernel
/// metadata and every image, e.g. cubin and PTX) instead of the bare artefact.
template <typename Compiled>
bool writeGpuOutputs(const Request &rq, const Compiled &cm, const std::string &out,
                     const void *data, size_t size, const GpuArtefact &artefact) {
  if (!out.ends_with(".tsrx"))
    return writeOutputs(rq, cm, out, data, size);
  std::string container = encodeArtefact(artefact);
  return writeOutputs(rq, cm, out, container.data(), container.size());
}

template <typename Kernels> void printKernels(FILE *info, const Kernels &kernels) {
  for (const auto &k : kernels)
    std::fprintf(info, "  @%s: %zu params, %llu bytes shared memory, subgroup %u\n", k.name.c_str(),
                 k.params.size(), static_cast<unsigned long long>(k.sharedBytes), k.subgroupSize);
}

// Where the artefact goes: -o's value; without -o, stdout for text (ptx) and nowhere for
// binary artefacts, so that a compile never drops files into the working directory unasked.
std::string outPath(const Request &rq, bool text) {
  if (!rq.out.empty())
    return rq.out;
  return text ? "-" : "";
}

int compileCpu(const Request &rq, const ir::Module &m) {
  cpu::CpuCompileOptions opts;
  opts.strict = rq.strict;
  opts.subgroupSize = rq.subgroup ? rq.subgroup : 16;
  std::string err;
  auto t0 = std::chrono::steady_clock::now();
  auto cm = cpu::compileKernelModule(m, opts, &err);
  double ms = msSince(t0);
  if (!cm) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 1;
  }
  std::string out = outPath(rq, false);
  const auto &obj = cm->objectBytes();
  if (!writeOutputs(rq, *cm, out, obj.data(), obj.size()))
    return 1;
  std::fprintf(rq.info, "%s: %zu kernel(s), %zu bytes of x86-64 object in %.1f ms -> %s\n",
               rq.file.c_str(), cm->kernels().size(), obj.size(), ms, shownPath(out).c_str());
  printKernels(rq.info, cm->kernels());
  return 0;
}

int compileSpirv(const Request &rq, const ir::Module &m) {
  vulkan::VulkanCompileOptions opts; // the default capabilities: lavapipe's
  opts.strict = rq.strict;
  std::string err;
  auto t0 = std::chrono::steady_clock::now();
  auto cm = vulkan::compileKernelModule(m, opts, &err);
  double ms = msSince(t0);
  if (!cm) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 1;
  }
  std::string out = outPath(rq, false);
  const auto &words = cm->words();
  if (!writeGpuOutputs(rq, *cm, out, words.data(), words.size() * 4, artefactOf(*cm, 0)))
    return 1;
  std::fprintf(rq.info, "%s: %zu kernel(s), %zu words of SPIR-V (validated) in %.1f ms -> %s\n",
               rq.file.c_str(), cm->kernels().size(), words.size(), ms, shownPath(out).c_str());
  for (const auto &k : cm->kernels())
    std::fprintf(rq.info, "  @%s: %zu params, %u bytes push constants, %llu bytes shared memory\n",
                 k.name.c_str(), k.params.size(), k.pushConstantBytes,
                 static_cast<unsigned long long>(k.sharedBytes));
  return 0;
}

int compilePtx(const Request &rq, const ir::Module &m) {
  cuda::CudaCompileOptions opts;
  opts.strict = rq.strict;
  opts.arch = rq.arch;
  std::string err;
  auto t0 = std::chrono::steady_clock::now();
  auto cm = cuda::compileKernelModule(m, opts, &err);
  double ms = msSince(t0);
  if (!cm) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 1;
  }
  std::string out = outPath(rq, true);
  if (!writeGpuOutputs(rq, *cm, out, cm->ptx().data(), cm->ptx().size(), artefactOf(*cm)))
    return 1;
  std::string cubin = cm->cubin().empty() ? "no cubin (ptxas not found)"
                                          : std::to_string(cm->cubin().size()) + " bytes of cubin";
  std::fprintf(rq.info, "%s: %zu kernel(s), %zu bytes of PTX for %s, %s, in %.1f ms -> %s\n",
               rq.file.c_str(), cm->kernels().size(), cm->ptx().size(), rq.arch.c_str(),
               cubin.c_str(), ms, shownPath(out).c_str());
  printKernels(rq.info, cm->kernels());
  return 0;
}

int compileHsaco(const Request &rq, const ir::Module &m) {
  rocm::RocmCompileOptions opts;
  opts.strict = rq.strict;
  opts.arch = rq.arch;
  std::string err;
  auto t0 = std::chrono::steady_clock::now();
  auto cm = rocm::compileKernelModule(m, opts, &err);
  double ms = msSince(t0);
  if (!cm) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 1;
  }
  std::string out = outPath(rq, false);
  if (!writeGpuOutputs(rq, *cm, out, cm->hsaco().data(), cm->hsaco().size(), artefactOf(*cm)))
    return 1;
  std::fprintf(rq.info, "%s: %zu kernel(s), %zu bytes of code object v4 for %s in %.1f ms -> %s\n",
               rq.file.c_str(), cm->kernels().size(), cm->hsaco().size(), rq.arch.c_str(), ms,
               shownPath(out).c_str());
  printKernels(rq.info, cm->kernels());
  return 0;
}

/// Checks the target / arch / subgroup combination; returns a usage error message or "".
std::string checkTarget(const Request &rq) {
  bool gpu = rq.target == "ptx" || rq.target == "hsaco";
  if (!gpu && !rq.arch.empty())
    return "--arch applies to --target ptx and hsaco";
  if ((gpu || rq.target == "spirv-vulkan") && rq.subgroup)
    return "--subgroup-size applies to --target cpu (GPU subgroups are the device's)";
  if (!gpu)
    return "";
  const std::vector<std::string> &archs =
      rq.target == "ptx" ? cuda::supportedArchs() : rocm::supportedArchs();
  if (rq.arch.empty())
    return "--target " + rq.target + " needs --arch (accepted: " + joined(archs) + ")";
  if (std::find(archs.begin(), archs.end(), rq.arch) == archs.end())
    return "unknown --arch '" + rq.arch + "' for --target " + rq.target +
           " (accepted: " + joined(archs) + ")";
  return "";
}

} // namespace

int cmdCompile(int argc, char **argv) {
  Args args(argc, argv, 2);
  Request rq;
  bool missing = false;
  while (!args.empty()) {
    if (isHelp(args.peek())) {
      std::fputs(compileHelp().c_str(), stdout);
      return 0;
    }
    if (auto v = args.option("--target", missing)) {
      rq.target = *v;
      continue;
    }
    if (auto v = args.option("--arch", missing)) {
      rq.arch = *v;
      continue;
    }
    if (auto v = args.option("-o", missing)) {
      rq.out = *v;
      continue;
    }
    if (auto v = args.option("--dump-dir", missing)) {
      rq.dumpDir = *v;
      continue;
    }
    if (auto v = args.option("--subgroup-size", missing)) {
      auto n = parseUnsigned(*v);
      if (!n || *n == 0 || *n > 64 || (*n & (*n - 1)))
        return usageError("compile", "--subgroup-size must be a power of two in [1, 64]");
      rq.subgroup = static_cast<uint32_t>(*n);
      continue;
    }
    if (auto v = args.option("--profile", missing)) {
      if (*v != "default" && *v != "strict")
        return usageError("compile", "--profile must be 'default' or 'strict'");
      rq.strict = *v == "strict";
      continue;
    }
    if (missing)
      break;
    std::string a = args.next();
    if (a.size() > 1 && a[0] == '-')
      return usageError("compile", "unknown option '" + a + "'");
    if (!rq.file.empty())
      return usageError("compile", "more than one FILE given");
    rq.file = a;
  }
  if (missing)
    return usageError("compile", "an option is missing its value");
  if (rq.file.empty())
    return usageError("compile", "needs a FILE");
  if (rq.target.empty())
    return usageError("compile", "needs --target (targets: cpu, spirv-vulkan, ptx, hsaco)");
  if (rq.target == "spirv")
    rq.target = "spirv-vulkan"; // the Shader flavour; "spirv-kernel" is Level Zero's (later)
  if (rq.target != "cpu" && rq.target != "spirv-vulkan" && rq.target != "ptx" &&
      rq.target != "hsaco") {
    std::fprintf(stderr,
                 "tessera compile: target '%s' is not available in this build (targets: "
                 "cpu, spirv-vulkan, ptx, hsaco)\n",
                 rq.target.c_str());
    return 1;
  }
  if (std::string msg = checkTarget(rq); !msg.empty())
    return usageError("compile", msg);
  bool toStdout = rq.out == "-" || (rq.out.empty() && rq.target == "ptx");
  if (toStdout && rq.target != "ptx" && isatty(STDOUT_FILENO))
    return usageError("compile", "refusing to write a binary artefact to a terminal (-o FILE, "
                                 "or pipe stdout)");
  if (toStdout)
    rq.info = stderr; // stdout carries the artefact
  ir::ParseResult r = ir::parseFile(rq.file);
  for (const auto &d : r.diags)
    std::fprintf(stderr, "%s\n", d.str().c_str());
  if (!r.ok())
    return 1;
  if (rq.target == "ptx")
    return compilePtx(rq, *r.module);
  if (rq.target == "hsaco")
    return compileHsaco(rq, *r.module);
  if (rq.target == "spirv-vulkan")
    return compileSpirv(rq, *r.module);
  return compileCpu(rq, *r.module);
}

} // namespace tessera::cli
