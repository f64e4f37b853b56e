#!/usr/bin/env python3
"""The collectives figures of docs/performance.md ("Collectives"), from `tessera collbench`:
64 MiB f32 all_reduce over 4 ranks in-process, and under mpirun over the shm and mpi
transports, each against MPI_Allreduce measured in the same run (--baseline mpi); and the
8 B all_reduce latency in-process. Each figure is the median of --runs runs.

usage: bench/collbench_figures.py [--bin build/default/tools/tessera] [--runs 3]
                                  [--iters 5] [--mpirun mpirun]
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile

# Root in a container needs OpenMPI's consent. CMA single copy is left on (MPI at its best);
# where ptrace is refused, export OMPI_MCA_btl_vader_single_copy_mechanism=none first.
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def collbench(cmd, args):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        subprocess.run(cmd + ["collbench", *args, "--json", f.name], check=True, env=ENV,
                       stdout=subprocess.DEVNULL)
        return json.load(open(f.name))["results"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", default="build/default/tools/tessera")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--mpirun", default="mpirun")
    a = p.parse_args()
    mpirun = [a.mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "4", a.bin]
    common = ["--op", "all_reduce", "--bytes", "64M", "--check", "--baseline", "mpi",
              "--iters", str(a.iters), "--warmup", "2"]
    modes = {"in-process (--local 4)": ([a.bin], common + ["--local", "4"]),
             "mpirun -np 4, transport shm": (mpirun, common + ["--transport", "shm"]),
             "mpirun -np 4, transport mpi": (mpirun, common + ["--transport", "mpi"])}
    print(f"all_reduce 64 MiB f32, 4 ranks, median of {a.runs} runs ({a.iters} iters each)")
    print(f"{'path':32} {'time ms':>9} {'busbw GB/s':>11} {'MPI busbw':>10} {'ratio':>6}"
          f" {'#wrong':>6}")
    for name, (cmd, args) in modes.items():
        rows = [collbench(cmd, args)[0] for _ in range(a.runs)]
        med = lambda k: statistics.median(r[k] for r in rows)
        ratio = statistics.median(r["busbw"] / r["baseline_busbw"] for r in rows)
        print(f"{name:32} {med('time_us') / 1e3:9.1f} {med('busbw'):11.3f}"
              f" {med('baseline_busbw'):10.3f} {ratio:6.2f} {max(r['wrong'] for r in rows):6}")
    lat = [collbench([a.bin], ["--op", "all_reduce", "--bytes", "8", "--local", "4", "--check",
                               "--iters", "1000", "--warmup", "100"])[0]["time_us"]
           for _ in range(a.runs)]
    print(f"all_reduce 8 B in-process, 4 ranks: {statistics.median(lat):.2f} us "
          f"(median of {a.runs} runs of 1000)")


if __name__ == "__main__":
    main()
