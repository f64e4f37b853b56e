"""Per-call cost of a compiled graph's host inputs and outputs on cpu:0 (docs/performance.md,
"Host inputs bound in place, outputs without page faults").

    PYTHONPATH=python python3 bench/graph_host_io_bench.py ab {linear,mlp} N
        the segment of a torch.compile'd module compiled twice from the same text, once with
        TESSERA_GRAPH_HOST_IMPORT=0 (host inputs copied) and once without (bound in place),
        outputs asserted equal, runs interleaved: median and minimum ms per call of each.
    PYTHONPATH=python python3 bench/graph_host_io_bench.py faults {linear,biglinear,mlp} N
        median ms and minor page faults per CompiledGraph.run call; run it with and without
        TESSERA_CPU_BLOCK_CACHE_BYTES=0 (the CPU driver's freed-block cache off / on).
"""
import os
import resource
import statistics
import sys
import time

import torch

import tessera
from tessera.torch import backend as B
from tessera.torch import tessera_backend
from tessera.torch.examples import MLP


def model(what):
    torch.manual_seed(0)
    if what == "linear":
        return torch.nn.Linear(512, 512), torch.randn(64, 512)
    if what == "biglinear":  # a 4096 x 2048 f32 output: 32 MiB, above glibc's mmap threshold
        return torch.nn.Linear(256, 2048), torch.randn(4096, 256)
    return MLP(256, 512, 128), torch.randn(64, 256)


def segments(what):
    """(runner, inputs) of every segment the compiled module runs."""
    m, x = model(what)
    fn = torch.compile(m, backend=tessera_backend, options={"device": "cpu:0", "strict": True})
    cap, orig = [], B.SegmentRunner.run

    def run(self, env):
        cap.append((self, [env[k] for k, _, _ in self.seg.text.params]))
        return orig(self, env)
    B.SegmentRunner.run = run
    try:
        with torch.no_grad():
            fn(x)
    finally:
        B.SegmentRunner.run = orig
    return cap


def ab(what, n):
    for r, ins in segments(what):
        text, _ = r.compiled(ins)
        os.environ["TESSERA_GRAPH_HOST_IMPORT"] = "0"
        copy = tessera.compile_graph(text, "cpu:0")
        del os.environ["TESSERA_GRAPH_HOST_IMPORT"]
        imp = tessera.compile_graph(text, "cpu:0")
        for u, v in zip(copy.run(ins), imp.run(ins)):
            assert torch.equal(torch.from_dlpack(u), torch.from_dlpack(v)), "results differ"
        t = {"copy": [], "import": []}
        for i in range(n):
            order = (("copy", copy), ("import", imp)) if i % 2 else (("import", imp), ("copy", copy))
            for name, cg in order:
                t0 = time.perf_counter()
                cg.run(ins)
                t[name].append(time.perf_counter() - t0)
        for name, ts in t.items():
            print(f"{what} seg{r.seg.index} {name}: median {statistics.median(ts) * 1e3:.3f} ms "
                  f"min {min(ts) * 1e3:.3f} ms")


def faults(what, n):
    for r, ins in segments(what):
        _, cg = r.compiled(ins)
        for _ in range(20):
            cg.run(ins)
        ts = []
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(n):
            t0 = time.perf_counter()
            cg.run(ins)
            ts.append(time.perf_counter() - t0)
        f1 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        print(f"{what} seg{r.seg.index}: median {statistics.median(ts) * 1e3:.3f} ms "
              f"min {min(ts) * 1e3:.3f} ms faults/call {(f1 - f0) / n:.1f}")


if __name__ == "__main__":
    {"ab": ab, "faults": faults}[sys.argv[1]](sys.argv[2], int(sys.argv[3]))
