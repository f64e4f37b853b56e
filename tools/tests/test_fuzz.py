"""End-to-end tests of `tessera fuzz` (differential fuzzing, issues #10 and #11) on cpu:0.

A planted mismatch (the test-only --plant-mismatch OP corrupts an output of every kernel that
uses OP) proves that failures are caught, shrunk to a small kernel that still fails, and saved
with a header naming the device and the seed; the saved kernel passes once the plant is gone,
so what remains is a valid kernel, not a broken one.
"""
import os
import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("TESSERA_BIN", ROOT / "build/default/tools/tessera"))


def tessera(*args, timeout=600):
    return subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module", autouse=True)
def binary_exists():
    if not BIN.exists():
        pytest.fail(f"tessera binary not found at {BIN}; build first")


def test_help_and_usage_errors():
    r = tessera("fuzz", "--help")
    assert r.returncode == 0 and "usage: tessera fuzz" in r.stdout
    assert "fuzz" in tessera("--help").stdout
    assert tessera("fuzz", "--bogus").returncode == 2
    assert tessera("fuzz", "--seconds", "soon").returncode == 2
    assert tessera("fuzz", "--seed").returncode == 2
    r = tessera("fuzz", "--device", "nosuch:0", "--count", "1")
    assert r.returncode == 1 and "nosuch:0" in r.stderr


def test_clean_run_on_cpu_ends_with_the_summary_line(tmp_path):
    r = tessera("fuzz", "--device", "cpu:0", "--count", "12", "--seconds", "900", "--seed", "100", "--out",
                tmp_path / "out")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().splitlines()[-1] == "12 kernels, 0 mismatches"
    assert not (tmp_path / "out").exists()  # nothing to save


def test_same_seed_same_kernels(tmp_path):
    for run in ("a", "b"):
        r = tessera("fuzz", "--count", "4", "--seconds", "900", "--seed", "7", "--emit", tmp_path / run,
                    "--out", tmp_path / "out")
        assert r.returncode == 0, r.stdout + r.stderr
    a = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert a == sorted(f"kernel-{s}.tir" for s in range(7, 11))
    for name in a:
        assert (tmp_path / "a" / name).read_text() == (tmp_path / "b" / name).read_text()
    # A different seed gives different kernels.
    r = tessera("fuzz", "--count", "1", "--seed", "8", "--emit", tmp_path / "c")
    assert (tmp_path / "c/kernel-8.tir").read_text() == (tmp_path / "a/kernel-8.tir").read_text()
    assert (tmp_path / "a/kernel-7.tir").read_text() != (tmp_path / "a/kernel-8.tir").read_text()


def count_ops(text):
    """Ops in a .tir text: the lines inside kernel and function bodies, closing braces aside
    (a region op's opening line counts as its op)."""
    n, depth, in_body = 0, 0, False
    for line in text.splitlines():
        s = line.split("//")[0].strip()
        if not s:
            continue
        if depth == 0:
            in_body = s.startswith(("kernel", "func"))
        elif in_body and not s.startswith("}"):
            n += 1
        depth += s.count("{") - s.count("}")
    return n


def test_planted_mismatch_is_caught_shrunk_and_saved(tmp_path):
    out = tmp_path / "out"
    r = tessera("fuzz", "--device", "cpu:0", "--count", "6", "--seconds", "900", "--seed", "1", "--out", out,
                "--max-ops", "50",
                "--plant-mismatch", "xor", "--shrink-seconds", "120", "--max-shrinks", "1")
    assert r.returncode == 1, r.stdout + r.stderr
    last = r.stdout.strip().splitlines()[-1]
    m = re.fullmatch(r"6 kernels, (\d+) mismatches", last)
    assert m and int(m.group(1)) >= 1, r.stdout
    saved = sorted(out.glob("cpu_0-seed*.tir"))
    shrunk = [p for p in saved if not p.name.endswith(".orig.tir")]
    assert shrunk, r.stdout
    first = shrunk[0]
    text = first.read_text()
    seed = re.search(r"seed(\d+)\.tir$", first.name).group(1)
    header = text.splitlines()[:3]
    assert "mismatch on cpu:0" in header[0]
    assert f"kernel seed {seed}" in header[1] and "--seed " + seed in header[1]
    assert "%out0" in header[2] or "%" in header[2]  # which output mismatched, and how
    assert "xor" in text
    orig = first.with_name(first.name.replace(".tir", ".orig.tir")).read_text()
    # The original was a full generated kernel; the shrunk one keeps little more than the xor.
    assert count_ops(orig) >= 20, orig
    assert count_ops(text) <= 8, text
    # Still fails under the plant; passes (a valid, correct kernel) without it.
    r = tessera("fuzz", "--replay", first, "--plant-mismatch", "xor")
    assert r.returncode == 1 and "mismatch" in r.stdout
    r = tessera("fuzz", "--replay", first)
    assert r.returncode == 0 and ": pass" in r.stdout, r.stdout + r.stderr
    assert tessera("ir", "verify", first).returncode == 0


def test_hostile_kernels_survive_checked_mode_on_cpu(tmp_path):
    """#10: out-of-range indices, zero divisors and steps <= 0 on cpu:0 in checked mode come
    back as statuses (counted as survived), never as a crash; the rest is still judged."""
    r = tessera("fuzz", "--device", "cpu:0", "--hostile", "--bounds", "checked", "--count", "15",
                "--seed", "1", "--max-ops", "40", "--out", tmp_path / "out")
    assert r.returncode == 0, r.stdout + r.stderr
    m = re.search(r"(\d+) undefined runs survived", r.stdout)
    assert m and int(m.group(1)) >= 3, r.stdout
    assert r.stdout.strip().splitlines()[-1] == "15 kernels, 0 mismatches"
    assert tessera("fuzz", "--bounds", "sometimes").returncode == 2
