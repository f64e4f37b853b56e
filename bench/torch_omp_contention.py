"""What a torch op run between compiled calls costs the next segment (docs/performance.md, run 15).

    ./run.sh python bench/torch_omp_contention.py [--calls 1000]
    OMP_WAIT_POLICY=PASSIVE ./run.sh python bench/torch_omp_contention.py

Compiles the classifier of bench/torch_models.py (a training step), then runs its forward and
backward segments (`CompiledGraph.run_torch` on the inputs of a real step) alternately, with
something else between the calls: nothing, a 100 us sleep, 150 us of Python, a 4 MB torch op on
torch's threads, the same op on one torch thread, and a 4 MB numpy op. Prints the median us of
each segment per case. A parallel torch op leaves torch's OpenMP worker spinning on the core the
driver's pool needs (up to 2x); OMP_WAIT_POLICY=PASSIVE, set before torch starts, avoids it.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TESSERA_CACHE_DIR", tempfile.mkdtemp(prefix="tessera-omp-"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import tessera.torch.backend as B  # noqa: E402
from tessera.torch.examples import Classifier, classifier_data  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=1000, help="calls of each segment per case")
    a = ap.parse_args()
    torch.manual_seed(0)
    model, (x, y) = Classifier(128, 256, 10), classifier_data(256, 128, 10)
    fn = torch.compile(model, backend=B.tessera_backend,
                       options={"device": "cpu:0", "strict": True})
    seen = {}
    run = B.SegmentRunner.run

    def spy(self, env):
        seen[id(self)] = (self, [env[n] for n in self.params])
        return run(self, env)

    def step():
        model.zero_grad(set_to_none=True)
        fn(x, y).backward()

    B.SegmentRunner.run = spy
    step()
    B.wait_tier_up()
    step()
    B.SegmentRunner.run = run
    segments = [(r.last[1], inputs) for r, inputs in seen.values()]
    if len(segments) != 2:
        sys.exit(f"expected a forward and a backward segment, got {len(segments)}")
    big, nb = torch.randn(1 << 20), np.zeros(1 << 20, dtype=np.float32)

    def one_thread():
        n = torch.get_num_threads()
        torch.set_num_threads(1)
        big.mul_(1.0)
        torch.set_num_threads(n)

    cases = [("nothing", lambda: None), ("sleep 100 us", lambda: time.sleep(1e-4)),
             ("150 us of Python", lambda: [i for i in range(2500)]),
             ("4 MB torch op", lambda: big.mul_(1.0)), ("4 MB torch op, 1 thread", one_thread),
             ("4 MB numpy op", lambda: np.multiply(nb, 1.0, out=nb))]
    print(f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(unset)')}, "
          f"torch threads {torch.get_num_threads()}; median us per segment call")
    print(f"{'between calls':26} {'forward':>8} {'backward':>9}")
    for name, between in cases:
        times = ([], [])
        for _ in range(a.calls):
            for k, (cg, inputs) in enumerate(segments):
                between()
                t0 = time.perf_counter()
                cg.run_torch(inputs)
                times[k].append(time.perf_counter() - t0)
        print(f"{name:26} {statistics.median(times[0]) * 1e6:8.1f} "
              f"{statistics.median(times[1]) * 1e6:9.1f}")


if __name__ == "__main__":
    main()
