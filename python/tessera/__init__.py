"""Tessera from Python: devices, buffers with DLPack, kernel IR programs, graphs.

    import tessera
    tessera.devices()                          # every device the registry lists
    buf = tessera.from_dlpack(torch_tensor)    # zero-copy on cpu:0 (aliases the tensor)
    t = torch.from_dlpack(buf)                 # zero-copy on host-visible devices
    g = tessera.compile_graph(graph_ir_text, "cpu:0")
    outs = g.run([x, w])                       # list[tessera.Buffer]

``torch.compile(model, backend="tessera")`` lives in ``tessera.torch`` (registered through the
``torch_dynamo_backends`` entry point, imported only when torch asks for it).
Every failure raises :class:`TesseraError` with the HAL status code.
"""

import os as _os

from ._errors import TesseraError


def _load_native():
    """The extension: inside this package when installed (pip, the wheel), else built by
    scripts/build.sh in a source checkout ($TESSERA_BUILD_DIR, default build/default)."""
    try:
        from . import _C  # noqa: F401

        return _C
    except ImportError as installed_error:
        here = _os.path.dirname(_os.path.abspath(__file__))
        build = _os.environ.get("TESSERA_BUILD_DIR") or _os.path.join(
            here, "..", "..", "build", "default"
        )
        built = _os.path.join(build, "python", "tessera")
        if not _os.path.isdir(built):
            raise ImportError(
                "tessera: the native module tessera._C is not installed and no build was "
                f"found at {built} (run scripts/build.sh or pip install ./python)"
            ) from installed_error
        __path__.append(built)  # noqa: F821 (the package's own __path__)
        from . import _C  # noqa: F811

        return _C


def _mkl_dirs():
    """Where `pip install mkl` put libmkl_rt: the lib/ folder of this Python's prefix (and of
    its base, for a virtual environment). The CPU driver tries these folders after the dynamic
    loader's path when it loads MKL for its extern GEMM (docs/hal.md, "Extern kernels")."""
    import sys

    dirs = []
    for prefix in (sys.prefix, sys.base_prefix):
        lib = _os.path.join(prefix, "lib")
        if lib not in dirs:
            dirs.append(lib)
    return ":".join(dirs)


_os.environ.setdefault("TESSERA_MKL_DIRS", _mkl_dirs())
_C = _load_native()

DeviceInfo = _C.DeviceInfo
Device = _C.Device
Buffer = _C.Buffer
Program = _C.Program
Stream = _C.Stream
Event = _C.Event
CompiledGraph = _C.CompiledGraph

devices = _C.devices
default_device = _C.default_device
empty = _C.empty
from_dlpack = _C.from_dlpack
compile = _C.compile  # noqa: A001 (the API name; builtins.compile stays reachable)
compile_graph = _C.compile_graph

__version__ = "0.1.0"
__all__ = [
    "TesseraError", "DeviceInfo", "Device", "Buffer", "Program", "Stream", "Event",
    "CompiledGraph", "devices", "default_device", "empty", "from_dlpack", "compile",
    "compile_graph",
]
