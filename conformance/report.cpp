// Text, JSON and JUnit reports of a conformance run.
#include "conformance/report.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

namespace tessera::conform {
namespace {

// Ordered: the keys appear in the order the schema (report.h) lists them.
using Json = nlohmann::ordered_json;

// A number as JUnit text: non-finite values (an infinite ULP error) read "null", as in JSON.
std::string jnum(double d) {
  if (!std::isfinite(d))
    return "null";
  char b[32];
  std::snprintf(b, sizeof b, "%.17g", d);
  return b;
}

// A JSON number, or null where JSON has none (NaN, +-inf: an infinite ULP error, say).
Json finiteOrNull(double d) { return std::isfinite(d) ? Json(d) : Json(nullptr); }

std::string describeFailure(const CaseResult &c) {
  std::ostringstream os;
  os << c.status << " " << c.id << " on " << c.device << ": op " << c.variant << ", dtype "
     << c.dtype << ", shape [" << c.n << "], seed " << c.seed;
  if (!c.message.empty())
    os << "\n    " << (c.status == "xpass" ? "expected to fail: " : "") << c.message;
  const Judgement &j = c.judgement;
  if (j.firstBad >= 0) {
    os << "\n    first bad index " << j.firstBad << " (" << j.badCount << " bad): inputs ("
       << j.inputs << ")\n    expected " << j.expected << "\n    got      " << j.got
       << "\n    error    " << j.error << " ulp (tolerance " << j.tolerance << ")";
  }
  return os.str();
}

} // namespace

std::string xmlEscape(std::string_view s) {
  std::string o;
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
    case '&':
      o += "&amp;";
      break;
    case '<':
      o += "&lt;";
      break;
    case '>':
      o += "&gt;";
      break;
    case '"':
      o += "&quot;";
      break;
    default:
      if (c < 0x20 && c != '\n' && c != '\t')
        o += '?'; // not representable in XML 1.0
      else
        o += ch;
    }
  }
  return o;
}

std::string summaryMatrix(const RunReport &r) {
  struct Cell {
    int passed = 0, total = 0;
    double worst = 0;
  };
  std::map<std::string, std::map<std::string, Cell>> rows;
  for (const CaseResult &c : r.results) {
    if (c.status == "skip")
      continue;
    Cell &cell = rows[c.op][c.device];
    ++cell.total;
    cell.passed += c.status == "pass" || c.status == "xpass";
    if (std::isfinite(c.maxUlp))
      cell.worst = std::max(cell.worst, c.maxUlp);
  }
  std::ostringstream os;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%-10s", "op");
  os << buf;
  for (const std::string &d : r.devices) {
    std::snprintf(buf, sizeof buf, "  %-22s", d.c_str());
    os << buf;
  }
  os << "\n";
  for (const auto &[op, cells] : rows) {
    std::snprintf(buf, sizeof buf, "%-10s", op.c_str());
    os << buf;
    for (const std::string &d : r.devices) {
      auto it = cells.find(d);
      if (it == cells.end()) {
        std::snprintf(buf, sizeof buf, "  %-22s", "-");
      } else {
        char cell[48];
        std::snprintf(cell, sizeof cell, "%d/%d ulp %.3g%s", it->second.passed, it->second.total,
                      it->second.worst, it->second.passed < it->second.total ? " !" : "");
        std::snprintf(buf, sizeof buf, "  %-22s", cell);
      }
      os << buf;
    }
    os << "\n";
  }
  return os.str();
}

std::string failureList(const RunReport &r) {
  std::string out;
  for (const CaseResult &c : r.results)
    if (c.status == "fail" || c.status == "xpass")
      out += describeFailure(c) + "\n";
  return out;
}

std::string findingList(const RunReport &r) {
  std::string out;
  for (const CaseResult &c : r.results) // a pass that needed the normwise arm is worth knowing
    if (c.normwiseOnly > 0)
      out += "note: " + c.device + ": " + c.id + " " + c.message + "\n";
  for (const Finding &f : r.findings) {
    out += "finding: " + f.device + ": " + f.capability + " (" + f.detail + ")";
    if (!f.cases.empty())
      out += ", e.g.";
    for (const std::string &c : f.cases)
      out += " " + c;
    out += "\n";
  }
  return out;
}

// The "strict" member (docs/conformance.md, "The strict run"); empty when not strict.
// The strict run's cross-device comparison (strict runs only).
static Json strictJson(const RunReport &r) {
  Json diffs = Json::array();
  for (const StrictDiff &d : r.strictDiffs)
    diffs.push_back({{"case", d.caseId},
                     {"output", d.output},
                     {"device", d.device},
                     {"reference", d.reference},
                     {"count", d.count},
                     {"index", d.index},
                     {"inputs", d.inputs},
                     {"reference_bits", d.referenceBits},
                     {"device_bits", d.deviceBits},
                     {"explained", d.explained},
                     {"reason", d.reason}});
  return {{"reference_device", r.devices.empty() ? std::string() : r.devices[0]},
          {"compared", r.strictCompared},
          {"identical", r.strictIdentical},
          {"unexplained", r.unexplainedStrictDiffs()},
          {"note", r.strictNote},
          {"differences", std::move(diffs)}};
}

