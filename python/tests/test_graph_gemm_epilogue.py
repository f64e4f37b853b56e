"""Extern GEMMs with an epilogue other than a bias add (docs/torch.md, "Extern GEMMs"): on
cpu:0 such a GEMM may run as the vendor library's plain sgemm writing the product into the
output, followed by the plan's epilogue kernel (the fused kernel's epilogue ops as a kernel of
their own, applied in place). Checked here, with the choice forced both ways: relu, gelu and
silu after a bias add, a residual add reading a second full tensor, prime sizes, a transposed
weight and a batch, against numpy in f64 and eager torch; the launched kernels and the explain
output naming the epilogue kernel."""
import math

import numpy as np
import pytest

import tessera

from conftest import device_names
from test_graph_gemm import extern_library, inputs, reference

CPU = pytest.mark.skipif("cpu:0" not in device_names(), reason="cpu:0 absent")

_erf = np.vectorize(math.erf)
ACTS = {
    "relu": lambda x: np.maximum(x, 0.0),
    "gelu": lambda x: x * 0.5 * (1.0 + _erf(x / math.sqrt(2.0))),
    "silu": lambda x: x / (1.0 + np.exp(-x)),
}


def epilogue_text(M, N, K, act, batch=None, transpose_b=False, residual=False):
    """(a [batch.., M, K] x b ([K, N], or [N, K] read transposed, shared by the batch) + bias
    [N]) then `act`, then + r [batch.., M, N] with `residual`."""
    pre = list(batch or [])
    t = lambda s: f"tensor<f32, [{', '.join(map(str, s))}]>"  # noqa: E731
    params = [f"%a: {t(pre + [M, K])}", f"%b: {t([N, K] if transpose_b else [K, N])}",
              f"%bias: {t([N])}"] + ([f"%r: {t(pre + [M, N])}"] if residual else [])
    body, b = [], "%b"
    if transpose_b:
        body.append(f"%bt = permute %b {{perm = [1, 0]}} : {t([K, N])}")
        b = "%bt"
    body += [f"%c = matmul %a, {b} : {t(pre + [M, N])}", "%d = add %c, %bias", f"%e = {act} %d"]
    result = "%e"
    if residual:
        body.append("%f = add %e, %r")
        result = "%f"
    return (f"graph @g({', '.join(params)}) {{\n  " + "\n  ".join(body) +
            f"\n  return {result}\n}}")


CASES = [
    dict(M=37, N=29, K=53, act="relu"),
    dict(M=61, N=17, K=31, act="gelu", transpose_b=True),
    dict(M=13, N=71, K=7, act="silu", batch=[3], transpose_b=True),
    dict(M=23, N=41, K=19, act="gelu", batch=[2], residual=True),
    dict(M=1, N=43, K=19, act="silu", residual=True),
    dict(M=7, N=19, K=11, act="relu", batch=[2, 3], residual=True),
]


def case_id(c):
    return "-".join([c["act"], f"{c['M']}x{c['N']}x{c['K']}"] +
                    [k for k in ("batch", "transpose_b", "residual") if c.get(k)])


@CPU
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_an_epilogue_runs_after_the_librarys_gemm(case):
    M, N, K, act = case["M"], case["N"], case["K"], case["act"]
    layout = dict(batch=case.get("batch"), transpose_b=case.get("transpose_b", False))
    text = epilogue_text(M, N, K, act, residual=case.get("residual", False), **layout)
    a, b = inputs(M, N, K, broadcast_b=True, seed=7, **layout)
    rng = np.random.default_rng(11)
    bias = rng.uniform(-1, 1, N).astype(np.float32)
    args = [a, b, bias]
    prod, bound = reference(a, b, layout["transpose_b"])
    want = ACTS[act](prod + bias)
    if case.get("residual"):
        r = rng.uniform(-1, 1, list(layout["batch"] or []) + [M, N]).astype(np.float32)
        args.append(r)
        want = want + r
    # The product's error passes through the activation (slope <= 1.13 for gelu and silu),
    # plus a few f32 roundings of the epilogue's ops and their ULP budgets.
    tol = 1.2 * bound + 8 * 2.0 ** -24 * np.abs(want) + 1e-6
    lib = extern_library()
    got = {}
    for impl in ("tessera", "extern"):
        g = tessera.compile_graph(text, "cpu:0", gemm_impl=impl)
        (k,) = [k for k in g.kernels if k["kind"] == "matmul"]
        if impl == "extern":
            assert k["impl"] == lib, k
            assert k["epilogue_kernel"] == k["kernel"] + "_epilogue", k
            assert g.launch_kernels == [f"{lib}.gemm.f32 + {k['epilogue_kernel']}"], \
                g.launch_kernels
        else:
            assert k["impl"] == "tessera" and g.launch_kernels == [k["kernel"]], k
        got[impl] = g.run(args)[0].numpy()
        err = np.abs(got[impl] - want)
        assert (err <= tol).all(), (impl, float(err.max()), float(tol.max()))
    assert (np.abs(got["tessera"] - got["extern"]) <= 2 * tol).all()
    try:  # against eager torch too (its MKL matmul, then the same ops)
        import torch
    except ImportError:
        return
    bt = torch.from_numpy(b)
    w = bt.transpose(-1, -2) if layout["transpose_b"] else bt
    fn = {"relu": torch.relu, "gelu": torch.nn.functional.gelu,
          "silu": torch.nn.functional.silu}[act]
    eager = fn(torch.from_numpy(a) @ w + torch.from_numpy(bias))
    if case.get("residual"):
        eager = eager + torch.from_numpy(args[3])
    assert (np.abs(got["extern"] - eager.numpy()) <= 2 * tol).all()


@CPU
def test_explain_names_the_epilogue_kernel(monkeypatch):
    torch = pytest.importorskip("torch")
    from tessera.torch import explain

    # Forced, so that the line shows the extern path whatever this host measures.
    monkeypatch.setenv("TESSERA_GEMM_IMPL", "extern")
    model = torch.nn.Sequential(torch.nn.Linear(48, 40), torch.nn.ReLU())  # fused: addmm+relu
    ex = explain(model, torch.randn(24, 48), device="cpu:0")
    lib = extern_library()
    matmuls = [k for k in ex.kernels if k["kind"] == "matmul"]
    assert matmuls, ex.kernels
    k = matmuls[0]
    assert k["impl"] == lib and k["epilogue_kernel"] == k["kernel"] + "_epilogue", k
    text = str(ex)
    gemm_lines = text.split("GEMMs:")[1].split("fallbacks")[0]
    assert f"matmul, {lib};" in gemm_lines and f"epilogue {k['epilogue_kernel']}" in gemm_lines, \
        text
