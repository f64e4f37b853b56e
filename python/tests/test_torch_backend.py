"""The torch.compile backend's contract around the numbers: options, fallbacks and their
report, aliasing of returned views, a segment the runtime refuses, and registration through
the torch_dynamo_backends entry point (no `import tessera` in the user's code)."""

import importlib.metadata
import os
import subprocess
import sys
import textwrap

import pytest

from torch_util import DEVICES, Recorder, compile_fn, fallbacks, report, tessera, torch

from tessera.torch import explain, tessera_backend

pytestmark = pytest.mark.skipif("cpu:0" not in DEVICES, reason="cpu:0 missing")


def test_unknown_option_is_a_clear_error():
    f = torch.compile(lambda x: x + 1, backend=tessera_backend, options={"devcie": "cpu:0"})
    torch._dynamo.reset()
    with pytest.raises(Exception, match=r"unknown option\(s\) 'devcie'; known: device, strict"):
        f(torch.ones(2))


def test_unknown_device_is_a_clear_error():
    torch._dynamo.reset()
    f = torch.compile(lambda x: x + 1, backend=tessera_backend, options={"device": "nope:7"})
    with pytest.raises(Exception, match=r"unknown device 'nope:7'; available: .*cpu:0"):
        f(torch.ones(2))
    with pytest.raises(ValueError, match="unknown device"):
        explain(lambda x: x + 1, torch.ones(2), device="nope:7")


@pytest.mark.parametrize("options, message", [
    ({"device": 0}, r"option 'device' must be a device name like 'cpu:0'.*got 0"),
    ({"device": ""}, r"option 'device' must be a device name like 'cpu:0'.*got ''"),
    ({"device": False}, r"option 'device' must be a device name.*got False"),
    ({"strict": "yes"}, r"option 'strict' must be True or False, got 'yes'"),
    ({"strict": 1}, r"option 'strict' must be True or False, got 1"),
])
def test_badly_typed_options_are_clear_errors(options, message):
    # 0, "" and False used to pick the default device silently, and "yes" meant strict.
    from tessera.torch.backend import check_options
    with pytest.raises(TypeError, match=message):
        check_options(options)
    assert check_options({"device": None, "strict": False})["device"] == tessera.default_device()
    assert check_options({"strict": True})["strict"] is True


def test_float_floor_division_matches_eager():
    # torch's floor division is the floor of the exact quotient: 1 // 0.1 is 9 (the rounded
    # quotient is 10.0), inf // 2 is NaN; floor(a / b) gave 10 and inf. It falls back, named.
    fn = lambda a, b: torch.div(a, b, rounding_mode="floor") + 1  # noqa: E731
    a = torch.tensor([1.0, float("inf"), -float("inf"), -1.0, 5.0, 7.5])
    b = torch.tensor([0.1, 2.0, 0.7, float("inf"), 0.0, -2.0])
    rec = Recorder()
    out = compile_fn(fn, "cpu:0", rec)(a, b)
    torch.testing.assert_close(out, fn(a, b), equal_nan=True)
    assert out[0].item() == 10.0  # 9 + 1
    assert fallbacks(rec) == {"aten.div": 1}


