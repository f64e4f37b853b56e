"""aten reductions, matmuls, views and data movement -> graph IR nodes.

Same contract as aten_ops.py (resolved arguments in, Value(s) out, Unsupported when the
graph IR cannot express the node exactly). Shapes come from the concrete metadata of this
call's key (ctx.out_shape), so -1 in a view or a SymInt size never reaches the text.
"""

from __future__ import annotations

import math

import torch

from .aten_ops import Unsupported, Value, handles, norm_dim, _bcast, _name
from .graph_text import FLOAT_DTYPES, contiguous_strides

aten = torch.ops.aten

# ---------------------------------------------------------------- reductions


def _axes(dims, rank):
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        return list(range(rank))
    if isinstance(dims, int):
        dims = [dims]
    return sorted({norm_dim(d, rank) for d in dims})


def _reduce(ctx, name, x, axes, keepdim, out_dtype, extra=None):
    if x.rank == 0 or not axes:
        # nothing to reduce over: torch returns the (cast) value itself; var of one element
        # with correction 1 is NaN, which the graph IR computes only with an axis to reduce
        if name == "var":
            x = ctx.reshape(x, (1,) * max(x.rank, 1))
            axes = [0]
            r = _reduce(ctx, name, x, axes, False, out_dtype, extra)
            return ctx.reshape(r, ())
        if name == "argmax":  # the index of the only element (it returned the value)
            return ctx.const(0, out_dtype, tuple(x.shape))
        return ctx.cast(x, out_dtype)
    if name in ("amax", "amin", "argmax") and any(x.shape[a] == 0 for a in axes):
        raise Unsupported(f"{name} over an empty extent (torch raises)")
    if name in ("mean", "var") and out_dtype not in FLOAT_DTYPES:
        raise Unsupported(f"{name} on {out_dtype}")
    if x.dtype == torch.bool and name in ("amax", "amin"):
        raise Unsupported(f"{name} on bool")
    if name != "argmax":
        x = ctx.cast(x, out_dtype)
    shape = [1 if i in axes else d for i, d in enumerate(x.shape)] if keepdim else [
        d for i, d in enumerate(x.shape) if i not in axes]
    attrs = {"axes": axes, "keepdim": bool(keepdim)}
    if extra:
        attrs.update(extra)
    return ctx.emit(name, [x], attrs, out_dtype, shape)


def _make_reduce(name):
    def h(ctx, node, x, dim=None, keepdim=False, dtype=None, **kwargs):
        return _reduce(ctx, name, x, _axes(dim, x.rank), keepdim, ctx.out_dtype(node))

    return h


for _t, _n in {aten.sum: "sum", aten.mean: "mean", aten.amax: "amax", aten.amin: "amin",
               aten.prod: "prod"}.items():
    handles(_t)(_make_reduce(_n))


def _make_any_all(name):
    """any / all: amax / amin of `x != 0` as i32 (NaN counts as true, as in eager), then != 0.
    scaled_dot_product_attention's decomposition calls any() on every forward (rows with no
    visible key); an empty extent is left to eager (any: False, all: True)."""
    def h(ctx, node, x, dim=None, keepdim=False):
        nz = ctx.truth(x)
        if isinstance(dim, (list, tuple)) and len(dim) == 0:
            return nz  # any(x, dim=()) is elementwise in eager, not a full reduction
        r = _reduce(ctx, name, ctx.cast(nz, torch.int32), _axes(dim, x.rank), keepdim,
                    torch.int32)
        return ctx.emit("ne", [r, ctx.const(0, torch.int32)], None, torch.bool, r.shape)

    return h


handles(aten.any)(_make_any_all("amax"))
handles(aten.all)(_make_any_all("amin"))


def _correction(correction, unbiased):
    c = 1 if correction is None else correction
    if unbiased is not None:
        c = 1 if unbiased else 0
    return int(c) if float(c).is_integer() else float(c)


@handles(aten.var)
def _var(ctx, node, x, dim=None, unbiased=None, keepdim=False, correction=None):
    if isinstance(unbiased, (list, tuple)):  # var.dim(x, dim, unbiased, keepdim)
        dim, unbiased = unbiased, None
    extra = {"correction": _correction(correction, unbiased)}
    return _reduce(ctx, "var", x, _axes(dim, x.rank), keepdim, ctx.out_dtype(node), extra)


