"""Extern GEMMs (docs/torch.md, "Extern GEMMs"): epilogue-free f32 GEMMs on cpu:0 run as
Tessera's kernel or the vendor library's sgemm (the HAL "extern" format: MKL, else OpenBLAS),
chosen by measurement per shape. Checked here: both forced implementations against numpy
(f64), the choice recorded in CompiledGraph.kernels and honoured (the run's output is
bit-identical to the chosen implementation's), GEMMs the library cannot take, OpenBLAS when MKL
is missing, and Tessera alone without either library."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tessera

from conftest import device_names

CPU = pytest.mark.skipif("cpu:0" not in device_names(), reason="cpu:0 absent")


def matmul_text(M, N, K, batch=None, transpose_b=False, broadcast_b=False, bias=False):
    """a [batch.., M, K] x b ([K, N], or [N, K] read transposed), b shared by the batch
    when broadcast_b."""
    pre = list(batch or [])
    a_shape = pre + [M, K]
    b_lead = [] if broadcast_b else pre
    b_shape = b_lead + ([N, K] if transpose_b else [K, N])
    out = pre + [M, N]
    t = lambda s: f"tensor<f32, [{', '.join(map(str, s))}]>"  # noqa: E731
    params = [f"%a: {t(a_shape)}", f"%b: {t(b_shape)}"] + ([f"%bias: {t([N])}"] if bias else [])
    body = []
    b = "%b"
    if transpose_b:
        r = len(b_shape)
        perm = list(range(r - 2)) + [r - 1, r - 2]
        body.append(f"%bt = permute %b {{perm = {perm}}} : {t(b_lead + [K, N])}")
        b = "%bt"
    body.append(f"%c = matmul %a, {b} : {t(out)}")
    result = "%c"
    if bias:
        body.append("%d = add %c, %bias")
        result = "%d"
    return (f"graph @g({', '.join(params)}) {{\n  " + "\n  ".join(body) +
            f"\n  return {result}\n}}")


def inputs(M, N, K, batch=None, transpose_b=False, broadcast_b=False, seed=0):
    rng = np.random.default_rng(seed)
    pre = list(batch or [])
    a = rng.uniform(-1, 1, pre + [M, K]).astype(np.float32)
    b_lead = [] if broadcast_b else pre
    b = rng.uniform(-1, 1, b_lead + ([N, K] if transpose_b else [K, N])).astype(np.float32)
    return a, b


def reference(a, b, transpose_b):
    bb = np.swapaxes(b, -1, -2) if transpose_b else b
    a64, b64 = a.astype(np.float64), bb.astype(np.float64)
    # f32 accumulation of K products: |error| <= K * 2^-24 * sum|a||b| per element; doubled
    # for the implementations' blocked orders (the same bound the C++ tests use).
    bound = 2.0 * a.shape[-1] * 2.0 ** -24 * (np.abs(a64) @ np.abs(b64)) + 1e-30
    return a64 @ b64, bound


SHAPES = [
    dict(M=37, N=29, K=53),
    dict(M=64, N=48, K=96, transpose_b=True),
    dict(M=16, N=24, K=31, batch=[3], transpose_b=True, broadcast_b=True),
    dict(M=5, N=7, K=130, batch=[2, 3]),
    dict(M=1, N=33, K=17),
]


def extern_library():
    """The library the driver's extern GEMM uses in this process ("mkl" or "openblas")."""
    (k,) = tessera.compile_graph(matmul_text(4, 4, 4), "cpu:0", gemm_impl="extern").kernels
    assert k["impl"] == k["extern_library"], k
    return k["impl"]


def shape_id(s):
    return "x".join(str(s[k]) for k in ("M", "N", "K")) + "".join(
        f"-{k}" for k in ("batch", "transpose_b", "broadcast_b") if s.get(k))


@CPU
@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
def test_forced_implementations_match_numpy_and_each_other(shape):
    layout = {k: shape.get(k) for k in ("batch", "transpose_b", "broadcast_b")}
    text = matmul_text(shape["M"], shape["N"], shape["K"], **layout)
    a, b = inputs(shape["M"], shape["N"], shape["K"], **layout)
    ref, bound = reference(a, b, shape.get("transpose_b", False))
    got = {}
    lib = extern_library()
    for impl in ("tessera", "extern"):
        g = tessera.compile_graph(text, "cpu:0", gemm_impl=impl)
        (k,) = [k for k in g.kernels if k["kind"] == "matmul"]
        assert k["impl"] == (lib if impl == "extern" else impl), k
        assert "forced" in k["impl_reason"], k
        assert g.launch_kernels == ([lib + ".gemm.f32"] if impl == "extern" else [k["kernel"]])
        got[impl] = g.run([a, b])[0].numpy()
        err = np.abs(got[impl] - ref)
        assert (err <= bound).all(), (impl, float(err.max()), float(bound.max()))
    assert (np.abs(got["tessera"] - got["extern"]) <= 2 * bound).all()


