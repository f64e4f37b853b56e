"""The steady state of one plan as one generated Python function (as Inductor's wrapper code).

CompiledFx runs a plan as a list of step objects over a dict of FX node -> value: per call a
method dispatch, a dict store and a stride check per input of every segment. After a plan's
first call, `build` turns it into straight-line code over local variables: each torch step a
direct call with its constant arguments bound, each segment one `run_torch` of the
CompiledGraph its last call used, and its outputs unpacked into locals. What the generic
path checks every call is checked here only where it can change:

- Strides: the plan's key fixes every graph input's strides, so views of inputs, segment
  outputs (row-major) and views of those have the same strides on every call. Only a
  segment input that follows from a fallback op (eager torch: its layout is torch's choice)
  or a get_attr is compared with the strides of the generating call; a difference runs that
  segment by the generic path (SegmentRunner.run, which compiles the new layout).
- Negation bits: a segment input that is not a segment output (or a view of one) passes
  through `positive` (torch's lazy negation of `x.conj().imag` is a flag DLPack cannot carry).
- Errors: a run-time error of a segment that the generic path turns into an eager fallback
  (UNIMPLEMENTED, RESOURCE_EXHAUSTED without strict) runs that segment by the generic path,
  which falls back; every other error propagates as it would there.
- Output layouts: only the returned values whose eager strides can differ from what was
  computed are compared; a difference finishes the call by the generic relayout
  (CompiledFx._outputs).

The generic path stays the reference: a plan with a step it does not know (a segment that
fell back to eager, tuple outputs of a segment, scalar parameters, explain's recorder) is
never generated, and a segment that falls back later drops the generated function.
"""

from __future__ import annotations

import operator

import torch

from .translate import (VIEW_OPS, Relayout, TorchStep, _dense, _packet, as_traced, eager_laid,
                        positive)


class _Names:
    """Local variable names of FX nodes, and the generated function's globals."""

    def __init__(self):
        self.local = {}     # FX node -> local name
        self.globals = {"_relaid": eager_laid, "_pos": positive}

    def var(self, node):
        name = self.local.get(node)
        if name is None:
            name = self.local[node] = f"v{len(self.local)}"
        return name

    def const(self, value, prefix="k"):
        name = f"{prefix}{len(self.globals)}"
        self.globals[name] = value
        return name


def _step_line(step: TorchStep, names: _Names, expr) -> str:
    target, args, kwargs, slots = step.call_parts()
    parts = [names.const(a) for a in args]
    for i, n in slots:
        parts[i] = expr(n)
    if kwargs:
        parts.append("**" + names.const(kwargs))
    call = f"{names.const(target, 'f')}({', '.join(parts)})"
    if step.dtypes is not None:
        call = f"{names.const(as_traced, 'f')}({call}, {names.const(step.dtypes)})"
    return f"{names.var(step.node)} = {call}"