@handles(aten.var_mean)
def _var_mean(ctx, node, x, dim=None, unbiased=None, keepdim=False, correction=None):
    out = ctx.out_dtype(node, 0)
    axes = _axes(dim, x.rank)
    extra = {"correction": _correction(correction, unbiased)}
    return (_reduce(ctx, "var", x, axes, keepdim, out, extra),
            _reduce(ctx, "mean", x, axes, keepdim, out))


def _std(ctx, x, axes, keepdim, out, extra):
    """sqrt(var) rounded once: the variance of f16 / bf16 / f32 values, squared, leaves their
    range (std of randn * 1e20 was inf, of randn * 1e-22 3 % off: the var rounded to f32
    first), so where the device has f64 the var and its root are f64 and only the root is
    rounded, as eager's Welford in double does."""
    acc = torch.float64 if torch.float64 in ctx.dtypes and out in FLOAT_DTYPES else out
    v = _reduce(ctx, "var", ctx.cast(x, acc) if acc != out else x, axes, keepdim, acc, extra)
    return ctx.cast(ctx.emit("sqrt", [v], None, acc, v.shape), out)


@handles(aten.std)
def _std_op(ctx, node, x, dim=None, unbiased=None, keepdim=False, correction=None):
    if isinstance(unbiased, (list, tuple)):  # std.dim(x, dim, unbiased, keepdim)
        dim, unbiased = unbiased, None
    extra = {"correction": _correction(correction, unbiased)}
    return _std(ctx, x, _axes(dim, x.rank), keepdim, ctx.out_dtype(node), extra)


@handles(aten.std_mean)
def _std_mean(ctx, node, x, dim=None, unbiased=None, keepdim=False, correction=None):
    out = ctx.out_dtype(node, 0)
    axes = _axes(dim, x.rank)
    extra = {"correction": _correction(correction, unbiased)}
    return (_std(ctx, x, axes, keepdim, out, extra), _reduce(ctx, "mean", x, axes, keepdim, out))


def _argmax_all(ctx, x, keepdim):
    flat = ctx.reshape(x, (x.shape and int(torch.Size(x.shape).numel()) or 1,))
    r = _reduce(ctx, "argmax", flat, [0], False, torch.int64)
    return ctx.reshape(r, (1,) * x.rank) if keepdim else r


@handles(aten.argmax)
def _argmax(ctx, node, x, dim=None, keepdim=False):
    if x.dtype == torch.bool:
        raise Unsupported("argmax on bool")
    if dim is None:
        return _argmax_all(ctx, x, keepdim)
    return _reduce(ctx, "argmax", x, [norm_dim(dim, x.rank)], keepdim, torch.int64)


@handles(aten.max)
def _max(ctx, node, x, dim=None, keepdim=False):
    if isinstance(dim, Value):  # max.other: elementwise
        return ctx.emit("max", [x, ctx.cast(dim, x.dtype)], None, x.dtype,
                        _bcast(x.shape, dim.shape))
    if dim is None:
        return _reduce(ctx, "amax", x, list(range(x.rank)), False, x.dtype)
    axes = [norm_dim(dim, x.rank)]
    return (_reduce(ctx, "amax", x, axes, keepdim, x.dtype),
            _reduce(ctx, "argmax", x, axes, keepdim, torch.int64))


@handles(aten.min)
def _min(ctx, node, x, dim=None, keepdim=False):
    if isinstance(dim, Value):
        return ctx.emit("min", [x, ctx.cast(dim, x.dtype)], None, x.dtype,
                        _bcast(x.shape, dim.shape))
    if dim is None:
        return _reduce(ctx, "amin", x, list(range(x.rank)), False, x.dtype)
    raise Unsupported("min.dim (its indices need argmin, which the graph IR lacks)")


# ---------------------------------------------------------------- matmul


def _matmul(ctx, a, b, out_dtype):
    if a.dtype != b.dtype or out_dtype not in FLOAT_DTYPES:
        raise Unsupported(f"matmul of {a.dtype} and {b.dtype}")
    if a.rank < 2 or b.rank < 2:
        raise Unsupported("matmul of a vector (use mm/bmm)")
    batch = _bcast(a.shape[:-2], b.shape[:-2])
    shape = tuple(batch) + (a.shape[-2], b.shape[-1])
    # f16/bf16 operands with an f32 result: the graph IR's matmul {dtype = "f32"}, the f32 sum
    # itself (no rounding to the operands' dtype)
    attrs = {"dtype": "f32"} if out_dtype != a.dtype else None
    return ctx.emit("matmul", [a, b], attrs, out_dtype, shape)


