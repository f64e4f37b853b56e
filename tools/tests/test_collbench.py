"""`tessera collbench`: usage errors, the table and the JSON (the issue's fields), #wrong = 0
with --check, the nccl-tests formulas recomputed here from time and size, and the MPI runs
(under mpirun with both transports, and the in-process --baseline mpi) where mpirun exists.

The binary is $TESSERA_BIN, or build/default/tools/tessera.
"""
import json
import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("TESSERA_BIN", ROOT / "build/default/tools/tessera"))
MPIRUN = shutil.which("mpirun")
# OpenMPI as root in a container: consent, and no CMA single copy (needs ptrace rights).
MPI_ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_btl_vader_single_copy_mechanism="none",
               OMPI_MCA_rmaps_base_oversubscribe="1")
BUS = {"all_reduce": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
       "reduce_scatter": lambda n: (n - 1) / n, "all_to_all": lambda n: (n - 1) / n,
       "broadcast": lambda n: 1.0, "reduce": lambda n: 1.0}
OPS = ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all"]


def run(args, env=None, timeout=300):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True,
                          timeout=timeout, env=env or MPI_ENV)


def collbench(*args):
    return run([BIN, "collbench", *args])


def has_mpi():
    if not MPIRUN:
        return False
    return "--transport" in collbench("--help").stdout and \
        "no MPI" not in collbench("--op", "all_reduce", "--bytes", "8", "--local", "1",
                                  "--baseline", "mpi").stderr


@pytest.fixture(scope="module", autouse=True)
def binary_exists():
    if not BIN.exists():
        pytest.fail(f"tessera binary not found at {BIN}; build first")


def check_results(results, ranks, ops, sizes):
    """The issue's fields, #wrong 0, and algbw / busbw recomputed from size and time."""
    assert [(r["op"], r["bytes"]) for r in results] == [(o, s) for o in ops for s in sizes]
    for r in results:
        for key in ("op", "bytes", "ranks", "time_us", "algbw", "busbw", "wrong",
                    "baseline_busbw"):
            assert key in r, key
        assert r["ranks"] == ranks
        assert r["wrong"] == 0, r
        assert r["time_us"] > 0
        algbw = r["bytes"] / (r["time_us"] * 1e3)
        assert r["algbw"] == pytest.approx(algbw, rel=1e-9)
        assert r["busbw"] == pytest.approx(algbw * BUS[r["op"]](ranks), rel=1e-9)


def test_help_names_every_flag_of_the_issue():
    r = collbench("--help")
    assert r.returncode == 0
    for flag in ("--op", "--bytes", "--local", "--devices", "--check", "--baseline", "--json",
                 "--iters", "--warmup", "--dtype", "--transport"):
        assert flag in r.stdout, flag
    assert "collbench" in run([BIN, "--help"]).stdout


@pytest.mark.parametrize("args,needle", [
    ([], "--op is required"),
    (["--op", "all_reduce", "--bytes", "8"], "--local N or --devices"),
    (["--op", "gather", "--bytes", "8", "--local", "2"], "--op must be"),
    (["--op", "all_reduce", "--bytes", "64:8", "--local", "2"], "--bytes"),
    (["--op", "all_reduce", "--bytes", "8", "--local", "0"], "--local"),
    (["--op", "all_reduce", "--bytes", "8", "--local", "2", "--check", "--redop", "prod"],
     "--check needs --redop"),
    (["--op", "all_reduce", "--bytes", "8", "--local", "2", "--devices", "cpu:0"],
     "exclude each other"),
])
def test_usage_errors_name_the_option(args, needle):
    r = collbench(*args)
    assert r.returncode == 2, r
    assert needle in r.stderr, r.stderr