def build(cfx, entry, tessera_error, run_fallback_codes):
    """The generated function for `entry` = [plan, program, fixes, ...] of CompiledFx `cfx`,
    after a generic call of it; None when the plan has a step it does not cover."""
    plan, program, fixes = entry[0], entry[1], entry[2]
    names = _Names()
    g = names.globals
    implied = set(cfx.placeholders)   # nodes whose strides the key fixes
    fresh = set()                     # segment outputs and views of them: no negation bit
    body = []

    def expr(node):
        if node in plan.constants:
            return names.const(plan.constants[node])
        return names.local.get(node) or names.var(node)

    placeholders = [names.var(p) for p in cfx.placeholders]
    body.append(f"({', '.join(placeholders)}{',' if placeholders else ''}) = args")
    for node, target in cfx.get_attrs:
        body.append(f"{names.var(node)} = getattr(_gm, {target!r})")
    g["_gm"] = cfx.gm

    def torch_step(step, indent="    "):
        if isinstance(step, Relayout):
            v = expr(step.node)
            body.append(f"{indent}{v} = _relaid({v}, {names.const(step.strides)})")
            return True
        if not isinstance(step, TorchStep) or step.call_parts() is None:
            return False
        body.append(indent + _step_line(step, names, expr))
        node = step.node
        if not step.fallback and (_packet(node.target) in VIEW_OPS
                                  or node.target is operator.getitem):
            if all(a in implied for a in node.all_input_nodes):
                implied.add(node)
            if node.all_input_nodes and all(a in fresh for a in node.all_input_nodes):
                fresh.add(node)
        return True

    for si, step in enumerate(program):
        if not hasattr(step, "seg"):   # a TorchStep or Relayout of the plan
            if not torch_step(step, ""):
                return None
            continue
        runner = step
        if not runner.seg.outputs:
            for r in runner.seg.replays:
                if not torch_step(r, ""):
                    return None
            continue
        if (runner.failed is not None or runner.last is None or not runner.host_visible
                or runner.out_nodes is None or runner.scalars or runner.keep_inputs):
            return None
        seg = names.const(runner, "seg")
        cg_run = names.const(runner.last[1].run_torch, "run")
        inputs = [expr(n) if n in fresh else f"_pos({expr(n)})" for n in runner.params]
        guards = [f"{expr(n)}.stride() == {names.const(s)}"
                  for n, s in zip(runner.params, runner.last[0]) if n not in implied]
        outs = [names.var(n) for n in runner.out_nodes]
        body.append(f"i = [{', '.join(inputs)}]")
        body.append("o = None")
        body.append(f"if {' and '.join(guards) or 'True'}:")
        body.append("    try:")
        body.append(f"        o = {cg_run}(i)")
        body.append("    except _TesseraError as e:")
        body.append(f"        if {seg}.strict or e.code not in _FALLBACK_CODES:")
        body.append("            raise")
        body.append("if o is None:")
        # the generic path for this segment (a new layout, or its fallback to eager), over
        # an environment made of the locals; its outputs and replays are read back
        body.append("    e = _env(locals())")
        body.append(f"    {seg}.run(e)")
        body.append("    _stale()")
        for n in runner.out_nodes:
            body.append(f"    {names.var(n)} = e[{names.const(n, 'n')}]")
        for r in runner.seg.replays:
            body.append(f"    {expr(r.node)} = e[{names.const(r.node, 'n')}]")
        body.append("else:")
        body.append(f"    ({', '.join(outs)},) = o")
        implied.update(runner.out_nodes)
        fresh.update(runner.out_nodes)
        for r in runner.seg.replays:
            if not torch_step(r):
                return None

    returned = []
    for o in plan.outputs:
        returned.append(expr(o) if isinstance(o, torch.fx.Node) else names.const(o))
    # a returned value needs eager's layout only where it can differ (see CompiledFx._outputs)
    checks = []
    for i, strides in fixes:
        o = plan.outputs[i]
        val = o.meta.get("val")
        if val.numel() > 1 and _dense(val.shape, strides):
            checks.append(f"{returned[i]}.stride() != {names.const(strides)}")
    if checks:
        body.append(f"if {' or '.join(checks)}:")
        body.append("    return _finish(_env(locals()), args)")
    body.append(f"return [{', '.join(returned)}]")

    node_of = {name: node for node, name in names.local.items()}

    def env_of(local_vars):
        env = {node_of[k]: v for k, v in local_vars.items() if k in node_of}
        env.update(plan.constants)
        return env

    def stale():
        # a segment that fell back to eager, or took a new layout: the generic path runs the
        # next call, and a new function is generated after it (CompiledFx.__call__)
        entry[3] = None

    g.update(_env=env_of, _stale=stale, _TesseraError=tessera_error,
             _FALLBACK_CODES=run_fallback_codes,
             _finish=lambda env, args: cfx._outputs(env, plan, program, fixes, args))
    src = "def fast(args):\n" + "".join(f"    {line}\n" for line in body)
    code = compile(src, f"<tessera fast path {id(entry):x}>", "exec")
    exec(code, g)
    fast = g["fast"]
    fast.source = src
    return fast


__all__ = ["build"]
