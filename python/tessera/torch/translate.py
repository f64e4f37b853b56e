"""FX graph (aten, concrete per call signature) -> an execution plan of segments and torch steps.

Walking the nodes in order, every node the graph IR can express joins the open segment;
a node it cannot express closes that segment and runs in eager torch (a *fallback*, counted
by op name with its reason). Three kinds of node never count as fallbacks and never enter a
segment: non-tensor nodes (SymInt arithmetic, sym_size: their values are fixed by the key,
so they are constants of the plan; but a value read from tensor data, RUNTIME_OPS, runs in
torch on every call), views of tensors that live on the torch side (placeholders,
fallback results, segment outputs: torch computes the view, keeping eager's aliasing, and a
segment reading it gets a strided parameter), and getitem on a torch-side tuple. A scalar
graph input that is only an operand of PARAM_SCALAR_OPS is a rank-0 segment parameter
instead of a constant (Plan.runtime_scalars: the plan holds for every value of it).

Values leaving a segment: a view node inside a segment whose result is needed outside is
*replayed* in torch over its (outside-requested) source instead of being materialised, so a
returned `permute(mm)` costs no copy and aliases its base as in eager. Everything else needed
outside (by a later segment, a fallback or the graph output) is a segment output: a fresh
tensor, never an alias of a segment input (AOTAutograd regenerates input aliases itself).
"""

from __future__ import annotations

import operator
import warnings
from collections import Counter
from dataclasses import dataclass, field

import torch
import torch.fx

from . import aten_scatter, aten_structural  # noqa: F401  (they register their handlers)
from .aten_ops import Emitter, packet_handler
from .graph_text import DTYPE_NAMES, SegmentText, Unsupported, Value, contiguous_strides

aten = torch.ops.aten

# Ops that are views in torch: replayable on the torch side over their source.
VIEW_OPS = {
    aten.view, aten._unsafe_view, aten.reshape, aten.unsqueeze, aten.squeeze, aten.permute,
    aten.t, aten.transpose, aten.expand, aten.slice, aten.select, aten.alias, aten.detach,
    aten.narrow, aten.split, aten.split_with_sizes, aten.unbind, aten.flatten, aten.unflatten,
}
# Ops that read their input's storage as laid out, not its values: a segment output (written
# row-major) they read is first laid out as eager lays it out (Relayout).
LAYOUT_OPS = {getattr(aten, name) for name in ("as_strided", "as_strided_", "as_strided_copy")
              if hasattr(aten, name)}
# Arithmetic whose Python-scalar operand may be a rank-0 parameter of the segment instead of a
# constant written into its text: a scalar graph input that changes on every call (a decode
# position Dynamo made a SymInt) then reuses one compiled segment.
PARAM_SCALAR_OPS = {aten.add, aten.sub, aten.mul, aten.div, aten.rsub}
PARAM_SCALAR_DTYPES = {torch.float32, torch.float64, torch.int32, torch.int64}
# Pure bookkeeping: never counted as a fallback when it runs in torch.
FREE_OPS = {operator.getitem}
# Non-tensor nodes that read tensor data or act (a check of tensor data that raises): their
# value or effect belongs to each call, never to the plan (`n.item()` under
# capture_scalar_outputs was baked in at its first value; torch._assert_async never ran).
# Checks of sizes and metadata (_assert_scalar, _assert_tensor_metadata, sym_constrain_range)
# hold for every call with the plan's key, so they stay constants unless they follow from data.
RUNTIME_OPS = {getattr(aten, name) for name in ("_local_scalar_dense", "item", "_assert_async",
                                                "_print") if hasattr(aten, name)}


def _packet(target):
    return getattr(target, "overloadpacket", target)


def op_name(node) -> str:
    t = node.target
    if hasattr(t, "overloadpacket"):
        return f"aten.{t.overloadpacket.__name__}" if "aten" in str(t) else str(t.overloadpacket)
    return getattr(t, "__name__", str(t))


def _has_tensor(v):
    if isinstance(v, torch.Tensor):
        return True
    if isinstance(v, (list, tuple)):
        return any(_has_tensor(x) for x in v)
    return False


def _nested_node(v):
    """Whether a node hides inside list or tuple `v` (or its own items)."""
    if isinstance(v, (list, tuple)):
        return any(isinstance(x, torch.fx.Node) or _nested_node(x) for x in v)
    if isinstance(v, dict):
        return _nested_node(tuple(v.values()))
    return False


