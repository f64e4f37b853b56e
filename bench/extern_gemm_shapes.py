"""Extern GEMMs at the torch models' shapes (docs/torch.md, "Extern GEMMs"): for each shape,
Tessera's kernel against the vendor library the CPU driver loads, as CompiledGraph.kernels
reports them (tessera_ms, extern_ms: the fastest of 5 alternating timed launches on scratch
buffers).

Each library is loaded once per process, so compare configurations in separate processes,
with a fresh TESSERA_CACHE_DIR each (else the cached choice is printed again):
    TESSERA_CACHE_DIR=$(mktemp -d) python3 bench/extern_gemm_shapes.py        # MKL, split
    MKL_THREADING_LAYER=INTEL TESSERA_CACHE_DIR=$(mktemp -d) python3 ...    # MKL's threads
    TESSERA_MKL_LIBRARY=none.so TESSERA_CACHE_DIR=$(mktemp -d) python3 ...  # OpenBLAS
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "python", "tests"))

import tessera  # noqa: E402
from test_graph_gemm import matmul_text  # noqa: E402

# M x K x N of the models' GEMMs (bench/torch_models.py), then block's attention bmm.
SHAPES = [(256, 256, 768, None), (256, 256, 512, None), (64, 256, 512, None),
          (64, 512, 512, None), (64, 512, 128, None), (256, 128, 256, None), (64, 32, 64, [32])]

print("shape impl tessera_ms library extern_ms")
for M, K, N, batch in SHAPES:
    (k,) = tessera.compile_graph(matmul_text(M, N, K, batch=batch), "cpu:0",
                                 gemm_impl="auto").kernels
    name = (f"{batch[0]}x" if batch else "") + f"{M}x{K}x{N}"
    ext = k["extern_ms"]
    print(name, k["impl"], f"{k['tessera_ms']:.3f}" if k["tessera_ms"] else "-",
          k["extern_library"], f"{ext:.3f}" if ext else "-", flush=True)
