// `tessera graph verify|print|eval`: front end to the graph IR (docs/graph_ir.md) -- its
// parser and verifier, its printer, and its reference evaluator on seeded inputs.
// Diagnostics go to stderr as FILE:LINE:COL: error: ...; never exits from library code.
#include "ir/graph/eval.h"
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

void printGraphHelp() {
  std::printf("usage: tessera graph <verify|print|eval> ...\n\n"
              "  tessera graph verify FILE...\n      %s\n\n"
              "  tessera graph print FILE [-o OUT]\n      %s\n\n"
              "  tessera graph eval FILE [--seed N] [--limit N]\n      %s\n\n"
              "Run 'tessera graph SUBCOMMAND --help' for its options.\n",
              "parse and verify graph IR files (.tg)", "print the canonical text of a graph",
              "evaluate a graph on seeded inputs with the reference evaluator");
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
  return usageError("graph", "unknown subcommand '" + std::string(sub) + "'");
}

} // namespace tessera::cli
