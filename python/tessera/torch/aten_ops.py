"""aten (post-decomposition) ops -> graph IR nodes: one handler per op family.

A handler gets the node's arguments already resolved: tensors are graph IR Values of the
segment being built, SymInts/SymFloats are their concrete values for this call's key. It
returns a Value (or a tuple of Values for multi-output ops) and raises Unsupported when the
graph IR cannot express the node exactly; the node then runs in eager torch.

torch's type promotion is done here, explicitly: the graph IR wants operands of one dtype,
so every operand is cast to the dtype torch computes in (torch.result_type over meta
tensors: the same rule eager torch applies, wrapped-number scalars included).
What this file must never do: approximate an op it cannot express exactly (fall back instead).
"""

from __future__ import annotations

import math
import operator

import torch

from .graph_text import FLOAT_DTYPES, Unsupported, Value, dtype_name

aten = torch.ops.aten
prims = torch.ops.prims

HANDLERS = {}


def handles(*targets):
    def register(fn):
        for t in targets:
            HANDLERS[t] = fn
        return fn

    return register


def packet_handler(target):
    """The handler for an FX call_function target (an OpOverload, its packet, or a builtin)."""
    h = HANDLERS.get(target)
    if h is None and hasattr(target, "overloadpacket"):
        h = HANDLERS.get(target.overloadpacket)
    return h


# ---------------------------------------------------------------- helpers


def _meta(x):
    """A meta tensor (or the Python scalar) standing for x in torch.result_type."""
    if isinstance(x, Value):
        return torch.empty(x.shape, dtype=x.dtype, device="meta")
    return x


def result_dtype(a, b):
    """The dtype torch computes a binary op in (scalars promote as wrapped numbers)."""
    return torch.result_type(_meta(a), _meta(b))


def norm_dim(d, rank):
    r = max(rank, 1)
    if not -r <= d < r:
        raise Unsupported(f"dim {d} out of range for rank {rank}")
    return d % r if rank > 0 else 0


class Emitter:
    """Small typed helpers over SegmentText, used by the handlers."""

    def __init__(self, seg):
        self.seg = seg

    def emit(self, op, operands, attrs, dtype, shape):
        return self.seg.emit(op, operands, attrs, dtype, shape)

    def const(self, value, dtype, shape=()):
        if dtype == torch.bool:
            value = int(bool(value))  # written 1/0: a numeric value attr, like every dtype's
        elif not dtype.is_floating_point:
            if value != value or value in (float("inf"), float("-inf")):
                raise Unsupported(f"constant {value} for an integer dtype")
            value = int(value)
            bits = torch.iinfo(dtype).bits
            # a Python int past the dtype wraps, as eager's cast of the scalar does
            # (int32 + 2**33 adds 0); the IR refuses an out-of-range constant
            value = (value + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1))
        else:
            value = float(value)
        attrs = {"value": value, "dtype": _name(dtype), "shape": list(shape)}
        return self.emit("constant", [], attrs, dtype, shape)

    def truth(self, v: Value):
        """v as bool: itself, or `v != 0` (NaN is true, as torch's bool conversion)."""
        if v.dtype == torch.bool:
            return v
        return self.emit("ne", [v, self.const(0, v.dtype)], None, torch.bool, v.shape)

    def cast(self, v: Value, dtype):
        if v.dtype == dtype:
            return v
        return self.emit("cast", [v], {"dtype": _name(dtype)}, dtype, v.shape)

    def operand(self, x, dtype):
        """A tensor Value cast to dtype, or a Python scalar as a rank-0 constant."""
        if isinstance(x, Value):
            return self.cast(x, dtype)
        if isinstance(x, (bool, int, float)):
            return self.const(x, dtype)
        raise Unsupported(f"operand of type {type(x).__name__}")

    def reshape(self, v: Value, shape):
        shape = tuple(int(d) for d in shape)
        if shape == v.shape:
            return v
        return self.emit("reshape", [v], {"shape": list(shape)}, v.dtype, shape)

    def permute(self, v: Value, perm):
        perm = [norm_dim(p, v.rank) for p in perm]
        if perm == list(range(v.rank)):
            return v
        shape = tuple(v.shape[p] for p in perm)
        return self.emit("permute", [v], {"perm": perm}, v.dtype, shape)

    def expand(self, v: Value, shape):
        shape = tuple(int(d) for d in shape)
        if shape == v.shape:
            return v
        return self.emit("expand", [v], {"shape": list(shape)}, v.dtype, shape)

    def slice(self, v: Value, axis, start, end, step):
        n = v.shape[axis]
        start, end, step = slice(start, end, step).indices(n)
        if step < 1:
            raise Unsupported(f"slice step {step}")
        length = len(range(start, end, step))
        if start == 0 and length == n and (step == 1 or n <= 1):
            return v
        end = max(end, start)  # an empty slice: keep start <= end for the verifier
        shape = list(v.shape)
        shape[axis] = length
        attrs = {"axis": axis, "start": start, "end": end, "step": step}
        return self.emit("slice", [v], attrs, v.dtype, shape)


