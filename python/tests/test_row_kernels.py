"""Row kernels on cpu:0 (ir/graph/lower_reduce.cpp: one subgroup per row, several rows per
workgroup, each work-item folding up to 4 elements per lock-step iteration) against numpy in
float64, at row lengths around the subgroup width (1, 15, 16, 17), the models' (64) and long
rows (1000), with row counts that are not a multiple of the rows per workgroup; and the row sum
bit for bit against the CPU backend's documented order: work-item l of a row's subgroup adds
elements l, l + 16, l + 32, ... in turn, then the subgroup adds its 16 partials in lane order."""
import importlib.util
import pathlib

import numpy as np
import pytest

import tessera

# The graphs as the torch front end decomposes the ops: the benchmark's own (bench/row_kernels.py).
_spec = importlib.util.spec_from_file_location(
    "row_kernels_bench", pathlib.Path(__file__).resolve().parents[2] / "bench" / "row_kernels.py")
_bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_bench)
SOFTMAX, LOG_SOFTMAX, LAYER_NORM = _bench.SOFTMAX, _bench.LOG_SOFTMAX, _bench.LAYER_NORM
RMS_NORM, MASKED_SOFTMAX = _bench.RMS_NORM, _bench.MASKED_SOFTMAX

ROW_SUM = """graph @g(%x: tensor<f32, [{n}, {r}]>) {{
  %s = sum %x {{axes = [1]}}
  return %s
}}"""


def softmax64(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def run(text, n, r, inputs):
    g = tessera.compile_graph(text.format(n=n, r=r), "cpu:0")
    assert [k["kind"] for k in g.kernels] == ["row"]
    return [np.from_dlpack(o).astype(np.float64) for o in g.run(inputs)]


# f32 budget of a row op: each element a few roundings (exp, rsqrt: a few ulp), a row sum
# R roundings of partial sums of magnitude <= R * max|term|.
def budget(r):
    return dict(rtol=1e-5 * (1 + r / 64), atol=2e-6 * (1 + r / 64))


LENGTHS = [1, 15, 16, 17, 64, 1000]
ROWS = [1, 7, 9]


@pytest.mark.parametrize("r", LENGTHS)
@pytest.mark.parametrize("n", ROWS)
def test_softmax_and_log_softmax(n, r):
    x = np.random.default_rng(r * 31 + n).standard_normal((n, r)).astype(np.float32) * 3
    x64 = x.astype(np.float64)
    (y,) = run(SOFTMAX, n, r, [x])
    np.testing.assert_allclose(y, softmax64(x64), **budget(r))
    (y,) = run(LOG_SOFTMAX, n, r, [x])
    want = x64 - x64.max(1, keepdims=True)
    want -= np.log(np.exp(want).sum(1, keepdims=True))
    np.testing.assert_allclose(y, want, **budget(r))


@pytest.mark.parametrize("r", LENGTHS)
@pytest.mark.parametrize("n", ROWS)
def test_layer_norm_and_rms_norm(n, r):
    rng = np.random.default_rng(r * 17 + n)
    x = (rng.standard_normal((n, r)) + 2).astype(np.float32)
    w, b = rng.standard_normal((2, r)).astype(np.float32)
    x64, w64, b64 = (v.astype(np.float64) for v in (x, w, b))
    (y,) = run(LAYER_NORM, n, r, [x, w, b])
    m = x64.mean(1, keepdims=True)
    v = ((x64 - m) ** 2).mean(1, keepdims=True)
    # x - mean cancels: its relative error grows with |mean| / std (~2 here).
    np.testing.assert_allclose(y, (x64 - m) / np.sqrt(v + 1e-5) * w64 + b64, rtol=1e-4, atol=1e-4)
    (y,) = run(RMS_NORM, n, r, [x, w])
    want = x64 / np.sqrt((x64 * x64).mean(1, keepdims=True) + 1e-6) * w64
    np.testing.assert_allclose(y, want, **budget(r))


@pytest.mark.parametrize("r", [1, 17, 64])
def test_masked_softmax(r):
    n = 5
    x = np.random.default_rng(r).standard_normal((n, r, r)).astype(np.float32)
    x64 = np.where(np.tril(np.ones((r, r), bool)), x.astype(np.float64), -np.inf)
    (y,) = run(MASKED_SOFTMAX, n, r, [x])
    np.testing.assert_allclose(y, softmax64(x64), **budget(r))


def lane_order_row_sum(x, width=16):
    """The CPU backend's row sum in f32: per lane, its elements in turn; then lanes in order."""
    out = np.empty(x.shape[0], np.float32)
    for i, row in enumerate(x):
        part = [np.float32(0)] * width
        for j, v in enumerate(row):
            part[j % width] = np.float32(part[j % width] + v)
        acc = part[0]
        for p in part[1:]:
            acc = np.float32(acc + p)
        out[i] = acc
    return out


def spread_values(rng, shape):
    """f32 values with magnitudes from 1e-3 to 1e5: almost every other summation order rounds
    differently, so a sum compared bit for bit pins its order."""
    return (rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 6, shape)).astype(np.float32)


