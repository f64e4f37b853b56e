// Parser of the kernel IR text format, part 3: the matrix type `matrix<T, R, C, U>` and the
// subgroup-scope matrix ops (docs/ir.md "Matrix ops"):
//
//   %m = matrix_load[.col] %A[%off] stride %ld [bounds %rows, %cols] : matrix<T, R, C, U>
//   matrix_store[.col] %m, %A[%off] stride %ld [bounds %rows, %cols] : matrix<T, R, C, U>
//   %m = matrix_fill %v : matrix<T, R, C, U>
//   %d = matrix_mad %a, %b, %c : matrix<..., a>, matrix<..., b>, matrix<..., acc>
//   %r = matrix_map(%x = %m1, ...) -> matrix<T, R, C, acc> { ... yield %v }
//
// The parser checks what the text alone decides (syntax, a valid matrix type, annotations
// that agree with the operands they describe); shape and element-type rules between
// operands are the verifier's (verify_matrix.cpp), so that IR built in C++ gets them too.
// Must never crash, throw or assert on user input.
#include "ir/text/parser_impl.h"

namespace tessera::ir::text {

bool Parser::parseMatrixType(Type &t) {
  const Token &kw = cur();
  if (!kw.isIdent("matrix"))
    return expected("a matrix type 'matrix<T, R, C, U>'");
  take();
  Scalar elem;
  if (!expect(Tok::Less, "'<'") || !parseScalarType(elem))
    return false;
  int64_t dims[2] = {0, 0};
  for (int64_t &d : dims) {
    if (!expect(Tok::Comma, "','"))
      return false;
    const Token &n = cur();
    if (!n.is(Tok::Int))
      return expected(&d == dims ? "the number of rows" : "the number of columns");
    if (n.negative || n.magnitude > 128 || !isValidMatrixDim(static_cast<int64_t>(n.magnitude)))
      return errorAt(n, std::string("matrix ") + (&d == dims ? "rows" : "columns") +
                            " must be one of 8, 16, 32, 64, 128, got " + std::string(n.text));
    d = static_cast<int64_t>(n.magnitude);
    take();
  }
  if (!expect(Tok::Comma, "','"))
    return false;
  const Token &u = cur();
  if (!u.is(Tok::Ident))
    return expected("a matrix use ('a', 'b' or 'acc')");
  auto use = parseMatrixUse(u.text);
  if (!use)
    return errorAt(u, "unknown matrix use " + describe(u) + " (expected 'a', 'b' or 'acc')");
  take();
  if (!expect(Tok::Greater, "'>'"))
    return false;
  t = Type::matrix(elem, static_cast<int>(dims[0]), static_cast<int>(dims[1]), *use);
  if (std::string why = matrixTypeError(t); !why.empty())
    return errorAt(kw, "invalid type " + toString(t) + ": " + why);
  return true;
}

/// `%A[%off] stride %ld [bounds %rows, %cols]`: appends mem, off, ld [, rows, cols].
bool Parser::parseMatrixAccess(Op &op, std::vector<const Token *> &toks) {
  if (!parseMemRef(op, toks) || !expectKeyword("stride") || !parseOperands(op, toks, 1))
    return false;
  if (!cur().isIdent("bounds"))
    return true;
  take();
  return parseOperands(op, toks, 2);
}

bool Parser::parseMatrixOp(Op &op) {
  std::vector<const Token *> toks;
  std::string name = "'" + std::string(op.info().name) + "'";
  // The annotation: one matrix type that must equal operand `same` (if any).
  auto annotation = [&](Type &t, size_t same, Tok before = Tok::Colon) {
    if (!expect(before, before == Tok::Colon ? "':'" : "','"))
      return false;
    Loc annLoc = cur().loc;
    if (!cur().isIdent("matrix"))
      return errorAt(cur(), name + " needs a matrix<T, R, C, U> type, got " + describe(cur()));
    if (!parseMatrixType(t))
      return false;
    if (same == SIZE_MAX || op.operands[same]->type == t)
      return true;
    return error(annLoc, "type " + toString(t) + " does not match " +
                             std::string(toks[same]->text) + " (" +
                             toString(op.operands[same]->type) + ")");
  };
  Type t;
  switch (op.info().form) {
  case OpForm::MatrixLoad:
    if (!parseMatrixAccess(op, toks) || !annotation(t, SIZE_MAX))
      return false;
    op.addResult(t);
    return true;
  case OpForm::MatrixStore:
    return parseOperands(op, toks, 1) && expect(Tok::Comma, "','") && parseMatrixAccess(op, toks) &&
           annotation(t, 0);
  case OpForm::MatrixFill:
    if (!parseOperands(op, toks, 1) || !annotation(t, SIZE_MAX))
      return false;
    op.addResult(t);
    return true;
  case OpForm::MatrixMad: {
    if (!parseOperands(op, toks, 3))
      return false;
    Type ts[3];
    for (size_t i = 0; i < 3; ++i)
      if (!annotation(ts[i], i, i ? Tok::Comma : Tok::Colon))
        return false;
    op.addResult(ts[2]);
    return true;
  }
  case OpForm::MatrixMap:
    return parseMatrixMap(op);
  default:
    return error(op.loc, name + " is not a matrix op (parser bug)");
  }
}

bool Parser::parseMatrixMap(Op &op) {
  std::vector<const Token *> names, toks;
  if (!parseBindings(names, op.operands, toks, "a region argument"))
    return false;
  std::vector<ArgDecl> args;
  for (size_t i = 0; i < names.size(); ++i) {
    const Type &t = op.operands[i]->type;
    if (!t.isMatrix())
      return errorAt(*toks[i], "'matrix_map' operand " + std::string(toks[i]->text) +
                                   " is not a matrix (it has type " + toString(t) + ")");
    args.emplace_back(names[i], Type::scalar(t.elem));
  }
  Type t;
  if (!expect(Tok::Arrow, "'->'") || !parseMatrixType(t))
    return false;
  op.addResult(t);
  return parseRegion(op, RegionKind::MatrixMap, args, /*needsValues=*/true);
}

} // namespace tessera::ir::text
