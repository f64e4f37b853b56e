"""Tiered compilation on cpu:0 (docs/torch.md, "Cold compile"): a cold compile runs the quick
tier at once and swaps in the full tier when its background compile is done; the results are
bit-identical before and after, and match numpy; TESSERA_TIERED=0 compiles the full tier at
once; a process may exit while a background compile runs."""
import os
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import pytest


from conftest import device_names

CPU = pytest.mark.skipif("cpu:0" not in device_names(), reason="cpu:0 absent")

# a matmul with a fused epilogue (Tessera's kernel, never the library's), a softmax (exp: a
# kernel the quick tier keeps at O3) and tanh (a quick-tier kernel unless it calls libm)
GRAPH = """graph @g(%x: tensor<f32, [{n}, 24]>, %w: tensor<f32, [24, 20]>) {{
  %y = matmul %x, %w
  %t = tanh %y
  %m = amax %t {{axes = [1], keepdim = true}}
  %d = sub %t, %m
  %e = exp %d
  %s = sum %e {{axes = [1], keepdim = true}}
  %p = div %e, %s
  return %p
}}
"""


def reference(x, w):
    t = np.tanh(x.astype(np.float64) @ w.astype(np.float64))
    e = np.exp(t - t.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def run_fresh(body, tiered=None):
    """`body` in a new process with an empty compile cache (a cold compile); its stdout."""
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        import numpy as np, tessera
        from test_graph_tier import GRAPH, reference
    """) + textwrap.dedent(body)
    env = dict(os.environ, TESSERA_CACHE_DIR=tempfile.mkdtemp(prefix="tessera-tier-"))
    env.pop("TESSERA_TIERED", None)
    if tiered is not None:
        env["TESSERA_TIERED"] = tiered
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout.split()


@CPU
def test_quick_then_full_same_bits():
    out = run_fresh("""
        rng = np.random.default_rng(11)
        x = rng.standard_normal((13, 24)).astype(np.float32)
        w = (rng.standard_normal((24, 20)) * 0.3).astype(np.float32)
        g = tessera.compile_graph(GRAPH.format(n=13), "cpu:0", gemm_impl="tessera")
        print(g.stats["tier"])
        first = g.run([x, w])[0].numpy()
        g.wait_tier_up()
        print(g.stats["tier"])
        second = g.run([x, w])[0].numpy()
        print(first.tobytes() == second.tobytes())
        np.testing.assert_allclose(second, reference(x, w), rtol=1e-5, atol=1e-6)
    """)
    assert out == ["quick", "full", "True"], out


@CPU
def test_tiered_off_is_full_at_once():
    body = """
        g = tessera.compile_graph(GRAPH.format(n=5), "cpu:0")
        print(g.stats["tier"])
    """
    assert run_fresh(body, tiered="0") == ["full"]
    assert run_fresh(body, tiered="1") == ["quick"]


@CPU
def test_exit_while_the_full_compile_runs():
    # compiled, run once on the quick tier, and the process exits at once: the background
    # compile is joined at exit (no crash, no hang, no leaked thread)
    out = run_fresh("""
        g = tessera.compile_graph(GRAPH.format(n=7), "cpu:0")
        g.run([np.ones((7, 24), np.float32), np.ones((24, 20), np.float32)])
        print(g.stats["tier"])
    """)
    assert out == ["quick"], out