def test_training_raises_no_warning_even_with_warnings_as_errors():
    # AOTAutograd warned that the backward "doesn't take boxed arguments" (its Dynamo-disable
    # wrapper hid CompiledFx._boxed_call); a filter set at import hid it, but not under
    # warnings.catch_warnings() / pytest's capture, where users saw it.
    import warnings
    torch._dynamo.reset()
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.GELU(), torch.nn.Linear(8, 2))
    f = torch.compile(m, backend=tessera_backend, options={"device": "cpu:0"})
    x = torch.randn(3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(2):
            f(x).sum().backward()
    assert m[0].weight.grad is not None


def test_unsupported_op_falls_back_and_is_reported():
    fn = lambda x: torch.cumsum(x.exp(), 0) * 2 + x  # noqa: E731
    x = torch.randn(5, 3)
    rec = Recorder()
    out = compile_fn(fn, "cpu:0", rec)(x)
    torch.testing.assert_close(out, fn(x))
    assert fallbacks(rec) == {"aten.cumsum": 1}
    ex = report(rec, "cpu:0")
    assert ex.fallbacks["aten.cumsum"] == 1
    assert "aten.cumsum x1: no lowering for this op" in str(ex)
    # the exp before and the arithmetic after each run as a compiled segment
    assert len(ex.graphs[0].segments) == 2


def test_unsupported_dtype_falls_back_with_its_reason():
    fn = lambda x: (x + 3) * 2  # noqa: E731
    x = torch.arange(6, dtype=torch.int8)
    rec = Recorder()
    out = compile_fn(fn, "cpu:0", rec)(x)
    torch.testing.assert_close(out, fn(x))
    assert sum(fallbacks(rec).values()) == 2
    assert "torch.int8" in str(report(rec, "cpu:0"))


def test_views_returned_keep_eager_aliasing_and_strides():
    def fn(x):
        y = x * 2
        return x.t(), y.t(), y[:, 1]

    x = torch.randn(4, 3)
    out = compile_fn(fn, "cpu:0")(x)
    expect = fn(x)
    for a, b in zip(out, expect):
        torch.testing.assert_close(a, b)
        assert a.stride() == b.stride()
    assert out[0].data_ptr() == x.data_ptr()          # a view of the input, as in eager
    assert out[1].data_ptr() == out[2].data_ptr() - 4  # both views of one fresh buffer


def test_segment_the_runtime_refuses_falls_back_or_raises(monkeypatch):
    from tessera.torch import backend

    def refuse(text, device):
        raise tessera.TesseraError("UNIMPLEMENTED", "refused for the test")

    monkeypatch.setattr(backend, "_compile_text", refuse)
    fn = lambda x: x.exp() * 2  # noqa: E731
    x = torch.randn(3)
    rec = Recorder()
    torch._dynamo.reset()
    lenient = torch.compile(fn, backend=tessera_backend, options={"_recorder": rec})
    with pytest.warns(RuntimeWarning, match="falls back to eager torch.*refused for the test"):
        out = lenient(x)
    torch.testing.assert_close(out, fn(x))
    assert fallbacks(rec) == {"aten.exp": 1, "aten.mul": 1}
    torch._dynamo.reset()
    strict = torch.compile(fn, backend=tessera_backend, options={"strict": True})
    with pytest.raises(Exception, match="refused for the test"):
        strict(x)


def _entry_point_installed():
    eps = importlib.metadata.entry_points(group="torch_dynamo_backends")
    return any(ep.name == "tessera" for ep in eps)


def test_backend_name_works_without_import(tmp_path):
    """torch finds backend="tessera" through the entry point alone. Where the package is not
    installed (a source checkout), a throw-away dist-info with the same entry point as
    python/pyproject.toml stands in for the installed metadata."""
    env = dict(os.environ)
    if not _entry_point_installed():
        dist = tmp_path / "tessera_dev-0.0.0.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: tessera-dev\n"
                                       "Version: 0.0.0\n")
        (dist / "entry_points.txt").write_text(
            "[torch_dynamo_backends]\ntessera = tessera.torch:tessera_backend\n")
        package_root = os.path.dirname(os.path.dirname(os.path.abspath(tessera.__file__)))
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(tmp_path), package_root, env.get("PYTHONPATH")) if p)
    code = textwrap.dedent("""
        import sys, torch
        assert "tessera" not in sys.modules
        f = torch.compile(lambda x: torch.softmax(x * 2, -1), backend="tessera")
        x = torch.randn(3, 5)
        torch.testing.assert_close(f(x), torch.softmax(x * 2, -1))
        assert "tessera.torch" in sys.modules
        print("ok")
    """)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, env=env, cwd=str(tmp_path))
    assert res.returncode == 0 and res.stdout.strip().endswith("ok"), res.stderr[-3000:]


