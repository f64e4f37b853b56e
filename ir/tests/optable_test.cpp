// The op table (ir/core/ops.def) is the single source of truth; docs/ir.md's precision table
// must say exactly the same thing. This test reads the markdown and compares every cell.
#include "ir/core/ops.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

namespace tessera::ir {
namespace {

std::vector<std::string> splitCells(const std::string &line) {
  std::vector<std::string> cells;
  std::stringstream ss(line);
  std::string cell;
  while (std::getline(ss, cell, '|')) {
    size_t b = cell.find_first_not_of(' '), e = cell.find_last_not_of(' ');
    cells.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
  }
  return cells;
}

TEST(OpTable, DocsPrecisionTableMatchesOpsDef) {
  std::ifstream f(std::string(TESSERA_SOURCE_DIR) + "/docs/ir.md");
  ASSERT_TRUE(f) << "docs/ir.md not found";
  std::string line;
  bool inTable = false;
  std::set<std::string> documented;
  while (std::getline(f, line)) {
    if (line.rfind("| op | f16 | bf16 | f32 | f64 |", 0) == 0) {
      inTable = true;
      continue;
    }
    if (!inTable || line.rfind("|---", 0) == 0)
      continue;
    if (line.empty() || line[0] != '|')
      break;
    auto cells = splitCells(line); // "", ops, f16, bf16, f32, f64
    ASSERT_EQ(cells.size(), 6u) << line;
    std::stringstream names(cells[1]);
    std::string name;
    while (names >> name) {
      auto kind = lookupOp(name);
      ASSERT_TRUE(kind) << "docs/ir.md lists unknown op '" << name << "'";
      const OpInfo &info = opInfo(*kind);
      const Scalar types[] = {Scalar::F16, Scalar::BF16, Scalar::F32, Scalar::F64};
      for (int t = 0; t < 4; ++t) {
        auto budget = info.ulpBudget(types[t]);
        ASSERT_TRUE(budget) << name << " has no budget in ops.def";
        EXPECT_DOUBLE_EQ(*budget, std::stod(cells[2 + t]))
            << name << " " << scalarName(types[t]) << ": docs/ir.md and ops.def disagree";
      }
      EXPECT_TRUE(documented.insert(name).second) << name << " listed twice";
    }
  }
  ASSERT_TRUE(inTable) << "precision table not found in docs/ir.md";
  for (const OpInfo &info : allOps())
    if (info.ulpBudget(Scalar::F32))
      EXPECT_TRUE(documented.count(std::string(info.name)))
          << "op '" << info.name << "' has a budget in ops.def but is missing from docs/ir.md";
}

TEST(OpTable, LookupIsTheInverseOfName) {
  for (const OpInfo &info : allOps()) {
    auto k = lookupOp(info.name);
    ASSERT_TRUE(k) << info.name;
    EXPECT_EQ(opInfo(*k).name, info.name);
    EXPECT_EQ(&opInfo(info.kind), &info);
  }
  EXPECT_FALSE(lookupOp("no_such_op"));
}

TEST(OpTable, TranscendentalBudgetsFollowOpenCLFullProfile) {
  // Spot checks of the OpenCL C 3.0 full-profile single precision column.
  EXPECT_EQ(*opInfo(OpKind::Exp).ulpBudget(Scalar::F32), 3);
  EXPECT_EQ(*opInfo(OpKind::Sin).ulpBudget(Scalar::F32), 4);
  EXPECT_EQ(*opInfo(OpKind::Tan).ulpBudget(Scalar::F32), 5);
  EXPECT_EQ(*opInfo(OpKind::Div).ulpBudget(Scalar::F32), 2.5);
  EXPECT_EQ(*opInfo(OpKind::Pow).ulpBudget(Scalar::F32), 16);
  EXPECT_EQ(*opInfo(OpKind::Sqrt).ulpBudget(Scalar::F64), 0);
  EXPECT_FALSE(opInfo(OpKind::And).ulpBudget(Scalar::F32));
  EXPECT_FALSE(opInfo(OpKind::Exp).ulpBudget(Scalar::I32));
}

} // namespace
} // namespace tessera::ir
