"""Issue #10 through the command line: requests too large for the machine come back as a
clear error, fast, never as an OOM kill or a hang, and the device then runs correctly.

- a launch spec with two 16 GiB buffers is refused by `tessera run` before any host data
  is built (on every device here);
- names past the verifier's limit and modules past its op limits are refused by
  `tessera ir verify` and `tessera run` with file:line:col diagnostics (docs/ir.md).

The binary is $TESSERA_BIN, or build/default/tools/tessera.
"""
import json
import os
import pathlib
import subprocess
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("TESSERA_BIN", ROOT / "build/default/tools/tessera"))


def tessera(*args, env=None, timeout=120):
    t0 = time.monotonic()
    r = subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True,
                       timeout=timeout, env=env)
    return r, time.monotonic() - t0


def devices():
    r, _ = tessera("devices", "--json")
    names = [d["name"] for d in json.loads(r.stdout)["devices"]]
    return [d for d in ("cpu:0", "vulkan:0") if d in names]


@pytest.fixture
def env(tmp_path):
    e = dict(os.environ)
    e["TESSERA_CACHE_DIR"] = str(tmp_path / "cache")
    return e


BIG = """
kernel @big(%a: buffer<f64, readonly>, %b: buffer<f64>) {
  %i = global_id.x : i32
  %v = load %a[%i] : f64
  store %v, %b[%i] : f64
}
launch @big grid(1) workgroup(1) {
  %a[2147483648] = fill(1.0)
  %b[2147483648] = fill(0.0)
}
"""


