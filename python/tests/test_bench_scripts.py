"""The Python benchmarks of bench/ run and print what their docstrings promise (a smoke test:
their numbers are recorded in docs/performance.md, never asserted)."""

import os
import re
import subprocess
import sys

import pytest

pytest.importorskip("torch")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_omp_contention_bench_prints_every_case(tmp_path):
    env = dict(os.environ, TESSERA_CACHE_DIR=str(tmp_path))
    r = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "torch_omp_contention.py"),
                        "--calls", "3"], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    rows = [line for line in r.stdout.splitlines()
            if re.match(r"^\S.*\s+\d+\.\d\s+\d+\.\d$", line)]
    assert [row[:26].strip() for row in rows] == [
        "nothing", "sleep 100 us", "150 us of Python", "4 MB torch op",
        "4 MB torch op, 1 thread", "4 MB numpy op"], r.stdout
    assert all(float(v) > 0 for row in rows for v in row.split()[-2:])
