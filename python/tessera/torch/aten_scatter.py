"""aten gathers and scatters -> graph IR, written as one-hot selections.

The graph IR has no indexed load or store besides embedding, but the ops that training
graphs need (cross-entropy's gather and scatter, the backward of slicing, selecting and
embedding) are selections: out[i] = the one source element whose index hits i. They are
written as where(index == iota, value, 0) summed over the source axis, which is exact (the
other terms are zeros, no 0 * x products, so inf and NaN elsewhere do not leak), at the cost
of work proportional to (source extent x destination extent) along the indexed axis.
Index out of range: torch raises; here the element reads (gather) or writes (scatter) nothing.
"""

from __future__ import annotations

import torch

from .aten_ops import Unsupported, Value, _bcast, _name, handles, norm_dim

aten = torch.ops.aten

# The selections below cost (source extent x destination extent) element operations (about
# 3 ns each on cpu:0) where eager's gather / index_add cost the destination's; past this many
# the op falls back to eager torch (counted and named by explain): an embedding backward over
# 4000 rows x 512 tokens x 128 took 188 ms a step against eager's 0.57 ms, 1000 x 512 x 8 14 ms
# against 0.07 (adversarial round 7).
_SELECTION_LIMIT = 1 << 16

def _numel(shape):
    n = 1
    for s in shape:
        n *= int(s)
    return n


def _iota_along(ctx, n, axis, rank, dtype):
    shape = [1] * rank
    shape[axis] = n
    iota = ctx.emit("iota", [], {"shape": [n], "axis": 0, "dtype": _name(torch.int64)},
                    torch.int64, (n,))
    return ctx.reshape(ctx.cast(iota, dtype), shape)


@handles(aten.gather)
def _gather(ctx, node, x, dim, idx, sparse_grad=False):
    if x.rank != idx.rank or x.rank == 0 or x.dtype == torch.bool:
        raise Unsupported(f"gather of {x.dtype} rank {x.rank} with index rank {idx.rank}")
    d = norm_dim(dim, x.rank)
    work = x.shape[d] * _numel(idx.shape)
    if work > _SELECTION_LIMIT:
        raise Unsupported(f"gather of {_numel(idx.shape)} indices from an axis of {x.shape[d]}: "
                          f"the selection form takes {work} element operations (eager's "
                          f"gather {_numel(idx.shape)}; the limit is {_SELECTION_LIMIT})")
    for i in range(x.rank):
        if i != d and idx.shape[i] < x.shape[i]:
            x = ctx.slice(x, i, 0, idx.shape[i], 1)
    r = x.rank
    perm = [i for i in range(r) if i != d] + [d]           # the gathered axis moved last
    xp, ip = ctx.permute(x, perm), ctx.permute(idx, perm)  # [.., n], [.., k]
    xe = ctx.reshape(xp, xp.shape[:-1] + (1, xp.shape[-1]))  # [.., 1, n]
    ie = ctx.reshape(ip, ip.shape + (1,))                    # [.., k, 1]
    iota = _iota_along(ctx, xp.shape[-1], r, r + 1, idx.dtype)  # [1, .., 1, n]
    hit = ctx.emit("eq", [ie, iota], None, torch.bool, _bcast(ie.shape, iota.shape))
    shape = _bcast(hit.shape, xe.shape)
    sel = ctx.emit("where", [hit, xe, ctx.const(0, x.dtype)], None, x.dtype, shape)
    g = ctx.emit("sum", [sel], {"axes": [r], "keepdim": False}, x.dtype, shape[:r])  # [.., k]
    inv = [perm.index(i) for i in range(r)]
    return ctx.permute(g, inv)


@handles(aten.scatter)
def _scatter(ctx, node, x, dim, idx, src=None, value=None, reduce=None):
    if reduce is not None:
        raise Unsupported(f"scatter reduce={reduce!r}")
    d = norm_dim(dim, x.rank)
    if idx.rank != x.rank or idx.shape[d] != 1 or any(
            idx.shape[i] != x.shape[i] for i in range(x.rank) if i != d):
        raise Unsupported("scatter with an index other than one element per row along dim")
    v = src if src is not None else value
    if isinstance(v, Value):
        if v.shape != idx.shape:
            v = ctx.slice(v, d, 0, 1, 1)
            for i in range(x.rank):
                if i != d and v.shape[i] != idx.shape[i]:
                    raise Unsupported("scatter src larger than its index")
    v = ctx.operand(v, x.dtype)
    iota = _iota_along(ctx, x.shape[d], d, x.rank, idx.dtype)
    hit = ctx.emit("eq", [idx, iota], None, torch.bool, _bcast(idx.shape, iota.shape))
    return ctx.emit("where", [hit, v, x], None, x.dtype, _bcast(hit.shape, v.shape, x.shape))




