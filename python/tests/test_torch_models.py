"""The three models of issue #14 through torch.compile(backend="tessera"), against eager torch.

Forward outputs and parameter/input gradients are compared with torch.testing.assert_close at
its default tolerances (f32: rtol 1.3e-6, atol 1e-5; bf16: rtol 1.6e-2, atol 1e-5) on every
device the registry lists (cpu:0; vulkan:0 with smaller sizes, lavapipe being a CPU emulation).
explain() must show zero fallbacks for each model, forward and backward.
"""

import copy

import pytest

from torch_util import DEVICES, Recorder, compile_fn, fallbacks, torch

from tessera.torch import explain
from tessera.torch.examples import MLP, Classifier, TransformerBlock, classifier_data

pytestmark = pytest.mark.skipif(not DEVICES, reason="no tessera device")


def sizes(device):
    small = device != "cpu:0"
    return {
        "mlp": dict(d_in=16, d_hidden=32, d_out=8) if small else dict(),
        "mlp_batch": 5 if small else 24,
        "block": dict(dim=16, heads=2, hidden=32) if small else dict(),
        "block_shape": (1, 5, 16) if small else (2, 12, 64),
    }


def check_train_step(model, inputs, device, dtype_grads=True):
    """Forward + backward of sum(output) compiled vs eager: outputs and every gradient."""
    ref = copy.deepcopy(model)
    rec = Recorder()
    compiled = compile_fn(model, device, rec)
    x_c = [i.detach().clone().requires_grad_(i.is_floating_point()) for i in inputs]
    x_r = [i.detach().clone().requires_grad_(i.is_floating_point()) for i in inputs]
    out = compiled(*x_c)
    expect = ref(*x_r)
    torch.testing.assert_close(out, expect)
    out.float().sum().backward()
    expect.float().sum().backward()
    for (name, p), (_, q) in zip(model.named_parameters(), ref.named_parameters()):
        torch.testing.assert_close(p.grad, q.grad, msg=lambda m: f"grad of {name}: {m}")
    for a, b in zip(x_c, x_r):
        if b.grad is not None:
            torch.testing.assert_close(a.grad, b.grad)
    assert fallbacks(rec) == {}
    assert len(rec.entries) == 2  # one forward and one backward graph
    return rec


@pytest.mark.parametrize("device", DEVICES)
def test_mlp_gelu_layernorm(device):
    torch.manual_seed(0)
    s = sizes(device)
    model = MLP(**s["mlp"])
    x = torch.randn(s["mlp_batch"], model.linears[0].in_features)
    check_train_step(model, [x], device)


@pytest.mark.parametrize("device", DEVICES)
def test_transformer_block(device):
    torch.manual_seed(1)
    s = sizes(device)
    model = TransformerBlock(**s["block"])
    x = torch.randn(*s["block_shape"])
    check_train_step(model, [x], device)


@pytest.mark.skipif("vulkan:0" not in DEVICES, reason="no vulkan:0")
def test_transformer_block_inference_fits_vulkan_push_constants():
    # At these sizes (bench/torch_models.py --quick) a row kernel's offsets, strides and sizes
    # took 144 bytes of scalars, over lavapipe's 128 bytes of push constants: the segment did
    # not compile on vulkan:0. Scalars past the limit are now constants in the kernel text.
    torch.manual_seed(2)
    model = TransformerBlock(64, 4, 128)
    x = torch.randn(2, 16, 64)
    rec = Recorder()
    compiled = compile_fn(model, "vulkan:0", rec)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x))
    assert fallbacks(rec) == {}


@pytest.mark.parametrize("device", DEVICES)
def test_classifier_trains_like_eager(device):
    """20 SGD steps: the compiled loss curve follows eager's step by step."""
    torch.manual_seed(2)
    small = device != "cpu:0"
    kw = dict(d_in=8, hidden=16, classes=5) if small else dict()
    model = Classifier(**kw)
    ref = copy.deepcopy(model)
    x, labels = classifier_data(n=12 if small else 48, d_in=kw.get("d_in", 32),
                                classes=kw.get("classes", 10))
    rec = Recorder()
    compiled = compile_fn(model, device, rec)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    opt_ref = torch.optim.SGD(ref.parameters(), lr=0.1)
    losses, losses_ref = [], []
    for _ in range(20):
        for m, o, log in ((compiled, opt, losses), (ref, opt_ref, losses_ref)):
            o.zero_grad()
            loss = m(x, labels)
            loss.backward()
            o.step()
            log.append(loss.detach())
    torch.testing.assert_close(torch.stack(losses), torch.stack(losses_ref))
    assert losses[-1] < losses[0] * 0.8  # it did learn something
    for p, q in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p, q)
    assert fallbacks(rec) == {}


def test_bf16_mlp_forward():
    if "cpu:0" not in DEVICES:
        pytest.skip("cpu:0 missing")
    torch.manual_seed(3)
    model = MLP(d_in=32, d_hidden=64, d_out=16).to(torch.bfloat16)
    x = torch.randn(8, 32, dtype=torch.bfloat16)
    rec = Recorder()
    with torch.no_grad():
        out = compile_fn(model, "cpu:0", rec)(x)
        expect = model(x)
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out, expect)
    assert fallbacks(rec) == {}


@pytest.mark.parametrize("name", ["mlp", "block", "classifier"])
def test_explain_shows_no_fallbacks(name):
    if "cpu:0" not in DEVICES:
        pytest.skip("cpu:0 missing")
    torch.manual_seed(4)
    if name == "mlp":
        model, inputs = MLP(d_in=16, d_hidden=32, d_out=8), (torch.randn(4, 16),)
    elif name == "block":
        model, inputs = TransformerBlock(dim=16, heads=2, hidden=32), (torch.randn(1, 6, 16),)
    else:
        model, inputs = Classifier(d_in=8, hidden=16, classes=5), classifier_data(8, 8, 5)
    ex = explain(model, *inputs, device="cpu:0", backward=True)
    assert sum(ex.fallbacks.values()) == 0, str(ex)
    assert [g.kind for g in ex.graphs] == ["forward", "backward"]
    assert ex.kernels and all("ops" in k for k in ex.kernels)
    assert ex.gemms  # every model has matmuls, each reported with its shape
    text = str(ex)
    assert "fallbacks: none" in text and "GEMMs:" in text
