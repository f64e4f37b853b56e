// The strict profile's bitwise comparison across devices (strict.h).
#include "conformance/strict.h"

#include "backends/target.h"
#include "ir/interp/numerics.h"
#include "ir/transforms/strict_math.h"
#include "tessera/output_check.h"

#include <cmath>
#include <map>
#include <set>
#include <sstream>

namespace tessera::conform {
namespace {

// Every op of `f` and of the functions it calls (each function once).
template <typename Fn>
void walkReachable(const ir::Module &m, const ir::Function &f, Fn &&fn,
                   std::set<const ir::Function *> &seen) {
  if (!seen.insert(&f).second)
    return;
  ir::walk(*f.body, [&](const ir::Op &op) {
    fn(op);
    if (op.kind == ir::OpKind::Call)
      if (const ir::Function *callee = m.lookup(op.callee))
        walkReachable(m, *callee, fn, seen);
  });
}

using ir::numerics::isSubnormal;

// Whether element `i` involves a subnormal: an input, either output, or a zero answering a
// subnormal (what flushing produces).
bool involvesSubnormal(const StrictCapture &a, const StrictCapture &b, size_t out, int64_t i) {
  auto sub = [&](const ir::HostBuffer &buf) {
    return ir::isFloatScalar(buf.elem) && i < buf.size() && isSubnormal(buf.get(i).f, buf.elem);
  };
  for (const ir::HostBuffer &in : a.inputs)
    if (sub(in))
      return true;
  return sub(a.outputs[out]) || sub(b.outputs[out]);
}

std::string elementText(const ir::HostBuffer &b, int64_t i) {
  return i < b.size() ? formatElement(b.get(i), b.elem) : "(missing)";
}

std::string inputsText(const StrictCapture &c, int64_t i) {
  if (c.seed >= 0)
    return "launch spec inputs, seed " + std::to_string(c.seed);
  std::string s;
  for (const ir::HostBuffer &in : c.inputs)
    s += (s.empty() ? "" : ", ") + elementText(in, i);
  return s;
}

// Compares one output of two captures: the count of differing elements and the first one.
int64_t countDifferences(const ir::HostBuffer &a, const ir::HostBuffer &b, int64_t *first) {
  *first = -1;
  if (a.elem != b.elem || a.size() != b.size()) {
    *first = 0;
    return std::max(a.size(), b.size());
  }
  int64_t n = 0;
  for (int64_t i = 0; i < a.size(); ++i)
    if (!strictSame(a, b, i) && n++ == 0)
      *first = i;
  return n;
}

// Why two devices may legitimately differ on `c` (empty: they must not).
std::string orderReason(const StrictCapture &a, const StrictCapture &b) {
  if (!a.orderDependence.empty())
    return "not order-fixed: " + a.orderDependence;
  if (!a.subgroupDependence.empty() && a.subgroupSize != b.subgroupSize)
    return "not order-fixed: uses " + a.subgroupDependence +
           ", whose result depends on the subgroup size (" + a.device + ": " +
           std::to_string(a.subgroupSize) + ", " + b.device + ": " +
           std::to_string(b.subgroupSize) + ")";
  return "";
}

// The result of `id` on `a` or `b` when it is an expected failure there (xfail / xpass: the
// device's xfail list names the reason), else null.
const CaseResult *expectedFailure(const RunReport &r, const std::string &id, const std::string &a,
                                  const std::string &b) {
  for (const CaseResult &c : r.results)
    if (c.id == id && (c.device == a || c.device == b) &&
        (c.status == "xfail" || c.status == "xpass"))
      return &c;
  return nullptr;
}

} // namespace

std::string orderDependence(const ir::Module &m, const ir::Function &f) {
  std::set<const ir::Value *> used;
  std::set<const ir::Function *> seen;
  walkReachable(
      m, f, [&](const ir::Op &op) { used.insert(op.operands.begin(), op.operands.end()); }, seen);
  std::string why;
  seen.clear();
  walkReachable(
      m, f,
      [&](const ir::Op &op) {
        if (!why.empty())
          return;
        ir::OpForm form = op.info().form;
        bool floatValue = !op.operands.empty() && ir::isFloatScalar(op.operands.back()->type.elem);
        std::string name(op.info().name);
        if (form == ir::OpForm::AtomicCas || op.kind == ir::OpKind::AtomicXchg)
          why = name + " (which work-item wins a race is the device's)";
        else if (form == ir::OpForm::Atomic && floatValue)
          why = "float " + name + " (the order of the updates is the device's)";
        else if (form == ir::OpForm::Atomic && !op.results.empty() && used.count(op.result(0)))
          why = name + " whose old value is used (the order of the updates is the device's)";
        else if (op.kind == ir::OpKind::SubgroupAdd && floatValue)
          why = "float " + name + " (the device's reduction tree)";
        else if (op.kind == ir::OpKind::MatrixMad && floatValue) // docs/ir.md, its contract
          why = "float " + name + " (the summation order is the target's)";
      },
      seen);
  return why;
}

std::string subgroupSizeDependence(const ir::Module &m, const ir::Function &f) {
  std::string what;
  std::set<const ir::Function *> seen;
  walkReachable(
      m, f,
      [&](const ir::Op &op) {
        bool dep = op.info().form == ir::OpForm::Shuffle ||
                   op.info().form == ir::OpForm::SubgroupReduce ||
                   op.kind == ir::OpKind::SubgroupSize || op.kind == ir::OpKind::SubgroupId ||
                   op.kind == ir::OpKind::SubgroupLocalId;
        if (dep && what.empty())
          what = op.info().name;
      },
      seen);
  return what;
}

uint8_t strictDivSqrtTypes(const ir::Module &m) {
  std::string err;
  std::unique_ptr<ir::Module> strict = ir::strictMathCopy(m, true, &err);
  const ir::Module &what = strict ? *strict : m; // no copy: the ops as written
  uint8_t types = 0;
  for (const auto &f : what.functions)
    ir::walk(*f->body, [&](const ir::Op &op) {
      if ((op.kind == ir::OpKind::Div || op.kind == ir::OpKind::Sqrt) && op.results.size() == 1 &&
          ir::isFloatScalar(op.results[0]->type.elem))
        types |= op.results[0]->type.elem == ir::Scalar::F64 ? kDivSqrtF64 : kDivSqrtF32;
    });
  return types;
}

uint8_t unpromisedDivSqrt(const std::string &backend, uint64_t features) {
  // A target that declares the relaxed profile (Vulkan's SPIR-V precision table: OpFDiv
  // 2.5 ULP) does not promise correctly rounded div and sqrt; its strict mode corrects the
  // f16/bf16/f32 ones through f64 where the device has it.
  const Target *t = defaultTargets().forBackend(backend);
  if (!t || t->declaredProfile() != PrecisionProfile::Relaxed)
    return 0;
  return features & TSR_FEATURE_FP64 ? kDivSqrtF64 : kDivSqrtF32 | kDivSqrtF64;
}

bool strictSame(const ir::HostBuffer &a, const ir::HostBuffer &b, int64_t i) {
  size_t w = size_t(ir::byteSize(a.elem));
  const uint8_t *pa = a.bytes.data() + size_t(i) * w, *pb = b.bytes.data() + size_t(i) * w;
  if (std::equal(pa, pa + w, pb))
    return true;
  // NaN equals NaN whatever its payload: no IR op promises a payload (docs/ir.md).
  return ir::isFloatScalar(a.elem) && std::isnan(a.get(i).f) && std::isnan(b.get(i).f);
}

void compareStrict(RunReport &report, const std::vector<std::string> &devices,
                   const std::vector<uint64_t> &features) {
  report.strict = true;
  // Per device, once: what it cannot promise (a finding each), which explains differences.
  std::map<std::string, bool> noDenorm;
  std::map<std::string, uint8_t> unpromised;
  for (size_t d = 0; d < devices.size(); ++d) {
    noDenorm[devices[d]] = !(features[d] & TSR_FEATURE_DENORM_PRESERVE);
    uint8_t divSqrt = unpromised[devices[d]] =
        unpromisedDivSqrt(devices[d].substr(0, devices[d].find(':')), features[d]);
    if (noDenorm[devices[d]])
      report.findings.push_back(
          {devices[d],
           "strict-no-denorm-preserve",
           "the device cannot promise to keep subnormals (no shaderDenormPreserveFloat32/16/64): "
           "strict differences in elements that involve a subnormal are explained by it",
           {}});
    if (divSqrt)
      report.findings.push_back(
          {devices[d],
           "strict-div-sqrt-not-promised",
           std::string("the backend does not promise correctly rounded ") +
               (divSqrt & kDivSqrtF32 ? "f16/bf16/f32 and f64" : "f64") +
               " div and sqrt (Vulkan: OpFDiv 2.5 ULP, Sqrt through InverseSqrt" +
               (divSqrt & kDivSqrtF32 ? "; no float64 to correct f32 ones through" : "") +
               "): strict differences in cases whose strict IR has them are explained by it",
           {}});
  }
  if (devices.size() < 2) {
    report.strictNote = "one device: each case was checked against the fp64 reference only; "
                        "the cross-device bitwise comparison needs two devices (--device A "
                        "--device B)";
    return;
  }
  std::map<std::string, const StrictCapture *> first; // devices[0]'s captures by case id
  std::map<std::pair<std::string, std::string>, const StrictCapture *> byDevice;
  for (const StrictCapture &c : report.strictCaptures) {
    byDevice[{c.device, c.caseId}] = &c;
    if (c.device == devices[0])
      first[c.caseId] = &c;
  }
  std::vector<StrictDiff> diffs;
  for (size_t d = 1; d < devices.size(); ++d) {
    std::set<std::string> compared;
    for (const auto &[id, a] : first) {
      auto it = byDevice.find({devices[d], id});
      if (it == byDevice.end())
        continue; // listed below as not compared
      compared.insert(id);
      const StrictCapture &b = *it->second;
      ++report.strictCompared;
      std::string order = orderReason(*a, b);
      bool identical = a->outputs.size() == b.outputs.size();
      for (size_t o = 0; identical && o < a->outputs.size(); ++o) {
        int64_t firstBad = -1;
        int64_t n = countDifferences(a->outputs[o], b.outputs[o], &firstBad);
        if (n == 0)
          continue;
        identical = false;
        StrictDiff diff{id,
                        devices[d],
                        devices[0],
                        a->names.at(o),
                        firstBad,
                        n,
                        inputsText(*a, firstBad),
                        elementText(a->outputs[o], firstBad),
                        elementText(b.outputs[o], firstBad),
                        false,
                        ""};
        if (!order.empty()) {
          diff.explained = true;
          diff.reason = order;
        } else if (const CaseResult *x = expectedFailure(report, id, devices[0], devices[d])) {
          diff.explained = true; // the device's xfail list says why it is wrong
          diff.reason = "an expected failure on " + x->device + ": " + x->message;
        } else if ((noDenorm[devices[0]] || noDenorm[devices[d]]) &&
                   involvesSubnormal(*a, b, o, firstBad)) {
          diff.explained = true;
          diff.reason = "a subnormal is involved and " +
                        (noDenorm[devices[d]] ? devices[d] : devices[0]) +
                        " cannot promise to keep subnormals";
        } else if (a->divSqrt & (unpromised[devices[0]] | unpromised[devices[d]])) {
          diff.explained = true;
          diff.reason = "the strict IR divides or takes a square root and " +
                        (unpromised[devices[d]] ? devices[d] : devices[0]) +
                        " does not promise them correctly rounded (Vulkan: OpFDiv 2.5 ULP)";
        } else {
          diff.reason = "no known reason: the same IR must give the same bits";
        }
        diffs.push_back(std::move(diff));
      }
      if (a->outputs.size() != b.outputs.size())
        diffs.push_back({id, devices[d], devices[0], "(outputs)", -1, 1, "", "", "", false,
                         "the devices returned different numbers of buffers"});
      report.strictIdentical += identical;
      if (!order.empty())
        addFinding(report, devices[0] + "~" + devices[d], "strict-not-order-fixed",
                   "kernels whose result order depends on the device are compared but a "
                   "difference does not fail (each case: its reason in the strict section)",
                   id + (identical ? " (identical anyway)" : " (differs)"));
    }
    // Cases one of the two devices did not run (failed, skipped): their status says why.
    for (const auto &[id, a] : first)
      if (!compared.count(id))
        addFinding(report, devices[d], "strict-not-compared",
                   "no output to compare (the case failed or was skipped on this device; see "
                   "its status)",
                   id);
    for (const StrictCapture &c : report.strictCaptures)
      if (c.device == devices[d] && !first.count(c.caseId))
        addFinding(report, devices[0], "strict-not-compared",
                   "no output to compare (the case failed or was skipped on this device; see "
                   "its status)",
                   c.caseId);
  }
  for (StrictDiff &diff : diffs)
    if (diff.explained)
      addFinding(report, diff.device, "strict-difference-explained",
                 "bitwise differences with " + diff.reference + " that a named reason explains",
                 diff.caseId);
    else // also here, so that every report that lists findings (HTML too) shows it
      addFinding(report, diff.device, "strict-difference-unexplained",
                 "bitwise differences with " + diff.reference +
                     " that no reason explains: the run fails",
                 diff.caseId);
  report.strictDiffs = std::move(diffs);
}

std::string strictSummary(const RunReport &r) {
  if (!r.strict)
    return "";
  std::ostringstream os;
  os << "strict: " << r.strictCompared << " (case, device) comparisons against "
     << (r.devices.empty() ? "-" : r.devices[0]) << ": " << r.strictIdentical
     << " bitwise identical, " << (r.strictDiffs.size() - size_t(r.unexplainedStrictDiffs()))
     << " explained differences, " << r.unexplainedStrictDiffs()
     << " unexplained (NaN equals NaN whatever its payload)\n";
  if (!r.strictNote.empty())
    os << "strict: " << r.strictNote << "\n";
  for (const StrictDiff &d : r.strictDiffs) {
    os << (d.explained ? "  explained:   " : "  UNEXPLAINED: ") << d.caseId << " " << d.output
       << " " << d.device << " vs " << d.reference << ": " << d.count << " element(s) differ";
    if (d.index >= 0)
      os << "; first at index " << d.index << " (inputs " << d.inputs << "): " << d.reference << " "
         << d.referenceBits << ", " << d.device << " " << d.deviceBits;
    os << " -- " << d.reason << "\n";
  }
  return os.str();
}

} // namespace tessera::conform