def assert_one_kernel_bit_for_bit(text, kind, x, want):
    """`text` lowers to one kernel of `kind` on cpu:0, whose output on x is `want`'s bits."""
    g = tessera.compile_graph(text, "cpu:0")
    assert [k["kind"] for k in g.kernels] == [kind]
    got = np.from_dlpack(g.run([x])[0])
    assert got.tobytes() == want.tobytes(), np.nonzero(got != want)


@pytest.mark.parametrize("r", [15, 64, 100, 1000])
def test_row_sum_is_the_documented_order_bit_for_bit(r):
    x = spread_values(np.random.default_rng(r), (6, r))
    assert_one_kernel_bit_for_bit(ROW_SUM.format(n=6, r=r), "row", x, lane_order_row_sum(x))


COL_SUM = """graph @g(%x: tensor<f32, [{n}, {c}]>) {{
  %s = sum %x {{axes = [0]}}
  return %s
}}"""

COL_ARGMAX_VAR = """graph @g(%x: tensor<f32, [{n}, {c}]>) {{
  %a = argmax %x {{axes = [0]}}
  %v = var %x {{axes = [0], correction = 1}}
  return %a, %v
}}"""


def blocked_column_sum(x, axis=0, unroll=8, block=128):
    """The cpu:0 column fold's order (ir/graph/lower_column.cpp, emitColumn): the first
    n - n % unroll rows in blocks of `block` rows, block partials in blocks of `block` blocks,
    then the rest of the rows one by one into the total; f32 after every add."""
    x = np.moveaxis(x, axis, 0)
    n = x.shape[0]
    main = n - n % unroll
    tot = np.zeros(x.shape[1:], np.float32)
    for b2 in range(0, main, block * block):
        mid = np.zeros_like(tot)
        for b1 in range(b2, min(b2 + block * block, main), block):
            blk = np.zeros_like(tot)
            for j in range(b1, min(b1 + block, main)):
                blk = (blk + x[j]).astype(np.float32)
            mid = (mid + blk).astype(np.float32)
        tot = (tot + mid).astype(np.float32)
    for j in range(main, n):
        tot = (tot + x[j]).astype(np.float32)
    return tot


# Column kernels (a bias gradient: sum over dim 0). On cpu:0 each lock-step iteration folds 8
# rows (kColumnUnroll) into a block partial, blocks of 128 rows (kColumnBlock) fold into
# partials of 128 blocks, those into the total: bit for bit blocked_column_sum, at extents
# below, at and around multiples of 8 and of 128 (a single running sum differs there).
@pytest.mark.parametrize("n", [1, 7, 8, 9, 64, 255, 256, 1000])
def test_column_sum_is_the_blocked_sum_bit_for_bit(n):
    c = 10
    x = spread_values(np.random.default_rng(n), (n, c))
    assert_one_kernel_bit_for_bit(COL_SUM.format(n=n, c=c), "reduce", x, blocked_column_sum(x))


# A bias gradient over many rows: a single running f32 sum drifts with the row count (100k rows
# of U(0, 1): 0.28 off the f64 sum, eager 0.008); the blocked fold stays within eager's error.
def test_column_sum_over_many_rows_is_as_accurate_as_eager():
    n, c = 100_000, 4
    x = np.random.default_rng(5).random((n, c), dtype=np.float32)
    g = tessera.compile_graph(COL_SUM.format(n=n, c=c), "cpu:0")
    (s,) = (np.from_dlpack(o) for o in g.run([x]))
    truth = x.astype(np.float64).sum(axis=0)
    err = np.abs(s.astype(np.float64) - truth).max()
    assert err < 0.02, f"column sum of {n} rows off the f64 sum by {err}"


