// Text, JSON and JUnit reports of a conformance run.
#include "conformance/report.h"

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

namespace tessera::conform {
namespace {

std::string jsonEscape(std::string_view s) {
  std::string o;
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
    case '"':
      o += "\\\"";
      break;
    case '\\':
      o += "\\\\";
      break;
    case '\n':
      o += "\\n";
      break;
    case '\t':
      o += "\\t";
      break;
    default:
      if (c < 0x20) {
        char b[8];
        std::snprintf(b, sizeof b, "\\u%04x", c);
        o += b;
      } else {
        o += ch;
      }
    }
  }
  return o;
}

std::string jstr(std::string_view s) { return "\"" + jsonEscape(s) + "\""; }

std::string jnum(double d) {
  if (!std::isfinite(d))
    return "null";
  char b[32];
  std::snprintf(b, sizeof b, "%.17g", d);
  return b;
}

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
static std::string strictJson(const RunReport &r) {
  if (!r.strict)
    return "";
  std::ostringstream os;
  os << ",\n  \"strict\": {\"reference_device\": " << jstr(r.devices.empty() ? "" : r.devices[0])
     << ", \"compared\": " << r.strictCompared << ", \"identical\": " << r.strictIdentical
     << ", \"unexplained\": " << r.unexplainedStrictDiffs() << ", \"note\": " << jstr(r.strictNote)
     << ", \"differences\": [";
  for (size_t i = 0; i < r.strictDiffs.size(); ++i) {
    const StrictDiff &d = r.strictDiffs[i];
    os << (i ? ",\n" : "\n") << "    {\"case\": " << jstr(d.caseId)
       << ", \"output\": " << jstr(d.output) << ", \"device\": " << jstr(d.device)
       << ", \"reference\": " << jstr(d.reference) << ", \"count\": " << d.count
       << ", \"index\": " << d.index << ", \"inputs\": " << jstr(d.inputs)
       << ", \"reference_bits\": " << jstr(d.referenceBits)
       << ", \"device_bits\": " << jstr(d.deviceBits)
       << ", \"explained\": " << (d.explained ? "true" : "false")
       << ", \"reason\": " << jstr(d.reason) << "}";
  }
  os << "]}";
  return os.str();
}

std::string toJson(const RunReport &r) {
  std::ostringstream os;
  os << "{\n  \"schema\": \"tessera-conform/1\",\n  \"profile\": " << jstr(r.profile)
     << ",\n  \"seed\": " << r.seed << ",\n  \"devices\": [";
  for (size_t i = 0; i < r.devices.size(); ++i)
    os << (i ? ", " : "") << jstr(r.devices[i]);
  os << "],\n  \"seconds\": " << jnum(r.seconds) << ",\n  \"counts\": {";
  const char *statuses[] = {"pass", "fail", "xfail", "xpass", "skip"};
  for (int i = 0; i < 5; ++i)
    os << (i ? ", " : "") << jstr(statuses[i]) << ": " << r.count(statuses[i]);
  os << "},\n  \"cases\": [";
  for (size_t i = 0; i < r.results.size(); ++i) {
    const CaseResult &c = r.results[i];
    os << (i ? ",\n" : "\n") << "    {\"case\": " << jstr(c.id) << ", \"op\": " << jstr(c.op)
       << ", \"variant\": " << jstr(c.variant) << ", \"dtype\": " << jstr(c.dtype)
       << ", \"shape\": [" << c.n << "], \"device\": " << jstr(c.device)
       << ", \"status\": " << jstr(c.status) << ", \"max_ulp\": " << jnum(c.maxUlp)
       << ", \"max_abs_err\": " << jnum(c.maxAbs) << ", \"tolerance\": " << jnum(c.tolerance)
       << ", \"seed\": " << c.seed;
    if (!c.message.empty())
      os << ", \"message\": " << jstr(c.message);
    if (c.normwiseOnly > 0)
      os << ", \"normwise_only\": " << c.normwiseOnly;
    const Judgement &j = c.judgement;
    if (j.firstBad >= 0)
      os << ", \"failure\": {\"index\": " << j.firstBad << ", \"bad_count\": " << j.badCount
         << ", \"inputs\": " << jstr(j.inputs) << ", \"expected\": " << jstr(j.expected)
         << ", \"got\": " << jstr(j.got) << ", \"error\": " << jnum(j.error) << "}";
    os << "}";
  }
  os << "\n  ],\n  \"findings\": [";
  for (size_t i = 0; i < r.findings.size(); ++i) {
    const Finding &f = r.findings[i];
    os << (i ? ",\n" : "\n") << "    {\"device\": " << jstr(f.device)
       << ", \"capability\": " << jstr(f.capability) << ", \"detail\": " << jstr(f.detail)
       << ", \"cases\": [";
    for (size_t k = 0; k < f.cases.size(); ++k)
      os << (k ? ", " : "") << jstr(f.cases[k]);
    os << "]}";
  }
  os << "\n  ]" << strictJson(r) << ",\n  \"skipped_backends\": [";
  for (size_t i = 0; i < r.skippedBackends.size(); ++i)
    os << (i ? ",\n" : "\n") << "    {\"backend\": " << jstr(r.skippedBackends[i].first)
       << ", \"reason\": " << jstr(r.skippedBackends[i].second) << "}";
  os << "\n  ]\n}\n";
  return os.str();
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