# The view ops torch-side steps run most (the replays of every call), bound to torch's Python
# functions for them, which call the same aten op through the Python argument parser: 1.1-2.8
# us per step where the op's schema-driven call path (OpOverload._op) takes 1.7-4.9 (view gains
# nothing: not listed). Only for a call with exactly this many positional arguments and no
# keywords, which both read alike.
_FAST_VIEWS = {
    aten.permute.default: (torch.permute, 2),
    aten.unsqueeze.default: (torch.unsqueeze, 2),
    aten.transpose.int: (torch.transpose, 3),
    aten.t.default: (torch.t, 1),
    aten.select.int: (torch.select, 3),
    aten.reshape.default: (torch.reshape, 2),
    aten.squeeze.dim: (torch.squeeze, 2),
}


def _traced_dtypes(node):
    """The dtypes the trace gave `node`'s float results: a dtype, a tuple (a dtype or None per
    element), or None when it has no float tensor result."""
    val = node.meta.get("val")
    if isinstance(val, torch.Tensor):
        return val.dtype if val.is_floating_point() else None
    if isinstance(val, (tuple, list)):
        dts = tuple(v.dtype if isinstance(v, torch.Tensor) and v.is_floating_point() else None
                    for v in val)
        return dts if any(dts) else None
    return None


def as_traced(value, dtypes):
    """A fallback's result with each float tensor at the dtype the trace gave it. torch's fake
    kernels and its CPU kernels disagree for a few ops (a bf16 batch norm in training mode
    returns bf16 running stats; its fake kernel says f32), and the segments after a fallback
    are compiled for the traced dtypes (adversarial round 9)."""
    if isinstance(dtypes, torch.dtype):
        if (isinstance(value, torch.Tensor) and value.dtype != dtypes
                and value.is_floating_point()):
            return value.to(dtypes)
        return value
    if not isinstance(value, (tuple, list)) or len(value) != len(dtypes):
        return value
    fixed = [as_traced(v, d) if d is not None else v for v, d in zip(value, dtypes)]
    if all(f is v for f, v in zip(fixed, value)):
        return value
    return type(value)(fixed)


@dataclass
class TorchStep:
    node: torch.fx.Node
    fallback: bool = False
    reshape_to: list | None = None   # set for a view replayed over a fresh segment output
    _call: object = field(default=None, repr=False, compare=False)  # the per-call form

    def __post_init__(self):
        # a fallback's float results are cast to their traced dtypes (as_traced)
        self.dtypes = _traced_dtypes(self.node) if self.fallback else None

    def _parts(self):
        if self.reshape_to is not None:
            # a view replayed over a fresh segment output: reshape aliases when it can and
            # copies when the output's strides differ from eager's (never fails like view)
            return aten.reshape.default, (self.node.args[0], self.reshape_to), {}
        return self.node.target, self.node.args, self.node.kwargs

    def _call_form(self):
        """(callable, argument template, keyword arguments, [(position, node)]) when every node
        argument is a top-level positional one (views, most fallbacks); else None: the general
        path. The callable of an OpOverload is its C++ op (what OpOverload.__call__ calls)
        unless the op has a Python dispatcher kernel."""
        target, args, kwargs = self._parts()
        if any(_nested_node(a) for a in args) or _nested_node(kwargs):
            return None
        fast = _FAST_VIEWS.get(target)
        if fast is not None and not kwargs and len(args) == fast[1]:
            target = fast[0]
        elif getattr(target, "_pyobj_dispatcher", True) is None:
            target = target._op
        slots = [(i, a) for i, a in enumerate(args) if isinstance(a, torch.fx.Node)]
        return target, list(args), dict(kwargs), slots

    def call_parts(self):
        """_call_form's result, made once (None: the general path)."""
        if self._call is None:
            self._call = self._call_form() or False
        return self._call or None

    def run(self, env):
        call = self.call_parts()
        if call:
            target, args, kwargs, slots = call
            args = args.copy()
            for i, n in slots:
                args[i] = env[n]
            out = target(*args, **kwargs)
        else:
            target, args, kwargs = self._parts()
            args = torch.fx.node.map_arg(args, lambda n: env[n])
            kwargs = torch.fx.node.map_arg(kwargs, lambda n: env[n])
            out = target(*args, **kwargs)
        env[self.node] = out if self.dtypes is None else as_traced(out, self.dtypes)


