"""tessera.torch.explain(model, *inputs): what torch.compile(backend="tessera") made of a model.

It compiles the model with a recorder in the backend options, runs it once on the inputs (and,
with backward=True, back-propagates the sum of its floating outputs so the backward graph is
compiled too), and reports: every FX graph AOTAutograd produced (forward/backward), its
segments (graph IR text), the fused kernels the lowering made of each (CompiledGraph.kernels),
the GEMMs with their shapes and the kernel that runs each, and every fallback op by name and
count with the reason. Nothing here changes what the backend does; it only watches.

With profile=N, every compiled segment is then run N more times on the inputs it last saw,
each launch timed alone (CompiledGraph.profile): each kernel gets median_ms / min_ms and the
report lists them, slowest first, with their share of the total. This is the first thing to
look at when a compiled model is slower than expected.
"""

from __future__ import annotations

import functools
import re
import warnings
from collections import Counter
from dataclasses import dataclass, field

import torch

_MATMUL = re.compile(r"= matmul (%\w+), (%\w+) : tensor<(\w+), \[([^\]]*)\]>")
_TYPED = re.compile(r"(%\w+)(?:: | = [^:]*: )tensor<\w+, \[([^\]]*)\]")


def _gemm_shapes(text):
    """'f32 [M, K] x [K, N] -> [M, N]' for every matmul of a segment's text."""
    shapes = {m.group(1): m.group(2) for m in _TYPED.finditer(text)}
    return [f"{m.group(3)} [{shapes.get(m.group(1), '?')}] x [{shapes.get(m.group(2), '?')}]"
            f" -> [{m.group(4)}]" for m in _MATMUL.finditer(text)]


class Recorder:
    """Collects (CompiledFx, plan, program) as the backend prepares plans."""

    def __init__(self):
        self.entries = []

    def add(self, compiled_fx, entry):
        self.entries.append((compiled_fx, entry))


@dataclass
class GraphReport:
    kind: str                       # "forward" | "backward"
    segments: list = field(default_factory=list)   # graph IR texts actually compiled
    kernels: list = field(default_factory=list)    # dicts: kernel, kind, ops (+ graph, segment)
    fallbacks: Counter = field(default_factory=Counter)


@dataclass
class Explanation:
    graphs: list = field(default_factory=list)
    kernels: list = field(default_factory=list)
    fallbacks: Counter = field(default_factory=Counter)
    reasons: dict = field(default_factory=dict)
    gemms: list = field(default_factory=list)      # dicts: graph, shape (text), kernel
    device: str = ""
    profiled: int = 0                              # runs per kernel timed (explain(profile=N))

    def __str__(self):
        lines = [f"tessera.torch.explain on {self.device}: {len(self.graphs)} graph(s), "
                 f"{sum(len(g.segments) for g in self.graphs)} segment(s), "
                 f"{len(self.kernels)} kernel(s), {sum(self.fallbacks.values())} fallback(s)"]
        for gi, g in enumerate(self.graphs):
            lines.append(f"graph {gi} ({g.kind}): {len(g.segments)} segment(s), "
                         f"{len(g.kernels)} kernel(s)")
            for k in g.kernels:
                lines.append(f"  {k.get('kernel', '?')} [{k.get('kind', '?')}]: "
                             f"{' '.join(map(str, k.get('ops', [])))}")
        if self.gemms:
            lines.append("GEMMs:")
            for gm in self.gemms:
                lines.append(f"  graph {gm['graph']}: {gm['shape']} -> {gm['kernel']}")
        timed = [k for k in self.kernels if "median_ms" in k]
        if timed:
            total = sum(k["median_ms"] for k in timed) or 1.0
            lines.append(f"profile ({self.profiled} runs, each launch timed alone; median ms, "
                         f"share): total {total:.3f} ms")
            for k in sorted(timed, key=lambda k: -k["median_ms"]):
                ran = "" if k["launched"] == k["kernel"] else f" as {k['launched']}"
                lines.append(f"  graph {k['graph']} {k['kernel']}{ran}: {k['median_ms']:.3f} ms "
                             f"({100 * k['median_ms'] / total:.0f} %), min {k['min_ms']:.3f}")
        lines.append("fallbacks:" if self.fallbacks else "fallbacks: none")
        for name, n in self.fallbacks.most_common():
            lines.append(f"  {name} x{n}: {self.reasons.get(name, '')}")
        return "\n".join(lines)

    __repr__ = __str__