@CPU
def test_the_measured_choice_is_recorded_cached_and_honoured():
    # A shape where the two differ in some bits (OpenBLAS splits K into blocks and N into
    # other panels), so the output tells which one ran.
    M, N, K = 128, 128, 512
    text = matmul_text(M, N, K)
    a, b = inputs(M, N, K, seed=3)
    lib = extern_library()
    forced = {impl: tessera.compile_graph(text, "cpu:0", gemm_impl=impl).run([a, b])[0].numpy()
              for impl in ("tessera", "extern")}
    forced[lib] = forced.pop("extern")
    assert not np.array_equal(forced["tessera"], forced[lib]), \
        "the implementations agree bit for bit: this test could not tell which one ran"
    g = tessera.compile_graph(text, "cpu:0", gemm_impl="auto")
    (k,) = g.kernels
    assert k["impl"] in ("tessera", lib) and k["extern_library"] == lib, k
    # Measured now or by an earlier process (the disk cache next to the compile cache).
    assert k["impl_reason"].startswith(("measured:", "measured earlier")), k
    assert k["tessera_ms"] > 0 and k["extern_ms"] > 0, k
    faster = lib if k["extern_ms"] < k["tessera_ms"] else "tessera"
    assert k["impl"] == faster, k
    # Honoured: the run launches the chosen implementation's kernel, and its output is that
    # implementation's, bit for bit.
    assert g.launch_kernels == ([lib + ".gemm.f32"] if k["impl"] == lib else ["k0_matmul"])
    out = g.run([a, b])[0].numpy()
    np.testing.assert_array_equal(out, forced[k["impl"]])
    # The same shape again: the cached decision, not a new measurement.
    (k2,) = tessera.compile_graph(text, "cpu:0", gemm_impl="auto").kernels
    assert k2["impl_reason"].startswith("measured earlier"), k2
    assert (k2["impl"], k2["tessera_ms"], k2["extern_ms"]) == \
        (k["impl"], k["tessera_ms"], k["extern_ms"])


BIAS_SHAPES = [
    dict(M=37, N=29, K=53),
    dict(M=61, N=17, K=31, transpose_b=True),
    dict(M=13, N=71, K=7, batch=[3], transpose_b=True, broadcast_b=True),
    dict(M=1, N=43, K=19),
]


@CPU
@pytest.mark.parametrize("shape", BIAS_SHAPES, ids=shape_id)
def test_a_bias_add_runs_as_the_librarys_gemm_bias(shape):
    # addmm: the bias add is the whole epilogue, so the vendor GEMM takes it (C prefilled with
    # the broadcast bias, beta = 1); prime sizes, transposed weights, a batch sharing b.
    layout = {k: shape.get(k) for k in ("batch", "transpose_b", "broadcast_b")}
    M, N, K = shape["M"], shape["N"], shape["K"]
    text = matmul_text(M, N, K, bias=True, **layout)
    a, b = inputs(M, N, K, **layout)
    bias = np.random.default_rng(5).uniform(-1, 1, N).astype(np.float32)
    ref, bound = reference(a, b, shape.get("transpose_b", False))
    lib = extern_library()
    got = {}
    for impl in ("tessera", "extern"):
        g = tessera.compile_graph(text, "cpu:0", gemm_impl=impl)
        (k,) = g.kernels
        assert k["impl"] == (lib if impl == "extern" else "tessera"), k
        if impl == "extern":
            assert g.launch_kernels == [lib + ".gemm_bias.f32"], g.launch_kernels
        got[impl] = g.run([a, b, bias])[0].numpy()
        err = np.abs(got[impl] - (ref + bias))
        assert (err <= bound + 2.0 ** -24 * np.abs(ref + bias)).all(), (impl, float(err.max()))
    try:  # against eager torch too (its MKL matmul + add), where torch is installed
        import torch
    except ImportError:
        return
    bt = torch.from_numpy(b)
    w = bt.transpose(-1, -2) if shape.get("transpose_b") else bt
    eager = (torch.from_numpy(a) @ w + torch.from_numpy(bias)).numpy()
    assert (np.abs(got["extern"] - eager) <= 2 * bound + 1e-6).all()


@CPU
def test_gemms_the_library_cannot_take_stay_tessera():
    # An f64 GEMM: the library's sgemm takes f32 only.
    M, N, K = 8, 12, 16
    text = matmul_text(M, N, K, bias=True).replace("f32", "f64")
    g = tessera.compile_graph(text, "cpu:0", gemm_impl="extern")
    (k,) = g.kernels
    assert k["impl"] == "tessera" and "f64" in k["impl_reason"], k
    a, b = (x.astype(np.float64) for x in inputs(M, N, K))
    bias = np.linspace(-1, 1, N)
    out = g.run([a, b, bias])[0].numpy()
    assert np.allclose(out, a @ b + bias, rtol=1e-12, atol=1e-12)
    with pytest.raises(tessera.TesseraError) as e:
        tessera.compile_graph(matmul_text(M, N, K), "cpu:0", gemm_impl="cublas")
    assert e.value.code == "INVALID_ARGUMENT" and "gemm_impl" in e.value.message