@dataclass
class Segment:
    index: int
    text: SegmentText = field(default_factory=SegmentText)
    nodes: list = field(default_factory=list)        # FX nodes translated into it
    values: dict = field(default_factory=dict)       # FX node -> Value or tuple of Values
    outputs: list = field(default_factory=list)      # (FX node, tuple index or None)
    replays: list = field(default_factory=list)      # TorchSteps run right after it

    def output_values(self):
        vals = []
        for n, i in self.outputs:
            v = self.values[n]
            vals.append(v[i] if i is not None else v)
        return vals

    def render(self, param_strides) -> str:
        params = [(n, v, s) for (n, v, _), s in zip(self.text.params, param_strides)]
        body = SegmentText(params=params, lines=self.text.lines)
        return body.render(f"seg{self.index}", self.output_values())


@dataclass
class Plan:
    steps: list = field(default_factory=list)        # Segment | TorchStep
    constants: dict = field(default_factory=dict)    # FX node -> concrete Python value
    outputs: list = field(default_factory=list)      # FX nodes (or None) of the graph output
    fallbacks: Counter = field(default_factory=Counter)
    reasons: dict = field(default_factory=dict)      # op name -> first reason seen
    # scalar graph inputs (Python int / float) that only ever reach a kernel as a rank-0
    # parameter: the plan holds for every value of them (CompiledFx leaves them out of its key)
    runtime_scalars: set = field(default_factory=set)

    @property
    def segments(self):
        return [s for s in self.steps if isinstance(s, Segment)]


class _Ctx(Emitter):
    """What a handler sees: the emitter plus the concrete metadata of the node."""

    def __init__(self, seg, meta, dtypes=frozenset()):
        super().__init__(seg.text)
        self.meta = meta
        self.dtypes = dtypes  # the dtypes the device computes in

    def out_dtype(self, node, i=None):
        v = self.meta[node]
        if isinstance(v, (tuple, list)):
            v = v[0 if i is None else i]
        return v.dtype

    def out_shape(self, node, i=None):
        v = self.meta[node]
        if isinstance(v, (tuple, list)):
            v = v[0 if i is None else i]
        return tuple(int(d) for d in v.shape)


def _dense(shape, strides):
    """Do `strides` lay out `shape` densely (every element once, no gaps)? Only such a layout
    is given to a result (a guard: traced strides that do not fit the result are skipped)."""
    if len(strides) != len(shape):
        return False
    expect = 1
    for size, st in sorted(((sz, st) for sz, st in zip(shape, strides) if sz != 1),
                           key=lambda p: p[1]):
        if st != expect:
            return False
        expect *= size
    return True


def needs_relayout(t, strides) -> bool:
    """Whether tensor `t`, laid out otherwise, is to be copied to `strides` (eager's layout):
    only when they lay its shape out densely and it has more than one element."""
    return (isinstance(t, torch.Tensor) and t.stride() != strides and t.numel() > 1
            and _dense(t.shape, strides))


def relayout(t, strides):
    """A copy of `t` laid out with `strides` (see needs_relayout)."""
    return torch.empty_strided(t.shape, strides, dtype=t.dtype, device=t.device).copy_(t)


def eager_laid(t, strides):
    """`t`, or a copy laid out with `strides` where needs_relayout says so."""
    return relayout(t, strides) if needs_relayout(t, strides) else t


def positive(t):
    """`t` without torch's lazy negation bit (x.conj().imag is a view whose values are its
    storage negated): a kernel reads the storage, through DLPack, which has no such bit."""
    return t.resolve_neg() if t.is_neg() else t


@dataclass
class Relayout:
    """A plan step: the value of `node` (a segment output, row-major) re-laid to `strides`,
    eager's layout, before an op in LAYOUT_OPS reads its storage."""
    node: torch.fx.Node
    strides: tuple

    def run(self, env):
        env[self.node] = eager_laid(env[self.node], self.strides)


