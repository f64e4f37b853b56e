"""tessera.compile_graph: graph IR text lowered, compiled and run on cpu:0 and vulkan:0,
checked against numpy in float64; the compiled program shared across batch sizes; torch,
numpy and Buffer inputs (strided ones too); run_into; and every kind of bad input."""
import math

import numpy as np
import pytest
import torch

import tessera
from conftest import device_param

BLOCK = """
graph @block(%x: tensor<f32, [{n}, 16]>, %b: tensor<f32, [16]>) {{
  %0 = add %x, %b
  %1 = gelu %0
  %s = sum %1 {{axes = [1], keepdim = true}}
  return %1, %s
}}
"""

erf = np.vectorize(math.erf)


def block_reference(x, b):
    v = x.astype(np.float64) + b
    g = v * 0.5 * (1 + erf(v / math.sqrt(2)))
    return g, g.sum(axis=1, keepdims=True)


def check_block(outs, x, b):
    g, s = block_reference(x, b)
    # f32 storage of each node and the f32 erf budget (a few ulp): rtol 1e-5 for the
    # pointwise result; the row sum of 16 terms adds at most 16 roundings of |g| <= 3.
    np.testing.assert_allclose(np.from_dlpack(outs[0]), g, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.from_dlpack(outs[1]), s, rtol=1e-5, atol=16 * 3 * 2**-23)


@pytest.mark.parametrize("device", device_param())
def test_pointwise_and_row_sum_match_numpy(device):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 16)).astype(np.float32)
    b = rng.standard_normal(16).astype(np.float32)
    g = tessera.compile_graph(BLOCK.format(n=8), device)
    assert g.device == device
    assert [k["kind"] for k in g.kernels] and all("kernel" in k and "ops" in k for k in g.kernels)
    assert "kernel @" in g.module
    outs = g.run([x, b])
    assert [o.shape for o in outs] == [[8, 16], [8, 1]]
    assert all(o.device == device and o.dtype == "f32" for o in outs)
    check_block(outs, x, b)


@pytest.mark.parametrize("device", device_param())
def test_new_batch_size_reuses_the_loaded_program(device):
    first = tessera.compile_graph(BLOCK.format(n=8), device)
    second = tessera.compile_graph(BLOCK.format(n=13), device)
    assert second.module == first.module  # sizes are kernel arguments
    assert second.stats["program_reused"] and second.stats["source"] == "memory-cache"
    assert second.stats["codegen_ms"] == 0 and second.stats["load_ms"] == 0
    rng = np.random.default_rng(4)
    for g, n in ((first, 8), (second, 13)):
        x = rng.standard_normal((n, 16)).astype(np.float32)
        b = rng.standard_normal(16).astype(np.float32)
        check_block(g.run([x, b]), x, b)


def test_torch_inputs_outputs_and_zero_copy():
    g = tessera.compile_graph(BLOCK.format(n=4), "cpu:0")
    x = torch.randn(4, 16, requires_grad=True)  # detached by run(): it only reads
    b = torch.randn(16)
    outs = g.run([x, b])
    y = torch.from_dlpack(outs[0])
    ref = torch.nn.functional.gelu(x.detach() + b)
    torch.testing.assert_close(y, ref)
    a = np.from_dlpack(outs[0])
    y[0, 0] = 42.0                      # the output buffer itself, seen by numpy
    assert a[0, 0] == 42.0
    # run_into copies into given tensors (any layout).
    y1, s1 = torch.empty(16, 4).T, torch.empty(4, 1)
    g.run_into([x, b], [y1, s1])
    torch.testing.assert_close(y1, ref)
    torch.testing.assert_close(s1, ref.sum(1, keepdim=True))


# %w is a transposed [3, 5] tensor: strides [1, 3] in the graph, as the front end emits.
STRIDED = """
graph @t(%w: tensor<f32, [3, 5], strides [1, 3]>, %y: tensor<f32, [3, 5]>) {
  %0 = mul %w, %y
  return %0
}
"""


def test_strided_parameters_and_inputs():
    g = tessera.compile_graph(STRIDED, "cpu:0")
    base = torch.arange(15, dtype=torch.float32).reshape(5, 3)
    w = base.T                                  # strides (1, 3): copied as its storage span
    y = torch.arange(15, dtype=torch.float32).reshape(5, 3).T.contiguous() - 7
    (out,) = g.run([w, y])
    torch.testing.assert_close(torch.from_dlpack(out), w * y, rtol=0, atol=0)
    # A contiguous tensor for the strided parameter: re-laid out into [1, 3] strides.
    (out,) = g.run([w.contiguous(), y])
    torch.testing.assert_close(torch.from_dlpack(out), w * y, rtol=0, atol=0)
    # And a non-contiguous input for the contiguous parameter %y.
    y_nc = (torch.arange(15, dtype=torch.float32).reshape(3, 5) - 7).T.contiguous().T
    (out,) = g.run([w, y_nc])
    torch.testing.assert_close(torch.from_dlpack(out), w * y_nc, rtol=0, atol=0)