_name = dtype_name


def _bcast(*shapes):
    return tuple(torch.broadcast_shapes(*[torch.Size(s) for s in shapes]))


# ---------------------------------------------------------------- pointwise

UNARY = {
    aten.neg: "neg", aten.abs: "abs", aten.exp: "exp", aten.log: "log", aten.log1p: "log1p",
    aten.expm1: "expm1", aten.tanh: "tanh", aten.sigmoid: "sigmoid", aten.relu: "relu",
    aten.erf: "erf", aten.sqrt: "sqrt", aten.rsqrt: "rsqrt", aten.reciprocal: "reciprocal",
    aten.sin: "sin", aten.cos: "cos", aten.floor: "floor", aten.ceil: "ceil",
    aten.sign: "sign", aten.silu: "silu",
}
FLOAT_ONLY = {"exp", "log", "log1p", "expm1", "tanh", "sigmoid", "erf", "sqrt", "rsqrt",
              "reciprocal", "sin", "cos", "silu", "gelu", "gelu_tanh"}


def _unary(ctx, out_dtype, name, x):
    if name in ("floor", "ceil") and not x.dtype.is_floating_point:
        return x  # torch: floor/ceil of an integer tensor is the tensor itself
    if name in FLOAT_ONLY and out_dtype not in FLOAT_DTYPES:
        raise Unsupported(f"{name} on {out_dtype}")
    if x.dtype == torch.bool and name != "not":
        raise Unsupported(f"{name} on bool")
    x = ctx.cast(x, out_dtype)
    return ctx.emit(name, [x], None, out_dtype, x.shape)


def _make_unary(name):
    def h(ctx, node, x):
        return _unary(ctx, ctx.out_dtype(node), name, x)

    return h


for _t, _n in UNARY.items():
    handles(_t)(_make_unary(_n))


@handles(aten.gelu)
def _gelu(ctx, node, x, approximate="none"):
    name = {"none": "gelu", "tanh": "gelu_tanh"}.get(approximate)
    if name is None:
        raise Unsupported(f"gelu approximate={approximate!r}")
    return _unary(ctx, ctx.out_dtype(node), name, x)


@handles(aten.logical_not, aten.bitwise_not)
def _not(ctx, node, x):
    if ctx.out_dtype(node) != torch.bool:
        raise Unsupported("bitwise_not on integers")
    x = ctx.truth(x)
    return ctx.emit("not", [x], None, torch.bool, x.shape)