def _gemm_kernel(kernels, ops_index):
    for k in kernels:
        if any("matmul" in str(op) for op in k.get("ops", [])) or "matmul" in str(
                k.get("kind", "")) or "gemm" in str(k.get("kind", "")):
            if ops_index == 0:
                # impl: "tessera" or the vendor library measured faster for this shape
                # (docs/torch.md, "Extern GEMMs"), with the times and the reason.
                impl = k.get("impl", "tessera")
                times = ""
                if k.get("tessera_ms") is not None and k.get("extern_ms") is not None:
                    times = (f"; tessera {k['tessera_ms']:.3g} ms, "
                             f"{k.get('extern_library') or 'extern'} {k['extern_ms']:.3g} ms")
                elif k.get("impl_reason"):
                    times = f"; {k['impl_reason']}"
                if k.get("epilogue_kernel"):
                    # The epilogue runs as its own kernel after the vendor GEMM (relu, gelu,
                    # a residual add, ...); extern_ms includes it.
                    times += f"; epilogue {k['epilogue_kernel']}"
                return f"{k.get('kernel', '?')} ({k.get('kind', '?')}, {impl}{times})"
            ops_index -= 1
    return "tessera (kernel not reported)"


def _report(recorder, device, profile=0) -> Explanation:
    ex = Explanation(device=device, profiled=profile)
    for gi, (cfx, (plan, program, *_)) in enumerate(recorder.entries):
        g = GraphReport(kind=cfx.kind)
        g.fallbacks.update(plan.fallbacks)
        for runner in program:
            if not hasattr(runner, "by_strides"):
                continue
            for text, cg in runner.by_strides.values():
                g.segments.append(text)
                kernels = [dict(k, graph=gi, segment=runner.seg.index)
                           for k in (getattr(cg, "kernels", None) or [])]
                if profile and runner.last_inputs is not None and runner.failed is None:
                    times = {p["kernel"]: p for p in cg.profile(runner.last_inputs, profile)}
                    for k in kernels:
                        p = times.get(k.get("kernel"))
                        if p is not None:
                            k.update(median_ms=p["median_ms"], min_ms=p["min_ms"],
                                     launched=p["launched"])
                g.kernels.extend(kernels)
                for mi, shape in enumerate(_gemm_shapes(text)):
                    ex.gemms.append({"graph": gi, "shape": shape,
                                     "kernel": _gemm_kernel(kernels, mi)})
            if getattr(runner, "failed", None):
                g.fallbacks.update(runner.failed)
                for op in runner.failed:  # the runtime's refusal is each op's reason
                    ex.reasons.setdefault(op, f"segment {runner.seg.index} did not compile: "
                                              f"{runner.error}")
        ex.graphs.append(g)
        ex.kernels.extend(g.kernels)
        ex.fallbacks.update(g.fallbacks)
        for k, v in plan.reasons.items():
            ex.reasons.setdefault(k, v)
    return ex


def explain(model, *inputs, device=None, backward=False, profile=0, **kwargs) -> Explanation:
    """Compile `model` with the tessera backend, run it on `inputs`, report what happened;
    with profile=N, also time every kernel over N runs (see the module's docstring)."""
    if not isinstance(profile, int) or isinstance(profile, bool) or profile < 0:
        raise ValueError(f"explain: profile must be a number of runs >= 0, got {profile!r}")
    from .backend import check_options, tessera_backend

    opts = check_options({"device": device})
    rec = Recorder()
    backend = functools.partial(tessera_backend,
                                options={"device": opts["device"], "_recorder": rec})
    torch._dynamo.reset()  # a fresh trace, so the recorder sees every graph of this model
    compiled = torch.compile(model, backend=backend, **kwargs)
    out = compiled(*inputs)
    if backward:
        # every tensor leaf of the output, nested in tuples, lists or dicts
        outs = torch.utils._pytree.tree_leaves(out)
        loss = sum(o.float().sum() for o in outs
                   if isinstance(o, torch.Tensor) and o.requires_grad)
        if isinstance(loss, torch.Tensor):
            loss.backward()
        else:
            warnings.warn("explain(backward=True): the output holds no tensor that requires "
                          "grad, so no backward graph was compiled", RuntimeWarning,
                          stacklevel=2)
    return _report(rec, opts["device"], profile)
