"""Shared helpers of the torch front-end tests (python/tests/test_torch_*.py).

compile_fn compiles with backend options {"device": d, "strict": True}: strict turns a
segment that fails to compile into an error instead of the documented eager fallback, so a
lowering bug fails the test rather than hiding behind eager torch. A Recorder in the options
lets a test read the plans (fallbacks, compiled segments and their stats).
"""

from __future__ import annotations

import os
import tempfile

import pytest

torch = pytest.importorskip("torch")
tessera = pytest.importorskip("tessera")

from tessera.torch import tessera_backend  # noqa: E402
from tessera.torch.explain import Recorder, _report  # noqa: E402

if "XDG_RUNTIME_DIR" not in os.environ:  # lavapipe wants one; tests never share it
    os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp()
    os.chmod(os.environ["XDG_RUNTIME_DIR"], 0o700)


def device_names():
    try:
        return [d.name for d in tessera.devices()]
    except Exception:  # no runtime at all: nothing to parametrise over
        return []


def devices():
    """cpu:0 always; vulkan:0 when the registry lists it (lavapipe here: keep sizes small)."""
    names = device_names()
    return [d for d in ("cpu:0", "vulkan:0") if d in names]


DEVICES = devices()


def compile_fn(fn, device, recorder=None, **kwargs):
    torch._dynamo.reset()
    opts = {"device": device, "strict": True}
    if recorder is not None:
        opts["_recorder"] = recorder
    return torch.compile(fn, backend=tessera_backend, options=opts, **kwargs)


def report(recorder, device):
    return _report(recorder, device)


def fallbacks(recorder):
    total = {}
    for _, (plan, program, *_) in recorder.entries:
        for k, v in plan.fallbacks.items():
            total[k] = total.get(k, 0) + v
        for runner in program:
            for k, v in (getattr(runner, "failed", None) or {}).items():
                total[k] = total.get(k, 0) + v
    return total


def grads(module_or_tensors):
    if isinstance(module_or_tensors, torch.nn.Module):
        return {n: p.grad for n, p in module_or_tensors.named_parameters()}
    return [t.grad for t in module_or_tensors]
