// `tessera compile FILE --target TARGET [--arch ARCH] [-o OUT] [--dump-dir DIR]`: kernel IR ->
// the target's artefact, with every intermediate stage written to --dump-dir. One path for
// every target of the registry (backends/target.h): the targets, their aliases, archs and
// stages all come from it. Needs no device: PTX and code objects are produced without a GPU
// or vendor runtime.
#include "backends/stage_files.h"
#include "backends/target.h"
#include "ir/text/parser.h"
#include "tessera/artefact.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/registry_session.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <unistd.h>

namespace tessera::cli {
namespace {

std::string joined(const std::vector<std::string> &v, const char *sep = ", ") {
  std::string s;
  for (const std::string &x : v)
    s += (s.empty() ? "" : sep) + x;
  return s;
}

// `text` with every line after the first indented by `indent` spaces.
std::string indented(const std::string &text, size_t indent) {
  std::string s;
  for (char c : text) {
    s += c;
    if (c == '\n')
      s += std::string(indent, ' ');
  }
  return s;
}

struct Request {
  std::string file, target, arch, out, dumpDir;
  uint32_t subgroup = 0; // 0: not given
  std::string workgroup; // --workgroup-size X[,Y,Z]; empty: not given
  bool strict = false;   // --profile strict
  FILE *info = stdout;   // the summary: stderr when the artefact itself goes to stdout
  // --driver: plugins whose targets join the registry.
  std::vector<std::string> drivers;
};

// "" writes nothing (no -o for a binary target), "-" writes to stdout.
bool writeFile(const std::string &path, std::string_view data) {
  if (path.empty())
    return true;
  if (path == "-")
    return std::fwrite(data.data(), 1, data.size(), stdout) == data.size() &&
           std::fflush(stdout) == 0;
  std::ofstream f(path, std::ios::binary);
  f.write(data.data(), static_cast<std::streamsize>(data.size()));
  return static_cast<bool>(f);
}

// How the summary names the destination.
std::string shownPath(const std::string &out) {
  return out.empty() ? "(not written: -o FILE writes it)" : out == "-" ? "stdout" : out;
}

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Where the artefact goes: -o's value; without -o, stdout for text (ptx) and nowhere for
// binary artefacts, so that a compile never drops files into the working directory unasked.
std::string outPath(const Request &rq, const Target &t) {
  if (!rq.out.empty())
    return rq.out;
  return t.textOutput() ? "-" : "";
}

/// Checks the target / arch / subgroup combination; returns a usage error message or "".
std::string checkOptions(const Request &rq, const Target &t) {
  std::vector<std::string> archs = t.archs();
  std::string name(t.name());
  if (archs.empty() && !rq.arch.empty())
    return "--arch does not apply to --target " + name;
  if (!t.subgroupSizeOption() && rq.subgroup)
    return "--subgroup-size does not apply to --target " + name + " (its subgroups are the " +
           "device's)";
  if (!t.workgroupSizeOption() && !rq.workgroup.empty())
    return "--workgroup-size does not apply to --target " + name;
  if (archs.empty())
    return "";
  if (rq.arch.empty())
    return "--target " + name + " needs --arch (accepted: " + joined(archs) + ")";
  if (std::find(archs.begin(), archs.end(), rq.arch) == archs.end())
    return "unknown --arch '" + rq.arch + "' for --target " + name +
           " (accepted: " + joined(archs) + ")";
  return "";
}

// "X[,Y[,Z]]" (missing dimensions 1), each in [1, 65536]; false for anything else.
bool parseWorkgroup(const std::string &text, std::array<uint32_t, 3> *out) {
  *out = {1, 1, 1};
  size_t at = 0;
  for (int d = 0; d < 3; ++d) {
    size_t end = text.find(',', at);
    std::string part = text.substr(at, end == std::string::npos ? end : end - at);
    if (part.empty() || part.size() > 5 || part.find_first_not_of("0123456789") != part.npos)
      return false;
    unsigned long v = std::stoul(part);
    if (v < 1 || v > 65536)
      return false;
    (*out)[d] = static_cast<uint32_t>(v);
    if (end == std::string::npos)
      return true;
    at = end + 1;
  }
  return false; // a fourth dimension
}

int compile(const Request &rq, const Target &t, const ir::Module &m) {
  TargetOptions opts;
  if (!rq.workgroup.empty() && !parseWorkgroup(rq.workgroup, &opts.workgroupSize))
    return usageError("compile", "--workgroup-size takes X[,Y[,Z]], each in [1, 65536], got '" +
                                     rq.workgroup + "'");
  opts.arch = rq.arch;
  opts.subgroupSize = rq.subgroup;
  // The default fault mode where the target has it (docs/ir.md, "Faults").
  opts.bounds = t.boundsModeSupported(TSR_BOUNDS_ROBUST) ? TSR_BOUNDS_ROBUST : TSR_BOUNDS_UNCHECKED;
  opts.keepStages = !rq.dumpDir.empty();
  opts.strict = rq.strict;
  std::string err;
  auto t0 = std::chrono::steady_clock::now();
  std::optional<Artefact> a = t.compile(m, opts, &err);
  double ms = msSince(t0);
  if (!a) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 1;
  }
  // An OUT ending in .tsrx gets the container (tessera/artefact.h: kernel metadata and every
  // image, e.g. cubin and PTX) instead of the bare artefact.
  std::string out = outPath(rq, t);
  std::string container;
  std::string_view bytes = t.rawOutput(*a);
  if (out.ends_with(".tsrx")) {
    container = encodeArtefact(*a);
    bytes = container;
  }
  if (!writeFile(out, bytes)) {
    std::fprintf(stderr, "tessera compile: cannot write '%s'\n", shownPath(out).c_str());
    return 1;
  }
  if (!rq.dumpDir.empty() && !writeArtefactStages(rq.dumpDir, a->stages, &err)) {
    std::fprintf(stderr, "tessera compile: %s\n", err.c_str());
    return 1;
  }
  std::fprintf(rq.info, "%s: %zu kernel(s), %s in %.1f ms -> %s\n", rq.file.c_str(),
               a->kernels.size(), t.summary(*a, opts).c_str(), ms, shownPath(out).c_str());
  for (const ArtefactKernel &k : a->kernels) {
    std::string push =
        k.pushBytes ? ", " + std::to_string(k.pushBytes) + " bytes push constants" : "";
    std::string subgroup = k.subgroupSize ? ", subgroup " + std::to_string(k.subgroupSize) : "";
    std::fprintf(rq.info, "  @%s: %zu params%s, %llu bytes shared memory%s\n", k.name.c_str(),
                 k.params.size(), push.c_str(), static_cast<unsigned long long>(k.sharedBytes),
                 subgroup.c_str());
  }
  return 0;
}

// What `tessera compile --help` says before the options: what it does, and every target of
// the registry with its old names, archs and dump stages.
std::string compileDescription() {
  const TargetRegistry &targets = defaultTargets();
  std::string s =
      "Compiles every kernel of FILE for TARGET and writes the artefact to OUT; `-o -`\n"
      "prints it (binary targets only to a pipe, never to a terminal) and the summary goes\n"
      "to stderr. Without -o nothing is written to disk: text artefacts (cuda's PTX) are\n"
      "printed to stdout, the binary targets only compile, validate and print their summary.\n\n"
      "targets (" +
      targets.names() + "):\n";
  for (const Target *t : targets.all()) {
    std::vector<std::string> aliases;
    for (std::string_view a : t->aliases())
      aliases.emplace_back(a);
    std::string name(t->name());
    s += "  " + name + std::string(name.size() < 8 ? 8 - name.size() : 1, ' ') +
         indented(t->description(), 10) + "\n";
    if (!aliases.empty())
      s += "          old names: " + joined(aliases) + "\n";
    if (!t->archs().empty())
      s += "          --arch: " + joined(t->archs()) + "\n";
    s += "          --dump-dir: " + joined(t->stageFiles(), " ") + "\n";
  }
  s += "\n"
       "  -o OUT.tsrx writes the container instead: kernel metadata and every image (cuda:\n"
       "  cubin and PTX), as the compile cache keeps it";
  return s;
}

constexpr const char *kCompileUsage =
    "usage: tessera compile FILE --target TARGET [--arch ARCH] [-o OUT] [--dump-dir DIR]\n"
    "                       [--subgroup-size N] [--workgroup-size X[,Y,Z]]\n"
    "                       [--profile default|strict] [--driver PATH.so]...";

// The command line of `tessera compile`, stored in `rq` as it parses.
std::unique_ptr<CLI::App> compileApp(Request &rq) {
  auto app = makeApp("compile", kCompileUsage, compileDescription());
  app->add_option("FILE", rq.file, "the IR file");
  app->add_option("--target", rq.target, "the target (required; see targets above)")
      ->type_name("TARGET");
  app->add_option("--arch", rq.arch,
                  "architecture, for the targets that list them (required there)")
      ->type_name("ARCH");
  app->add_option("-o", rq.out, "write the artefact to OUT ('-': stdout; OUT.tsrx: the container)")
      ->type_name("OUT");
  app->add_option("--dump-dir", rq.dumpDir, "write each stage (the files listed above)")
      ->type_name("DIR");
  addChecked(*app, "--subgroup-size",
             "cpu: the subgroup width the work-item loops are written for\n"
             "(default 16); GPU subgroups are the warp (32) or the wavefront\n"
             "(64 on gfx90a / gfx942, 32 on gfx1100)",
             "--subgroup-size must be a power of two in [1, 64]", powerOfTwo(rq.subgroup, 64))
      ->type_name("N");
  app->add_option("--workgroup-size", rq.workgroup,
                  "opencl: the source for launches of this workgroup size only\n"
                  "(reqd_work_group_size; the index tests decided for it); without it\n"
                  "the generic source, which the driver builds per launch size")
      ->type_name("X[,Y,Z]");
  addProfileOption(*app, rq.strict);
  addRepeatable(*app, "--driver", rq.drivers,
                "also load this plugin; its target can be named by --target\n"
                "(TESSERA_DRIVER_PATH plugins are loaded too)")
      ->type_name("PATH.so");
  return app;
}

} // namespace