@handles(aten.mm, aten.bmm)
def _mm(ctx, node, a, b):
    return _matmul(ctx, a, b, ctx.out_dtype(node))


@handles(aten.matmul)
def _matmul_h(ctx, node, a, b):
    out = ctx.out_dtype(node)
    # vectors as in torch.matmul: a [K] is [1, K] (row dropped after), b [K] is [K, 1]
    va = ctx.reshape(a, (1,) + a.shape) if a.rank == 1 else a
    vb = ctx.reshape(b, b.shape + (1,)) if b.rank == 1 else b
    r = _matmul(ctx, va, vb, out)
    return ctx.reshape(r, ctx.out_shape(node))


def _scaled(ctx, v, s, dtype):
    if s == 1:
        return v
    return ctx.emit("mul", [v, ctx.const(s, dtype)], None, dtype, v.shape)


@handles(aten.addmm, aten.baddbmm)
def _addmm(ctx, node, bias, a, b, beta=1, alpha=1):
    out = ctx.out_dtype(node)
    # f16/bf16: eager adds the bias to the f32 accumulator and rounds once; a bf16 matmul
    # followed by a bf16 add would round twice (and lose everything where the bias cancels
    # the product). So the GEMM keeps its f32 sum (matmul {dtype = "f32"} on the f16/bf16
    # operands as they are: their tiles feed the matrix units, AMX on the CPU) and the sum is
    # rounded once at the end. (Until 2026-12-04 both operands were cast to f32 copies first:
    # the same sums, two more kernels, and the GEMM at the f32 rate.)
    cdt = torch.float32 if out in (torch.float16, torch.bfloat16) else out
    # The bias (cast, scaled) first: a GEMM's fused epilogue reads only values computed before
    # it (fuse.cpp), so the add and the final rounding join the GEMM kernel.
    bias = _scaled(ctx, ctx.cast(bias, cdt), beta, cdt) if beta != 0 else None
    r = _scaled(ctx, _matmul(ctx, a, b, cdt), alpha, cdt)
    if bias is not None:
        r = ctx.emit("add", [r, bias], None, cdt, _bcast(r.shape, bias.shape))
    return ctx.cast(r, out)


@handles(aten.linear)
def _linear(ctx, node, x, w, bias=None):
    out = ctx.out_dtype(node)
    if w.rank != 2:
        raise Unsupported(f"linear weight of rank {w.rank}")
    wt = ctx.permute(w, [1, 0])
    r = _matmul(ctx, x if x.rank >= 2 else ctx.reshape(x, (1,) + x.shape), wt, out)
    r = ctx.reshape(r, ctx.out_shape(node)) if x.rank < 2 else r
    if bias is None:
        return r
    return ctx.emit("add", [r, ctx.cast(bias, out)], None, out, _bcast(r.shape, bias.shape))


# ---------------------------------------------------------------- views


@handles(aten.view, aten._unsafe_view, aten.reshape, aten.unsqueeze, aten.squeeze,
         aten.flatten, aten.unflatten)
def _reshape(ctx, node, x, *args, **kwargs):
    if node.target is aten.view.dtype:
        # t.view(torch.int32) reinterprets the bits (a value cast gave 3.0 for 0x40400000)
        raise Unsupported("view as another dtype (a bit reinterpretation)")
    return ctx.reshape(x, ctx.out_shape(node))


@handles(aten.as_strided)
def _as_strided(ctx, node, x, size, stride, storage_offset=None):
    """as_strided reads its input's storage. Lowered only where that is a reshape: an input
    that is contiguous from its storage's start (as traced) read with the row-major strides of
    `size`, from `storage_offset`, inside the input (group_norm's decomposition views its
    [N, G, C/G, 1] statistics as [N, C] so)."""
    val = node.args[0].meta.get("val")
    size = [int(d) for d in size]
    offset = int(storage_offset or 0)
    want, n = contiguous_strides(size), math.prod(size)
    if (not isinstance(val, torch.Tensor) or not val.is_contiguous()
            or val.storage_offset() != 0 or offset < 0 or offset + n > val.numel()
            or any(d != 1 and s != w for d, s, w in zip(size, stride, want))):
        raise Unsupported("as_strided other than a reshape of a contiguous tensor")
    flat = ctx.reshape(x, (val.numel(),))
    return ctx.reshape(ctx.slice(flat, 0, offset, offset + n, 1), size)