def test_without_the_library_tessera_runs_and_says_why(tmp_path):
    # The libraries are loaded once per process: a fresh one that names missing sonames.
    script = textwrap.dedent(f"""
        import numpy as np, tessera, sys
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        from test_graph_gemm import matmul_text, inputs, reference
        g = tessera.compile_graph(matmul_text(9, 10, 11), "cpu:0", gemm_impl="extern")
        (k,) = g.kernels
        assert k["impl"] == "tessera" and k["extern_library"] is None, k
        assert "mkl is unavailable" in k["impl_reason"], k
        assert "libtessera-no-such-mkl.so" in k["impl_reason"], k
        assert "openblas is unavailable" in k["impl_reason"], k
        assert "libtessera-no-such-blas.so" in k["impl_reason"], k
        a, b = inputs(9, 10, 11)
        ref, bound = reference(a, b, False)
        assert (np.abs(g.run([a, b])[0].numpy() - ref) <= bound).all()
        print("ok")
    """)
    env = dict(os.environ, TESSERA_OPENBLAS_LIBRARY="libtessera-no-such-blas.so",
               TESSERA_MKL_LIBRARY="libtessera-no-such-mkl.so", TESSERA_CACHE_DIR=str(tmp_path))
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and "ok" in r.stdout, r.stdout + r.stderr


@CPU
def test_without_mkl_openblas_runs_and_explain_says_why(tmp_path):
    # MKL missing (a fresh process naming a missing soname): OpenBLAS serves, the reason says
    # why MKL was not used, and the result still matches numpy.
    script = textwrap.dedent(f"""
        import numpy as np, tessera, sys
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        from test_graph_gemm import matmul_text, inputs, reference
        g = tessera.compile_graph(matmul_text(19, 23, 29), "cpu:0", gemm_impl="extern")
        (k,) = g.kernels
        assert k["impl"] == "openblas" and k["extern_library"] == "openblas", k
        assert "mkl is unavailable" in k["impl_reason"], k
        assert "libtessera-no-such-mkl.so" in k["impl_reason"], k
        assert g.launch_kernels == ["openblas.gemm.f32"], g.launch_kernels
        a, b = inputs(19, 23, 29)
        ref, bound = reference(a, b, False)
        assert (np.abs(g.run([a, b])[0].numpy() - ref) <= bound).all()
        print("ok")
    """)
    env = dict(os.environ, TESSERA_MKL_LIBRARY="libtessera-no-such-mkl.so",
               TESSERA_CACHE_DIR=str(tmp_path))
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and "ok" in r.stdout, r.stdout + r.stderr


@pytest.mark.skipif("vulkan:0" not in device_names(), reason="vulkan:0 absent")
def test_other_devices_have_no_extern_gemm():
    g = tessera.compile_graph(matmul_text(8, 8, 8), "vulkan:0", gemm_impl="extern")
    (k,) = g.kernels
    assert k["impl"] == "tessera" and "no vendor GEMM" in k["impl_reason"], k


@CPU
def test_explain_shows_the_impl_of_each_gemm():
    torch = pytest.importorskip("torch")
    from tessera.torch import explain

    model = torch.nn.Linear(64, 48, bias=False)
    ex = explain(model, torch.randn(32, 64), device="cpu:0")
    lib = extern_library()
    matmuls = [k for k in ex.kernels if k["kind"] == "matmul"]
    assert matmuls and all(k["impl"] in ("tessera", lib) for k in matmuls), matmuls
    assert any(k.get("tessera_ms") for k in matmuls), matmuls  # a plain mm: measured
    text = str(ex)
    gemm_lines = text.split("GEMMs:")[1].split("fallbacks")[0]
    assert f"ms, {lib}" in gemm_lines and ("matmul, tessera;" in gemm_lines or
                                           f"matmul, {lib};" in gemm_lines), text


@CPU
def test_the_choice_is_kept_on_disk_for_later_processes(tmp_path):
    script = textwrap.dedent(f"""
        import tessera, sys
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        from test_graph_gemm import matmul_text
        (k,) = tessera.compile_graph(matmul_text(24, 40, 56), "cpu:0", gemm_impl="auto").kernels
        print(k["impl"], k["tessera_ms"], k["extern_ms"], k["impl_reason"].split(":")[0])
    """)
    env = dict(os.environ, TESSERA_CACHE_DIR=str(tmp_path))
    env.pop("TESSERA_GEMM_IMPL", None)
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                           text=True, timeout=120) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stdout + r.stderr
    first, second = (r.stdout.split() for r in runs)
    assert first[3] == "measured" and second[3:] == ["measured", "earlier", "for", "this",
                                                     "shape"], (first, second)
    assert first[:3] == second[:3]  # the same impl and times, read back
    assert (tmp_path / "gemm_choices.txt").read_text().count("\n") == 1