def test_in_process_every_op_has_no_wrong_element_and_the_formulas_hold(tmp_path):
    out = tmp_path / "r.json"
    r = collbench("--op", "all", "--bytes", "8:64K", "--local", "3", "--check", "--iters", "3",
                  "--warmup", "1", "--json", out)
    assert r.returncode == 0, r.stderr
    sizes = [8 << i for i in range(14)]
    # 8 B is no whole f32 per rank for the block ops over 3 ranks: those rows are skipped.
    results = json.loads(out.read_text())["results"]
    expect = [(o, s) for o in OPS for s in sizes
              if s // 4 // (3 if o in ("all_gather", "reduce_scatter", "all_to_all") else 1)]
    assert [(x["op"], x["bytes"]) for x in results] == expect
    for x in results:
        check_results([x], 3, [x["op"]], [x["bytes"]])
    assert "#wrong" in r.stdout and "busbw(GB/s)" in r.stdout


@pytest.mark.parametrize("dtype", ["i8", "i16", "i64", "f16", "bf16", "f64"])
@pytest.mark.parametrize("redop", ["sum", "max"])
def test_in_process_every_dtype_checks(dtype, redop, tmp_path):
    out = tmp_path / "r.json"
    r = collbench("--op", "all_reduce", "--bytes", "1K", "--local", "4", "--check", "--dtype",
                  dtype, "--redop", redop, "--iters", "2", "--warmup", "0", "--json", out)
    assert r.returncode == 0, r.stderr
    check_results(json.loads(out.read_text())["results"], 4, ["all_reduce"], [1024])


@pytest.mark.skipif(not MPIRUN, reason="mpirun not found")
@pytest.mark.parametrize("transport", ["shm", "mpi"])
def test_under_mpirun_with_the_mpi_baseline(transport, tmp_path):
    if not has_mpi():
        pytest.skip("this tessera was built without MPI")
    out = tmp_path / "r.json"
    r = run([MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", "3", BIN, "collbench",
             "--op", "all", "--bytes", "1K:8K", "--check", "--transport", transport,
             "--baseline", "mpi", "--iters", "3", "--warmup", "1", "--json", out])
    assert r.returncode == 0, r.stdout + r.stderr
    sizes = [1024, 2048, 4096, 8192]
    results = json.loads(out.read_text())["results"]
    check_results(results, 3, OPS, sizes)
    assert all(x["baseline_busbw"] > 0 for x in results)
    assert f"transport {transport}" in r.stdout and "ratio" in r.stdout


@pytest.mark.skipif(not MPIRUN, reason="mpirun not found")
def test_in_process_baseline_runs_mpirun_and_reads_it_back(tmp_path):
    if not has_mpi():
        pytest.skip("this tessera was built without MPI")
    out = tmp_path / "r.json"
    r = collbench("--op", "all_gather", "--bytes", "4K:8K", "--local", "2", "--check",
                  "--baseline", "mpi", "--iters", "3", "--warmup", "1", "--json", out)
    assert r.returncode == 0, r.stderr
    results = json.loads(out.read_text())["results"]
    check_results(results, 2, ["all_gather"], [4096, 8192])
    assert all(x["baseline_busbw"] > 0 for x in results)
    # f16 has no MPI reduction: the row says so instead of inventing a number.
    r = collbench("--op", "all_reduce", "--bytes", "4K", "--local", "2", "--dtype", "f16",
                  "--baseline", "mpi", "--iters", "2", "--warmup", "0", "--json", out)
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text())["results"][0]["baseline_busbw"] is None


def test_mixed_cpu_and_vulkan_group_checks(tmp_path):
    env = dict(MPI_ENV)
    env.setdefault("XDG_RUNTIME_DIR", str(tmp_path))
    if "vulkan:0" not in run([BIN, "devices"], env=env).stdout:
        pytest.skip("no vulkan:0 here")
    out = tmp_path / "r.json"
    r = run([BIN, "collbench", "--op", "all", "--bytes", "64:4K", "--devices", "cpu:0,vulkan:0",
             "--check", "--iters", "2", "--warmup", "1", "--json", out], env=env)
    assert r.returncode == 0, r.stderr
    check_results(json.loads(out.read_text())["results"], 2, OPS, [64 << i for i in range(7)])