def test_steady_state_guards_pick_the_right_compiled_graph():
    # the fast path of a call: the last key (CompiledFx) and the last input strides
    # (SegmentRunner) are compared first; anything else must take the full path
    fn = lambda x, y: (x * y + 1.0).relu()  # noqa: E731
    rec = Recorder()
    f = compile_fn(fn, "cpu:0", rec)
    x, y = torch.randn(6, 4), torch.randn(6, 4)
    for _ in range(3):
        torch.testing.assert_close(f(x, y), fn(x, y), rtol=0, atol=0)
    cfx, (_, program, *_) = rec.entries[0]
    xt = torch.randn(4, 6).T                     # same shape, other strides: another key
    for args in ((xt, y), (x, y), (xt, y)):      # to the new plan, back, and again
        (out,) = cfx(list(args))
        torch.testing.assert_close(out, fn(*args), rtol=0, atol=0)
    assert len(cfx.plans) == 2
    (runner,) = [s for s in program if hasattr(s, "by_strides")]
    # the first plan's runner fed another layout than its last call's (as a fallback's
    # output could be): compiled for it, right, and the table keeps both variants
    env = {runner.params[0]: xt, runner.params[1]: y}
    runner.run(env)
    (node,) = runner.out_nodes
    torch.testing.assert_close(env[node], fn(xt, y), rtol=0, atol=0)
    assert len(runner.by_strides) == 2
    runner.run(env := {runner.params[0]: x, runner.params[1]: y})
    torch.testing.assert_close(env[node], fn(x, y), rtol=0, atol=0)


def test_explain_profile_times_every_kernel():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(),
                                torch.nn.LayerNorm(128))
    ex = explain(model, torch.randn(32, 64), device="cpu:0", profile=3)
    assert ex.profiled == 3 and ex.kernels
    for k in ex.kernels:
        assert k["min_ms"] > 0 and k["median_ms"] >= k["min_ms"], k
        assert k["launched"] == k["kernel"] or ".gemm" in k["launched"], k
    text = str(ex)
    assert "profile (3 runs, each launch timed alone" in text
    assert all(k["kernel"] in text.split("profile (")[1] for k in ex.kernels)
    # without profile nothing is timed; a bad count is a clear error
    assert all("median_ms" not in k for k in explain(model, torch.randn(32, 64),
                                                       device="cpu:0").kernels)
    with pytest.raises(ValueError, match="profile must be a number of runs"):
        explain(model, torch.randn(32, 64), device="cpu:0", profile=-1)


def _plan_summary(plan):
    """What a plan does, comparable across two builds of it."""
    from tessera.torch.translate import Segment

    steps = []
    for s in plan.steps:
        if isinstance(s, Segment):
            steps.append(("segment", s.render([None] * len(s.text.params)),
                          [(n.name, i) for n, i in s.outputs],
                          [(r.node.name, r.reshape_to) for r in s.replays]))
        else:
            steps.append(("torch", s.node.name, s.fallback, s.reshape_to))
    return (steps, {n.name: v for n, v in plan.constants.items()},
            [getattr(o, "name", o) for o in plan.outputs], dict(plan.fallbacks))


def test_plan_from_the_traced_values_equals_the_propagated_one(monkeypatch):
    # build_plan reads the values AOTAutograd traced (node.meta["val"]) instead of running
    # fake-tensor propagation again (0.1 s per graph on the benchmark's models): for the
    # three models' forward and backward graphs both must give the same plan
    import tessera.torch.backend as backend
    from tessera.torch import translate
    from tessera.torch.examples import MLP, Classifier, TransformerBlock, classifier_data

    seen = []

    def build_plan(gm, inputs, dtypes):
        traced = translate.traced_meta(gm, inputs)
        assert traced is not None, "AOTAutograd's graphs carry concrete traced values"
        via_trace = translate.build_plan(gm, inputs, dtypes)
        propagated = translate.Translator(gm, translate.concrete_meta(gm, inputs), dtypes).run()
        assert _plan_summary(via_trace) == _plan_summary(propagated)
        seen.append(len(via_trace.steps))
        return via_trace

    monkeypatch.setattr(backend, "build_plan", build_plan)
    torch.manual_seed(0)
    for model, inputs, train in ((MLP(32, 64, 16), (torch.randn(8, 32),), False),
                                 (TransformerBlock(32, 4, 64), (torch.randn(2, 8, 32),), False),
                                 (Classifier(16, 32, 4), classifier_data(24, 16, 4), True)):
        torch._dynamo.reset()
        f = torch.compile(model, backend=tessera_backend, options={"device": "cpu:0"})
        if train:
            got = f(*inputs)
            got.backward()
            torch.testing.assert_close(got, model(*inputs))
        else:
            with torch.no_grad():
                torch.testing.assert_close(f(*inputs), model(*inputs))
    assert len(seen) == 4  # mlp, block, classifier forward and backward