def _binary(ctx, name, a, b, compute_dtype, out_dtype):
    if not isinstance(a, Value) and not isinstance(b, Value):
        raise Unsupported("binary op on two scalars")
    if (name in ("mul", "div") and compute_dtype in (torch.float16, torch.bfloat16)
            and compute_dtype == out_dtype
            and (not (isinstance(a, Value) and isinstance(b, Value))
                 or (isinstance(b, Value) and b.shape == () and b.dtype != out_dtype))):
        # f16/bf16 tensor times or over a Python scalar, or over a 0-d tensor of another dtype
        # as the second operand (a CPU scalar to TensorIterator: f16 x * f32 s, where s does
        # not promote the result): eager's CPU kernels take the scalar at f32 (its opmath
        # type, `original_scalar_value`) and round once. A scalar rounded to f16 first is
        # another number (1e5 -> inf, 1e-8 -> 0: x / 1e5 would be 0; bf16 3.1 -> 3.09375).
        # A 0-d tensor as the first operand is rounded first, as in eager. add and sub round
        # the scalar to the tensor's dtype first, as eager does (checked bit for bit by
        # test_low_precision_scalars_round_as_eager_does).
        va, vb = ctx.operand(a, torch.float32), ctx.operand(b, torch.float32)
        r = ctx.emit(name, [va, vb], None, torch.float32, _bcast(va.shape, vb.shape))
        return ctx.cast(r, out_dtype)
    va, vb = ctx.operand(a, compute_dtype), ctx.operand(b, compute_dtype)
    return ctx.emit(name, [va, vb], None, out_dtype, _bcast(va.shape, vb.shape))


ARITH = {aten.add: "add", aten.sub: "sub", aten.mul: "mul", aten.maximum: "max",
         aten.minimum: "min"}
COMPARE = {aten.eq: "eq", aten.ne: "ne", aten.lt: "lt", aten.le: "le", aten.gt: "gt",
           aten.ge: "ge"}


def _bool_sub(a, b):
    """Eager refuses `-` with a bool tensor (a RuntimeError at the call): left to eager torch,
    the op raises it there, where translating it returned numbers (True - 1 = 0)."""
    if any(isinstance(v, Value) and v.dtype == torch.bool for v in (a, b)):
        raise Unsupported("sub with a bool tensor (eager torch raises for it)")


def _make_arith(name):
    def h(ctx, node, a, b, alpha=1):
        out = ctx.out_dtype(node)
        if name == "sub":
            _bool_sub(a, b)
        if out == torch.bool:
            # torch: add/mul of bools is or/and; the graph IR has no bool arithmetic
            raise Unsupported(f"{name} on bool")
        if alpha != 1:
            b = _binary(ctx, "mul", b, alpha, out, out) if isinstance(b, Value) else b * alpha
        return _binary(ctx, name, a, b, out, out)

    return h


def _make_compare(name):
    def h(ctx, node, a, b):
        return _binary(ctx, name, a, b, result_dtype(a, b), torch.bool)

    return h


for _t, _n in ARITH.items():
    handles(_t)(_make_arith(_n))
for _t, _n in COMPARE.items():
    handles(_t)(_make_compare(_n))


@handles(aten.rsub)
def _rsub(ctx, node, a, b, alpha=1):
    # rsub(a, b, alpha) = b - alpha * a
    if alpha != 1:
        raise Unsupported(f"rsub alpha={alpha}")
    _bool_sub(a, b)
    out = ctx.out_dtype(node)
    return _binary(ctx, "sub", b, a, out, out)


@handles(aten.div)
def _div(ctx, node, a, b, rounding_mode=None):
    out = ctx.out_dtype(node)
    if out not in FLOAT_DTYPES:
        raise Unsupported(f"div with rounding_mode={rounding_mode!r} on {out}")
    if rounding_mode is not None:
        # torch's floor division is fmod based, the floor of the exact quotient (1 // 0.1 is
        # 9, inf // 2 is NaN); floor(a / b) of the rounded quotient gave 10 and inf.
        raise Unsupported(f"div rounding_mode={rounding_mode!r} (torch's fmod-based result "
                          f"is not floor of the rounded quotient)")
    return _binary(ctx, "div", a, b, out, out)


