// Construction helpers of the in-memory IR.
#include "ir/core/ir.h"

#include "ir/core/diagnostic.h"

#include <cassert>

namespace tessera::ir {

Value *Op::addResult(Type t, std::string name) {
  auto v = std::make_unique<Value>(t, std::move(name));
  v->def = this;
  v->index = static_cast<unsigned>(results.size());
  results.push_back(std::move(v));
  return results.back().get();
}

Value *Block::addArg(Type t, std::string name) {
  auto v = std::make_unique<Value>(t, std::move(name));
  v->owner = this;
  v->index = static_cast<unsigned>(args.size());
  args.push_back(std::move(v));
  return args.back().get();
}

Op *Block::append(std::unique_ptr<Op> op) {
  assert(op && "appending a null op");
  op->parent = this;
  for (auto &r : op->regions)
    r->parentOp = op.get();
  ops.push_back(std::move(op));
  return ops.back().get();
}

Op *Block::terminator() const {
  if (ops.empty())
    return nullptr;
  Op *last = ops.back().get();
  return last->info().form == OpForm::Terminator ? last : nullptr;
}

std::vector<Value *> Function::params() const {
  std::vector<Value *> out;
  for (auto &a : body->args)
    out.push_back(a.get());
  return out;
}

Function *Module::addFunction(bool isKernel, std::string name) {
  functions.push_back(std::make_unique<Function>(isKernel, std::move(name)));
  return functions.back().get();
}

Function *Module::lookup(std::string_view name) const {
  for (auto &f : functions)
    if (f->name == name)
      return f.get();
  return nullptr;
}

bool usesMatrixOps(const Function &f) {
  bool found = false;
  walk(*f.body, [&](const Op &op) { found |= isMatrixForm(op.info().form); });
  return found;
}

std::string unsupportedMatrixOps(const Module &m, std::string_view backend) {
  for (const auto &f : m.functions) {
    const Op *first = nullptr;
    walk(*f->body, [&](const Op &op) {
      if (!first && isMatrixForm(op.info().form))
        first = &op;
    });
    if (!first)
      continue;
    return Diagnostic{m.filename, first->loc,
                      "'" + std::string(first->info().name) +
                          "': matrix ops are not supported by the " + std::string(backend) +
                          " backend yet"}
        .str();
  }
  return {};
}

} // namespace tessera::ir