@pytest.mark.parametrize("n", [3, 17, 100])
def test_column_argmax_and_var(n):
    c = 33
    rng = np.random.default_rng(n)
    x = rng.standard_normal((n, c)).astype(np.float32)
    x[n // 2, 5] = x[:, 5].max()  # a tie: the first index wins
    x[n - 1, 7] = np.nan  # NaN is the maximum
    g = tessera.compile_graph(COL_ARGMAX_VAR.format(n=n, c=c), "cpu:0")
    a, v = (np.from_dlpack(o) for o in g.run([x]))
    want_a = np.argmax(x, axis=0)  # numpy: NaN wins, the first of ties
    np.testing.assert_array_equal(a, want_a)
    x64 = x.astype(np.float64)
    want_v = x64.var(axis=0, ddof=1)
    ok = ~np.isnan(want_v)
    np.testing.assert_allclose(v[ok], want_v[ok], rtol=1e-5 * (1 + n / 64), atol=1e-6)
    assert np.isnan(v[7])


COL_SUM_3D = """graph @g(%x: tensor<f32, [{a}, {n}, {c}]>) {{
  %s = sum %x {{axes = [1]}}
  %m = amax %x {{axes = [1]}}
  return %s, %m
}}"""


# The column loop reads each work-item's output coordinates inside the loop (so that adjacent
# work-items load adjacent elements as one vector): outputs over two kept axes, a row count
# around the 8-row step, and more outputs than one workgroup holds (the last one partial),
# against the blocked f32 sum bit for bit and numpy's amax.
@pytest.mark.parametrize("a,n,c", [(3, 9, 5), (2, 17, 150), (1, 16, 300), (2, 300, 17)])
def test_column_sum_over_a_middle_axis_bit_for_bit(a, n, c):
    x = spread_values(np.random.default_rng(a * 1000 + n + c), (a, n, c))
    g = tessera.compile_graph(COL_SUM_3D.format(a=a, n=n, c=c), "cpu:0")
    assert [k["kind"] for k in g.kernels] == ["reduce", "reduce"]
    s, m = (np.from_dlpack(o) for o in g.run([x]))
    assert s.tobytes() == blocked_column_sum(x, axis=1).tobytes()
    np.testing.assert_array_equal(m, x.max(axis=1))


def blocked_lane_order_row_sum(x, width=16, span=16 * 4 * 16):
    """The CPU backend's sum of a long row (more than 16 lock-step iterations of 16 lanes x 4
    elements): lane l folds its elements of each span of 1024 into a block partial (l, l + 16,
    ... in turn), and the block partials into its total; then the lanes in order. f32 after
    every add."""
    out = np.empty(x.shape[0], np.float32)
    for i, row in enumerate(x):
        acc = np.float32(0)
        for lane in range(width):
            tot = np.float32(0)
            for b in range(0, len(row), span):
                blk = np.float32(0)
                for v in row[b + lane : b + span : width]:
                    blk = np.float32(blk + v)
                tot = np.float32(tot + blk)
            acc = tot if lane == 0 else np.float32(acc + tot)
        out[i] = acc
    return out


# Long rows are blocked (lower_reduce.cpp, kRowBlock): at 1024 elements still one block (the
# lane order above), past it block partials, bit for bit.
@pytest.mark.parametrize("r", [1024, 1025, 3 * 1024 + 77, 12365])
def test_long_row_sum_is_the_blocked_order_bit_for_bit(r):
    x = spread_values(np.random.default_rng(r), (3, r))
    want = lane_order_row_sum(x) if r <= 1024 else blocked_lane_order_row_sum(x)
    assert_one_kernel_bit_for_bit(ROW_SUM.format(n=3, r=r), "row", x, want)
    if r > 2 * 1024:  # the blocked order is not the single running sum's: the model pins it
        assert lane_order_row_sum(x).tobytes() != want.tobytes()


def split_row_sum(x, chunk=16384, max_chunks=1024):
    """A few long rows are split (lower_reduce.cpp, kSplitChunk): C = ceil(R / 16384) chunks
    (at most 1024) of L = ceil(R / C) elements, each summed as a row of its own (the blocked
    lane order), then each row's C partials added in f64 in chunk order from 0, rounded once."""
    r = x.shape[1]
    c = min(-(-r // chunk), max_chunks)
    length = -(-r // c)
    parts = [blocked_lane_order_row_sum(np.ascontiguousarray(x[:, i : i + length]))
             for i in range(0, r, length)]
    tot = np.zeros(x.shape[0], np.float64)
    for p in parts:
        tot = tot + p.astype(np.float64)
    return tot.astype(np.float32)


SPLIT_STATS = """graph @g(%x: tensor<f32, [{n}, {r}]{strides}>) {{
  %e = exp %x
  %s = sum %e {{axes = [1]}}
  %m = mean %x {{axes = [1]}}
  %a = amax %x {{axes = [1]}}
  %b = amin %x {{axes = [1]}}
  %q = div %s, %a
  return %s, %m, %a, %b, %q
}}"""


# Fewer than 16 rows of 65536 or more elements run as two kernels: chunks of the rows, then
# each row's partials. The sum bit for bit in that order; mean / amax / amin / a per-row value
# against numpy; a NaN in one chunk reaches amax and amin; a transposed (strided) input.
@pytest.mark.parametrize("n,r", [(1, 65536), (3, 100003), (15, 70001)])
def test_split_rows(n, r):
    x = spread_values(np.random.default_rng(r), (n, r))
    g = tessera.compile_graph(ROW_SUM.format(n=n, r=r), "cpu:0")
    assert [k["kind"] for k in g.kernels] == ["row", "reduce"]
    got = np.from_dlpack(g.run([x])[0])
    want = split_row_sum(x)
    assert got.tobytes() == want.tobytes(), np.nonzero(got != want)

    x = np.random.default_rng(n).standard_normal((n, r)).astype(np.float32)
    x[n // 2, r - 3] = np.nan
    x64 = x.astype(np.float64)
    for strided in (False, True):
        inp = np.ascontiguousarray(x.T).T if strided else x  # column-major storage
        text = SPLIT_STATS.format(n=n, r=r, strides=f", strides [1, {n}]" if strided else "")
        g = tessera.compile_graph(text, "cpu:0")
        assert [k["kind"] for k in g.kernels][:2] == ["row", "reduce"]
        s, m, a, b, q = (np.from_dlpack(o).astype(np.float64) for o in g.run([inp]))
        np.testing.assert_allclose(s, np.exp(x64).sum(1), rtol=1e-5)
        np.testing.assert_allclose(m, x64.mean(1), rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(a, x64.max(1))  # NaN where the row has one
        np.testing.assert_array_equal(b, x64.min(1))
        np.testing.assert_allclose(q, np.exp(x64).sum(1) / x64.max(1), rtol=1e-5)
    # 16 rows are enough to fill the machine: one row kernel
    g = tessera.compile_graph(ROW_SUM.format(n=16, r=r), "cpu:0")
    assert [k["kind"] for k in g.kernels] == ["row"]


OTHER_DEVICES = [d.name for d in tessera.devices() if d.name in ("vulkan:0", "opencl:0")]


# The same split kernels on the GPU-style backends (a workgroup per chunk, no lock-step loop).
@pytest.mark.parametrize("device", OTHER_DEVICES)
def test_split_rows_on_other_devices(device):
    n, r = 3, 100003
    x = np.random.default_rng(n).standard_normal((n, r)).astype(np.float32)
    x[1, r - 3] = np.nan
    x64 = x.astype(np.float64)
    for strided in (False, True):
        inp = np.ascontiguousarray(x.T).T if strided else x
        text = SPLIT_STATS.format(n=n, r=r, strides=f", strides [1, {n}]" if strided else "")
        g = tessera.compile_graph(text, device)
        assert [k["kind"] for k in g.kernels][:2] == ["row", "reduce"]
        s, m, a, b, q = (np.from_dlpack(o).astype(np.float64) for o in g.run([inp]))
        np.testing.assert_allclose(s, np.exp(x64).sum(1), rtol=1e-5)
        np.testing.assert_allclose(m, x64.mean(1), rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(a, x64.max(1))
        np.testing.assert_array_equal(b, x64.min(1))
        np.testing.assert_allclose(q, np.exp(x64).sum(1) / x64.max(1), rtol=1e-5)
