"""What a compiled graph's plan holds for every call, and what belongs to each call.

A plan (python/tessera/torch/translate.py) is made once per call signature and reused: values
read from tensor data (`.item()`, `torch._assert_async`) must run on every call, views and
layout-sensitive ops must see eager's layouts, integer attributes must be exact, and a
Python scalar that only feeds arithmetic is a kernel parameter, not part of the key. Found by
the fifth adversarial round; each test failed before its fix. Every check compares with eager
torch.
"""

import pytest

from torch_util import DEVICES, Recorder, compile_fn, fallbacks, torch

import torch.nn.functional as F

pytestmark = pytest.mark.skipif(not DEVICES, reason="no tessera device")
CPU = ["cpu:0"] if "cpu:0" in DEVICES else []


@pytest.mark.parametrize("device", CPU)
def test_values_read_from_tensor_data_belong_to_each_call(device):
    # With capture_scalar_outputs, n.item() stays in the graph as a non-tensor node, which the
    # plan took as a constant of the call signature: the next call with another n returned the
    # first call's result. torch._assert_async was a constant too: it never ran.
    import torch._dynamo.config as dc

    x = torch.arange(12.0).view(4, 3)
    fns = {"x + n.item()": lambda x, n: x + n.item(),
           "x[: n.item()] * 2": lambda x, n: x[: n.item()] * 2,
           "x[n.item()] * 2": lambda x, n: x[n.item()] * 2}
    with dc.patch(capture_scalar_outputs=True):
        for name, fn in fns.items():
            rec = Recorder()
            f = compile_fn(fn, device, rec)
            for v in (2, 3, 1):
                n = torch.tensor(v)
                torch.testing.assert_close(f(x, n), fn(x, n), msg=lambda m: f"{name}: {m}")
            # the op reading n's value cannot be a kernel (it would bake the value in): an
            # explained fallback, never a silent constant
            assert fallbacks(rec), name

    def check(x):
        torch._assert_async(x.min() > 0, "x must be positive")
        return x * 2

    f = compile_fn(check, device)
    torch.testing.assert_close(f(torch.ones(3)), torch.full((3,), 2.0))
    with pytest.raises(RuntimeError):
        f(-torch.ones(3))


@pytest.mark.parametrize("device", CPU)
def test_views_after_a_fallback_and_views_of_relaid_outputs(device):
    # A view of a segment's value after a fallback opens a segment with nothing but the
    # replayed view: it was never computed (KeyError; F.unfold hit it). Views returned with a
    # value re-laid to eager's strides were replayed over the row-major segment output: other
    # strides than eager's, and no longer aliases of the returned value.
    def after(x):
        y = x + 1
        z = x.cumsum(0)  # no lowering: a fallback closes the segment holding y
        return y.t(), z

    for fn, x in ((after, torch.randn(3, 4)), (lambda x: F.unfold(x, 2), torch.randn(1, 2, 3, 3))):
        torch.testing.assert_close(compile_fn(fn, device)(x), fn(x))

    def views(x):
        y = x * 2
        return y, y[::2], y.t()

    x = torch.randn(6, 4).t()
    got, want = compile_fn(views, device)(x), views(x)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
        assert g.stride() == w.stride()
    assert all(g.untyped_storage().data_ptr() == got[0].untyped_storage().data_ptr()
               for g in got[1:])
    got[0].zero_()
    assert got[1].abs().sum() == 0 and got[2].abs().sum() == 0


@pytest.mark.parametrize("device", CPU)
def test_int64_bounds_and_ranges_past_2_53_are_exact(device):
    # Integer clamp bounds and arange start/step went through a double in the lowering.
    x = torch.tensor([2**53, 2**60 + 7, -(2**62) - 3, 123], dtype=torch.int64)
    z = torch.zeros(4, dtype=torch.int64)
    for fn, a in ((lambda x: x.clamp(min=2**60 + 3), x),
                  (lambda x: x.clamp(-2**55 - 1, 2**55 + 1), x),
                  (lambda z: z + torch.arange(2**60 + 1, 2**60 + 5), z),
                  (lambda z: z + torch.arange(2**60 + 1, 2**60 + 2), z[:1])):
        assert torch.equal(compile_fn(fn, device)(a), fn(a))


@pytest.mark.parametrize("device", CPU)
def test_dtype_views_reinterpret_bits_and_as_strided_reads_eager_layout(device):
    # t.view(torch.int32) was lowered as a reshape: a value cast (3.0 for the bits of 3.0f),
    # even a float32 result. as_strided of a segment result read the row-major buffer where
    # eager's result keeps a transposed input's layout.
    x = torch.tensor([1.5, -2.0, 3.25])
    i = torch.tensor([1065353215, 2, 3], dtype=torch.int32)
    for fn, a in ((lambda x: (x * 2).view(torch.int32), x),
                  (lambda x: (x * 2).view(torch.int32) + 1, x),
                  (lambda i: (i + 1).view(torch.float32) * 1, i)):
        got, want = compile_fn(fn, device)(a), fn(a)
        assert got.dtype == want.dtype and torch.equal(got, want), (got, want)

    def strided(x):
        return torch.as_strided(x * 2, (3, 2), (1, 3))

    x = torch.arange(12.0).view(4, 3).t()
    torch.testing.assert_close(compile_fn(strided, device)(x), strided(x))


@pytest.mark.parametrize("device", CPU)
def test_plans_per_graph_are_bounded(device):
    # A Python int that changes on every call is part of the call signature: each value got a
    # plan and a compiled text, kept forever (memory grew without bound). Least recently used
    # plans are dropped past backend._MAX_PLANS; the results stay right.
    from tessera.torch import backend as B

    def f(x, pos):  # pos sizes a slice: its value is part of each plan
        return x[:, : pos % 40 + 1] * 2

    rec = Recorder()
    c = compile_fn(f, device, rec)
    x = torch.randn(4, 48)
    for s in range(B._MAX_PLANS + 8):
        torch.testing.assert_close(c(x, s), f(x, s))
    cfx = {id(e[0]): e[0] for e in rec.entries}
    assert cfx and all(len(c.plans) <= B._MAX_PLANS for c in cfx.values())
    assert max(len(c.plans) for c in cfx.values()) == B._MAX_PLANS
    assert len(B._compiled_texts) <= B._MAX_COMPILED_TEXTS


@pytest.mark.parametrize("device", CPU)
def test_a_python_scalar_that_changes_every_call_compiles_once(device):
    # A decode position passed as a Python int: Dynamo makes it a SymInt after it changes once,
    # and the segment wrote its value into the kernel text, so every value compiled a new
    # segment (5-180 ms a call). An operand of add / sub / mul / div is now a rank-0 parameter
    # and the key leaves it out: one segment for every value. (Scalar arithmetic on it, pos / 7,
    # is a constant of the plan: then each value still has its own.)
    from tessera.torch import backend as B

    def f(x, pos):
        return torch.softmax(x * 0.1 + pos, -1) - (x * pos).sum(-1, keepdim=True) / 7

    rec = Recorder()
    c = compile_fn(f, device, rec)
    x = torch.randn(8, 32)
    for s in range(30):
        torch.testing.assert_close(c(x, s), f(x, s))
    texts = {t for cfx, (plan, program, *_) in rec.entries for r in program
             if isinstance(r, B.SegmentRunner) for t, _ in r.by_strides.values()}
    # the first call's static graph and the SymInt graph that serves every later value
    assert len(texts) <= 2, texts
