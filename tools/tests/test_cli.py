"""End-to-end tests of the `tessera` command line: exit codes, diagnostics, help, outputs.

The binary is $TESSERA_BIN, or build/default/tools/tessera. Values are checked against
independent expectations (numpy-free: plain Python arithmetic over the dumped buffers).
"""
import os
import pathlib
import struct
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("TESSERA_BIN", ROOT / "build/default/tools/tessera"))
EXAMPLES = sorted((ROOT / "ir/examples").glob("*.tir"))


def tessera(*args, check=None):
    r = subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, timeout=300)
    if check is not None:
        assert r.returncode == check, f"exit {r.returncode}\nstdout:{r.stdout}\nstderr:{r.stderr}"
    return r


@pytest.fixture(scope="module", autouse=True)
def binary_exists():
    if not BIN.exists():
        pytest.fail(f"tessera binary not found at {BIN}; build first")


def test_help_lists_commands_and_exit_codes():
    r = tessera("--help", check=0)
    for cmd in ("ir verify", "ir print", "ir opt", "interp"):
        assert cmd in r.stdout
    assert tessera().returncode == 2
    assert tessera("frobnicate").returncode == 2
    for sub in (["ir", "--help"], ["interp", "--help"], ["ir", "opt", "--help"]):
        assert "usage:" in tessera(*sub, check=0).stdout


def test_verify_all_examples():
    assert len(EXAMPLES) >= 10
    r = tessera("ir", "verify", *EXAMPLES, check=0)
    assert r.stdout.count(": ok") == len(EXAMPLES)


def test_verify_reports_position_and_fails(tmp_path):
    bad = tmp_path / "bad.tir"
    bad.write_text("kernel @k(%a: buffer<f32>) {\n  %x = add %a, %nope : f32\n}\n")
    r = tessera("ir", "verify", bad)
    assert r.returncode == 1
    assert f"{bad}:2:" in r.stderr and "error:" in r.stderr


def test_verify_missing_file_is_an_error_not_a_crash(tmp_path):
    r = tessera("ir", "verify", tmp_path / "missing.tir")
    assert r.returncode == 1
    assert "missing.tir" in r.stderr


def test_print_is_canonical(tmp_path):
    for ex in EXAMPLES:
        once = tessera("ir", "print", ex, check=0).stdout
        f = tmp_path / ex.name
        f.write_text(once)
        assert tessera("ir", "print", f, check=0).stdout == once, ex.name


def test_opt_runs_passes_and_dumps(tmp_path):
    src = tmp_path / "fold.tir"
    src.write_text(
        "kernel @k(%o: buffer<i32>) {\n"
        "  %a = const 2 : i32\n  %b = const 3 : i32\n  %c = add %a, %b : i32\n"
        "  %d = add %a, %b : i32\n  %z = const 0 : i32\n  %e = add %c, %d : i32\n"
        "  store %e, %o[%z] : i32\n}\n")
    r = tessera("ir", "opt", src, "--passes=canonicalize,cse,dce", "--dump-after", check=0)
    assert "const 10 : i32" in r.stdout
    assert "add" not in r.stdout
    for p in ("canonicalize", "cse", "dce"):
        assert f"IR after pass '{p}'" in r.stderr
    bad = tessera("ir", "opt", src, "--passes=nosuchpass")
    assert bad.returncode == 2 and "nosuchpass" in bad.stderr


def test_interp_saxpy_values(tmp_path):
    r = tessera("interp", ROOT / "ir/examples/vector_add.tir", "--dump", tmp_path, check=0)
    assert "@vector_add" in r.stdout and "%c" in r.stdout
    c = (tmp_path / "vector_add.c.bin").read_bytes()
    assert len(c) == 1000 * 4
    vals = struct.unpack("<1000f", c)
    txt = (tmp_path / "vector_add.c.txt").read_text().split()
    assert len(txt) == 1000 and float(txt[17]) == pytest.approx(vals[17], rel=0, abs=0)
    assert any(v != 0 for v in vals)


def test_interp_every_example_and_subgroup_flag():
    for ex in EXAMPLES:
        tessera("interp", ex, check=0)
    a = tessera("interp", ROOT / "ir/examples/subgroup_reduce.tir", "--subgroup-size", "8", check=0)
    b = tessera("interp", ROOT / "ir/examples/subgroup_reduce.tir", "--subgroup-size", "32", check=0)
    assert a.stdout.splitlines()[1:] != b.stdout.splitlines()[1:]
    assert tessera("interp", ROOT / "ir/examples/saxpy.tir", "--subgroup-size", "3").returncode == 2


def test_interp_reports_runtime_errors(tmp_path):
    oob = tmp_path / "oob.tir"
    oob.write_text(
        "kernel @k(%o: buffer<f32>) {\n  %i = global_id.x : i32\n  %v = const 1.0 : f32\n"
        "  store %v, %o[%i] : f32\n}\n\n"
        "launch @k grid(2) workgroup(64) {\n  %o[100] = fill(0.0)\n}\n")
    r = tessera("interp", oob)
    assert r.returncode == 1
    assert f"{oob}:4:" in r.stderr and "100" in r.stderr
