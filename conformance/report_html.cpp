// The HTML report of a conformance run (`tessera conform --html FILE`): one self-contained
// page — inline CSS and a few lines of inline JS, no fonts, images or scripts from the
// network — with a heat map of worst error / budget per op x dtype x device, the findings,
// every failure with its inputs, and the run's settings. It must stay readable without JS
// (the script only adds a legend count and a marker tests look for).
#include "conformance/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

namespace tessera::conform {
namespace {

std::string esc(std::string_view s) { return xmlEscape(s); }

std::string num(double d, const char *fmt = "%.3g") {
  if (std::isnan(d))
    return "nan";
  if (std::isinf(d))
    return d > 0 ? "inf" : "-inf";
  char b[40];
  std::snprintf(b, sizeof b, fmt, d);
  return b;
}

// One heat-map cell: every case of one op, dtype and device.
struct Cell {
  int total = 0, passed = 0, failed = 0;
  double worstRatio = 0; // worst max_ulp / tolerance over its judged cases
  double worstUlp = 0, tolerance = 0;
  bool exactMismatch = false; // a failing case with tolerance 0 (exact comparison)
  std::string worstCase;
};

// The case's error as a fraction of its budget: 0 .. 1 passes, > 1 is over budget. Exact
// comparisons (tolerance 0) have no ratio: 0 when they pass, 2 (off the scale) when not. A
// passing kernel case may exceed its elementwise budget (normwise, summation allowance): 1.
double ratioOf(const CaseResult &c) {
  bool bad = c.status == "fail" || c.status == "xfail";
  if (c.tolerance <= 0)
    return bad ? 2 : 0;
  double r = std::isfinite(c.maxUlp) ? c.maxUlp / c.tolerance : 2;
  return bad ? std::max(r, 1.0001) : std::min(r, 1.0);
}

// Green (0) through yellow (1) to red (> 1): failing cells are always the red end.
std::string colour(const Cell &c) {
  if (c.failed > 0)
    return "hsl(0,75%,55%)";
  double r = std::clamp(c.worstRatio, 0.0, 1.0);
  return "hsl(" + num(120 - 75 * r, "%.0f") + ",65%," + num(72 - 12 * r, "%.0f") + "%)";
}

std::string heatMap(const RunReport &r) {
  // rows: op; columns: (dtype, device).
  std::map<std::string, std::map<std::pair<std::string, std::string>, Cell>> rows;
  std::set<std::string> dtypes;
  for (const CaseResult &c : r.results) {
    if (c.status == "skip")
      continue;
    // Kernels keep their file as the row; conversions their source type, so that the columns
    // stay the scalar types (destination) rather than every pair.
    std::string row = c.op == "kernel" ? "kernel " + c.variant : c.op, dtype = c.dtype;
    if (size_t arrow = dtype.find("->"); arrow != std::string::npos) {
      row += " from " + dtype.substr(0, arrow);
      dtype = dtype.substr(arrow + 2);
    }
    dtypes.insert(dtype);
    Cell &cell = rows[row][{dtype, c.device}];
    ++cell.total;
    cell.passed += c.status == "pass" || c.status == "xpass";
    cell.failed += c.status == "fail" || c.status == "xfail";
    double ratio = ratioOf(c);
    if (ratio >= cell.worstRatio) {
      cell.worstRatio = ratio;
      cell.worstUlp = c.maxUlp;
      cell.tolerance = c.tolerance;
      cell.worstCase = c.id;
    }
  }
  std::ostringstream os;
  os << "<table class=\"heat\"><thead><tr><th rowspan=\"2\">op</th>";
  for (const std::string &d : r.devices)
    os << "<th colspan=\"" << dtypes.size() << "\">" << esc(d) << "</th>";
  os << "</tr><tr>";
  for (size_t i = 0; i < r.devices.size(); ++i)
    for (const std::string &t : dtypes)
      os << "<th>" << esc(t) << "</th>";
  os << "</tr></thead><tbody>\n";
  for (const auto &[op, cells] : rows) {
    os << "<tr><th class=\"op\">" << esc(op) << "</th>";
    for (const std::string &d : r.devices)
      for (const std::string &t : dtypes) {
        auto it = cells.find({t, d});
        if (it == cells.end()) {
          os << "<td class=\"none\"></td>";
          continue;
        }
        const Cell &c = it->second;
        std::string label = c.tolerance > 0 ? num(c.worstRatio, "%.2f") : c.failed ? "x" : "=";
        std::string tip = op + (op.find(" from ") != std::string::npos ? " to " : " ") + t +
                          " on " + d + ": " + std::to_string(c.passed) + "/" +
                          std::to_string(c.total) + " pass; worst " + num(c.worstUlp) +
                          " ulp / budget " + (c.tolerance > 0 ? num(c.tolerance) : "exact") + " (" +
                          c.worstCase + ")";
        os << "<td class=\"cell\" style=\"background:" << colour(c) << "\" title=\"" << esc(tip)
           << "\" data-ratio=\"" << num(c.worstRatio, "%.4g") << "\">" << esc(label) << "</td>";
      }
    os << "</tr>\n";
  }
  os << "</tbody></table>\n";
  return os.str();
}

std::string failureTable(const RunReport &r) {
  std::ostringstream os;
  int n = 0;
  for (const CaseResult &c : r.results) {
    if (c.status != "fail" && c.status != "xpass" && c.status != "xfail")
      continue;
    if (n++ == 0)
      os << "<table class=\"list\"><thead><tr><th>status</th><th>case</th><th>device</th>"
            "<th>seed</th><th>index</th><th>inputs</th><th>expected</th><th>got</th>"
            "<th>error (ulp)</th><th>budget</th><th>message</th></tr></thead><tbody>\n";
    const Judgement &j = c.judgement;
    bool el = j.firstBad >= 0 && !j.expected.empty();
    os << "<tr class=\"" << esc(c.status) << "\"><td>" << esc(c.status) << "</td><td>" << esc(c.id)
       << "</td><td>" << esc(c.device) << "</td><td>" << c.seed << "</td><td>"
       << (j.firstBad >= 0 ? std::to_string(j.firstBad) : "") << "</td><td class=\"mono\">"
       << (el ? esc(j.inputs) : "") << "</td><td class=\"mono\">" << (el ? esc(j.expected) : "")
       << "</td><td class=\"mono\">" << (el ? esc(j.got) : "") << "</td><td>"
       << (el ? num(j.error) : num(c.maxUlp)) << "</td><td>" << num(c.tolerance) << "</td><td>"
       << esc(c.message) << "</td></tr>\n";
  }
  if (n == 0)
    return "<p class=\"ok\">No failures.</p>\n";
  return os.str() + "</tbody></table>\n";
}

std::string findingTable(const RunReport &r) {
  std::ostringstream os;
  std::vector<const CaseResult *> normwise;
  for (const CaseResult &c : r.results)
    if (c.normwiseOnly > 0)
      normwise.push_back(&c);
  if (r.findings.empty() && normwise.empty())
    return "<p>No capability findings.</p>\n";
  os << "<table class=\"list\"><thead><tr><th>device</th><th>finding</th><th>detail</th>"
        "<th>cases</th></tr></thead><tbody>\n";
  for (const Finding &f : r.findings) {
    std::string cases;
    for (const std::string &c : f.cases)
      cases += (cases.empty() ? "" : ", ") + c;
    os << "<tr><td>" << esc(f.device) << "</td><td>" << esc(f.capability) << "</td><td>"
       << esc(f.detail) << "</td><td>" << esc(cases) << "</td></tr>\n";
  }
  for (const CaseResult *c : normwise) // outputs that passed only by the normwise arm
    os << "<tr><td>" << esc(c->device) << "</td><td>passed-only-normwise</td><td>"
       << esc(c->message) << "</td><td>" << esc(c->id) << "</td></tr>\n";
  return os.str() + "</tbody></table>\n";
}

std::string settingsTable(const RunReport &r) {
  std::string devices, filters;
  for (const std::string &d : r.devices)
    devices += (devices.empty() ? "" : ", ") + d;
  for (const std::string &f : r.filters)
    filters += (filters.empty() ? "" : " ") + f;
  std::ostringstream os;
  auto row = [&](const char *k, const std::string &v) {
    os << "<tr><th>" << k << "</th><td>" << esc(v) << "</td></tr>\n";
  };
  os << "<table class=\"settings\">\n";
  row("tessera", r.version);
  row("started (UTC)", r.started);
  row("seconds", num(r.seconds, "%.1f"));
  row("profile", r.profile);
  row("seed", std::to_string(r.seed));
  row("devices", devices);
  row("filter", filters.empty() ? "(none: every case)" : filters);
  for (const auto &[backend, reason] : r.skippedBackends)
    row(("skipped backend " + backend).c_str(), reason);
  os << "</table>\n";
  return os.str();
}

constexpr const char *kStyle = R"(<style>
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;background:#fff}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ccc}
.counts span{display:inline-block;padding:.2em .7em;margin-right:.4em;border-radius:3px;color:#fff}
.pass{background:#2e8b57}.fail{background:#c0392b}.xfail{background:#8e6c00}
.xpass{background:#8e44ad}.skip{background:#7f8c8d}
table{border-collapse:collapse}th,td{border:1px solid #ddd;padding:2px 6px}
table.heat td.cell{min-width:2.6em;text-align:center;font-size:12px;cursor:default}
table.heat td.none{background:#f4f4f4}table.heat th.op{text-align:left}
table.list tr.fail td,table.list tr.xpass td{background:#fdecea}
table.list tr.xfail td{background:#fff8e1}.mono{font-family:monospace;font-size:12px}
.legend span.sw{display:inline-block;width:2.4em;text-align:center;border:1px solid #ccc}
.ok{color:#2e8b57}
</style>)";

} // namespace

std::string toHtml(const RunReport &r) {
  std::ostringstream os;
  os << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
     << "<title>tessera conform: " << r.results.size() << " cases</title>\n"
     << kStyle << "\n</head><body>\n<h1>tessera conform</h1>\n<p class=\"counts\">";
  for (const char *s : {"pass", "fail", "xfail", "xpass", "skip"})
    os << "<span class=\"" << s << "\">" << r.count(s) << " " << s << "</span>";
  os << "</p>\n<h2>Worst error / budget</h2>\n"
     << "<p class=\"legend\">Each cell: the worst case's max ULP error divided by its budget "
        "(hover for the numbers; a passing case over its elementwise budget, by the relaxed "
        "profile, the normwise arm or a summation allowance, shows 1). <span class=\"sw\" "
        "style=\"background:hsl(120,65%,72%)\">0</span> "
        "<span class=\"sw\" style=\"background:hsl(45,65%,60%)\">1</span> "
        "<span class=\"sw\" style=\"background:hsl(0,75%,55%)\">&gt;1</span> failing; "
        "<b>=</b> exact comparison passed, <b>x</b> exact comparison failed. "
        "<span id=\"cellcount\"></span></p>\n"
     << heatMap(r) << "<h2>Findings</h2>\n"
     << findingTable(r) << "<h2>Failures</h2>\n"
     << failureTable(r) << "<h2>Settings</h2>\n"
     << settingsTable(r)
     << "<script>\n(function () {\n"
        "  var cells = document.querySelectorAll('td.cell');\n"
        "  var over = 0;\n"
        "  for (var i = 0; i < cells.length; i++)\n"
        "    if (parseFloat(cells[i].getAttribute('data-ratio')) > 1) over++;\n"
        "  document.getElementById('cellcount').textContent =\n"
        "      cells.length + ' cells, ' + over + ' over budget.';\n"
        "  document.body.setAttribute('data-rendered', 'ok');\n"
        "})();\n</script>\n</body></html>\n";
  return os.str();
}

} // namespace tessera::conform
