// The conformance runner: runs the selected catalog cases on HAL devices and on the fp64
// reference interpreter, judges them, applies the per-backend expected-failure lists and
// collects per-device capability findings. Reports are written by report.h.
#pragma once

#include "conformance/catalog.h"
#include "conformance/judge.h"
#include "tessera/hal.h"
#include "tessera/program.h"

#include <functional>
#include <string>
#include <vector>

namespace tessera::conform {

struct XfailEntry {
  std::string glob;   // matched against case ids
  std::string reason; // why the backend is expected to fail
};

/// Reads `GLOB  reason...` lines ('#' starts a comment). A missing file is an empty list;
/// a line without a reason is an error (every expected failure must say why).
bool loadXfails(const std::string &path, std::vector<XfailEntry> &out, std::string *error);

struct CaseResult {
  std::string id, variant, op, dtype, device;
  int64_t n = 0;
  std::string status; // pass | fail | xfail | xpass | skip
  double maxUlp = 0, maxAbs = 0, tolerance = 0;
  uint64_t seed = 0;
  std::string message;      // skip reason, xfail reason, or a compile / run / oracle error
  Judgement judgement;      // filled for judged cases
  int64_t normwiseOnly = 0; // kernel cases: elements that passed only by the normwise arm
};

struct Finding {
  std::string device, capability, detail;
  std::vector<std::string> cases; // the first few cases that showed it
};

/// One device's outputs of one case in a strict run, kept for the bitwise comparison across
/// devices (conformance/strict.h).
struct StrictCapture {
  std::string caseId, device;
  std::vector<ir::HostBuffer> inputs;  // catalog cases: the operands (element i of each)
  std::vector<ir::HostBuffer> outputs; // catalog: the result; kernels: every buffer
  std::vector<std::string> names;      // one per output ("%out")
  std::string orderDependence;         // non-empty: why the order is not fixed
  std::string subgroupDependence;      // non-empty: the op whose result needs the subgroup size
  uint32_t subgroupSize = 0;
  int64_t seed = -1;    // kernel cases: the launch spec's seed (their inputs)
  uint8_t divSqrt = 0;  // strictDivSqrtTypes of the strict IR: its float div / sqrt types
};

/// A difference between two devices' strict outputs of one case.
struct StrictDiff {
  std::string caseId, device, reference; // `device` differs from `reference` (the first device)
  std::string output;                    // "%out"
  int64_t index = -1, count = 0;         // the first differing element, how many differ
  std::string inputs;                    // that element's inputs (catalog cases)
  std::string referenceBits, deviceBits; // that element on each device: value and hex bits
  bool explained = false;
  std::string reason; // why (explained), or what is known (unexplained)
};

struct RunReport {
  std::string profile = "full";
  uint64_t seed = 1;
  std::vector<std::string> devices;
  std::vector<CaseResult> results;
  std::vector<Finding> findings;
  std::vector<std::pair<std::string, std::string>> skippedBackends; // (backend, reason)
  double seconds = 0;
  std::vector<std::string> filters; // --filter globs (empty: every case)
  std::string started;              // UTC start time, ISO 8601
  std::string version;              // the tessera version that ran

  // Strict runs (conformance/strict.h): the outputs kept per device, and the comparison.
  bool strict = false;
  std::vector<StrictCapture> strictCaptures;
  std::vector<StrictDiff> strictDiffs;
  int64_t strictCompared = 0, strictIdentical = 0; // (case, device pair) comparisons
  std::string strictNote; // e.g. that the cross-device comparison needs two devices

  int count(const std::string &status) const;
  int unexplainedStrictDiffs() const;
  /// Anything that should fail CI: a fail (a case outside the xfail list that did not pass),
  /// or, in a strict run, a difference between devices that no finding explains.
  bool unexpectedFailures() const { return count("fail") > 0 || unexplainedStrictDiffs() > 0; }
};

struct DeviceRun {
  std::string name;        // "cpu:0"
  tsr_device_t device = nullptr;
  uint64_t features = 0;   // TSR_FEATURE_*
  std::vector<XfailEntry> xfails;
  Profile profile = Profile::Full;
  /// The strict profile: compile with ProgramOptions::strict and keep every case's outputs
  /// (RunReport::strictCaptures) for the comparison across devices.
  bool strict = false;
  /// CPU devices: the emulated subgroup width (0: the device's default). Strict runs set it to
  /// the other devices' subgroup size, so that subgroup kernels compare bit for bit.
  uint32_t subgroupSize = 0;
};

/// The program options of a case on `dev`: the bounds mode it supports, strict if asked.
ProgramOptions caseOptions(const DeviceRun &dev);
/// Whether a compile error says that strict compilation lacks a shared decomposition (a
/// finding, not a failure of the device).
bool isMissingDecomposition(const std::string &compileError);

/// The tolerance profile a backend declares (docs/conformance.md): its compiler target's
/// (Target::declaredProfile, through the registry). One definition (runtime/), shared with
/// `tessera run --check` and the kernel-level cases.
using tessera::declaredProfile;

/// Adds `caseId` to the finding (device, cap), creating it with `detail` (first 8 cases kept).
void addFinding(RunReport &report, const std::string &device, const std::string &cap,
                const std::string &detail, const std::string &caseId);

/// Marks a result xfail / xpass when an entry of `xfails` matches its id.
void applyXfail(CaseResult &r, const std::vector<XfailEntry> &xfails);

/// Called after every case (for progress lines).
using ProgressFn = std::function<void(const CaseResult &)>;

/// Runs `selected` (indices into cat.cases) on one device, appending to `report`.
void runDevice(const Catalog &cat, const std::vector<size_t> &selected, DeviceRun &dev,
               uint64_t seed, RunReport &report, const ProgressFn &progress);

/// Reference-only run of one case: the inputs and the interpreter's outputs (oracle checks).
bool interpretCase(const Catalog &cat, const Case &c, uint64_t seed,
                   std::vector<ir::HostBuffer> &inputs, ir::HostBuffer &out, std::string *error);

} // namespace tessera::conform
