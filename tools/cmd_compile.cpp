// `tessera compile FILE --target cpu [-o OUT] [--dump-dir DIR]`: kernel IR -> target artefact,
// with every intermediate stage written to --dump-dir. Needs no device.
#include "backends/cpu/codegen/cpu_codegen.h"
#include "ir/text/parser.h"
#include "tessera/program.h"
#include "tools/cli.h"
#include "tools/commands.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

namespace tessera::cli {
namespace {

constexpr const char *kCompileHelp = R"(usage: tessera compile FILE --target TARGET [-o OUT] [--dump-dir DIR] [--subgroup-size N]

Compiles every kernel of FILE for TARGET and writes the artefact to OUT (default: FILE's
name with the target's extension, in the current directory).

targets:
  cpu       x86-64 object for this host (-march=native), loaded by the CPU driver's JIT

options:
  --dump-dir DIR       write each stage: 0-kir.tir, 1-llvm.ll, 2-llvm.opt.ll, 3-obj.o
  --subgroup-size N    CPU subgroup width the work-item loops are written for (default 16)
)";

bool writeFile(const std::string &path, const void *data, size_t size) {
  std::ofstream f(path, std::ios::binary);
  f.write(static_cast<const char *>(data), static_cast<std::streamsize>(size));
  return static_cast<bool>(f);
}

} // namespace

int cmdCompile(int argc, char **argv) {
  Args args(argc, argv, 2);
  std::string file, target, out, dumpDir;
  uint32_t subgroup = 16;
  bool missing = false;
  while (!args.empty()) {
    if (isHelp(args.peek())) {
      std::fputs(kCompileHelp, stdout);
      return 0;
    }
    if (auto v = args.option("--target", missing)) {
      target = *v;
      continue;
    }
    if (auto v = args.option("-o", missing)) {
      out = *v;
      continue;
    }
    if (auto v = args.option("--dump-dir", missing)) {
      dumpDir = *v;
      continue;
    }
    if (auto v = args.option("--subgroup-size", missing)) {
      auto n = parseUnsigned(*v);
      if (!n || *n == 0 || *n > 64 || (*n & (*n - 1)))
        return usageError("compile", "--subgroup-size must be a power of two in [1, 64]");
      subgroup = static_cast<uint32_t>(*n);
      continue;
    }
    if (missing)
      break;
    std::string a = args.next();
    if (a.size() > 1 && a[0] == '-')
      return usageError("compile", "unknown option '" + a + "'");
    if (!file.empty())
      return usageError("compile", "more than one FILE given");
    file = a;
  }
  if (missing)
    return usageError("compile", "an option is missing its value");
  if (file.empty())
    return usageError("compile", "needs a FILE");
  if (target.empty())
    return usageError("compile", "needs --target (targets: cpu)");
  if (target != "cpu") {
    std::fprintf(stderr, "tessera compile: target '%s' is not available in this build (targets: cpu)\n",
                 target.c_str());
    return 1;
  }
  ir::ParseResult r = ir::parseFile(file);
  for (const auto &d : r.diags)
    std::fprintf(stderr, "%s\n", d.str().c_str());
  if (!r.ok())
    return 1;

  cpu::CpuCompileOptions opts;
  opts.subgroupSize = subgroup;
  std::string err;
  auto t0 = std::chrono::steady_clock::now();
  auto cm = cpu::compileKernelModule(*r.module, opts, &err);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!cm) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 1;
  }
  if (out.empty())
    out = std::filesystem::path(file).stem().string() + ".o";
  const auto &obj = cm->objectBytes();
  if (!writeFile(out, obj.data(), obj.size())) {
    std::fprintf(stderr, "tessera compile: cannot write '%s'\n", out.c_str());
    return 1;
  }
  if (!dumpDir.empty() && !cm->writeStages(dumpDir, &err)) {
    std::fprintf(stderr, "tessera compile: %s\n", err.c_str());
    return 1;
  }
  std::printf("%s: %zu kernel(s), %zu bytes of x86-64 object in %.1f ms -> %s\n", file.c_str(),
              cm->kernels().size(), obj.size(), ms, out.c_str());
  for (const auto &k : cm->kernels())
    std::printf("  @%s: %zu params, %llu bytes shared memory, subgroup %u\n", k.name.c_str(),
                k.params.size(), static_cast<unsigned long long>(k.sharedBytes), k.subgroupSize);
  return 0;
}

} // namespace tessera::cli
