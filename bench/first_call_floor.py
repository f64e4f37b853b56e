"""First-call (cold compile) time of the three models of issue #14, with the floor that every
AOTAutograd backend pays, in one run:

    ./run.sh python bench/first_call_floor.py [--models mlp,block,classifier]
        [--backends eager,aot_eager,tessera,inductor]

eager      = torch.compile(backend="eager"): Dynamo's trace only;
aot_eager  = Dynamo + AOTAutograd (forward/backward graphs, decompositions), no code generated:
             the floor of any backend built on AOTAutograd, Tessera's and Inductor's included;
tessera    = Tessera with a fresh TESSERA_CACHE_DIR (cold: every kernel compiled);
inductor   = Inductor with a fresh TORCHINDUCTOR_CACHE_DIR (cold).
Each figure is the wall time of the first step (trace + compile + one run), in a process whose
imports and lazy initialisations were warmed by one eager-backend step of another model, so
that no backend pays them. The issue's target (first call <= 0.1x Inductor's) can only hold
where aot_eager's floor is well below 0.1x.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="inductor-first-")
os.environ["TESSERA_CACHE_DIR"] = tempfile.mkdtemp(prefix="tessera-first-")

import torch  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

from tessera.torch import tessera_backend  # noqa: E402
from tessera.torch.examples import (MLP, Classifier, TransformerBlock,  # noqa: E402
                                    classifier_data)


def make(name):
    torch.manual_seed(0)
    if name == "mlp":
        return MLP(256, 512, 128), (torch.randn(64, 256),), False
    if name == "block":
        return TransformerBlock(256, 8, 512), (torch.randn(4, 64, 256),), False
    return Classifier(128, 256, 10), classifier_data(256, 128, 10), True


def step(fn, inputs, train):
    if train:
        loss = fn(*inputs)
        loss.backward()
        return loss
    with torch.no_grad():
        return fn(*inputs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="mlp,block,classifier")
    ap.add_argument("--backends", default="eager,aot_eager,tessera,inductor")
    args = ap.parse_args()
    warm, inputs, train = make("classifier")
    step(torch.compile(warm, backend="eager"), inputs, train)
    backends = args.backends.split(",")
    print("first call in s (cold caches); ratio = backend / inductor")
    for name in args.models.split(","):
        row = {}
        for backend in backends:
            torch._dynamo.reset()
            model, inputs, train = make(name)
            fn = (torch.compile(model, backend=tessera_backend, options={"device": "cpu:0"})
                  if backend == "tessera" else torch.compile(model, backend=backend))
            t0 = time.perf_counter()
            step(fn, inputs, train)
            row[backend] = time.perf_counter() - t0
        ind = row.get("inductor")
        cells = [f"{b} {s:.2f}" + (f" ({s / ind:.3f}x)" if ind and b != "inductor" else "")
                 for b, s in row.items()]
        print(f"{name:11s}", "  ".join(cells), flush=True)


if __name__ == "__main__":
    main()
