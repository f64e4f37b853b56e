// Running catalog cases on a device and on the reference interpreter; xfail lists.
#include "conformance/runner.h"

#include "conformance/strict.h"

#include "tessera/device_run.h"
#include "tessera/program.h"

#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace tessera::conform {
namespace {

// The HAL feature bit a scalar type needs (0: always available).
uint64_t featureOf(ir::Scalar t) {
  switch (t) {
  case ir::Scalar::F16:
    return TSR_FEATURE_FP16;
  case ir::Scalar::BF16:
    return TSR_FEATURE_BF16;
  case ir::Scalar::F64:
    return TSR_FEATURE_FP64;
  case ir::Scalar::I8:
    return TSR_FEATURE_INT8;
  case ir::Scalar::I16:
    return TSR_FEATURE_INT16;
  case ir::Scalar::I64:
    return TSR_FEATURE_INT64;
  default:
    return 0;
  }
}

std::string missingFeature(const Variant &v, uint64_t features) {
  std::vector<ir::Scalar> types = v.operands;
  types.push_back(v.result);
  for (ir::Scalar t : types)
    if (uint64_t f = featureOf(t); f && !(features & f))
      return "the device does not support " + std::string(ir::scalarName(t));
  return "";
}

std::string dtypeOf(const Variant &v) {
  std::string t(ir::scalarName(v.operands.back()));
  if (ir::opInfo(v.kind).form == ir::OpForm::Convert)
    t += "->" + std::string(ir::scalarName(v.result));
  return t;
}

// The launch of a case: inputs, a canary-filled output and n; args point into buffers.
ir::LaunchData makeLaunch(const Variant &v, const Case &c, uint64_t seed) {
  ir::LaunchData d;
  d.dims.workgroup = {c.workgroup, 1, 1};
  d.dims.grid = {static_cast<uint32_t>(std::max<int64_t>(1, (c.n + c.workgroup - 1) / c.workgroup)),
                 1, 1};
  d.buffers = makeInputs(v, c, seed);
  ir::HostBuffer out(v.result, c.n);
  std::fill(out.bytes.begin(), out.bytes.end(), uint8_t{0xA5}); // catches missing writes
  d.buffers.push_back(std::move(out));
  for (ir::HostBuffer &b : d.buffers) {
    ir::KernelArg a;
    a.buffer = &b;
    d.args.push_back(a);
  }
  ir::KernelArg n;
  n.scalar.i = static_cast<uint64_t>(c.n) & 0xffffffffu;
  d.args.push_back(n);
  return d;
}

CaseResult baseResult(const Catalog &cat, const Case &c, const std::string &device,
                      uint64_t seed) {
  const Variant &v = cat.variants[c.variant];
  CaseResult r;
  r.id = c.id;
  r.variant = v.name;
  r.op = v.family;
  r.dtype = dtypeOf(v);
  r.device = device;
  r.n = c.n;
  r.seed = seed;
  return r;
}

} // namespace

void addFinding(RunReport &report, const std::string &device, const std::string &cap,
                const std::string &detail, const std::string &caseId) {
  for (Finding &f : report.findings)
    if (f.device == device && f.capability == cap) {
      if (f.cases.size() < 8)
        f.cases.push_back(caseId);
      return;
    }
  report.findings.push_back({device, cap, detail, {caseId}});
}

void applyXfail(CaseResult &r, const std::vector<XfailEntry> &xfails) {
  for (const XfailEntry &x : xfails)
    if (globMatch(x.glob, r.id)) {
      r.status = r.status == "pass" ? "xpass" : "xfail";
      r.message = x.reason;
      return;
    }
}

ProgramOptions caseOptions(const DeviceRun &dev) {
  ProgramOptions o = withSupportedBounds(dev.device, {});
  o.strict = dev.strict;
  if (dev.subgroupSize)
    o.subgroupSize = dev.subgroupSize;
  return o;
}

bool isMissingDecomposition(const std::string &compileError) {
  return compileError.find("strict: no shared decomposition") != std::string::npos;
}

int RunReport::unexplainedStrictDiffs() const {
  int n = 0;
  for (const StrictDiff &d : strictDiffs)
    n += !d.explained;
  return n;
}

int RunReport::count(const std::string &status) const {
  int n = 0;
  for (const CaseResult &r : results)
    n += r.status == status;
  return n;
}

bool loadXfails(const std::string &path, std::vector<XfailEntry> &out, std::string *error) {
  std::ifstream f(path);
  if (!f)
    return true; // no list: nothing expected to fail
  std::string line;
  for (int lineNo = 1; std::getline(f, line); ++lineNo) {
    if (size_t hash = line.find('#'); hash != std::string::npos)
      line.erase(hash);
    std::istringstream ss(line);
    XfailEntry e;
    if (!(ss >> e.glob))
      continue;
    std::getline(ss >> std::ws, e.reason);
    while (!e.reason.empty() && std::isspace(static_cast<unsigned char>(e.reason.back())))
      e.reason.pop_back();
    if (e.reason.empty()) {
      *error = path + ":" + std::to_string(lineNo) + ": an expected failure needs a reason";
      return false;
    }
    out.push_back(std::move(e));
  }
  return true;
}

