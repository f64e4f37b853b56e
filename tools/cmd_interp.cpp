// `tessera interp`: runs kernels on the fp64 reference interpreter by their launch spec and
// prints a digest of every output buffer (optionally dumping the raw values).
#include "ir/interp/interpreter.h"
#include "ir/interp/launch.h"
#include "ir/interp/numerics.h"
#include "ir/text/parser.h"
#include "tessera/launch_memory.h"
#include "tools/cli.h"
#include "tools/commands.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace tessera::cli {
namespace {

constexpr const char *kInterpUsage =
    "usage: tessera interp FILE [--kernel NAME] [--subgroup-size N] [--max-steps N] [--dump DIR]";
constexpr const char *kInterpDescription =
    R"(Runs every kernel of FILE that has a launch spec (or only --kernel NAME) on the fp64
reference interpreter and prints, per output buffer, count, min, max, sum, NaN count and a
hash of the bytes.)";

bool dumpBuffers(const std::string &dir, const ir::Function &k, const ir::LaunchData &data) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  size_t bi = 0;
  for (const ir::Value *p : k.params()) {
    if (p->type.kind != ir::Type::Kind::Buffer)
      continue;
    const ir::HostBuffer &b = data.buffers[bi++];
    if (p->type.access == ir::Access::ReadOnly)
      continue;
    std::string base = dir + "/" + k.name + "." + p->name;
    std::ofstream bin(base + ".bin", std::ios::binary);
    bin.write(reinterpret_cast<const char *>(b.bytes.data()),
              static_cast<std::streamsize>(b.bytes.size()));
    std::ofstream txt(base + ".txt");
    for (int64_t i = 0; i < b.size(); ++i) {
      ir::Literal v = b.get(i);
      char buf[64];
      if (ir::isFloatScalar(b.elem))
        std::snprintf(buf, sizeof buf, "%.17g\n", v.f);
      else if (b.elem == ir::Scalar::I1) // 0 or 1 (sign-extending its one bit gave -1)
        std::snprintf(buf, sizeof buf, "%d\n", v.i & 1 ? 1 : 0);
      else
        std::snprintf(buf, sizeof buf, "%lld\n", // signed, as the digest's min and max
                      static_cast<long long>(ir::numerics::signExtend(v.i, b.elem)));
      txt << buf;
    }
    if (!bin || !txt) {
      std::fprintf(stderr, "tessera interp: cannot write '%s'\n", base.c_str());
      return false;
    }
    std::printf("  wrote %s.bin, %s.txt\n", base.c_str(), base.c_str());
  }
  return true;
}

} // namespace

int cmdInterp(int argc, char **argv) {
  std::string file, kernelName, dumpDir, maxSteps;
  ir::InterpOptions opts;
  auto app = makeApp("interp", kInterpUsage, kInterpDescription);
  app->add_option("FILE", file, "the IR file");
  app->add_option("--kernel", kernelName, "run only this kernel (it must have a launch spec)")
      ->type_name("NAME");
  addChecked(*app, "--subgroup-size", "subgroup size the interpreter emulates (default 32)",
             "--subgroup-size must be a power of two in [1, 128]",
             powerOfTwo(opts.subgroupSize, 128))
      ->type_name("N");
  app->add_option("--max-steps", maxSteps,
                  "stop a kernel with an error after N executed op-lanes (default\n4000000000): "
                  "the interpreter's guard against kernels that never end")
      ->type_name("N");
  app->add_option("--dump", dumpDir,
                  "write each output buffer to DIR/<kernel>.<param>.bin (raw, native\nstorage "
                  "format) and .txt (one value per line)")
      ->type_name("DIR");
  if (auto rc = parseArgs(*app, argc, argv, 2))
    return *rc;
  if (app->count("--max-steps")) {
    auto n = parseUnsigned(maxSteps);
    if (!n || *n == 0)
      return usageError("interp", "--max-steps must be a positive integer");
    opts.maxSteps = *n;
  }
  if (file.empty())
    return usageError("interp", "needs a FILE");

  ir::ParseResult r = ir::parseFile(file);
  for (const auto &d : r.diags)
    std::fprintf(stderr, "%s\n", d.str().c_str());
  if (!r.ok())
    return 1;

  int ran = 0, rc = 0;
  for (const auto &f : r.module->functions) {
    if (!f->isKernel || (!kernelName.empty() && f->name != kernelName))
      continue;
    if (!f->launch) {
      if (!kernelName.empty()) {
        std::fprintf(stderr, "tessera interp: kernel @%s has no launch spec\n", f->name.c_str());
        return 1;
      }
      continue;
    }
    ir::LaunchData data;
    std::string err;
    // The interpreter keeps the buffers and a copy of what it reads (adversarial round 8: an
    // 8 GiB buffer was filled for 20 s, or ended in std::bad_alloc under a memory limit).
    if (!checkHostLaunchFits(*f, 2, &err) || !ir::makeLaunchData(*f, data, err)) {
      std::fprintf(stderr, "tessera interp: @%s: %s\n", f->name.c_str(), err.c_str());
      rc = 1;
      continue;
    }
    auto t0 = std::chrono::steady_clock::now();
    ir::InterpResult res = ir::interpret(*r.module, *f, data.dims, data.args, opts);
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ++ran;
    if (!res.ok) {
      std::fprintf(stderr, "%s\n", res.error.c_str());
      rc = 1;
      continue;
    }
    std::printf("@%s (%.1f ms)\n%s", f->name.c_str(), ms, ir::digestOutputs(*f, data).c_str());
    if (!dumpDir.empty() && !dumpBuffers(dumpDir, *f, data))
      rc = 1;
  }
  if (ran == 0 && rc == 0) { // (a launch that failed before running has said why)
    std::fprintf(stderr, "tessera interp: %s\n",
                 kernelName.empty() ? "no kernel with a launch spec in the file"
                                    : ("no kernel named @" + kernelName).c_str());
    return 1;
  }
  return rc;
}

} // namespace tessera::cli