@handles(aten.alias, aten.detach)
def _alias(ctx, node, x):
    return x


@handles(aten.permute)
def _permute(ctx, node, x, dims):
    return ctx.permute(x, dims)


@handles(aten.t)
def _t(ctx, node, x):
    return ctx.permute(x, [1, 0]) if x.rank == 2 else x


@handles(aten.transpose)
def _transpose(ctx, node, x, d0, d1):
    if x.rank == 0:
        return x
    perm = list(range(x.rank))
    d0, d1 = norm_dim(d0, x.rank), norm_dim(d1, x.rank)
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return ctx.permute(x, perm)


@handles(aten.expand)
def _expand(ctx, node, x, size, implicit=False):
    return ctx.expand(x, ctx.out_shape(node))


@handles(aten.slice)
def _slice(ctx, node, x, dim=0, start=None, end=None, step=1):
    return ctx.slice(x, norm_dim(dim, x.rank), start, end, step)


@handles(aten.narrow)
def _narrow(ctx, node, x, dim, start, length):
    d = norm_dim(dim, x.rank)
    start = start % x.shape[d] if start < 0 else start
    return ctx.slice(x, d, start, start + length, 1)


def _select(ctx, x, dim, index):
    d = norm_dim(dim, x.rank)
    n = x.shape[d]
    if not -n <= index < n:
        raise Unsupported(f"select index {index} out of range for size {n}")
    index %= n
    s = ctx.slice(x, d, index, index + 1, 1)
    return ctx.reshape(s, x.shape[:d] + x.shape[d + 1:])


@handles(aten.select)
def _select_h(ctx, node, x, dim, index):
    return _select(ctx, x, dim, index)


@handles(aten.unbind)
def _unbind(ctx, node, x, dim=0):
    d = norm_dim(dim, x.rank)
    return tuple(_select(ctx, x, d, i) for i in range(x.shape[d]))


@handles(aten.split, aten.split_with_sizes)
def _split(ctx, node, x, sizes, dim=0):
    d = norm_dim(dim, x.rank)
    n = x.shape[d]
    if isinstance(sizes, int):
        sizes = [min(sizes, n - s) for s in range(0, n, sizes)] if sizes > 0 else [n]
    parts, start = [], 0
    for s in sizes:
        parts.append(ctx.slice(x, d, start, start + s, 1))
        start += s
    return tuple(parts)


# ---------------------------------------------------------------- data movement


@handles(aten.cat)
def _cat(ctx, node, tensors, dim=0):
    out = ctx.out_dtype(node)
    shape = ctx.out_shape(node)
    # torch's legacy rule: 1-D empty tensors are skipped whatever the other shapes are
    ts = [t for t in tensors if not (t.rank == 1 and t.shape[0] == 0 and len(shape) != 1)]
    if not ts:
        raise Unsupported("cat of only empty tensors")
    d = norm_dim(dim, len(shape))
    ts = [ctx.cast(t, out) for t in ts]
    if len(ts) == 1:
        return ts[0]
    return ctx.emit("cat", ts, {"axis": d}, out, shape)


@handles(aten.embedding)
def _embedding(ctx, node, weight, indices, padding_idx=-1, scale_grad_by_freq=False,
               sparse=False):
    if weight.rank != 2 or weight.dtype not in FLOAT_DTYPES:
        raise Unsupported(f"embedding weight {weight.dtype} of rank {weight.rank}")
    if indices.dtype not in (torch.int32, torch.int64):
        raise Unsupported(f"embedding indices of dtype {indices.dtype}")
    return ctx.emit("embedding", [weight, indices], None, weight.dtype,
                    indices.shape + (weight.shape[1],))


@handles(aten.full_like, aten.zeros_like, aten.ones_like)
def _full_like(ctx, node, x, value=None, **kwargs):
    name = node.target.__name__.split(".")[0]
    value = {"zeros_like": 0, "ones_like": 1}.get(name, value)
    shape = ctx.out_shape(node)
    c = ctx.const(value, ctx.out_dtype(node))
    return ctx.expand(c, shape) if shape else c