bool interpretCase(const Catalog &cat, const Case &c, uint64_t seed,
                   std::vector<ir::HostBuffer> &inputs, ir::HostBuffer &out, std::string *error) {
  const Variant &v = cat.variants[c.variant];
  auto m = buildKernel(v);
  ir::LaunchData d = makeLaunch(v, c, seed);
  inputs.assign(d.buffers.begin(), d.buffers.end() - 1);
  ir::InterpResult res = ir::interpret(*m, *m->functions[0], d.dims, d.args);
  if (!res.ok) {
    *error = res.error;
    return false;
  }
  out = d.buffers.back();
  return true;
}

void runDevice(const Catalog &cat, const std::vector<size_t> &selected, DeviceRun &dev,
               uint64_t seed, RunReport &report, const ProgressFn &progress) {
  // Cases grouped by variant, so each kernel compiles once per device.
  std::map<size_t, std::vector<size_t>> byVariant;
  for (size_t ci : selected)
    byVariant[cat.cases[ci].variant].push_back(ci);
  CompileCache cache{std::filesystem::path()};
  for (auto &[vi, cases] : byVariant) {
    const Variant &v = cat.variants[vi];
    std::string missing = missingFeature(v, dev.features);
    std::unique_ptr<ir::Module> m;
    std::unique_ptr<Program> program;
    std::string compileError;
    uint8_t divSqrt = 0;
    if (missing.empty()) {
      m = buildKernel(v);
      divSqrt = dev.strict ? strictDivSqrtTypes(*m) : 0;
      program = Program::create(dev.device, *m, &cache, caseOptions(dev), &compileError);
    }
    for (size_t ci : cases) {
      const Case &c = cat.cases[ci];
      CaseResult r = baseResult(cat, c, dev.name, seed);
      auto finish = [&] {
        if (r.status != "skip")
          applyXfail(r, dev.xfails);
        if (progress)
          progress(r);
        report.results.push_back(std::move(r));
      };
      if (!missing.empty()) {
        r.status = "skip";
        r.message = missing;
        finish();
        continue;
      }
      const ProgramKernel *pk = program ? program->kernel("conform") : nullptr;
      if (!pk && dev.strict && isMissingDecomposition(compileError)) {
        // Not the device's failure, and not hidden: a finding names the op and the cases.
        r.status = "skip";
        r.message = compileError;
        addFinding(report, dev.name, "strict-no-shared-decomposition:" + v.family, compileError,
                   c.id);
        finish();
        continue;
      }
      if (!pk) {
        r.status = "fail";
        r.message = "compile: " + (compileError.empty() ? "kernel missing" : compileError);
        finish();
        continue;
      }
      ir::LaunchData data = makeLaunch(v, c, seed);
      ir::LaunchData ref = data;
      ir::InterpOptions io;
      io.subgroupSize = pk->subgroupSize ? pk->subgroupSize : 32;
      ir::InterpResult ires = ir::interpret(*m, *m->functions[0], ref.dims, ref.args, io);
      std::vector<ir::HostBuffer> outputs;
      std::string err;
      double ms = 0;
      if (!ires.ok) {
        r.status = "fail";
        r.message = "reference interpreter: " + ires.error;
      } else if (!runOnDevice(dev.device, *pk, data, outputs, &ms, &err)) {
        r.status = "fail";
        r.message = "run: " + err;
      } else {
        std::vector<ir::HostBuffer> inputs(ref.buffers.begin(), ref.buffers.end() - 1);
        r.judgement =
            judge(v, *kernelOp(*m), inputs, ref.buffers.back(), outputs.back(), dev.profile);
        r.status = r.judgement.passed ? "pass" : "fail";
        r.maxUlp = r.judgement.maxUlp;
        r.maxAbs = r.judgement.maxAbs;
        r.tolerance = r.judgement.tolerance;
        // Only basic arithmetic answering 0 for a subnormal says the device flushes; a math
        // op doing so (with arithmetic fine) underflows inside its own lowering.
        static const std::set<std::string> kBasic = {"add", "sub", "mul", "div",
                                                      "fma", "sqrt", "convert"};
        if (r.judgement.flushesSubnormalResults && kBasic.count(v.family))
          addFinding(report, dev.name, "flushes-subnormal-results",
                     "basic arithmetic returns 0 where the reference result is subnormal", c.id);
        else if (r.judgement.flushesSubnormalResults)
          addFinding(report, dev.name, "op-underflows-to-zero:" + v.family,
                     v.family + " returns 0 where the reference is subnormal (an underflow in "
                                "the op's lowering, not device-wide flushing)",
                     c.id);
        if (r.judgement.flushesSubnormalInputs)
          addFinding(report, dev.name, "flushes-subnormal-inputs",
                     "computes as if subnormal inputs were 0", c.id);
        if (r.judgement.nanPayloadDiffers)
          addFinding(report, dev.name, "nan-payload-differs:" + v.family,
                     v.family + " returns NaNs whose sign, quiet bit or payload differ from the "
                                "reference's (NaN still matches NaN)",
                     c.id);
        if (dev.strict) // kept for the bitwise comparison across devices (strict.h)
          report.strictCaptures.push_back({c.id,
                                           dev.name,
                                           std::move(inputs),
                                           {std::move(outputs.back())},
                                           {"%out"},
                                           "",
                                           "",
                                           pk->subgroupSize,
                                           -1,
                                           divSqrt});
      }
      finish();
    }
  }
}

} // namespace tessera::conform