@handles(aten.logical_and, aten.logical_or, aten.bitwise_and, aten.bitwise_or)
def _logical(ctx, node, a, b):
    name = "and" if "and" in node.target.__name__ else "or"
    if ctx.out_dtype(node) != torch.bool:
        raise Unsupported(f"bitwise {name} on integers")

    def to_bool(x):
        if not isinstance(x, Value):
            return ctx.const(bool(x), torch.bool)
        return ctx.truth(x)

    va, vb = to_bool(a), to_bool(b)
    return ctx.emit(name, [va, vb], None, torch.bool, _bcast(va.shape, vb.shape))


@handles(aten.pow)
def _pow(ctx, node, a, b):
    out = ctx.out_dtype(node)
    if isinstance(b, (int, float)) and not isinstance(b, bool) and isinstance(a, Value):
        # small integral exponents as products: exact like torch's own fast paths
        if b == 1:
            return ctx.cast(a, out)
        if b == 2:
            x = ctx.cast(a, out)
            return ctx.emit("mul", [x, x], None, out, x.shape)
        if b == 3:
            x = ctx.cast(a, out)
            x2 = ctx.emit("mul", [x, x], None, out, x.shape)
            return ctx.emit("mul", [x2, x], None, out, x.shape)
        if b == 0.5 and out in FLOAT_DTYPES:
            return ctx.emit("sqrt", [ctx.cast(a, out)], None, out, a.shape)
        if b == -0.5 and out in FLOAT_DTYPES:  # eager's rsqrt: -0 -> -inf, -inf -> NaN
            return ctx.emit("rsqrt", [ctx.cast(a, out)], None, out, a.shape)
    if out not in FLOAT_DTYPES:
        raise Unsupported(f"pow on {out}")
    return _binary(ctx, "pow", a, b, out, out)


@handles(aten.where)
def _where(ctx, node, c, a, b):
    out = ctx.out_dtype(node)
    if c.dtype != torch.bool:
        raise Unsupported(f"where condition of dtype {c.dtype}")
    va, vb = ctx.operand(a, out), ctx.operand(b, out)
    return ctx.emit("where", [c, va, vb], None, out, _bcast(c.shape, va.shape, vb.shape))


@handles(aten.masked_fill)
def _masked_fill(ctx, node, x, mask, value):
    out = ctx.out_dtype(node)
    if isinstance(value, Value) and value.rank != 0:
        raise Unsupported("masked_fill with a non-scalar value tensor")
    v = ctx.operand(value, out)
    shape = _bcast(mask.shape, x.shape, v.shape)
    return ctx.emit("where", [mask, v, ctx.cast(x, out)], None, out, shape)


@handles(aten.clamp, aten.clamp_min, aten.clamp_max, aten.hardtanh)
def _clamp(ctx, node, x, lo=None, hi=None):
    name = node.target.__name__.split(".")[0]
    if name == "clamp_max":
        lo, hi = None, lo
    elif name == "hardtanh":
        lo = -1.0 if lo is None else lo
        hi = 1.0 if hi is None else hi
    out = ctx.out_dtype(node)
    if isinstance(lo, Value) or isinstance(hi, Value):
        # clamp.Tensor: torch.clamp(x, min, max) = min(max(x, min), max), NaN propagating
        r = ctx.cast(x, out)
        if lo is not None:
            r = _binary(ctx, "max", r, lo, out, out)
        if hi is not None:
            r = _binary(ctx, "min", r, hi, out, out)
        return r
    if x.dtype == torch.bool or out == torch.bool:
        raise Unsupported("clamp on bool")
    if any(isinstance(v, float) and math.isnan(v) for v in (lo, hi)):
        # torch: a NaN bound makes every element NaN; the IR clamp's bounds ignore NaN
        return ctx.const(float("nan"), out, tuple(x.shape))
    if out not in FLOAT_DTYPES:
        # An integer bound past the dtype's range: eager ignores one on the open side
        # (int32 clamp(min=-2**40) changes nothing) and raises for one on the other; the IR
        # attribute must fit the type (it made the lowered module fail to verify).
        info = torch.iinfo(out)
        lo, hi = (None if lo is None else int(lo)), (None if hi is None else int(hi))
        if (lo is not None and lo > info.max) or (hi is not None and hi < info.min):
            raise Unsupported(f"clamp bound outside the range of {out} (eager torch raises)")
        lo = None if lo is not None and lo <= info.min else lo
        hi = None if hi is not None and hi >= info.max else hi
    attrs = {}
    if lo is not None:
        attrs["min"] = lo
    if hi is not None:
        attrs["max"] = hi
    x = ctx.cast(x, out)
    if not attrs:
        return x
    return ctx.emit("clamp", [x], attrs, out, x.shape)


