// The conformance runner: runs the selected catalog cases on HAL devices and on the fp64
// reference interpreter, judges them, applies the per-backend expected-failure lists and
// collects per-device capability findings. Reports are written by report.h.
#pragma once

#include "conformance/catalog.h"
#include "conformance/judge.h"
#include "tessera/hal.h"

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

  int count(const std::string &status) const;
  /// Anything that should fail CI: a fail (a case outside the xfail list that did not pass).
  bool unexpectedFailures() const { return count("fail") > 0; }
};

struct DeviceRun {
  std::string name;        // "cpu:0"
  tsr_device_t device = nullptr;
  uint64_t features = 0;   // TSR_FEATURE_*
  std::vector<XfailEntry> xfails;
  Profile profile = Profile::Full;
};

/// The tolerance profile a backend declares (docs/conformance.md): its compiler target's
/// (Target::declaredProfile, through the registry). One definition (runtime/), shared with
/// `tessera run --check` and the kernel-level cases.
using tessera::declaredProfile;

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