def _select_into(ctx, base, src, d, start, step):
    """base with base[.., start + j*step, ..] = src[.., j, ..] along axis d (src extent m)."""
    r = base.rank
    n, m = base.shape[d], src.shape[d]
    perm = [i for i in range(r) if i != d] + [d]
    bp, sp = ctx.permute(base, perm), ctx.permute(ctx.cast(src, base.dtype), perm)
    se = ctx.reshape(sp, sp.shape[:-1] + (1, m))                        # [.., 1, m]
    pos = ctx.emit("iota", [], {"shape": [m], "axis": 0, "start": start, "step": step,
                                "dtype": "i64"}, torch.int64, (m,))
    pos = ctx.reshape(pos, (1,) * (r - 1) + (1, m))                      # [1.., 1, m]
    dst = ctx.emit("iota", [], {"shape": [n], "axis": 0, "dtype": "i64"}, torch.int64, (n,))
    dst = ctx.reshape(dst, (1,) * (r - 1) + (n, 1))                      # [1.., n, 1]
    hit = ctx.emit("eq", [dst, pos], None, torch.bool, _bcast(dst.shape, pos.shape))
    shape = _bcast(hit.shape, se.shape)
    sel = ctx.emit("where", [hit, se, ctx.const(0, base.dtype)], None, base.dtype, shape)
    val = ctx.emit("sum", [sel], {"axes": [r], "keepdim": False}, base.dtype, shape[:r])
    one = ctx.emit("where", [hit, ctx.const(1, torch.int32), ctx.const(0, torch.int32)], None,
                   torch.int32, hit.shape)
    covered = ctx.emit("amax", [one], {"axes": [r], "keepdim": False}, torch.int32,
                       hit.shape[:r])
    covered = ctx.emit("ne", [covered, ctx.const(0, torch.int32)], None, torch.bool,
                       covered.shape)
    out = ctx.emit("where", [covered, val, bp], None, base.dtype,
                   _bcast(covered.shape, val.shape, bp.shape))
    return ctx.permute(out, [perm.index(i) for i in range(r)])


@handles(aten.slice_scatter)
def _slice_scatter(ctx, node, base, src, dim=0, start=None, end=None, step=1):
    d = norm_dim(dim, base.rank)
    n = base.shape[d]
    start, end, step = slice(start, end, step).indices(n)
    m = len(range(start, end, step))
    if m != src.shape[d]:
        raise Unsupported(f"slice_scatter of {src.shape[d]} rows into a slice of {m}")
    if m == 0:
        return ctx.cast(base, ctx.out_dtype(node))
    if step == 1:
        # the common case (backward of a contiguous slice or split): a cat, no selection
        parts = []
        if start > 0:
            parts.append(ctx.slice(base, d, 0, start, 1))
        parts.append(ctx.cast(src, base.dtype))
        if start + m < n:
            parts.append(ctx.slice(base, d, start + m, n, 1))
        if len(parts) == 1:
            return parts[0]
        return ctx.emit("cat", parts, {"axis": d}, base.dtype, base.shape)
    return _select_into(ctx, base, src, d, start, step)


@handles(aten.select_scatter)
def _select_scatter(ctx, node, base, src, dim, index):
    d = norm_dim(dim, base.rank)
    n = base.shape[d]
    if not -n <= index < n:
        raise Unsupported(f"select_scatter index {index} out of range for size {n}")
    index %= n
    src = ctx.reshape(src, base.shape[:d] + (1,) + base.shape[d + 1:])
    return _slice_scatter(ctx, node, base, src, d, index, index + 1, 1)


@handles(aten.embedding_dense_backward)
def _embedding_backward(ctx, node, grad, indices, num_weights, padding_idx,
                        scale_grad_by_freq):
    """grad_weight[v] = sum of the grad rows whose index is v, each row selected (a `where`),
    never multiplied by a one-hot 0 or 1: 0 * inf is NaN, so an inf or NaN in one token's
    gradient reached every row of the matmul form (adversarial round 6), while eager only
    touches the rows looked up."""
    if scale_grad_by_freq:
        raise Unsupported("embedding backward with scale_grad_by_freq")
    if grad.dtype not in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        raise Unsupported(f"embedding backward of {grad.dtype}")
    d = grad.shape[-1]
    n = _numel(indices.shape)
    if num_weights * n * d > _SELECTION_LIMIT:
        raise Unsupported(f"embedding backward of {n} tokens into {num_weights} rows of {d}: "
                          f"the selection form takes {num_weights * n * d} element operations "
                          f"(eager's index_add {n * d}; the limit is {_SELECTION_LIMIT})")
    idx = ctx.reshape(indices, (1, n))                                   # [1, N]
    rows = ctx.emit("iota", [], {"shape": [num_weights, 1], "axis": 0, "dtype": "i64"},
                    torch.int64, (num_weights, 1))
    hit = ctx.emit("eq", [rows, ctx.cast(idx, torch.int64)], None, torch.bool,
                   (num_weights, n))                                     # [V, N]
    if padding_idx is not None and padding_idx >= 0:
        keep = ctx.emit("ne", [rows, ctx.const(padding_idx, torch.int64)], None, torch.bool,
                        (num_weights, 1))
        hit = ctx.emit("and", [hit, keep], None, torch.bool, (num_weights, n))
    cdt = torch.float32 if grad.dtype in (torch.float16, torch.bfloat16) else grad.dtype
    hit = ctx.reshape(hit, (num_weights, n, 1))                          # [V, N, 1]
    g = ctx.cast(ctx.reshape(grad, (1, n, d)), cdt)                      # [1, N, D]
    sel = ctx.emit("where", [hit, g, ctx.const(0, cdt)], None, cdt, (num_weights, n, d))
    out = ctx.emit("sum", [sel], {"axes": [1], "keepdim": False}, cdt, (num_weights, d))
    return ctx.cast(out, ctx.out_dtype(node))