class Translator:
    def __init__(self, gm: torch.fx.GraphModule, meta: dict, dtypes: set):
        self.gm, self.meta, self.dtypes = gm, meta, dtypes
        self.plan = Plan()
        self.where = {}       # FX node -> Segment (tensor values inside one) or "torch"
        self.cur = None
        self.requested = set()
        self.relaid = set()   # segment outputs re-laid to eager's strides before their views
        self.dynamic = set()  # nodes whose value follows a RUNTIME_OPS node: torch, every call
        # scalar placeholders passed to segments as rank-0 parameters, and those whose value
        # some node used otherwise (a shape, a constant, a torch step): the latter stay in the key
        self.scalar_params, self.structural = set(), set()
        self._param_ok, self._as_param = False, set()

    # ---- segments
    def _open(self):
        if self.cur is None:
            self.cur = Segment(index=len(self.plan.segments))
            self.plan.steps.append(self.cur)
        return self.cur

    def _close(self):
        self.cur = None

    def request_outside(self, node):
        """Make FX node's value available in the torch environment after its segment."""
        seg = self.where.get(node)
        if not isinstance(seg, Segment) or node in self.requested:
            return
        self.requested.add(node)
        src = node.args[0] if node.args else None
        if _packet(node.target) in VIEW_OPS or (
                node.target is operator.getitem and _packet(src.target) in VIEW_OPS):
            for a in node.all_input_nodes:
                self.request_outside(a)
                self._eager_layout(a, seg)
            step = TorchStep(node)
            if _packet(node.target) in (aten.view, aten._unsafe_view):
                step.reshape_to = [int(d) for d in self.meta[node].shape]
            seg.replays.append(step)
            return
        v = seg.values[node]
        if isinstance(v, tuple):
            seg.outputs.extend((node, i) for i in range(len(v)))
        else:
            seg.outputs.append((node, None))

    def _eager_layout(self, a, seg):
        """Before a view is replayed over segment output `a` (written row-major), `a` is
        re-laid to the strides eager gives it, when they are static, dense and not row-major:
        a view of it then has eager's strides too (gelu(x.transpose(1, 2)).transpose(1, 2)
        is contiguous in eager, and .view() of it works; over the row-major output it was
        not, and a graph after a break was traced on the wrong strides)."""
        m = self.meta.get(a)
        if (a in self.relaid or not isinstance(self.where.get(a), Segment)
                or not isinstance(m, torch.Tensor)
                or not all(type(st) is int for st in m.stride())
                or _packet(a.target) in VIEW_OPS or a.target is operator.getitem):
            return
        strides, row = tuple(m.stride()), contiguous_strides(tuple(m.shape))
        if _dense(m.shape, strides) and m.numel() > 1 and any(
                sz != 1 and st != rs for sz, st, rs in zip(m.shape, strides, row)):
            self.relaid.add(a)
            seg.replays.append(Relayout(a, strides))

    # ---- one node
    def _check_dtypes(self, node):
        vals = [self.meta[node]] + [self.meta[a] for a in node.all_input_nodes]
        flat = []
        for v in vals:
            flat.extend(v if isinstance(v, (tuple, list)) else [v])
        for v in flat:
            if isinstance(v, torch.Tensor):
                if v.dtype not in DTYPE_NAMES:
                    raise Unsupported(f"dtype {v.dtype} has no graph IR equivalent")
                if v.dtype not in self.dtypes:
                    raise Unsupported(f"dtype {v.dtype} not supported by the device")

    def _resolve(self, seg, x):
        if isinstance(x, torch.fx.Node):
            m = self.meta[x]
            if not _has_tensor(m):
                dt = torch.int64 if type(m) is int else torch.float64
                if (self._param_ok and x.op == "placeholder" and type(m) in (int, float)
                        and dt in self.dtypes):
                    self._as_param.add(x)
                    self.scalar_params.add(x)
                    for n, v, _ in seg.text.params:
                        if n is x:
                            return v
                    return seg.text.add_param(x, dt, (), None)
                return m
            where = self.where[x]
            if where is seg:
                return seg.values[x]
            if not isinstance(m, torch.Tensor):
                raise Unsupported("a tuple value from outside the segment")
            if isinstance(where, Segment):
                self.request_outside(x)
            for n, v, _ in seg.text.params:
                if n is x:
                    return v
            return seg.text.add_param(x, m.dtype, m.shape, None)
        if isinstance(x, (list, tuple)):
            return type(x)(self._resolve(seg, a) for a in x)
        return x

    def _fallback(self, node, reason):
        self._torch_after(node, fallback=True)
        name = op_name(node)
        self.plan.fallbacks[name] += 1
        self.plan.reasons.setdefault(name, reason)

    def _torch_side(self, node):
        for a in node.all_input_nodes:
            self.request_outside(a)
        self.where[node] = "torch"
        # its inputs are all available before the open segment runs, and that segment may
        # read it: it goes in front of the segment
        at = self.plan.steps.index(self.cur) if self.cur is not None else len(self.plan.steps)
        self.plan.steps.insert(at, TorchStep(node))

    def _torch_after(self, node, fallback=False):
        """`node` runs in torch after the open segment (which it may read); a fallback is
        counted by the caller."""
        self._close()
        for a in node.all_input_nodes:
            self.request_outside(a)
        if _packet(node.target) in LAYOUT_OPS or node.target in LAYOUT_OPS:
            # as_strided of x * 2 for a transposed x read the row-major buffer
            for a in node.all_input_nodes:
                m = self.meta.get(a)
                if (isinstance(self.where.get(a), Segment) and isinstance(m, torch.Tensor)
                        and all(type(st) is int for st in m.stride())):
                    self.plan.steps.append(Relayout(a, tuple(m.stride())))
        self.where[node] = "torch"
        self.plan.steps.append(TorchStep(node, fallback=fallback))

    def visit(self, node):
        if node.op in ("placeholder", "get_attr"):
            self.where[node] = "torch"
            return
        m = self.meta[node]
        if node.op != "call_function":
            return self._fallback(node, f"FX node kind {node.op}")
        inputs_outside = all(self.where.get(a) in ("torch", "const")
                             for a in node.all_input_nodes)
        view = _packet(node.target) in VIEW_OPS or node.target in FREE_OPS
        if (_packet(node.target) in RUNTIME_OPS or node.target in RUNTIME_OPS
                or any(a in self.dynamic for a in node.all_input_nodes)):
            # A value read from tensor data (or an effect), or anything computed from one: no
            # kernel may bake it in, so it runs in torch on every call. Scalars, views and
            # checks are not fallbacks; a tensor op is (its kernel could not take the value).
            self.dynamic.add(node)
            if _has_tensor(m) and not view:
                return self._fallback(node, "reads a value computed from tensor data on each "
                                            "call (.item() and what follows from it)")
            return self._torch_side(node) if inputs_outside else self._torch_after(node)
        if not _has_tensor(m):
            self.plan.constants[node] = m  # fixed by the call signature
            self.where[node] = "const"
            return
        if inputs_outside and view:
            return self._torch_side(node)
        handler = packet_handler(node.target)
        if handler is None:
            return self._fallback(node, "no lowering for this op")
        seg = self._open()
        snap = seg.text.snapshot()
        self._param_ok = (_packet(node.target) in PARAM_SCALAR_OPS and isinstance(m, torch.Tensor)
                          and m.dtype in PARAM_SCALAR_DTYPES)
        try:
            self._check_dtypes(node)
            args = self._resolve(seg, node.args)
            kwargs = {k: self._resolve(seg, v) for k, v in node.kwargs.items()}
            for k in ("device", "layout", "pin_memory", "memory_format", "non_blocking"):
                kwargs.pop(k, None)
            result = handler(_Ctx(seg, self.meta, self.dtypes), node, *args, **kwargs)
        except Unsupported as e:
            seg.text.rollback(snap)
            self._as_param.clear()
            return self._fallback(node, str(e))
        except (TypeError, ValueError, IndexError, RuntimeError) as e:
            # an argument pattern the handler does not know: fall back, never crash
            seg.text.rollback(snap)
            self._as_param.clear()
            return self._fallback(node, f"unexpected arguments ({type(e).__name__}: {e})")
        finally:
            self._param_ok = False
        seg.values[node] = result
        seg.nodes.append(node)
        self.where[node] = seg

    def run(self) -> Plan:
        out_node = None
        for node in self.gm.graph.nodes:
            if node.op == "output":
                out_node = node
                break
            self._as_param = set()
            self.visit(node)
            # a scalar input this node used other than as a rank-0 parameter (a constant of
            # the text, a shape, a torch step's argument): its value is part of the plan
            for a in node.all_input_nodes:
                if a.op == "placeholder" and a not in self._as_param:
                    self.structural.add(a)
        outs = out_node.args[0] if out_node is not None else ()
        outs = outs if isinstance(outs, (tuple, list)) else (outs,)
        for o in outs:
            if isinstance(o, torch.fx.Node):
                self.request_outside(o)
                if o.op == "placeholder":
                    self.structural.add(o)
        self.plan.outputs = list(outs)
        self.plan.runtime_scalars = self.scalar_params - self.structural
        return self.plan


