// Reports of a conformance run: the summary matrix and failure list (text), JSON, JUnit and
// HTML.
//
// JSON (schema "tessera-conform/1"):
//   { "schema", "profile", "seed", "devices": [..], "seconds",
//     "counts": {"pass","fail","xfail","xpass","skip"},
//     "cases": [ {"case","op","dtype","shape","device","status","max_ulp","max_abs_err",
//                 "tolerance","seed"[, "message"][, "normwise_only"][, "failure":
//                 {"index","inputs","expected", "got","error"}]} ],
//     "findings": [ {"device","capability","detail","cases": [..]} ]
//     [, "strict": {"reference_device","compared","identical","unexplained","note",
//                   "differences": [ {"case","output","device","reference","count","index",
//                                     "inputs","reference_bits","device_bits","explained",
//                                     "reason"} ]}] }   (strict runs only)
// "shape" is [n]; numbers that are not finite (an infinite max_ulp, say) are null. Written with
// nlohmann::json: doubles round-trip exactly, bytes that are not UTF-8 become U+FFFD. JUnit: one <testsuite> per
// device, one <testcase classname="conform.DEVICE.OP" name="CASE"> per case.
#pragma once

#include "conformance/runner.h"

#include <cstdio>
#include <string>
#include <string_view>

namespace tessera::conform {

/// Rows = op families, columns = devices, cells = passed/total and worst ULP.
std::string summaryMatrix(const RunReport &r);
/// Every fail and xpass with op, dtype, shape, seed, first bad index, inputs, expected, got.
std::string failureList(const RunReport &r);
/// Capability findings, one line each, and the kernel cases that passed only normwise.
std::string findingList(const RunReport &r);

std::string toJson(const RunReport &r);
std::string toJunit(const RunReport &r);
/// One self-contained HTML page (report_html.cpp): a heat map of worst error / budget per
/// op x dtype x device, the findings, every failure with its inputs, the run's settings.
std::string toHtml(const RunReport &r);

/// `text` with & < > " escaped, control characters but newline and tab replaced by '?': safe
/// in XML and HTML text and attribute values.
std::string xmlEscape(std::string_view text);

/// Writes `text` to `path`; false with `error` set on failure.
bool writeFile(const std::string &path, const std::string &text, std::string *error);

} // namespace tessera::conform
