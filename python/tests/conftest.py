"""Shared fixtures of the Python tests: the device list, and a private XDG_RUNTIME_DIR for the
Vulkan loader (it prints noise without one)."""
import os
import tempfile

import pytest

if not os.environ.get("XDG_RUNTIME_DIR") or not os.path.isdir(os.environ["XDG_RUNTIME_DIR"]):
    os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp()
    os.chmod(os.environ["XDG_RUNTIME_DIR"], 0o700)

import tessera  # noqa: E402


def device_names():
    return [d.name for d in tessera.devices()]


def device_param(names=("cpu:0", "vulkan:0")):
    """cpu:0 and vulkan:0, each skipped where absent."""
    here = device_names()
    return [pytest.param(n, marks=pytest.mark.skipif(n not in here, reason=f"{n} absent"))
            for n in names]
