"""The torch.compile backend: AOTAutograd, per-signature plans, segment execution.

`tessera_backend(gm, example_inputs, options=None)` hands the Dynamo graph to AOTAutograd
with a decomposition table (core aten plus softmax / log_softmax / layer_norm / their
backwards, so they arrive as the primitives the fusion pass turns into one row kernel) and
a compiler for the forward and the backward graph. Each compiled graph is a CompiledFx: on a
call it keys on every input's (dtype, shape, strides) and every scalar's value; a new key
gets a Plan (translate.py) whose segments are compiled with tessera.compile_graph. Identical
segment text is compiled once per device (a new batch size gives new text, whose kernels the
runtime's program cache still reuses: sizes are kernel arguments).

What this file must never do: run a node in eager torch silently (every fallback is counted
in the plan) or let a C++ error escape as anything but a Python exception.
"""

from __future__ import annotations

import threading
import warnings
from collections import Counter

import torch

from . import fastpath
from .translate import (VIEW_OPS, Plan, Segment, TorchStep, _packet, build_plan, needs_relayout,
                        op_name, param_strides, positive, relayout)

_KNOWN_OPTIONS = ("device", "strict")
_compiled_texts = {}          # (device, text) -> tessera CompiledGraph, oldest first
# At most this many compiled segment texts are kept, the oldest dropped first (a Python int
# that changes on every call and sizes something is written into the text, so each value is
# a text of its own: memory grew without bound).
_MAX_COMPILED_TEXTS = 256
# At most this many plans per FX graph (one per call signature: dtypes, shapes, strides and
# Python scalars), the least recently used dropped first.
_MAX_PLANS = 32
# A plan's generated steady state (fastpath.py) is rebuilt when a segment takes a new layout;
# past this many builds the plan stays on the generic path.
_MAX_GENERATIONS = 4
_lock = threading.Lock()


def _tessera():
    import tessera

    return tessera


_decomp_table = None          # built once per process (decompositions())


def decompositions():
    """The decomposition table AOTAutograd gets: a fresh copy of one built once per process
    (building it walks torch's op registry: 0.13 s the first time, 0.05 s after, paid by every
    compile, a recompile for a new shape included; the copy costs 40 us)."""
    global _decomp_table
    with _lock:
        if _decomp_table is None:
            _decomp_table = _build_decompositions()
        return dict(_decomp_table)


def _build_decompositions():
    from torch._decomp import core_aten_decompositions, get_decompositions

    aten = torch.ops.aten
    table = dict(core_aten_decompositions())
    table.update(get_decompositions([
        aten._softmax, aten._log_softmax, aten._softmax_backward_data,
        aten._log_softmax_backward_data, aten.native_layer_norm,
        aten.native_layer_norm_backward, aten.gelu_backward, aten.silu, aten.silu_backward,
        aten.rms_norm, aten._fused_rms_norm, aten.native_dropout_backward,
        aten.sigmoid_backward, aten.tanh_backward, aten.threshold_backward,
        aten.mse_loss, aten.mse_loss_backward, aten.nll_loss_forward,
        aten.nll_loss_backward, aten.hardtanh_backward, aten.logsumexp,
        # pointwise and row patterns the graph IR lowers once written out (adversarial round
        # 9 found them as fallbacks in ELU / SELU / CELU / LeakyReLU / GroupNorm / F.pad)
        aten.elu, aten.elu_backward, aten.leaky_relu, aten.leaky_relu_backward,
        aten.native_group_norm, aten.native_group_norm_backward, aten.constant_pad_nd,
    ]))
    # var_mean stays whole (the core table sends it to prims.var / broadcast_in_dim, which
    # the graph IR has no use for: its var and mean ops are the row reductions themselves);
    # gelu itself stays whole: the graph IR has gelu and gelu_tanh (one op, exact formula)
    # embedding_dense_backward too (its decomposition is an index_put; aten_scatter.py writes it
    # as a one-hot matmul)
    # std and std_mean too: their decomposition is sqrt of a var rounded to the input's dtype
    # first, which overflows or goes subnormal for f32 data past ~1.8e19 or below ~1e-19
    # (aten_structural.py, _std)
    for op in (aten.gelu.default, aten.var_mean.correction, aten.var_mean.default,
               aten.std.correction, aten.std.default, aten.std.dim, aten.std_mean.correction,
               aten.std_mean.default, aten.std_mean.dim, aten.embedding_dense_backward.default):
        table.pop(op, None)
    table[aten._scaled_dot_product_flash_attention_for_cpu.default] = _sdpa_flash_cpu
    table[aten._scaled_dot_product_flash_attention_for_cpu_backward.default] = \
        _sdpa_flash_cpu_backward
    return table