@pytest.mark.parametrize("device", devices())
def test_two_16_gib_buffers_are_refused_before_anything_is_built(tmp_path, env, device):
    src = tmp_path / "big.tir"
    src.write_text(BIG)
    r, seconds = tessera("run", src, "--device", device, env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "launch @big needs 34359738368 bytes of buffers" in r.stderr, r.stderr
    assert "nothing was allocated" in r.stderr, r.stderr
    assert seconds < 60, f"took {seconds:.1f} s"  # compiling would take hours (docs/ir.md)
    # The same device then runs a kernel correctly (checked against the interpreter).
    r, _ = tessera("run", ROOT / "ir/examples/saxpy.tir", "--device", device, "--check", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert " ok " in r.stdout


def chain(n, name="v"):
    """A kernel of n dependent multiplies (op k >= 1 on line k + 4) with a launch spec."""
    lines = ["kernel @k(%x: buffer<f32>, %n: i32) {", "  %i = global_id.x : i32",
             "  %c = const 1.0001 : f32", f"  %{name} = load %x[%i] : f32"]
    prev = name
    for k in range(1, n + 1):
        lines.append(f"  %m{k} = mul %{prev}, %c : f32")
        prev = f"m{k}"
    lines += [f"  store %{prev}, %x[%i] : f32", "}",
              "launch @k grid(1) workgroup(64) seed(1) {",
              "  %x[64] = uniform(-1.0, 1.0)", "  %n = 64", "}"]
    return "\n".join(lines) + "\n"


CASES = {
    # name: (source, line:col of the error, message)
    "megabyte_name": (lambda: chain(2, "v" * (1 << 20)), "4:3",
                      "is 1048576 bytes long; the limit is 1024"),
    "million_ops": (lambda: chain(1000000), "32770:3",
                    "the function has more than 32768 ops, the limit per function"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_names_and_modules_past_the_limits_are_refused_by_verify(tmp_path, case):
    make, where, message = CASES[case]
    src = tmp_path / f"{case}.tir"
    src.write_text(make())
    r, seconds = tessera("ir", "verify", src)
    assert r.returncode == 1, r.stdout + r.stderr[:500]
    assert r.stderr.startswith(f"{src}:{where}: error: "), r.stderr[:500]
    assert message in r.stderr and len(r.stderr) < 1000, r.stderr[:500]
    assert seconds < 60, f"took {seconds:.1f} s"  # compiling would take hours (docs/ir.md)


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("case", sorted(CASES))
def test_names_and_modules_past_the_limits_are_refused_by_run(tmp_path, env, case, device):
    make, where, message = CASES[case]
    src = tmp_path / f"{case}.tir"
    src.write_text(make())
    r, seconds = tessera("run", src, "--device", device, env=env)
    assert r.returncode == 1, r.stdout + r.stderr[:500]
    assert r.stderr.startswith(f"{src}:{where}: error: "), r.stderr[:500]
    assert message in r.stderr and len(r.stderr) < 1000, r.stderr[:500]
    assert seconds < 60, f"took {seconds:.1f} s"  # compiling would take hours (docs/ir.md)
    # A kernel at a realistic size still compiles and runs correctly on the device.
    ok = tmp_path / "ok.tir"
    ok.write_text(chain(200))
    r, _ = tessera("run", ok, "--device", device, "--check", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "%x: ok" in r.stdout, r.stdout


def loop_nest(depth):
    """`depth` nested `for`s to a loaded bound (1 here), each adding 1 to what its body
    yields: the kernel stores `depth`."""
    lines = ["kernel @nest(%o: buffer<i32>, %x: buffer<i32, readonly>) {",
             "  %z = const 0 : i32", "  %one = const 1 : i32", "  %v = load %x[%z] : i32"]
    for d in range(depth):
        init = "%z" if d == 0 else f"%a{d - 1}"
        lines.append(f"  %r{d} = for %i{d} = %z to %v step %one iter(%a{d} = {init}) : i32 {{")
    lines.append(f"  %s = add %a{depth - 1}, %one : i32")
    lines.append("  yield %s")
    lines.append("  }")
    for d in range(depth - 1, 0, -1):
        lines.append(f"  %t{d} = add %r{d}, %one : i32")
        lines.append(f"  yield %t{d}")
        lines.append("  }")
    lines.append("  store %r0, %o[%z] : i32")
    lines.append("}")
    lines.append("launch @nest grid(1) workgroup(1) { %o[1] = fill(0) %x[1] = fill(1) }")
    return "\n".join(lines) + "\n"


def test_a_deep_loop_nest_compiles_in_seconds_on_the_cpu(tmp_path, env):
    # Adversarial round 8: 255 nested `for`s (nesting limit 256) took 385 s to compile on
    # cpu:0 (O3's loop passes, about the fourth power of the depth); docs/ir.md promises any
    # valid kernel under 20 s. Kernels past 32 nested loops now skip the IR optimisations.
    src = tmp_path / "nest.tir"
    src.write_text(loop_nest(250))
    r, seconds = tessera("run", src, "--device", "cpu:0", "--check", env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "%o: ok" in r.stdout, r.stdout
    assert seconds < 20, f"took {seconds:.1f} s"
    r, _ = tessera("interp", src, env=env)
    assert r.returncode == 0 and "max=250" in r.stdout, r.stdout + r.stderr


def many_stores(n):
    """A kernel of n stores of a constant to n constant indices (2n + 1 ops)."""
    lines = ["kernel @k(%o: buffer<f32, writeonly>) {", "  %c = const 1.5 : f32"]
    for k in range(n):
        lines += [f"  %i{k} = const {k} : i32", f"  store %c, %o[%i{k}] : f32"]
    lines += ["}", "launch @k grid(1) workgroup(1) {", f"  %o[{n}] = fill(0)", "}"]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("bounds", ["robust", "checked"])
def test_many_guarded_accesses_compile_in_seconds_on_the_cpu(tmp_path, env, bounds):
    # Adversarial round 9: 4000 stores (8001 ops, within the size limits) took 12.6 s and
    # 2.2 GB to compile in robust mode on cpu:0 and 49 s in checked mode (0.4 s unchecked):
    # each guarded access is a diamond, and O3 grows much faster than linearly on thousands.
    # Kernels with more than 1024 guarded accesses now skip the IR optimisations, and a
    # module of such kernels the machine passes (8000 stores: robust 0.4 s, checked 1.1 s).
    src = tmp_path / "stores.tir"
    src.write_text(many_stores(8000))
    r, seconds = tessera("run", src, "--device", "cpu:0", "--bounds", bounds, "--check",
                         env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "%o: ok" in r.stdout, r.stdout
    assert seconds < 20, f"took {seconds:.1f} s"


HUGE_INTERP = """
kernel @k(%o: buffer<i32>) {
  %a = const 1 : i32
  store %a, %o[%a] : i32
}
launch @k grid(1) workgroup(1) {
  %o[2147483648] = fill(0)
}
"""


def test_interp_refuses_a_launch_past_the_address_space_limit(tmp_path, env):
    # Adversarial round 8: `tessera interp` had no memory check: it filled an 8 GiB buffer,
    # and under `ulimit -v` ended in "internal error: std::bad_alloc" (exit 70). The host's
    # memory now also counts the address-space limit.
    import resource

    src = tmp_path / "huge.tir"
    src.write_text(HUGE_INTERP)

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (3_000_000_000, 3_000_000_000))

    t0 = time.monotonic()
    r = subprocess.run([str(BIN), "interp", str(src)], capture_output=True, text=True,
                       timeout=120, env=env, preexec_fn=limit)
    assert r.returncode == 1, r.stdout + r.stderr
    assert ("tessera interp: @k: launch @k needs 8589934592 bytes of buffers; with its 2 host "
            "copies that is more than the host's 3000000000 bytes of memory (nothing was "
            "allocated)") in r.stderr, r.stderr
    assert "no kernel with a launch spec" not in r.stderr, r.stderr
    assert time.monotonic() - t0 < 30


def test_opencl_refuses_a_nest_past_its_compilers_bracket_limit(tmp_path, env):
    # Adversarial round 8: 255 nested loops reached PoCL's clang, which failed with "bracket
    # nesting level exceeded maximum of 256" on a temporary file; the codegen names the limit.
    src = tmp_path / "nest.tir"
    src.write_text(loop_nest(255))
    r, _ = tessera("compile", src, "--target", "opencl", env=env)
    assert r.returncode != 0, r.stdout + r.stderr
    assert "kernel @nest nests 2" in r.stderr and "blocks in its OpenCL C" in r.stderr, r.stderr
    assert "so opencl:0 runs at most 254" in r.stderr, r.stderr
    src.write_text(loop_nest(200))
    r, _ = tessera("compile", src, "--target", "opencl", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