std::string compileHelp() {
  Request rq;
  return compileApp(rq)->help();
}

int cmdCompile(int argc, char **argv) {
  Request rq;
  auto app = compileApp(rq);
  if (auto rc = parseArgs(*app, argc, argv, 2))
    return *rc;
  if (rq.file.empty())
    return usageError("compile", "needs a FILE");
  // Plugins bring targets: load them only when there are some (a session opens every driver).
  RegistrySession session;
  std::string err;
  if ((!rq.drivers.empty() || std::getenv("TESSERA_DRIVER_PATH")) &&
      !session.open(&err, rq.drivers)) {
    std::fprintf(stderr, "tessera compile: %s\n", err.c_str());
    return 1;
  }
  const TargetRegistry &targets = defaultTargets();
  if (rq.target.empty())
    return usageError("compile", "needs --target (targets: " + targets.names() + ")");
  bool alias = false;
  const Target *t = targets.find(rq.target, &alias);
  if (!t) {
    std::fprintf(stderr, "tessera compile: %s\n", targets.unknownTarget(rq.target).c_str());
    return 1;
  }
  if (alias)
    std::fprintf(stderr, "tessera compile: note: '%s' is an old name of target '%s'\n",
                 rq.target.c_str(), std::string(t->name()).c_str());
  if (std::string msg = checkOptions(rq, *t); !msg.empty())
    return usageError("compile", msg);
  bool toStdout = rq.out == "-" || (rq.out.empty() && t->textOutput());
  if (toStdout && !t->textOutput() && isatty(STDOUT_FILENO))
    return usageError("compile", "refusing to write a binary artefact to a terminal (-o FILE, "
                                 "or pipe stdout)");
  if (toStdout)
    rq.info = stderr; // stdout carries the artefact
  ir::ParseResult r = ir::parseFile(rq.file);
  for (const auto &d : r.diags)
    std::fprintf(stderr, "%s\n", d.str().c_str());
  if (!r.ok())
    return 1;
  return compile(rq, *t, *r.module);
}

} // namespace tessera::cli