def concrete_meta(gm: torch.fx.GraphModule, inputs) -> dict:
    """Every node's value as a fake tensor (or concrete Python value) for these inputs."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    meta = {}
    mode = FakeTensorMode(allow_non_fake_inputs=True)

    class Prop(torch.fx.Interpreter):
        def run_node(self, n):
            r = super().run_node(n)
            meta[n] = r
            return r

    with mode:
        fakes = [mode.from_tensor(x) if isinstance(x, torch.Tensor) else x for x in inputs]
        Prop(gm).run(*fakes)
    return meta


def _concrete(v) -> bool:
    """Whether a traced value (node.meta["val"]) is free of symbolic sizes and values."""
    if isinstance(v, torch.Tensor):
        return all(type(d) is int for d in v.shape)
    if isinstance(v, (list, tuple)):
        return all(_concrete(x) for x in v)
    return v is None or type(v) in (int, float, bool, str, torch.dtype, torch.device)


def traced_meta(gm: torch.fx.GraphModule, inputs) -> dict | None:
    """Every node's value as AOTAutograd traced it (node.meta["val"]), when that trace holds for
    `inputs`: every placeholder's dtype and shape (a scalar's value) as traced, every value
    concrete (no SymInt), none missing. Shapes and dtypes (all the translator reads) never
    depend on strides, so a call with other strides may use the trace as well. None: propagate
    (concrete_meta), which costs about 0.1 s of fake-tensor dispatch on the models of
    bench/torch_models.py."""
    meta = {}
    it = iter(inputs)
    for n in gm.graph.nodes:
        if n.op == "output":
            break
        if "val" not in n.meta:
            return None
        v = n.meta["val"]
        if not _concrete(v):
            return None
        if n.op == "placeholder":
            x = next(it, None)
            if isinstance(v, torch.Tensor) != isinstance(x, torch.Tensor):
                return None
            if isinstance(v, torch.Tensor):
                if v.dtype != x.dtype or tuple(v.shape) != tuple(x.shape):
                    return None
            elif type(v) is not type(x) or v != x:
                return None
        meta[n] = v
    return meta


def eager_plan(gm, why: str) -> Plan:
    """The whole graph as eager torch steps, every op a fallback with reason `why`."""
    plan = Plan()
    for node in gm.graph.nodes:
        if node.op == "call_function":
            plan.steps.append(TorchStep(node, fallback=True))
            val = node.meta.get("val")
            makes_tensor = isinstance(val, torch.Tensor) or (
                isinstance(val, (tuple, list)) and any(isinstance(v, torch.Tensor) for v in val))
            # sizes, their comparisons and asserts are not fallbacks (docs/torch.md)
            if (makes_tensor and _packet(node.target) not in VIEW_OPS
                    and node.target is not operator.getitem):
                plan.fallbacks[op_name(node)] += 1
                plan.reasons.setdefault(op_name(node), why)
        elif node.op == "output":
            outs = node.args[0]
            plan.outputs = list(outs if isinstance(outs, (tuple, list)) else (outs,))
    return plan


def build_plan(gm, inputs, dtypes) -> Plan:
    meta = traced_meta(gm, inputs)
    if meta is None:
        from torch._subclasses.fake_tensor import (DataDependentOutputException,
                                                   DynamicOutputShapeException)
        try:
            meta = concrete_meta(gm, inputs)
        except (DynamicOutputShapeException, DataDependentOutputException) as e:
            # An op whose output shape depends on the data (nonzero, x[mask] under
            # capture_dynamic_output_shape_ops): no plan can hold for the next call's data.
            what = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            warnings.warn(f"tessera: an op whose output shape depends on the data ({what}) "
                          f"leaves this graph to eager torch", RuntimeWarning, stacklevel=2)
            return eager_plan(gm, f"the graph has an op whose output shape depends on the "
                                  f"data ({what})")
    return Translator(gm, meta, dtypes).run()


def param_strides(tensors):
    """Strides to write on each parameter: None when the tensor is plain row-major."""
    out = []
    for t in tensors:
        if t.numel() == 0 or tuple(t.stride()) == contiguous_strides(t.shape):
            out.append(None)
        else:
            out.append(tuple(t.stride()))
    return out


__all__ = ["build_plan", "Plan", "Segment", "TorchStep", "Value", "param_strides"]