def _sdpa_scores(q, k, is_causal, attn_mask, scale):
    """The scaled, masked attention scores of the math decomposition, in q's dtype (the
    accumulation type), with grouped-query key heads repeated; and the scale."""
    if q.dim() >= 3 and k.shape[-3] != q.shape[-3]:  # grouped-query attention
        k = k.repeat_interleave(q.shape[-3] // k.shape[-3], dim=-3)
    sc = scale if scale is not None else q.shape[-1] ** -0.5
    s = q @ k.transpose(-2, -1) * sc
    if is_causal:
        keep = torch.ones(s.shape[-2], s.shape[-1], dtype=torch.bool, device=s.device).tril()
        s = s.masked_fill(~keep, float("-inf"))
    if attn_mask is not None:
        s = (s.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == torch.bool
             else s + attn_mask.to(q.dtype))
    return s, k, sc


def _sdpa_flash_cpu(query, key, value, dropout_p=0.0, is_causal=False, *, attn_mask=None,
                    scale=None):
    """torch's core decomposition of the CPU flash-attention forward (math attention) returns
    the attention probabilities where the op returns its logsumexp. The backward stays the
    eager op _scaled_dot_product_flash_attention_for_cpu_backward, which rebuilds the
    probabilities as exp(scores - logsumexp): fed the probabilities it returned gradients off
    by orders of magnitude (F.scaled_dot_product_attention under training). Same math output,
    plus the real logsumexp ([B, H, L], as the op returns it: f64 for f64 inputs, else f32;
    0 for a query row that sees no key, whose backward otherwise computed exp(-inf + inf) =
    NaN gradients). Grouped-query attention (fewer key / value heads) repeats the key heads."""
    from torch._decomp.decompositions import scaled_dot_product_flash_attention_for_cpu

    out, _ = scaled_dot_product_flash_attention_for_cpu(
        query, key, value, dropout_p, is_causal, attn_mask=attn_mask, scale=scale)
    # The op's output is laid out like the query (empty_like); the decomposition's is
    # [L, B, H, E] in memory, so out.view(B, -1) failed where eager allows it.
    order = sorted(range(query.dim()), key=lambda d: query.stride(d), reverse=True)
    inverse = [order.index(d) for d in range(query.dim())]
    out = out.permute(order).contiguous().permute(inverse)
    acc = torch.float64 if query.dtype == torch.float64 else torch.float32
    s, _, _ = _sdpa_scores(query.to(acc), key.to(acc), is_causal, attn_mask, scale)
    lse = torch.logsumexp(s, dim=-1)
    return out, lse.masked_fill(lse == float("-inf"), 0.0)


def _sdpa_flash_cpu_backward(grad_out, query, key, value, out, logsumexp, dropout_p, is_causal,
                             *, attn_mask=None, scale=None):
    """The CPU flash-attention backward written out (it was an eager fallback in every
    training step of a model using scaled_dot_product_attention): P = exp(S - logsumexp),
    dV = P^T dO, dS = P * (dO V^T - rowsum(dO * O)), dQ = dS K * scale, dK = dS^T Q * scale, in
    f32 (f64 for f64) as the kernel accumulates; grouped-query key / value heads summed back.
    With dropout the op stays (its mask is the kernel's own random draw)."""
    if dropout_p != 0:
        return NotImplemented
    acc = torch.float64 if query.dtype == torch.float64 else torch.float32
    q, do, o = query.to(acc), grad_out.to(acc), out.to(acc)
    s, k, sc = _sdpa_scores(q, key.to(acc), is_causal, attn_mask, scale)
    v = value.to(acc)
    groups = q.shape[-3] // v.shape[-3] if q.dim() >= 3 else 1
    if groups != 1:
        v = v.repeat_interleave(groups, dim=-3)
    p = torch.exp(s - logsumexp.to(acc).unsqueeze(-1))
    dv = p.transpose(-2, -1) @ do
    ds = p * (do @ v.transpose(-2, -1) - (do * o).sum(-1, keepdim=True))
    dq = ds @ k * sc
    dk = ds.transpose(-2, -1) @ q * sc
    if groups != 1:
        dk = dk.unflatten(-3, (key.shape[-3], groups)).sum(-3)
        dv = dv.unflatten(-3, (value.shape[-3], groups)).sum(-3)
    return dq.to(query.dtype), dk.to(key.dtype), dv.to(value.dtype)


def device_dtypes(device: str) -> set:
    """The torch dtypes the device computes in (the graph IR's; narrowed by its features)."""
    tessera = _tessera()
    infos = {d.name: d for d in tessera.devices()}
    if device not in infos:
        raise ValueError(f"tessera backend: unknown device {device!r}; available: "
                         f"{', '.join(sorted(infos)) or 'none'}")
    feats = dict(getattr(infos[device], "features", {}) or {})
    dtypes = {torch.bool, torch.int32, torch.int64, torch.float32}
    for key, dt in (("fp16", torch.float16), ("bf16", torch.bfloat16),
                    ("fp64", torch.float64)):
        if feats.get(key, False):
            dtypes.add(dt)
    if not feats.get("int64", True):
        dtypes.discard(torch.int64)
    return dtypes


def check_options(options) -> dict:
    if options is None:
        options = {}
    if not isinstance(options, dict):
        raise TypeError(f"tessera backend: options must be a dict, got {type(options).__name__}")
    unknown = [k for k in options if k not in _KNOWN_OPTIONS and not k.startswith("_")]
    if unknown:
        raise ValueError(f"tessera backend: unknown option(s) {', '.join(map(repr, unknown))}; "
                         f"known: {', '.join(_KNOWN_OPTIONS)}")
    opts = dict(options)
    # None (or no key) picks the best device; anything else must name one: 0, "" or False
    # silently meant the default before.
    device = opts.get("device")
    if device is None:
        device = _tessera().default_device()
    elif not isinstance(device, str) or not device.strip():
        raise TypeError(f"tessera backend: option 'device' must be a device name like "
                        f"'cpu:0' (see tessera.devices()), got {device!r}")
    opts["device"] = device
    opts["dtypes"] = device_dtypes(device)  # raises on an unknown device
    strict = opts.get("strict", False)
    if not isinstance(strict, bool):  # "yes" / "false" / 1 read as True before
        raise TypeError(f"tessera backend: option 'strict' must be True or False, got {strict!r}")
    opts["strict"] = strict
    return opts


def _compile_text(text, device):
    key = (device, text)
    with _lock:
        cg = _compiled_texts.get(key)
    if cg is None:
        cg = _tessera().compile_graph(text, device)
        with _lock:
            _compiled_texts[key] = cg
            while len(_compiled_texts) > _MAX_COMPILED_TEXTS:
                del _compiled_texts[next(iter(_compiled_texts))]
    return cg


def wait_tier_up():
    """Waits until every graph compiled so far runs its full-tier (O3) kernels. A cold compile
    starts on the quick tier and swaps the full one in by itself once its background compile
    is done (docs/torch.md, "Cold compile"); benchmarks of the steady state call this first."""
    with _lock:
        graphs = list(_compiled_texts.values())
    for cg in graphs:
        cg.wait_tier_up()


# The run-time failures of a compiled segment that are device limits (lavapipe ends a kernel
# past 65535 loop iterations per work-item: UNIMPLEMENTED; out of device memory:
# RESOURCE_EXHAUSTED): with strict=False the segment then falls back to eager torch, as one
# that fails to compile does. Kernel faults and deadlines stay errors.
_RUN_FALLBACK_CODES = frozenset({"UNIMPLEMENTED", "RESOURCE_EXHAUSTED"})


class SegmentRunner:
    """Runs one Segment: compiled on first use for the strides its inputs arrive with.

    A segment the runtime refuses to compile (a lowering gap, a device limit) runs its nodes
    in eager torch instead, with a warning; every node counts as a fallback (self.failed,
    reported by explain). With the backend option strict=True the error is raised instead.

    The steady state (run_fast) costs one stride check per input: the strides of the last
    call, compared as torch returns them, pick the same CompiledGraph again; anything else
    takes the full path (param_strides, by_strides, compile). The runtime checks every
    input's dtype and shape itself, and reads any strides correctly (a layout other than the
    compiled one is re-laid out on the host), so this guard only picks the fastest variant.
    """

    def __init__(self, seg: Segment, device: str, strict: bool, keep_inputs: bool = False):
        self.seg, self.device, self.strict = seg, device, strict
        # explain(profile=...) re-runs segments on their last inputs (kept only then)
        self.keep_inputs, self.last_inputs = keep_inputs, None
        self.by_strides = {}    # param strides -> (text, CompiledGraph)
        self.host_visible = device.startswith("cpu")
        self.failed = None      # Counter of op names once the segment fell back
        self.error = None
        self.params = [n for n, _, _ in seg.text.params]
        # scalar graph inputs passed as rank-0 parameters: (position, dtype), made tensors per
        # call (translate.py, PARAM_SCALAR_OPS)
        self.scalars = [(i, v.dtype) for i, (n, v, _) in enumerate(seg.text.params)
                        if n.op == "placeholder" and v.shape == ()
                        and not isinstance(n.meta.get("val"), torch.Tensor)]
        # where each output goes: a node (plain value) or None when some output is a tuple
        # element (then the general path assembles the tuples)
        self.out_nodes = ([n for n, _ in seg.outputs]
                          if all(i is None for _, i in seg.outputs) else None)
        self.last = None        # (strides as torch returns them, CompiledGraph) of the last run
        self.eager = None       # the segment's nodes as TorchSteps, once it fell back

    def compiled(self, inputs):
        strides = tuple(param_strides(inputs))
        hit = self.by_strides.get(strides)
        if hit is None:
            for t, (_, v, _) in zip(inputs, self.seg.text.params):
                if tuple(t.shape) != v.shape or t.dtype != v.dtype:
                    raise RuntimeError(f"tessera: segment {self.seg.index} expected "
                                       f"{v.dtype}{list(v.shape)}, got {t.dtype}{list(t.shape)}")
            text = self.seg.render(strides)
            hit = (text, _compile_text(text, self.device))
            self.by_strides[strides] = hit
        return hit

    def run(self, env):
        if not self.seg.outputs:
            # views of earlier values replayed here (a segment opened by a view after a
            # fallback has nothing of its own to compute): they still run
            for step in self.seg.replays:
                step.run(env)
            return
        if self.failed is not None:
            return self._run_eager(env)
        inputs = [env[n] for n in self.params]
        for i, dtype in self.scalars:
            if not isinstance(inputs[i], torch.Tensor):
                inputs[i] = torch.tensor(inputs[i], dtype=dtype)
        inputs = [positive(t) for t in inputs]
        if self.keep_inputs:
            self.last_inputs = inputs
        compiling = False
        try:
            last = self.last
            if last is not None:
                raw = [t.stride() for t in inputs]
                if raw == last[0]:
                    return self._finish(env, last[1].run_torch(inputs))
            compiling = True
            _, cg = self.compiled(inputs)
            compiling = False
            if self.host_visible:
                outs = cg.run_torch(inputs)
                self.last = ([t.stride() for t in inputs], cg)
            else:
                outs = [torch.empty(v.shape, dtype=v.dtype) for v in self.seg.output_values()]
                cg.run_into(inputs, outs)
        except _tessera().TesseraError as e:
            # Refused to compile, or a device limit met at run time (lavapipe ends a kernel
            # past 65535 loop iterations: UNIMPLEMENTED; memory: RESOURCE_EXHAUSTED). The
            # segment's inputs are intact (its outputs are fresh buffers): eager torch runs it,
            # this call and the next. Kernel faults and deadlines are errors.
            if self.strict or not (compiling or e.code in _RUN_FALLBACK_CODES):
                raise
            self.error = str(e)
            self.failed = Counter(op_name(n) for n in self.seg.nodes
                                  if _packet(n.target) not in VIEW_OPS)
            warnings.warn(f"tessera: segment {self.seg.index} falls back to eager torch "
                          f"({e})", RuntimeWarning, stacklevel=2)
            return self._run_eager(env)
        self._finish(env, outs)

    def _finish(self, env, outs):
        if self.out_nodes is not None:
            for node, t in zip(self.out_nodes, outs):
                env[node] = t
        else:
            tuples = {}
            for (node, i), t in zip(self.seg.outputs, outs):
                if i is None:
                    env[node] = t
                else:
                    tuples.setdefault(node, [None] * len(self.seg.values[node]))[i] = t
            for node, ts in tuples.items():
                env[node] = tuple(ts)
        for step in self.seg.replays:
            step.run(env)

    def _run_eager(self, env):
        if self.eager is None:
            self.eager = [TorchStep(node) for node in self.seg.nodes]
        for step in self.eager:
            step.run(env)


class CompiledFx:
    """The callable AOTAutograd gets for one FX graph (boxed calling convention).

    Per call: the key (every tensor's dtype, shape and strides, every scalar's value) is
    compared with the last call's first, so a steady loop never hashes it; get_attr nodes
    and the graph's output list are found once, not walked per call.
    """

    def __init__(self, gm, opts, kind):
        # In the instance's __dict__, not the class's: the Dynamo-disable wrapper AOTAutograd
        # puts around the backward copies that (functools.wraps), so the backward is called
        # boxed too and no "returning a function that doesn't take boxed arguments" warning
        # is raised.
        self._boxed_call = True
        self.gm, self.opts, self.kind = gm, opts, kind
        self.placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        self.get_attrs = [(n, n.target) for n in gm.graph.nodes if n.op == "get_attr"]
        self.plans = {}        # key -> (Plan, [runner or step])
        self.recorder = opts.get("_recorder")
        self.last = (None, None)   # (key, entry) of the last call
        # scalar argument positions left out of the key: those the first plan takes as rank-0
        # parameters (a position that changes every call compiles once, not per value); None
        # until the first plan is made
        self.free = None

    def key(self, args):
        # torch.Size is a tuple and stride() returns one: hashable and comparable as they are.
        # A scalar every plan takes as a rank-0 parameter (self.free) is keyed by its type only.
        free = self.free or ()
        return tuple([(a.dtype, a.shape, a.stride()) if isinstance(a, torch.Tensor)
                      else (type(a).__name__, None if i in free else a)
                      for i, a in enumerate(args)])

    def _free_scalars(self, plan):
        """Positions of the scalar arguments `plan` holds for whatever their value."""
        return frozenset(i for i, p in enumerate(self.placeholders) if p in plan.runtime_scalars)

    def _prepare(self, args):
        plan: Plan = build_plan(self.gm, args, self.opts["dtypes"])
        program = [SegmentRunner(s, self.opts["device"], self.opts["strict"],
                                 self.recorder is not None)
                   if isinstance(s, Segment) else s
                   for s in plan.steps]
        # [plan, program, fixes, generated function (None: not yet, False: never), generations]
        return [plan, program, self._eager_strides(plan), None, 0]

    def _eager_strides(self, plan):
        """(output index, strides) for each output whose traced value has static strides:
        the layout eager gives it (a channels_last input's pointwise result stays
        channels_last). The kernels write row-major, so a result whose strides differ is
        restrided before it is returned (user code may .view() it as eager allows)."""
        out_node = next(n for n in self.gm.graph.nodes if n.op == "output")
        traced = out_node.args[0] if isinstance(out_node.args[0], (list, tuple)) else ()
        fixes = []
        for i, o in enumerate(plan.outputs):
            if not isinstance(o, torch.fx.Node) or i >= len(traced) or traced[i] is not o:
                continue
            val = o.meta.get("val")
            if not isinstance(val, torch.Tensor):
                continue
            strides = tuple(val.stride())
            # Symbolic (a dynamic shape): a new size gives new strides, and int() of a SymInt
            # would be the first example's value (stale strides made later results overlap).
            if not all(type(st) is int for st in strides):
                continue
            fixes.append((i, strides))
        return fixes

    def __call__(self, *args):
        # boxed (one list) from AOTAutograd; unboxed from a caller that ignores _boxed_call.
        # A placeholder is never a list, so this is unambiguous.
        args = list(args[0]) if len(args) == 1 and type(args[0]) is list else list(args)
        key = self.key(args)
        last_key, entry = self.last
        if key != last_key:
            entry = self.plans.pop(key, None)
            if entry is None:
                entry = self._prepare(args)
                if self.recorder is not None:
                    self.recorder.add(self, entry)
                free = self._free_scalars(entry[0])
                if self.free is None or not self.free <= free:
                    # the first plan decides; a later plan that needs one of those values
                    # puts it back into the key (plans keyed without it are dropped)
                    self.free = free if self.free is None else self.free & free
                    self.plans.clear()
                    key = self.key(args)
            self.plans[key] = entry  # the most recently used last
            if len(self.plans) > _MAX_PLANS:
                del self.plans[next(iter(self.plans))]
            self.last = (key, entry)
        fast = entry[3]
        if fast:
            return fast(args)
        plan, program, fixes = entry[0], entry[1], entry[2]
        env = dict(zip(self.placeholders, args))
        if plan.constants:
            env.update(plan.constants)
        for node, target in self.get_attrs:
            env[node] = getattr(self.gm, target)
        for step in program:
            step.run(env)
        outs = self._outputs(env, plan, program, fixes, args)
        if fast is None and self.recorder is None:
            # the steady state as generated code (fastpath.py), after this call set every
            # segment's layout; a plan whose layouts keep changing stays generic
            entry[4] += 1
            entry[3] = (entry[4] <= _MAX_GENERATIONS
                        and fastpath.build(self, entry, _tessera().TesseraError,
                                           _RUN_FALLBACK_CODES)) or False
        return outs

    def _outputs(self, env, plan, program, fixes, args):
        """The graph's outputs from `env`, each in eager's layout where it has a static one."""
        outs = [env[o] if isinstance(o, torch.fx.Node) else o for o in plan.outputs]
        relaid = False
        for i, strides in fixes:
            t = outs[i]
            if needs_relayout(t, strides) and not any(
                    t.untyped_storage().data_ptr() == a.untyped_storage().data_ptr()
                    for a in args if isinstance(a, torch.Tensor)):
                outs[i] = env[plan.outputs[i]] = relayout(t, strides)
                relaid = True
        if relaid:
            # Views of a re-laid value (returned y and y[::2]) were replayed over the row-major
            # segment output: replay them over the value returned, so that they alias it and
            # have eager's strides, as in eager.
            for st in program:
                if isinstance(st, SegmentRunner):
                    for step in st.seg.replays:
                        step.run(env)
            outs = [env[o] if isinstance(o, torch.fx.Node) else o for o in plan.outputs]
        return outs


def tessera_backend(gm, example_inputs, options=None, **kwargs):
    """torch.compile(model, backend="tessera", options={"device": "cpu:0"})."""
    from torch._dynamo.backends.common import aot_autograd

    if kwargs:
        # torch.compile hands a custom backend its `mode` ("reduce-overhead", "max-autotune":
        # Inductor's settings); like torch's aot_eager, tessera has none and ignores them
        ignored = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
        warnings.warn(f"tessera backend: ignoring {ignored} (Inductor settings; tessera takes "
                      "options={'device': ..., 'strict': ...})", UserWarning, stacklevel=2)

    opts = check_options(options)
    for x in example_inputs:
        if isinstance(x, torch.Tensor) and x.device.type != "cpu":
            raise ValueError(f"tessera backend: inputs must be CPU torch tensors (the tessera "
                             f"device is chosen by options['device']), got one on {x.device}")

    def forward(g, _inputs):
        return CompiledFx(g, opts, "forward")

    def backward(g, _inputs):
        return CompiledFx(g, opts, "backward")

    return aot_autograd(fw_compiler=forward, bw_compiler=backward,
                        decompositions=decompositions())(gm, example_inputs)