std::string toJson(const RunReport &r) {
  Json doc = {{"schema", "tessera-conform/1"},
              {"profile", r.profile},
              {"seed", r.seed},
              {"devices", r.devices},
              {"seconds", finiteOrNull(r.seconds)}};
  Json &counts = doc["counts"] = Json::object();
  for (const char *status : {"pass", "fail", "xfail", "xpass", "skip"})
    counts[status] = r.count(status);
  Json &cases = doc["cases"] = Json::array();
  for (const CaseResult &c : r.results) {
    Json row = {{"case", c.id},
                {"op", c.op},
                {"variant", c.variant},
                {"dtype", c.dtype},
                {"shape", Json::array({c.n})},
                {"device", c.device},
                {"status", c.status},
                {"max_ulp", finiteOrNull(c.maxUlp)},
                {"max_abs_err", finiteOrNull(c.maxAbs)},
                {"tolerance", finiteOrNull(c.tolerance)},
                {"seed", c.seed}};
    if (!c.message.empty())
      row["message"] = c.message;
    if (c.normwiseOnly > 0)
      row["normwise_only"] = c.normwiseOnly;
    const Judgement &j = c.judgement;
    if (j.firstBad >= 0)
      row["failure"] = {{"index", j.firstBad}, {"bad_count", j.badCount},
                        {"inputs", j.inputs},  {"expected", j.expected},
                        {"got", j.got},        {"error", finiteOrNull(j.error)}};
    cases.push_back(std::move(row));
  }
  Json &findings = doc["findings"] = Json::array();
  for (const Finding &f : r.findings)
    findings.push_back({{"device", f.device},
                        {"capability", f.capability},
                        {"detail", f.detail},
                        {"cases", f.cases}});
  if (r.strict)
    doc["strict"] = strictJson(r);
  Json &skipped = doc["skipped_backends"] = Json::array();
  for (const auto &[backend, reason] : r.skippedBackends)
    skipped.push_back({{"backend", backend}, {"reason", reason}});
  // Bytes that are not UTF-8 (a driver's message, say) become U+FFFD instead of throwing.
  return doc.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string toJunit(const RunReport &r) {
  std::ostringstream os;
  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  os << "<testsuites name=\"tessera-conform\" tests=\"" << r.results.size() << "\" failures=\""
     << r.count("fail") + r.count("xpass") << "\" skipped=\"" << r.count("skip") + r.count("xfail")
     << "\" time=\"" << r.seconds << "\">\n";
  for (const std::string &d : r.devices) {
    int tests = 0, failures = 0, skipped = 0;
    for (const CaseResult &c : r.results)
      if (c.device == d) {
        ++tests;
        failures += c.status == "fail" || c.status == "xpass";
        skipped += c.status == "skip" || c.status == "xfail";
      }
    os << "  <testsuite name=\"conform." << xmlEscape(d) << "\" tests=\"" << tests
       << "\" failures=\"" << failures << "\" errors=\"0\" skipped=\"" << skipped << "\">\n";
    for (const CaseResult &c : r.results) {
      if (c.device != d)
        continue;
      os << "    <testcase classname=\"conform." << xmlEscape(d) << "." << xmlEscape(c.op)
         << "\" name=\"" << xmlEscape(c.id) << "\"";
      if (c.status == "pass") {
        os << "/>\n";
        continue;
      }
      os << ">\n";
      if (c.status == "fail" || c.status == "xpass")
        os << "      <failure message=\"" << xmlEscape(c.status + ": max_ulp " + jnum(c.maxUlp))
           << "\">" << xmlEscape(describeFailure(c)) << "</failure>\n";
      else
        os << "      <skipped message=\"" << xmlEscape(c.status + ": " + c.message) << "\"/>\n";
      os << "    </testcase>\n";
    }
    os << "  </testsuite>\n";
  }
  if (r.strict) { // one testcase per difference: unexplained ones fail, explained ones skip
    os << "  <testsuite name=\"conform.strict\" tests=\"" << r.strictDiffs.size()
       << "\" failures=\"" << r.unexplainedStrictDiffs() << "\" errors=\"0\" skipped=\""
       << r.strictDiffs.size() - size_t(r.unexplainedStrictDiffs()) << "\">\n";
    for (const StrictDiff &d : r.strictDiffs) {
      std::string what = d.output + " " + d.device + " vs " + d.reference + ": " +
                         std::to_string(d.count) + " element(s) differ, first at index " +
                         std::to_string(d.index) + " (inputs " + d.inputs +
                         "): " + d.referenceBits + " vs " + d.deviceBits + " -- " + d.reason;
      os << "    <testcase classname=\"conform.strict." << xmlEscape(d.device) << "\" name=\""
         << xmlEscape(d.caseId) << "\">\n      "
         << (d.explained ? "<skipped message=\"" : "<failure message=\"") << xmlEscape(what)
         << "\"/>\n    </testcase>\n";
    }
    os << "  </testsuite>\n";
  }
  os << "</testsuites>\n";
  return os.str();
}

bool writeFile(const std::string &path, const std::string &text, std::string *error) {
  std::ofstream f(path, std::ios::binary);
  if (f)
    f << text;
  if (!f) {
    *error = "cannot write '" + path + "'";
    return false;
  }
  return true;
}

} // namespace tessera::conform
