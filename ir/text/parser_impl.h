// Internals of the kernel IR parser shared by its translation units (parser.cpp: module
// items, signatures, launch specs, types, literals and names; parser_ops.cpp: ops and
// regions; parser_matrix.cpp: matrix types and ops). Must never be included outside ir/text/.
//
// Every parse function returns false after recording exactly one error; the first error
// wins and parsing stops. Nothing here may throw, assert on user input or recurse without
// the region-depth bound (kMaxDepth).
#pragma once

#include "ir/core/diagnostic.h"
#include "ir/core/ir.h"
#include "ir/core/limits.h"
#include "ir/text/lexer.h"
#include "ir/text/parser.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tessera::ir::text {

/// Regions nested deeper than this are rejected (bounds the parser's recursion).
constexpr int kMaxDepth = kMaxRegionDepth;

/// Which construct a block belongs to: decides the terminators allowed in it and the one
/// added when it has none.
enum class RegionKind : uint8_t { Function, For, If, WhileBefore, WhileAfter, MatrixMap };

/// A kernel or function header: `kernel @k(%a: T, ...)` / `func @f(...) -> (T, ...)`.
struct Signature {
  const Token *keyword = nullptr;
  const Token *name = nullptr;
  bool isKernel = false;
  std::vector<std::pair<const Token *, Type>> params;
  std::vector<Type> results;
};

/// A block argument to create: its name token and type.
using ArgDecl = std::pair<const Token *, Type>;

/// Rounds a finite or non-finite double to the nearest value of float type `s`
/// (ties to even, overflow to infinity, subnormals kept); identity for f64.
double roundToFloatType(double x, Scalar s);

class Parser {
public:
  Parser(std::string_view text, std::string filename);
  ParseResult run(bool verify);

  // --- tokens and errors (parser.cpp)
  const Token &cur() const { return toks_[pos_]; }
  const Token &take() {
    const Token &t = toks_[pos_];
    if (pos_ + 1 < toks_.size())
      ++pos_;
    return t;
  }
  bool error(Loc loc, std::string message);
  /// Reports at `t`; an Error token reports the lexer's message instead.
  bool errorAt(const Token &t, std::string message);
  /// "expected WHAT, got <current token>" at the current token.
  bool expected(std::string_view what);
  bool expect(Tok kind, std::string_view what);
  bool expectKeyword(std::string_view keyword);

  // --- types, literals, names (parser.cpp)
  bool parseType(Type &t);
  /// `matrix<T, R, C, U>`, its element type, shape and use checked (parser_matrix.cpp).
  bool parseMatrixType(Type &t);
  bool parseScalarType(Scalar &s);
  /// `T` or `(T, ...)`.
  bool parseTypeList(std::vector<Type> &types);
  /// Converts a literal token to a value of scalar type `s` (range-checked, rounded).
  bool convertLiteral(const Token &t, Scalar s, Literal &out);
  /// Parses `%name` and resolves it among the visible values.
  bool parseUse(Value *&v, const Token **tok = nullptr);
  /// Records a new value name of the current function; reports a redefinition.
  bool declareName(const Token &t);
  /// Makes `v` visible under `t`'s name in the innermost scope.
  void bind(const Token &t, Value *v);
  static std::string hint(const Token &t);

  // --- ops and regions (parser_ops.cpp)
  bool parseBlockBody(Block &b, RegionKind kind, bool needsValues);
  bool parseRegion(Op &op, RegionKind kind, const std::vector<ArgDecl> &args, bool needsValues);
  bool parseOp(Block &b, RegionKind kind);

private:
  void prescan();
  bool parseItem();
  bool parseSignature(Signature &sig);
  bool parseFunction();
  bool parseLaunch();
  bool parseDims(std::array<uint32_t, 3> &dims);
  bool parseInit(const Signature &sig, std::vector<ArgInit> &inits,
                 std::vector<const Token *> &seen);
  bool parseGenerator(ArgInit &init);
  bool parseNumber(double &v, IntParam *exact = nullptr);

  // ops helpers (parser_ops.cpp)
  bool parseMnemonic(OpKind &kind, Mods &mods, Loc &predLoc, bool &hasPred);
  bool parseOperands(Op &op, std::vector<const Token *> &toks, size_t n);
  bool parseMemRef(Op &op, std::vector<const Token *> &toks);
  bool checkAnnotation(const Op &op, const std::vector<const Token *> &toks, size_t first,
                       size_t last, Type t, Loc annLoc, size_t memIndex = SIZE_MAX);
  /// `(%name = %value, ...)`: declares each name; `what` names one binding in errors.
  bool parseBindings(std::vector<const Token *> &names, std::vector<Value *> &values,
                     std::vector<const Token *> &valueToks, std::string_view what);
  bool parseIterList(std::vector<const Token *> &names, std::vector<Value *> &inits);
  bool parseSimpleOp(Op &op, Loc predLoc);
  bool parseFor(Op &op, std::vector<const Token *> &results);
  bool parseIf(Op &op, const Token &mnemonic, std::vector<const Token *> &results);
  bool parseWhile(Op &op, std::vector<const Token *> &results);
  bool parseCall(Op &op);
  bool parseTerminator(Op &op, RegionKind kind, const Token &mnemonic);
  bool nameResults(Op &op, const std::vector<const Token *> &results);
  // matrix ops (parser_matrix.cpp)
  bool parseMatrixOp(Op &op);
  bool parseMatrixAccess(Op &op, std::vector<const Token *> &toks);
  bool parseMatrixMap(Op &op);

  std::string filename_;
  std::string lexError_; // the message of the Error token, if the input has one
  std::vector<Token> toks_;
  size_t pos_ = 0;
  bool failed_ = false;
  Diagnostic diag_;
  std::unique_ptr<Module> module_;
  std::unordered_map<std::string_view, Signature> sigs_;
  std::vector<std::pair<std::string_view, LaunchSpec>> launches_;
  // Per function: every value name defined so far, and the visible ones per region.
  std::unordered_map<std::string_view, Loc> defined_;
  std::vector<std::unordered_map<std::string_view, Value *>> scopes_;
  int depth_ = 0;
  // Ops parsed so far in the current function and in the module (ir/core/limits.h): the
  // parser stops at the limit, so a huge module is refused before it is all built.
  size_t functionOps_ = 0, moduleOps_ = 0;
};

} // namespace tessera::ir::text