@pytest.mark.parametrize("device", device_param())
def test_buffer_inputs_are_used_in_place(device):
    g = tessera.compile_graph(BLOCK.format(n=5), device)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((5, 16)).astype(np.float32)
    b = rng.standard_normal(16).astype(np.float32)
    outs = g.run([tessera.from_dlpack(x, device), tessera.from_dlpack(b, device)])
    check_block(outs, x, b)
    # Outputs of one run feed the next without leaving the device.
    twice = tessera.compile_graph("""
graph @twice(%x: tensor<f32, [5, 16]>) {
  %0 = add %x, %x
  return %0
}
""", device)
    (y,) = twice.run([outs[0]])
    np.testing.assert_array_equal(np.from_dlpack(y), 2 * np.from_dlpack(outs[0]))


def test_zero_sized_dimension():
    g = tessera.compile_graph(BLOCK.format(n=0), "cpu:0")
    outs = g.run([np.zeros((0, 16), np.float32), np.ones(16, np.float32)])
    assert [o.shape for o in outs] == [[0, 16], [0, 1]]
    assert np.from_dlpack(outs[0]).shape == (0, 16)


def test_bad_graphs_and_inputs_are_clear_errors():
    with pytest.raises(tessera.TesseraError) as e:
        tessera.compile_graph("graph @g(%x: tensor<f32, [4]>) {\n  %0 = frob %x\n  return %0\n}",
                              "cpu:0")
    assert e.value.code == "INVALID_ARGUMENT" and "<string>:2:" in e.value.message
    with pytest.raises(tessera.TesseraError) as e:
        tessera.compile_graph(BLOCK.format(n=2), "nosuch:0")
    assert e.value.code == "NOT_FOUND"
    for junk in ["", "graph", "graph @g(", "\x00\xff garbage", "graph @g() {\n}\n",
                 BLOCK.format(n=2)[:-5]]:
        with pytest.raises(tessera.TesseraError) as e:
            tessera.compile_graph(junk, "cpu:0")
        assert e.value.code == "INVALID_ARGUMENT" and "<string>:" in e.value.message, junk
    g = tessera.compile_graph(BLOCK.format(n=2), "cpu:0")
    x, b = np.zeros((2, 16), np.float32), np.zeros(16, np.float32)
    cases = [
        ([x], "takes 2 inputs, got 1"),
        ([x.astype(np.float64), b], "dtype f64, the graph takes f32"),
        ([np.zeros((3, 16), np.float32), b], "shape [3, 16], the graph takes [2, 16]"),
        ([x, "b"], "expected a DLPack-capable host tensor"),
    ]
    for inputs, text in cases:
        with pytest.raises(tessera.TesseraError) as e:
            g.run(inputs)
        assert e.value.code == "INVALID_ARGUMENT", e.value
        assert text in e.value.message, e.value.message
    if "vulkan:0" in [d.name for d in tessera.devices()]:
        with pytest.raises(tessera.TesseraError) as e:
            g.run([tessera.from_dlpack(x, "vulkan:0"), b])
        assert e.value.code == "INVALID_ARGUMENT" and "vulkan:0" in e.value.message
    with pytest.raises(tessera.TesseraError) as e:
        g.run_into([x, b], [torch.empty(2, 16)])
    assert e.value.code == "INVALID_ARGUMENT"


def test_run_torch_returns_tensors_that_alias_the_outputs():
    # the torch.compile path: torch tensors in, torch tensors out, no tessera.Buffer between
    g = tessera.compile_graph(BLOCK.format(n=4), "cpu:0")
    x = torch.randn(4, 16, requires_grad=True)  # only read, like run()
    b = torch.randn(16)
    outs = g.run_torch([x, b])
    assert all(type(o) is torch.Tensor for o in outs)
    assert [o.shape for o in outs] == [(4, 16), (4, 1)] and outs[1].stride() == (1, 1)
    check_block([o.numpy() for o in outs], x.detach().numpy(), b.numpy())
    # each tensor keeps its HAL buffer alive on its own, past the graph and its siblings
    twice = tessera.compile_graph("""
graph @t(%x: tensor<f32, [3]>) {
  %0 = mul %x, %x
  return %0, %0
}
""", "cpu:0")
    a, c = twice.run_torch([torch.tensor([1.0, -2.0, 3.0])])
    assert c.tolist() == [1.0, 4.0, 9.0]
    del twice, g, c
    import gc
    gc.collect()
    assert a.tolist() == [1.0, 4.0, 9.0]       # the capsule keeps the buffer alive
    a[0] = 5.0
    assert a.tolist() == [5.0, 4.0, 9.0]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.int64])
def test_run_torch_dtypes(dtype):
    name = {torch.float16: "f16", torch.bfloat16: "bf16", torch.int64: "i64"}[dtype]
    g = tessera.compile_graph(f"""
graph @t(%x: tensor<{name}, [2, 5]>, %y: tensor<{name}, [5]>) {{
  %0 = add %x, %y
  return %0
}}
""", "cpu:0")
    x = (torch.arange(10).reshape(2, 5) * 3 - 7).to(dtype)
    y = torch.tensor([1, -1, 2, -2, 100]).to(dtype)
    (out,) = g.run_torch([x, y])
    assert out.dtype == dtype
    # small integers: exact in every one of these dtypes, so the sum must be too
    assert out.to(torch.float64).tolist() == (x.double() + y.double()).tolist()