@handles(aten._to_copy, prims.convert_element_type, aten.to)
def _to_copy(ctx, node, x, dtype=None, **kwargs):
    return ctx.cast(x, ctx.out_dtype(node))


@handles(aten.clone, aten.contiguous, aten.lift_fresh_copy)
def _identity_copy(ctx, node, x, **kwargs):
    # A value, not an alias: if it leaves the segment it gets its own output buffer.
    return x


@handles(aten.copy)
def _copy(ctx, node, dst, src, non_blocking=False):
    """aten.copy (functionalised copy_): `src` cast to dst's dtype and broadcast to its shape;
    dst's values are not read (adversarial round 9: a fallback in mutated-buffer graphs)."""
    return ctx.expand(ctx.operand(src, ctx.out_dtype(node)), ctx.out_shape(node))


# ---------------------------------------------------------------- sources


@handles(aten.full)
def _full(ctx, node, size, value, **kwargs):
    shape = ctx.out_shape(node)
    c = ctx.const(value, ctx.out_dtype(node))
    return ctx.expand(c, shape) if shape else c


@handles(aten.scalar_tensor)
def _scalar_tensor(ctx, node, value, **kwargs):
    return ctx.const(value, ctx.out_dtype(node))


@handles(aten.empty, aten.empty_strided, aten.empty_like, aten.empty_permuted)
def _empty(ctx, node, *args, **kwargs):
    # Contents are undefined in torch; zeros are a valid choice (and deterministic).
    c = ctx.const(0, ctx.out_dtype(node))
    shape = ctx.out_shape(node)
    return ctx.expand(c, shape) if shape else c


@handles(aten.arange)
def _arange(ctx, node, *args, **kwargs):
    nums = [a for a in args if isinstance(a, (int, float))]
    start, step = 0, 1
    if len(nums) == 1:
        (end,) = nums
    elif len(nums) == 2:
        start, end = nums
    else:
        start, end, step = nums[:3]
    start = kwargs.get("start", start)
    step = kwargs.get("step", step)
    out = ctx.out_dtype(node)
    shape = ctx.out_shape(node)
    attrs = {"shape": list(shape), "axis": 0, "start": start, "step": step, "dtype": _name(out)}
    if out not in FLOAT_DTYPES:
        if not (float(start).is_integer() and float(step).is_integer()):
            raise Unsupported("integer arange with a fractional start or step")
        attrs["start"], attrs["step"] = int(start), int(step)
    return ctx.emit("iota", [], attrs, out, shape)


@handles(aten.native_dropout)
def _dropout(ctx, node, x, p, train):
    if train and p > 0:
        raise Unsupported("dropout in training mode (random)")
    mask = ctx.expand(ctx.const(True, torch.bool), x.shape) if x.shape else ctx.const(
        True, torch.bool)
    return (x, mask)


@handles(operator.getitem)
def _getitem(ctx, node, xs, i):
    if not isinstance(xs, tuple):
        raise Unsupported("getitem on a non-tuple value")
    return xs[i]
