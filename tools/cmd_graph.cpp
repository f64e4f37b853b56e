// `tessera graph verify|print|eval|lower`: front end to the graph IR (docs/graph_ir.md) --
// its parser and verifier, its printer, its reference evaluator on seeded inputs, and its
// lowering to kernel IR (the plan and the module; --check runs the plan on the kernel-IR
// interpreter against the evaluator).
// Diagnostics go to stderr as FILE:LINE:COL: error: ...; never exits from library code.
#include "ir/graph/eval.h"
#include "ir/graph/lower.h"
#include "ir/graph/plan_interp.h"
#include "ir/graph/text.h"
#include "tools/cli.h"
#include "tools/commands.h"

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace tessera::cli {
namespace {

constexpr const char *kVerifyHelp =
    "Parse and verify each graph file. Prints 'FILE: ok' per valid file; diagnostics\n"
    "(FILE:LINE:COL: error: ...) on stderr. Exit 0 if all are valid, 1 otherwise.";
constexpr const char *kPrintHelp =
    "Print the canonical text of FILE: every result type written; print(parse(print(x)))\n"
    "== print(x), floats bit-exact.";
constexpr const char *kEvalHelp =
    "Run FILE on the reference evaluator (straight loops in double, every node rounded\n"
    "to its dtype) with seeded inputs: floats uniform in [-2, 2), integers in [-8, 8),\n"
    "bool 0/1 (parameter i uses seed SEED + i). Prints each input and output.";

constexpr const char *kLowerHelp =
    "Fuse and lower FILE to kernel IR for a device described by the options (docs/graph_ir.md,\n"
    "\"Lowering\"). Prints the plan as comments -- buffers, each launch with its fused ops,\n"
    "grid, workgroup and arguments, the outputs -- followed by the module, so the output is a\n"
    "valid .tir file. --check also runs the plan on the kernel-IR reference interpreter with\n"
    "seeded inputs and compares every output with the graph evaluator (max abs/rel error per\n"
    "output; exit 1 if an integer output differs or a float one is off by more than 1e-3).";

void printGraphHelp() {
  std::printf("usage: tessera graph <verify|print|eval|lower> ...\n\n"
              "  tessera graph verify FILE...\n      %s\n\n"
              "  tessera graph print FILE [-o OUT]\n      %s\n\n"
              "  tessera graph eval FILE [--seed N] [--limit N]\n      %s\n\n"
              "  tessera graph lower FILE [options] [-o OUT]\n      %s\n\n"
              "Run 'tessera graph SUBCOMMAND --help' for its options.\n",
              "parse and verify graph IR files (.tg)", "print the canonical text of a graph",
              "evaluate a graph on seeded inputs with the reference evaluator",
              "fuse and lower a graph to kernel IR (plan + module)");
}

bool load(const std::string &path, graph::Graph *g) {
  std::string err;
  if (graph::parseGraphFile(path, g, &err))
    return true;
  std::fprintf(stderr, "%s\n", err.c_str());
  return false;
}

int verifyCmd(int argc, char **argv) {
  std::vector<std::string> files;
  auto app = makeApp("graph verify", "usage: tessera graph verify FILE...", kVerifyHelp);
  app->add_option("FILE", files, "graph IR files to check");
  if (auto rc = parseArgs(*app, argc, argv, 3))
    return *rc;
  if (files.empty())
    return usageError("graph verify", "needs at least one FILE");
  int rc = 0;
  for (const std::string &path : files) {
    graph::Graph g;
    if (!load(path, &g)) {
      rc = 1;
      continue;
    }
    std::printf("%s: ok\n", path.c_str());
  }
  return rc;
}

int printCmd(int argc, char **argv) {
  std::string file, outPath;
  auto app = makeApp("graph print", "usage: tessera graph print FILE [-o OUT]", kPrintHelp);
  app->add_option("FILE", file, "the graph IR file");
  app->add_option("-o", outPath, "write the text to OUT instead of stdout")->type_name("OUT");
  if (auto rc = parseArgs(*app, argc, argv, 3))
    return *rc;
  if (file.empty())
    return usageError("graph print", "needs a FILE");
  graph::Graph g;
  if (!load(file, &g))
    return 1;
  return writeOutput("graph print", graph::printGraph(g), outPath);
}

// One tensor: a header line, then its values (up to `limit`), 8 per line.
void printTensor(const std::string &label, const graph::HostTensor &t, uint64_t limit) {
  std::printf("%s: %s\n", label.c_str(), graph::typeToString(t.type).c_str());
  size_t n = std::min<size_t>(t.data.size(), limit);
  for (size_t i = 0; i < n; ++i) {
    double v = t.data[i];
    char buf[40];
    if (!graph::isFloat(t.type.dtype))
      std::snprintf(buf, sizeof buf, "%.0f", v);
    else if (std::isnan(v) || std::isinf(v))
      std::snprintf(buf, sizeof buf, "%s", graph::formatFloat(v).c_str());
    else // enough digits to read the value back exactly in its dtype
      std::snprintf(buf, sizeof buf, "%.*g", t.type.dtype == graph::DType::F64 ? 17 : 9, v);
    std::printf("%s%s", i % 8 == 0 ? "  " : " ", buf);
    if (i % 8 == 7 || i + 1 == n)
      std::printf("\n");
  }
  if (n < t.data.size())
    std::printf("  ... (%zu more; --limit to show them)\n", t.data.size() - n);
}

int evalCmd(int argc, char **argv) {
  std::string file;
  uint64_t seed = 1, limit = 64;
  auto app =
      makeApp("graph eval", "usage: tessera graph eval FILE [--seed N] [--limit N]", kEvalHelp);
  app->add_option("FILE", file, "the graph IR file");
  addChecked(*app, "--seed", "seed of the inputs (default 1)", "--seed needs a whole number",
             unsignedIn(seed))
      ->type_name("N");
  addChecked(*app, "--limit", "print at most N values per tensor (default 64)",
             "--limit needs a whole number", unsignedIn(limit))
      ->type_name("N");
  if (auto rc = parseArgs(*app, argc, argv, 3))
    return *rc;
  if (file.empty())
    return usageError("graph eval", "needs a FILE");
  graph::Graph g;
  if (!load(file, &g))
    return 1;
  std::vector<graph::HostTensor> inputs, outputs;
  for (size_t i = 0; i < g.params.size(); ++i) {
    if (g.params[i].type.numel() > graph::kEvalMaxElements) {
      std::fprintf(stderr, "%s: error: parameter %%%s has more than %lld elements\n", file.c_str(),
                   g.params[i].name.c_str(), static_cast<long long>(graph::kEvalMaxElements));
      return 1;
    }
    inputs.push_back(graph::randomTensor(g.params[i].type, seed + i));
  }
  std::string err;
  if (!graph::evaluate(g, inputs, &outputs, &err)) {
    std::fprintf(stderr, "%s: error: %s\n", file.c_str(), err.c_str());
    return 1;
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    printTensor("input %" + g.params[i].name, inputs[i], limit);
  for (size_t i = 0; i < outputs.size(); ++i) {
    int v = g.outputs[i];
    const std::string &name = g.isParam(v) ? g.params[static_cast<size_t>(v)].name : g.node(v).name;
    printTensor("output " + std::to_string(i) + " %" + (name.empty() ? std::to_string(v) : name),
                outputs[i], limit);
  }
  return 0;
}

const char *roleName(graph::PlanBuffer::Role r) {
  switch (r) {
  case graph::PlanBuffer::Role::Input:
    return "input";
  case graph::PlanBuffer::Role::Temp:
    return "temp";
  case graph::PlanBuffer::Role::Output:
    return "output";
  }
  return "?";
}

std::string ints(const std::vector<int64_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string planText(const graph::Graph &g, const graph::Plan &p) {
  std::string s = "// plan of graph @" + g.name + ": " + std::to_string(p.launches.size()) +
                  " launches, " + std::to_string(p.buffers.size()) + " buffers\n";
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    const graph::PlanBuffer &b = p.buffers[i];
    s += "// buffer " + std::to_string(i) + ": " + roleName(b.role) + " " +
         graph::dtypeName(b.dtype) + " x " + std::to_string(b.elements);
    if (b.role == graph::PlanBuffer::Role::Input)
      s += " (%" + g.params[static_cast<size_t>(b.param)].name + ")";
    s += "\n";
  }
  for (size_t i = 0; i < p.launches.size(); ++i) {
    const graph::PlanLaunch &l = p.launches[i];
    const graph::PlanKernelInfo &k = p.kernels[i];
    s += "// launch @" + l.kernel + " (" + k.kind + ":";
    for (const std::string &op : k.ops)
      s += " " + op;
    s += ") grid(" + std::to_string(l.grid[0]) + ", " + std::to_string(l.grid[1]) + ", " +
         std::to_string(l.grid[2]) + ") workgroup(" + std::to_string(l.workgroup[0]) + ", " +
         std::to_string(l.workgroup[1]) + ", " + std::to_string(l.workgroup[2]) + ")\n//   args:";
    for (const graph::PlanArg &a : l.args) {
      if (a.kind == graph::PlanArg::Kind::Buffer)
        s += " b" + std::to_string(a.buffer);
      else if (a.kind == graph::PlanArg::Kind::I32 || a.kind == graph::PlanArg::Kind::I64)
        s += " " + std::to_string(a.i);
      else
        s += " " + graph::formatFloat(a.f);
    }
    s += "\n";
  }
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    const graph::PlanOutput &o = p.outputs[i];
    s += "// output " + std::to_string(i) + ": buffer " + std::to_string(o.buffer) + " offset " +
         std::to_string(o.offset) + " " + graph::dtypeName(o.dtype) + " shape " + ints(o.shape) +
         " strides " + ints(o.strides) + "\n";
  }
  return s + p.module;
}

int lowerCmd(int argc, char **argv) {
  std::string file, outPath, backend = graph::ScheduleCaps().backend;
  uint64_t subgroup = 16, maxWg = 256, seed = 1;
  bool noMatrix = false, check = false;
  auto app = makeApp("graph lower",
                     "usage: tessera graph lower FILE [--backend B] [--subgroup-size N] "
                     "[--max-workgroup-size N] [--no-matrix-ops] [--check [--seed N]] [-o OUT]",
                     kLowerHelp);
  app->add_option("FILE", file, "the graph IR file");
  app->add_option("--backend", backend, "the target's backend name (default cpu)")->type_name("B");
  addChecked(*app, "--subgroup-size", "subgroup size kernels are built for (default 16)",
             "--subgroup-size needs a whole number", unsignedIn(subgroup))
      ->type_name("N");
  addChecked(*app, "--max-workgroup-size", "largest workgroup (default 256)",
             "--max-workgroup-size needs a whole number", unsignedIn(maxWg))
      ->type_name("N");
  app->add_flag("--no-matrix-ops", noMatrix, "GEMMs as plain SIMT kernels (no matrix_* ops)");
  app->add_flag("--check", check, "run the plan on the interpreter against the evaluator");
  addChecked(*app, "--seed", "seed of the --check inputs (default 1)",
             "--seed needs a whole number", unsignedIn(seed))
      ->type_name("N");
  app->add_option("-o", outPath, "write the plan and module to OUT instead of stdout")
      ->type_name("OUT");
  if (auto rc = parseArgs(*app, argc, argv, 3))
    return *rc;
  if (file.empty())
    return usageError("graph lower", "needs a FILE");
  if (subgroup == 0 || subgroup > 1024 || maxWg == 0 || maxWg > 1024)
    return usageError("graph lower", "--subgroup-size and --max-workgroup-size must be 1..1024");
  graph::Graph g;
  if (!load(file, &g))
    return 1;
  graph::ScheduleCaps caps;
  caps.backend = backend;
  caps.subgroupSize = static_cast<uint32_t>(subgroup);
  caps.maxWorkgroupSize = static_cast<uint32_t>(maxWg);
  caps.matrixOps = !noMatrix;
  graph::Plan plan;
  std::string err;
  if (!graph::lower(g, caps, &plan, &err)) {
    std::fprintf(stderr, "%s: error: %s\n", file.c_str(), err.c_str());
    return 1;
  }
  if (int rc = writeOutput("graph lower", planText(g, plan), outPath))
    return rc;
  if (!check)
    return 0;
  std::vector<graph::HostTensor> inputs, want, got;
  for (size_t i = 0; i < g.params.size(); ++i)
    inputs.push_back(graph::randomTensor(g.params[i].type, seed + i));
  graph::PlanInterpOptions io;
  io.subgroupSize = caps.subgroupSize;
  if (!graph::evaluate(g, inputs, &want, &err) ||
      !graph::runPlanOnInterpreter(plan, g, inputs, &got, &err, io)) {
    std::fprintf(stderr, "%s: error: %s\n", file.c_str(), err.c_str());
    return 1;
  }
  int rc = 0;
  for (size_t k = 0; k < want.size(); ++k) {
    double maxAbs = 0, maxRel = 0;
    bool mismatch = false;
    for (size_t i = 0; i < want[k].data.size(); ++i) {
      double a = got[k].data[i], b = want[k].data[i];
      if ((std::isnan(a) && std::isnan(b)) || a == b)
        continue;
      double d = std::fabs(a - b);
      if (!std::isfinite(d) || !graph::isFloat(want[k].type.dtype))
        mismatch = true;
      maxAbs = std::max(maxAbs, d);
      maxRel = std::max(maxRel, d / std::max(1.0, std::fabs(b)));
    }
    mismatch = mismatch || maxRel > 1e-3;
    std::fprintf(stderr, "check output %zu: max abs error %.3g, max rel error %.3g: %s\n", k,
                 maxAbs, maxRel, mismatch ? "MISMATCH" : "ok");
    rc |= mismatch ? 1 : 0;
  }
  return rc;
}

} // namespace

int cmdGraph(int argc, char **argv) {
  std::string_view sub = argc > 2 ? argv[2] : "";
  if (sub.empty() || sub == "--help" || sub == "-h") {
    printGraphHelp();
    return sub.empty() ? kExitUsage : 0;
  }
  if (sub == "verify")
    return verifyCmd(argc, argv);
  if (sub == "print")
    return printCmd(argc, argv);
  if (sub == "eval")
    return evalCmd(argc, argv);
  if (sub == "lower")
    return lowerCmd(argc, argv);
  return usageError("graph", "unknown subcommand '" + std::string(sub) + "'");
}

} // namespace tessera::cli
