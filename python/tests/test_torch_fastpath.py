"""The generated steady state of a plan (tessera/torch/fastpath.py) against the generic path
and eager torch: every call after the first runs it, so each test calls several times."""

from __future__ import annotations

import pytest

from torch_util import compile_fn

torch = pytest.importorskip("torch")
F = torch.nn.functional

import tessera  # noqa: E402
from tessera.torch import backend as B  # noqa: E402
from tessera.torch.examples import (MLP, Classifier, TransformerBlock,  # noqa: E402
                                    classifier_data)


@pytest.fixture
def made(monkeypatch):
    """The CompiledFx objects the test creates (forward and backward graphs)."""
    created = []
    init = B.CompiledFx.__init__

    def record(self, *args, **kwargs):
        init(self, *args, **kwargs)
        created.append(self)

    monkeypatch.setattr(B.CompiledFx, "__init__", record)
    return created


def _entries(made):
    return [e for c in made for e in c.plans.values()]


def _fast_entries(made):
    """The plan entries whose generated function is in use."""
    return [e for e in _entries(made) if e[3]]


def test_models_run_the_generated_steady_state_with_eager_values(made):
    torch.manual_seed(0)
    x = torch.randn(6, 16)
    mlp = MLP(16, 32, 8)
    f = compile_fn(mlp, "cpu:0")
    with torch.no_grad():
        for _ in range(3):
            torch.testing.assert_close(f(x), mlp(x))
    assert _fast_entries(made), "the MLP's plan never ran generated code"
    fast = _fast_entries(made)[0][3]
    assert "run" in fast.source and "_tessera" not in fast.source

    block = TransformerBlock(32, 4, 64)
    xb = torch.randn(2, 7, 32)
    fb = compile_fn(block, "cpu:0")
    with torch.no_grad():
        for _ in range(3):
            torch.testing.assert_close(fb(xb), block(xb))
    assert len(_fast_entries(made)) == 2

    # training: forward and backward both generated; the loss and every gradient as eager's
    # on each of three steps (the weights change between them)
    model, ref = Classifier(12, 24, 5), Classifier(12, 24, 5)
    ref.load_state_dict(model.state_dict())
    xs, labels = classifier_data(20, 12, 5)
    fc = compile_fn(model, "cpu:0")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    opt_ref = torch.optim.SGD(ref.parameters(), lr=0.1)
    for _ in range(4):
        losses = []
        for o, fn in ((opt, fc), (opt_ref, ref)):
            o.zero_grad()
            losses.append(fn(xs, labels))
            losses[-1].backward()
        torch.testing.assert_close(losses[0], losses[1])
        for p, q in zip(model.parameters(), ref.parameters()):
            torch.testing.assert_close(p.grad, q.grad)
        opt.step()
        opt_ref.step()
    kinds = {c.kind for c in made if any(e[3] for e in c.plans.values())}
    assert {"forward", "backward"} <= kinds


def test_returned_views_keep_eager_layouts_on_every_call(made):
    # the generated code checks the layouts of returned values that can differ from eager's
    # (exp of a transposed input is transposed in eager, row-major as a segment writes it)
    # and finishes such a call by the generic relayout
    def f(x, y):
        return (F.gelu(x.transpose(1, 2)) * 2).transpose(1, 2), y.exp()

    x, y = torch.randn(2, 5, 8), torch.randn(8, 5).t()
    fn = compile_fn(f, "cpu:0")
    for _ in range(4):
        (out, e), (want, we) = fn(x, y), f(x, y)
        torch.testing.assert_close(out, want)
        assert out.stride() == want.stride() == (40, 8, 1)
        assert out.view(-1, 8).shape == (10, 8)
        torch.testing.assert_close(e, we)
        assert e.stride() == we.stride() == (1, 5)
    assert _fast_entries(made)


# A fallback op (no lowering) whose result's layout changes from call to call, though its
# input's never does: the segment reading it must not run on the first call's layout.
@torch.library.custom_op("tessera_test::alternating_layout", mutates_args=())
def alternating_layout(x: torch.Tensor) -> torch.Tensor:
    alternating_layout.calls += 1
    if alternating_layout.calls % 2:
        return x.clone()
    return x.t().contiguous().t()  # same values, column-major


alternating_layout.calls = 0


@alternating_layout.register_fake
def _(x):
    return torch.empty_like(x)


def test_a_fallback_result_in_a_new_layout_takes_the_generic_path(made):
    def f(x):
        y = torch.ops.tessera_test.alternating_layout(x * 3)
        return y * 2 + y[:, :1]

    x = torch.randn(5, 7)
    want = (x * 3) * 2 + (x * 3)[:, :1]  # the op changes no value (and is not called here)
    fn = compile_fn(f, "cpu:0")
    for call in range(6):
        torch.testing.assert_close(fn(x), want, msg=f"call {call}")
    # the layouts alternate: after its generations the plan stays generic, correct still
    for call in range(4):
        torch.testing.assert_close(fn(x), want, msg=f"generic call {call}")
    (entry,) = _entries(made)
    assert entry[4] == B._MAX_GENERATIONS + 1 and entry[3] is False


def test_a_run_time_fallback_error_in_generated_code_falls_back_to_eager(made):
    # A segment refused at run time with a code the generic path turns into an eager fallback
    # (RESOURCE_EXHAUSTED, without strict) does the same in the generated code; any other
    # code is raised as it is.
    torch._dynamo.reset()
    fn = torch.compile(lambda x: (x * 2).exp() + 1, backend=B.tessera_backend,
                       options={"device": "cpu:0"})
    x = torch.randn(4, 9)
    for _ in range(2):
        torch.testing.assert_close(fn(x), (x * 2).exp() + 1)
    (entry,) = _fast_entries(made)
    fast = entry[3]
    runs = [k for k in fast.__globals__ if k.startswith("run")]
    assert runs
    real = fast.__globals__[runs[0]]

    def exhausted(_inputs):
        raise tessera.TesseraError("RESOURCE_EXHAUSTED", "out of device memory (simulated)")

    fast.__globals__[runs[0]] = exhausted
    for runner in entry[1]:
        if hasattr(runner, "last") and runner.last is not None:
            runner.last = (runner.last[0], type("Refusing", (), {"run_torch": staticmethod(
                exhausted)})())
    with pytest.warns(RuntimeWarning, match="falls back to eager"):
        torch.testing.assert_close(fn(x), (x * 2).exp() + 1)
    assert entry[3] is None or entry[3] is False  # the generated code is dropped
    torch.testing.assert_close(fn(x), (x * 2).exp() + 1)
    assert any(r.failed for r in entry[1] if hasattr(r, "failed"))

    def faulted(_inputs):
        raise tessera.TesseraError("INTERNAL", "kernel fault (simulated)")

    torch._dynamo.reset()
    made.clear()
    fn = torch.compile(lambda x: (x * 3).exp(), backend=B.tessera_backend,
                       options={"device": "cpu:0"})
    for _ in range(2):
        fn(x)
    (entry,) = _fast_entries(made)
    name = [k for k in entry[3].__globals__ if k.startswith("run")][0]
    entry[3].__globals__[name] = faulted
    with pytest.raises(tessera.TesseraError, match="kernel fault"):
        fn(x)
