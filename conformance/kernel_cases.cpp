// Kernel-level conformance cases (see kernel_cases.h). Compiles each file once per device
// through runtime/ (memory-only cache), never through a backend's codegen directly.
#include "conformance/kernel_cases.h"

#include "conformance/strict.h"

#include "ir/interp/interpreter.h"
#include "ir/text/parser.h"
#include "tessera/device_run.h"
#include "tessera/output_check.h"
#include "tessera/program.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

namespace tessera::conform {
namespace {

std::string stemOf(const std::string &path) { return std::filesystem::path(path).stem().string(); }

bool selected(const std::string &id, const std::vector<std::string> &filters) {
  if (filters.empty())
    return true;
  return std::any_of(filters.begin(), filters.end(),
                     [&](const std::string &g) { return globMatch(g, id); });
}

std::string shortNumber(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", x);
  return buf;
}

CaseResult baseResult(const std::string &id, const std::string &stem, const DeviceRun &dev) {
  CaseResult r;
  r.id = id;
  r.variant = stem;
  r.op = "kernel";
  r.dtype = "-";
  r.device = dev.name;
  return r;
}

// Runs one kernel; fills status, errors and the worst errors over its outputs.
void judgeKernel(const ir::Module &m, const ir::Function &f, const Program &program, DeviceRun &dev,
                 CaseResult &r, RunReport &report) {
  auto fail = [&](const std::string &msg) {
    r.status = "fail";
    r.message = msg;
  };
  const ProgramKernel *pk = program.kernel(f.name);
  if (!pk)
    return fail("kernel missing from the compiled program");
  ir::LaunchData data;
  std::string err;
  if (!ir::makeLaunchData(f, data, err))
    return fail(err);
  r.seed = f.launch->seed;
  std::vector<ir::HostBuffer> outputs; // runOnDevice leaves `data` as it was: the inputs
  if (!runOnDevice(dev.device, *pk, data, outputs, nullptr, &err))
    return fail("device run failed: " + err);
  KernelCheck k = checkKernel(m, f, data, outputs, pk->subgroupSize, dev.profile);
  if (dev.strict) { // every buffer, kept for the bitwise comparison across devices (strict.h)
    StrictCapture cap{r.id,
                      dev.name,
                      {},
                      outputs,
                      {},
                      orderDependence(m, f),
                      subgroupSizeDependence(m, f),
                      pk->subgroupSize,
                      int64_t(r.seed),
                      strictDivSqrtTypes(m)};
    for (const ir::Value *p : f.params())
      if (p->type.kind == ir::Type::Kind::Buffer)
        cap.names.push_back("%" + p->name);
    report.strictCaptures.push_back(std::move(cap));
  }
  if (!k.ok)
    return fail(k.error);
  r.status = "pass";
  std::string normwise;
  for (const OutputCheck &c : k.outputs) {
    r.maxUlp = std::max(r.maxUlp, c.maxUlp);
    r.maxAbs = std::max(r.maxAbs, c.maxAbs);
    if (ir::isFloatScalar(c.budget.elem))
      r.tolerance = std::max(r.tolerance, c.budget.ulp);
    if (c.normwiseOnly > 0)
      normwise += (normwise.empty() ? "" : ", ") + ("%" + c.budget.param) + " (" +
                  std::to_string(c.normwiseOnly) + " elements)";
    if (!c.passed && r.status == "pass") {
      fail("%" + c.budget.param + ": " + std::to_string(c.badCount) +
           " bad elements; first mismatch at " + c.detail + " (budget " +
           shortNumber(c.budget.ulp) + " ulp)");
    }
  }
  r.normwiseOnly = k.normwiseOnly();
  if (!normwise.empty() && r.message.empty())
    r.message = "passed only normwise: " + normwise;
  for (const ir::HostBuffer &b : outputs)
    r.n = std::max(r.n, b.size());
}

} // namespace

std::vector<std::string> kernelCaseFiles(const std::string &dirs) {
  std::vector<std::string> all;
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    std::string dir =
        dirs.substr(start, end == std::string::npos ? std::string::npos : end - start);
    start = end == std::string::npos ? dirs.size() + 1 : end + 1;
    std::vector<std::string> files;
    std::error_code ec;
    for (const auto &e : std::filesystem::directory_iterator(dir, ec))
      if (e.path().extension() == ".tir")
        files.push_back(e.path().string());
    std::sort(files.begin(), files.end()); // per folder, folders in the order given
    all.insert(all.end(), files.begin(), files.end());
  }
  return all;
}

std::vector<std::string> kernelCaseIds(const std::vector<std::string> &files) {
  std::vector<std::string> ids;
  for (const std::string &file : files) {
    ir::ParseResult pr = ir::parseFile(file);
    if (!pr.ok()) {
      ids.push_back("kernel/" + stemOf(file) + "/parse");
      continue;
    }
    for (const auto &f : pr.module->functions)
      if (f->isKernel && f->launch)
        ids.push_back("kernel/" + stemOf(file) + "/" + f->name);
  }
  return ids;
}

void runKernelCases(const std::vector<std::string> &files, const std::vector<std::string> &filters,
                    DeviceRun &dev, RunReport &report, const ProgressFn &progress) {
  auto finish = [&](CaseResult r) {
    applyXfail(r, dev.xfails);
    report.results.push_back(std::move(r));
    if (progress)
      progress(report.results.back());
  };
  for (const std::string &file : files) {
    std::string stem = stemOf(file);
    ir::ParseResult pr = ir::parseFile(file);
    if (!pr.ok()) {
      std::string id = "kernel/" + stem + "/parse";
      if (!selected(id, filters))
        continue;
      CaseResult r = baseResult(id, stem, dev);
      r.status = "fail";
      r.message = pr.diags.empty() ? "cannot parse" : pr.diags[0].str();
      finish(std::move(r));
      continue;
    }
    std::vector<const ir::Function *> kernels;
    for (const auto &f : pr.module->functions)
      if (f->isKernel && f->launch && selected("kernel/" + stem + "/" + f->name, filters))
        kernels.push_back(f.get());
    if (kernels.empty())
      continue;
    std::string err;
    auto program = Program::create(dev.device, *pr.module, nullptr, caseOptions(dev), &err);
    for (const ir::Function *f : kernels) {
      CaseResult r = baseResult("kernel/" + stem + "/" + f->name, stem, dev);
      if (!program && dev.strict && isMissingDecomposition(err)) {
        r.status = "skip"; // not hidden: a finding names the op and the cases
        r.message = err;
        addFinding(report, dev.name, "strict-no-shared-decomposition", err, r.id);
        report.results.push_back(std::move(r));
        if (progress)
          progress(report.results.back());
        continue;
      }
      if (!program) {
        r.status = "fail";
        r.message = "compile failed: " + err;
      } else {
        judgeKernel(*pr.module, *f, *program, dev, r, report);
      }
      finish(std::move(r));
    }
  }
}

} // namespace tessera::conform