def test_traced_values_are_refused_for_other_inputs():
    # the trace holds only for the dtypes, shapes and scalar values it was made with; any other
    # call propagates (and a graph without traced values too)
    from tessera.torch import translate

    def fn(x, n):
        return x * n

    gm = torch.fx.symbolic_trace(fn)
    assert translate.traced_meta(gm, [torch.ones(3), 2]) is None  # no node.meta["val"]
    ph = [n for n in gm.graph.nodes if n.op == "placeholder"]
    (mul,) = [n for n in gm.graph.nodes if n.op == "call_function"]
    ph[0].meta["val"], ph[1].meta["val"], mul.meta["val"] = torch.ones(3), 2, torch.ones(3)
    assert translate.traced_meta(gm, [torch.zeros(3), 2]) is not None
    assert translate.traced_meta(gm, [torch.zeros(6)[::2], 2]) is not None
    assert translate.traced_meta(gm, [torch.zeros(4), 2]) is None       # another shape
    assert translate.traced_meta(gm, [torch.zeros(3, dtype=torch.float64), 2]) is None
    assert translate.traced_meta(gm, [torch.zeros(3), 3]) is None       # another scalar
    assert translate.traced_meta(gm, [torch.zeros(3), 2.0]) is None     # another type
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    sym = ShapeEnv().create_unbacked_symint()
    mul.meta["val"] = [sym]
    assert translate.traced_meta(gm, [torch.zeros(3), 2]) is None       # symbolic


def test_fast_view_calls_equal_the_aten_ops():
    # torch-side view steps call torch.permute & co. instead of the aten overload's schema
    # path: the same view (shape, strides, offset, storage) for every op the table maps
    from tessera.torch.translate import _FAST_VIEWS, TorchStep

    aten = torch.ops.aten
    x = torch.randn(4, 6, 5)[:, 1:, :]            # non-contiguous, with a storage offset
    cases = {aten.permute.default: (x, [2, 0, 1]), aten.unsqueeze.default: (x, -1),
             aten.transpose.int: (x, 0, 2), aten.t.default: (x[0],),
             aten.select.int: (x, 1, 3),
             aten.reshape.default: (x[2], [5, 5, 1]), aten.squeeze.dim: (x[:, :1, :], 1)}
    assert set(cases) == set(_FAST_VIEWS)
    g = torch.fx.Graph()
    for op, args in cases.items():
        node = g.call_function(op, tuple(g.placeholder(f"p{i}") if isinstance(a, torch.Tensor)
                                         else a for i, a in enumerate(args)))
        env = {n: a for n, a in zip(node.args, args) if isinstance(n, torch.fx.Node)}
        step = TorchStep(node)
        step.run(env)
        assert step._call[0] is _FAST_VIEWS[op][0]
        got, want = env[node], op(*args)
        assert (got.shape, got.stride(), got.storage_offset()) == \
            (want.shape, want.stride(), want.storage_offset()), op
        assert got.untyped_storage().data_ptr() == want.untyped_storage().data_ptr()
        torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_decomposition_table_is_built_once_and_handed_out_as_copies():
    from tessera.torch import backend

    first = backend.decompositions()
    aten = torch.ops.aten
    # what the table must hold, and what it must leave whole (the graph IR's own ops)
    assert aten._softmax.default in first and aten.native_layer_norm.default in first
    assert aten.gelu.default not in first and aten.var_mean.correction not in first
    first.clear()  # a caller that changes its copy changes nobody else's
    second = backend.decompositions()
    assert len(second) > 100 and aten._softmax.default in second
    assert second is not backend.decompositions()
    assert second.keys() == backend._build_decompositions().keys()  # the cached table is the built one