def test_run_torch_strided_empty_and_bad_inputs():
    g = tessera.compile_graph(STRIDED, "cpu:0")
    w = torch.arange(15, dtype=torch.float32).reshape(5, 3).T
    y_nc = (torch.arange(15, dtype=torch.float32).reshape(3, 5) - 7).T.contiguous().T
    for a, b in ((w, y_nc), (w.contiguous(), y_nc.contiguous()), (w, y_nc[:, :5])):
        (out,) = g.run_torch([a, b])
        assert out.tolist() == (w * y_nc).tolist()
    # zero-sized dimensions: no byte is read, none is written
    e = tessera.compile_graph(BLOCK.format(n=0), "cpu:0")
    outs = e.run_torch([torch.zeros(0, 16), torch.ones(16)])
    assert [o.shape for o in outs] == [(0, 16), (0, 1)]
    cases = [
        ([w], "takes 2 inputs, got 1"),
        ([w, "y"], "input 1: expected a torch tensor or a tessera.Buffer, got str"),
        ([w.double(), y_nc], "dtype f64, the graph takes f32"),
        ([w, torch.zeros(3, 4)], "shape [3, 4], the graph takes [3, 5]"),
    ]
    for inputs, msg in cases:
        with pytest.raises(tessera.TesseraError) as err:
            g.run_torch(inputs)
        assert err.value.code == "INVALID_ARGUMENT" and msg in err.value.message, err.value


TWO_KERNELS = """
graph @two(%x: tensor<f32, [1024, 1024]>, %s: tensor<f32, [16]>) {
  %y = exp %x
  %z = add %s, %s
  return %y, %z
}
"""


def test_profile_times_each_launch_alone():
    cg = tessera.compile_graph(TWO_KERNELS, "cpu:0")
    x = torch.randn(1024, 1024) * 0.1
    s = torch.arange(16, dtype=torch.float32)
    prof = cg.profile([x, s], runs=5)
    assert [p["kernel"] for p in prof] == [k["kernel"] for k in cg.kernels]
    assert [p["launched"] for p in prof] == cg.launch_kernels
    for p in prof:
        assert p["runs"] == 5 and 0 < p["min_ms"] <= p["median_ms"]
    # a million exps against 16 adds: the times belong to their launches
    big = next(p for p in prof if p["kernel"] in
               [k["kernel"] for k in cg.kernels if "exp" in k["ops"]])
    small = next(p for p in prof if p is not big)
    assert big["min_ms"] > small["median_ms"], prof
    # profiling leaves the graph runnable, with right results
    y, z = cg.run_torch([x, s])
    torch.testing.assert_close(y, torch.exp(x))
    torch.testing.assert_close(z, s + s)
    with pytest.raises(tessera.TesseraError, match="runs must be at least 1"):
        cg.profile([x, s], runs=0)
    with pytest.raises(tessera.TesseraError, match="takes 2 inputs"):
        cg.profile([x], runs=1)


def test_kernels_list_every_op_they_compute():
    """A kernel's ops are its own and those it recomputes inline (a pointwise chain's
    producers, a reduction's prologue), in graph order: before, a fused pointwise kernel
    listed only its last op, so explain hid what was fused."""
    g = tessera.compile_graph("""graph @g(%x: tensor<f32, [4, 8]>) {
  %a = exp %x
  %b = mul %a, %x
  %c = add %b, %x
  %e = exp %x
  %s = sum %e {axes = [1]}
  return %c, %s
}""", "cpu:0")
    assert [(k["kind"], k["ops"]) for k in g.kernels] == [
        ("pointwise", ["exp", "mul", "add"]), ("row", ["exp", "sum"])]


def test_perf_map_names_the_jit_compiled_kernels(tmp_path):
    # TESSERA_PERF_MAP=1: every kernel the CPU driver JIT-loads is appended to
    # /tmp/perf-<pid>.map, so `perf report` names the kernels (docs/performance.md)
    import os
    import subprocess
    import sys

    code = ("import tessera, torch, os\n"
            "g = tessera.compile_graph('''" + BLOCK.format(n=8) + "''', 'cpu:0')\n"
            "g.run_torch([torch.randn(8, 16), torch.randn(16)])\n"
            "print(os.getpid())\n")
    env = dict(os.environ, TESSERA_PERF_MAP="1", TESSERA_CACHE_DIR=str(tmp_path))
    pid = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True,
                         text=True).stdout.split()[-1]
    path = f"/tmp/perf-{pid}.map"
    try:
        lines = [ln.split() for ln in open(path)]
    finally:
        os.remove(path)
    kernels = {name for _, _, name in lines}
    assert any(n.startswith("tsr_wg_k0_") for n in kernels), lines
    for addr, size, _ in lines:
        assert int(addr, 16) > 0 and 0 < int(size, 16) < 1 << 20
