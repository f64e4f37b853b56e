"""End-to-end tests of the `tessera` command line: exit codes, diagnostics, help, outputs.

The binary is $TESSERA_BIN, or build/default/tools/tessera. Values are checked against
independent expectations (numpy-free: plain Python arithmetic over the dumped buffers).
"""
import json
import os
import pathlib
import pty
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


# Every command parses its options with CLI11 (tools/cli.h): one help layout, one usage-error
# line that names the option and points to the command's help, exit code 2.
CLI11_COMMANDS = [["ir", "verify"], ["ir", "print"], ["ir", "opt"], ["interp"], ["devices"],
                  ["compile"], ["run"], ["conform"], ["fuzz"], ["cts"]]
NUMERIC_OPTIONS = [(["interp", "x.tir"], "--max-steps"), (["interp", "x.tir"], "--subgroup-size"),
                   (["compile", "x.tir"], "--subgroup-size"), (["run", "x.tir"], "--timeout-ms"),
                   (["run", "x.tir"], "--subgroup-size"), (["conform"], "--seed"),
                   (["conform"], "-j"), (["conform"], "--progress-every"),
                   (["fuzz"], "--seconds"), (["fuzz"], "--count"), (["fuzz"], "--seed"),
                   (["fuzz"], "--max-ops"), (["fuzz"], "--kernel-timeout")]


@pytest.mark.parametrize("cmd", CLI11_COMMANDS, ids=" ".join)
def test_every_command_has_the_same_help_and_usage_errors(cmd):
    name = " ".join(cmd)
    for flag in ("--help", "-h"):
        r = tessera(*cmd, flag, check=0)
        assert r.stdout.startswith(f"usage: tessera {name}"), r.stdout
        assert "\noptions:\n  -h, --help" in r.stdout and r.stderr == "", r.stdout
    for bad, what in (("--bogus", "unknown option '--bogus'"), ("--bogus=1", "unknown option '--bogus=1'")):
        r = tessera(*cmd, bad)
        assert r.returncode == 2 and r.stdout == "", r
        assert r.stderr == f"tessera {name}: {what} (see 'tessera {name} --help')\n", r.stderr


@pytest.mark.parametrize("cmd,option", NUMERIC_OPTIONS, ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_numeric_options_reject_text_and_missing_values(cmd, option):
    name = cmd[0]
    for args, what in (([option, "abc"], option + " "), ([option], option + " needs a value")):
        r = tessera(*cmd, *args)
        assert r.returncode == 2, r
        assert r.stderr.startswith(f"tessera {name}: {what}"), r.stderr
        assert r.stderr.endswith(f" (see 'tessera {name} --help')\n") and r.stderr.count("\n") == 1


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


def test_an_endless_input_is_refused_at_the_file_size_limit():
    # /dev/zero was read whole: ~1 GB/s of memory, then "internal error: std::bad_alloc"
    # (adversarial round 6). Reading stops at ir/core/limits.h's kMaxFileBytes.
    for cmd in (("ir", "verify"), ("graph", "verify")):
        r = tessera(*cmd, "/dev/zero")
        assert r.returncode == 1, r.stderr
        assert "/dev/zero" in r.stderr and "larger than 256 MiB" in r.stderr, r.stderr


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


def test_interp_dump_prints_integers_signed_as_the_digest(tmp_path):
    # The .txt of an integer buffer printed 0x8000 as 32768 while the digest said min=-32768.
    src = tmp_path / "k.tir"
    src.write_text("kernel @k(%y: buffer<i16>) {\n  %i = global_id.x : i32\n"
                   "  %v = const -32768 : i16\n  store %v, %y[%i] : i16\n}\n"
                   "launch @k grid(1) workgroup(2) {\n  %y[2] = fill(0)\n}\n")
    r = tessera("interp", src, "--dump", tmp_path)
    assert "min=-32768" in r.stdout, r.stdout
    assert (tmp_path / "k.y.txt").read_text().split() == ["-32768", "-32768"]


def test_interp_dump_prints_i1_as_0_or_1(tmp_path):
    # A true i1 was written as -1 (its one bit sign-extended); docs/ir.md: 0 or 1, never -1.
    src = tmp_path / "k.tir"
    src.write_text("kernel @k(%o: buffer<i1>) {\n  %i = global_id.x : i32\n"
                   "  %z = const 0 : i32\n  %t = cmp.eq %i, %z : i32\n"
                   "  store %t, %o[%i] : i1\n}\n"
                   "launch @k grid(1) workgroup(2) {\n  %o[2] = fill(0)\n}\n")
    tessera("interp", src, "--dump", tmp_path)
    assert (tmp_path / "k.o.txt").read_text().split() == ["1", "0"]
    assert (tmp_path / "k.o.bin").read_bytes() == b"\x01\x00"


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


# --- the HAL and the CPU backend --------------------------------------------------------------

def run_env(tmp_path):
    env = dict(os.environ)
    env["TESSERA_CACHE_DIR"] = str(tmp_path / "cache")
    return env


def tessera_env(env, *args):
    return subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True,
                          timeout=300, env=env)


def test_devices_json_shape():
    import json
    r = tessera("devices", "--json", check=0)
    doc = json.loads(r.stdout)
    assert set(doc) == {"devices", "unavailable"}
    cpu = [d for d in doc["devices"] if d["name"] == "cpu:0"]
    assert cpu, doc
    d = cpu[0]
    assert d["backend"] == "cpu" and d["total_memory"] > 0 and d["compute_units"] >= 1
    assert d["max_workgroup_total"] >= 256 and "fp64" in d["features"]
    for u in doc["unavailable"]:
        assert u["backend"] and u["reason"]
    assert "cpu:0" in tessera("devices", check=0).stdout
    # Each device names its compiler target (the registry's) and the profile it declares.
    assert d["target"] == "cpu" and d["profile"] == "full", d
    assert d["compiler_caps"] == {}, d  # the CPU driver has no record
    for v in (d for d in doc["devices"] if d["backend"] == "vulkan"):
        assert v["target"] == "vulkan" and v["profile"] == "relaxed", v
        caps = v["compiler_caps"]  # the driver's exact record, as the Vulkan target reads it
        assert int(caps["vulkan.subgroupSize"]) == v["subgroup_size"], caps
        assert int(caps["vulkan.maxComputeSharedMemorySize"]) == v["max_shared_memory"], caps
        assert (caps["vulkan.float64"] == "1") == ("fp64" in v["features"]), caps
    assert "target: cpu (declares the full profile)" in tessera("devices", check=0).stdout


def test_compile_takes_canonical_names_and_old_ones_with_a_note(tmp_path):
    ex = ROOT / "ir/examples/saxpy.tir"
    for canonical, old, arch in (("vulkan", "spirv-vulkan", []), ("cuda", "ptx", ["--arch", "sm_80"]),
                                 ("rocm", "hsaco", ["--arch", "gfx90a"]),
                                 ("opencl", "opencl-c", []), ("levelzero", "spirv-kernel", [])):
        new = tessera("compile", ex, "--target", canonical, *arch, "-o", tmp_path / "new", check=0)
        assert "old name" not in new.stderr
        was = tessera("compile", ex, "--target", old, *arch, "-o", tmp_path / "old", check=0)
        assert f"note: '{old}' is an old name of target '{canonical}'" in was.stderr
        assert (tmp_path / "new").read_bytes() == (tmp_path / "old").read_bytes(), canonical
    r = tessera("compile", ex, "--target", "metal")
    assert r.returncode == 1
    assert "unknown target 'metal' (targets: cpu, vulkan, cuda, rocm, opencl, levelzero)" in r.stderr
    header = tessera("compile", ex, "--target", "vulkan", "-o", tmp_path / "v.tsrx", check=0)
    assert (tmp_path / "v.tsrx").read_bytes().startswith(b"TSRX1 vulkan\n"), header.stderr


def test_run_check_every_example_on_vulkan(tmp_path):
    env = run_env(tmp_path)
    devices = json.loads(tessera("devices", "--json", check=0).stdout)["devices"]
    if not any(d["name"] == "vulkan:0" for d in devices):
        pytest.skip("no Vulkan device here")
    for ex in EXAMPLES:
        r = tessera_env(env, "run", ex, "--device", "vulkan:0", "--check")
        assert r.returncode == 0, f"{ex.name}\n{r.stdout}\n{r.stderr}"
        lines = [l for l in r.stdout.splitlines() if l.startswith("@")]
        assert lines and all(": ok" in l for l in lines), r.stdout
        # Judged by Vulkan's declared profile, as the conformance cases are.
        assert all("(relaxed)" in l for l in lines), r.stdout
        # Integer outputs are compared exactly, floats within a ULP budget.
        assert all(("exact, integers" in l) != ("ulp (relaxed)" in l) for l in lines), r.stdout


def test_cuda_path_end_to_end_through_the_fake_driver(tmp_path):
    # IR -> PTX (+ cubin) -> the CUDA driver -> a launch, with the test-only fake libcuda
    # (backends/cuda/runtime/tests/fake_libcuda.c: an sm_90 device that runs `vector_add` on
    # the host and refuses the cubin, so the PTX fallback is taken).
    fake = BIN.parents[1] / "backends/cuda/runtime/tests/fake/libcuda.so.1"
    if not fake.exists():
        pytest.skip("the fake libcuda was not built")
    env = run_env(tmp_path)
    env["TESSERA_CUDA_LIBRARY"] = str(fake)
    r = tessera_env(env, "run", ROOT / "ir/examples/vector_add.tir", "--device", "cuda:0", "--check")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "@vector_add cuda:0 %c: ok" in r.stdout
    # Without the fake, cuda is unavailable with the loader's reason.
    env.pop("TESSERA_CUDA_LIBRARY")
    env["TESSERA_CUDA_LIBRARY"] = str(tmp_path / "missing/libcuda.so.1")
    doc = json.loads(tessera_env(env, "devices", "--json").stdout)
    cuda = [u for u in doc["unavailable"] if u["backend"] == "cuda"]
    assert cuda and "libcuda.so.1" in cuda[0]["reason"], doc


def test_levelzero_path_end_to_end_through_the_fake_driver(tmp_path):
    # IR -> SPIR-V (Kernel flavour) -> the Level Zero driver -> a launch, with the test-only
    # fake loader (backends/levelzero/runtime/tests/fake_libze*.c: it checks the arguments
    # against the module's parameter types and runs `vector_add` on the host).
    fake = BIN.parents[1] / "backends/levelzero/runtime/tests/fake/libze_loader.so.1"
    if not fake.exists():
        pytest.skip("the fake Level Zero loader was not built")
    env = run_env(tmp_path)
    env["TESSERA_LEVELZERO_LIBRARY"] = str(fake)
    r = tessera_env(env, "run", ROOT / "ir/examples/vector_add.tir", "--device", "levelzero:0",
                    "--check")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "@vector_add levelzero:0 %c: ok" in r.stdout
    doc = json.loads(tessera_env(env, "devices", "--json").stdout)
    ze = [d for d in doc["devices"] if d["backend"] == "levelzero"]
    assert ze and ze[0]["target"] == "levelzero", doc
    assert int(ze[0]["compiler_caps"]["levelzero.subgroupSize"]) == ze[0]["subgroup_size"] == 32
    # The system's loader (libze1) without a Level Zero driver: unavailable, zeInit named.
    env.pop("TESSERA_LEVELZERO_LIBRARY")
    doc = json.loads(tessera_env(env, "devices", "--json").stdout)
    if any(d["backend"] == "levelzero" for d in doc["devices"]):
        return  # a real Level Zero GPU is installed
    ze = [u for u in doc["unavailable"] if u["backend"] == "levelzero"]
    assert ze, doc
    assert ("zeInit failed: ZE_RESULT_ERROR_UNINITIALIZED (0x78000001)" in ze[0]["reason"]
            or "libze_loader.so.1" in ze[0]["reason"]), ze


def test_run_check_every_example_on_cpu(tmp_path):
    env = run_env(tmp_path)
    for ex in EXAMPLES:
        r = tessera_env(env, "run", ex, "--device", "cpu:0", "--check")
        assert r.returncode == 0, f"{ex.name}\n{r.stdout}\n{r.stderr}"
        lines = [l for l in r.stdout.splitlines() if l.startswith("@")]
        assert lines and all(": ok" in l for l in lines), r.stdout
        assert all("(full)" in l for l in lines), r.stdout
        assert all(("exact, integers" in l) != ("ulp (full)" in l) for l in lines), r.stdout


def test_run_uses_the_disk_cache_and_survives_corruption(tmp_path):
    env = run_env(tmp_path)
    ex = ROOT / "ir/examples/saxpy.tir"
    first = tessera_env(env, "run", ex, "--device", "cpu:0", "--check")
    assert first.returncode == 0 and ": compiled for cpu:0" in first.stdout, first.stdout
    second = tessera_env(env, "run", ex, "--device", "cpu:0", "--check")
    assert second.returncode == 0 and ": disk cache for cpu:0" in second.stdout, second.stdout
    entries = list((tmp_path / "cache").rglob("*.bin"))
    assert len(entries) == 1
    data = bytearray(entries[0].read_bytes())
    data[-10] ^= 0xFF  # corrupt the object inside the entry
    entries[0].write_bytes(bytes(data))
    third = tessera_env(env, "run", ex, "--device", "cpu:0", "--check")
    assert third.returncode == 0 and ": compiled for cpu:0" in third.stdout, third.stdout


def test_run_digest_matches_the_interpreter(tmp_path):
    env = run_env(tmp_path)
    ex = ROOT / "ir/examples/vector_add.tir"
    dev = tessera_env(env, "run", ex, "--device", "cpu:0").stdout.splitlines()[-1]
    ref = tessera("interp", ex, check=0).stdout.splitlines()[-1]
    assert dev == ref


def test_run_errors_are_clear(tmp_path):
    env = run_env(tmp_path)
    ex = ROOT / "ir/examples/saxpy.tir"
    r = tessera_env(env, "run", ex, "--device", "cuda:7")
    assert r.returncode == 1 and "cuda:7" in r.stderr and "cpu:0" in r.stderr
    assert tessera_env(env, "run", ex).returncode == 2
    r = tessera_env(env, "run", ex, "--device", "cpu:0", "--kernel", "nope")
    assert r.returncode == 1 and "nope" in r.stderr


def test_compile_writes_object_and_every_stage(tmp_path):
    out = tmp_path / "g.o"
    dump = tmp_path / "dump"
    r = tessera("compile", ROOT / "ir/examples/gelu_affine.tir", "--target", "cpu", "-o", out,
                "--dump-dir", dump, check=0)
    assert out.read_bytes()[:4] == b"\x7fELF"
    for name in ("0-kir.tir", "1-llvm.ll", "2-llvm.opt.ll", "3-obj.o"):
        assert (dump / name).stat().st_size > 0, name
    assert "define" in (dump / "1-llvm.ll").read_text()
    assert "@gelu_affine" in r.stdout
    bad = tessera("compile", ROOT / "ir/examples/gelu_affine.tir", "--target", "ptx")
    assert bad.returncode == 2 and "needs --arch" in bad.stderr


def test_compile_without_o_writes_nothing_to_the_working_directory(tmp_path):
    ex = ROOT / "ir/examples/saxpy.tir"

    def run(*args):
        return subprocess.run([str(BIN), "compile", str(ex), *args], cwd=tmp_path,
                              capture_output=True, timeout=300)

    cpu = run("--target", "cpu")  # binary: compiled and summarised, not written
    assert cpu.returncode == 0, cpu.stderr
    assert b"(not written: -o FILE writes it)" in cpu.stdout and b"@saxpy" in cpu.stdout
    ptx = run("--target", "ptx", "--arch", "sm_80")  # text: the PTX on stdout, summary on stderr
    assert ptx.returncode == 0, ptx.stderr
    assert b".visible .entry saxpy(" in ptx.stdout and b"-> stdout" in ptx.stderr
    piped = run("--target", "cpu", "-o", "-")  # explicit: the object on stdout (a pipe here)
    assert piped.returncode == 0 and piped.stdout[:4] == b"\x7fELF", piped.stderr
    assert list(tmp_path.iterdir()) == []
    assert "Without -o nothing is written to disk" in tessera("compile", "--help", check=0).stdout
    # A binary artefact is never written to a terminal.
    leader, follower = pty.openpty()
    try:
        tty = subprocess.run([str(BIN), "compile", str(ex), "--target", "cpu", "-o", "-"],
                             stdout=follower, stderr=subprocess.PIPE, timeout=300)
    finally:
        os.close(follower)
        os.close(leader)
    assert tty.returncode == 2 and b"refusing to write a binary artefact to a terminal" in tty.stderr


def test_compile_ptx_writes_ptx_and_every_stage(tmp_path):
    out = tmp_path / "r.ptx"
    dump = tmp_path / "dump"
    r = tessera("compile", ROOT / "ir/examples/reduce_tree.tir", "--target", "ptx", "--arch",
                "sm_90", "-o", out, "--dump-dir", dump, check=0)
    ptx = out.read_text()
    assert ".target sm_90" in ptx and ".visible .entry reduce_tree(" in ptx
    assert "bar.sync" in ptx and ".shared" in ptx
    for name in ("0-kir.tir", "1-llvm.ll", "2-llvm.opt.ll", "3-ptx.ptx"):
        assert (dump / name).stat().st_size > 0, name
    assert (dump / "3-ptx.ptx").read_text() == ptx
    cubin = dump / "4-cubin.cubin"
    if "bytes of cubin" in r.stdout:  # ptxas is installed
        assert cubin.read_bytes()[:4] == b"\x7fELF"
    else:
        assert "no cubin (ptxas not found)" in r.stdout and not cubin.exists()
    assert "@reduce_tree: 3 params, 1024 bytes shared memory, subgroup 32" in r.stdout


def test_compile_hsaco_writes_a_code_object_per_arch(tmp_path):
    ex = ROOT / "ir/examples/subgroup_reduce.tir"
    for arch, wave in (("gfx90a", 64), ("gfx942", 64), ("gfx1100", 32)):
        out = tmp_path / f"s_{arch}.hsaco"
        dump = tmp_path / arch
        r = tessera("compile", ex, "--target", "hsaco", "--arch", arch, "-o", out,
                    "--dump-dir", dump, check=0)
        data = out.read_bytes()
        assert data[:4] == b"\x7fELF" and data[16] == 3 and data[18] == 224  # ET_DYN, EM_AMDGPU
        assert b"amdhsa.kernels" in data and b"subgroup_reduce.kd" in data
        for name in ("0-kir.tir", "1-llvm.ll", "2-llvm.linked.ll", "3-llvm.opt.ll", "4-obj.o"):
            assert (dump / name).stat().st_size > 0, name
        assert (dump / "5-hsaco.hsaco").read_bytes() == data
        assert f"for {arch}" in r.stdout and f"subgroup {wave}" in r.stdout


def test_compile_gpu_targets_reject_a_bad_or_missing_arch():
    ex = ROOT / "ir/examples/saxpy.tir"
    r = tessera("compile", ex, "--target", "ptx", "--arch", "sm_12")
    assert r.returncode == 2 and "'sm_12'" in r.stderr
    assert "sm_80, sm_89, sm_90, sm_90a" in r.stderr
    r = tessera("compile", ex, "--target", "hsaco", "--arch", "sm_80")
    assert r.returncode == 2 and "gfx90a, gfx942, gfx1100" in r.stderr
    r = tessera("compile", ex, "--target", "hsaco")
    assert r.returncode == 2 and "needs --arch" in r.stderr
    assert tessera("compile", ex, "--target", "cpu", "--arch", "sm_80").returncode == 2
    assert tessera("compile", ex, "--target", "ptx", "--arch", "sm_80",
                   "--subgroup-size", "16").returncode == 2
    text = tessera("compile", "--help", check=0).stdout
    for word in ("cpu", "ptx", "hsaco", "sm_80", "sm_90a", "gfx90a", "gfx1100"):
        assert word in text, word


def test_compile_opencl_for_one_workgroup_size():
    ex = ROOT / "ir/examples/reduce_tree.tir"
    generic = tessera("compile", ex, "--target", "opencl", check=0).stdout
    assert "__kernel TSR_OPENCL_REQD_WORKGROUP void" in generic
    assert "reqd_work_group_size(TSR_OPENCL_WORKGROUP_X" in generic  # the driver's per-size build
    sized = tessera("compile", ex, "--target", "opencl", "--workgroup-size", "64", check=0).stdout
    assert "__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void" in sized
    assert "TSR_OPENCL_" not in sized and "get_local_size" not in sized
    assert sized.count("(ulong)") < generic.count("(ulong)")  # checks the size decides are gone
    assert "reqd_work_group_size(8, 2, 1)" in tessera(
        "compile", ex, "--target", "opencl", "--workgroup-size", "8,2", check=0).stdout
    for bad in ("0", "8,0", "1,2,3,4", "x", "65537", "8,"):
        r = tessera("compile", ex, "--target", "opencl", "--workgroup-size", bad)
        assert r.returncode == 2 and "--workgroup-size" in r.stderr, bad
    r = tessera("compile", ex, "--target", "cpu", "--workgroup-size", "64")
    assert r.returncode == 2 and "does not apply to --target cpu" in r.stderr
    assert "--workgroup-size" in tessera("compile", "--help", check=0).stdout


def test_compile_ptx_reports_an_unsupported_construct(tmp_path):
    big = tmp_path / "big.tir"
    big.write_text("kernel @big(%o: buffer<f32>) {\n"
                   "  %s = shared_alloc : shared<f32, 16384>\n"
                   "  %i = local_id.x : i32\n"
                   "  %v = load %s[%i] : f32\n"
                   "  store %v, %o[%i] : f32\n}\n")
    r = tessera("compile", big, "--target", "ptx", "--arch", "sm_80", "-o", tmp_path / "b.ptx")
    assert r.returncode == 1
    assert "kernel @big uses 65536 bytes of shared memory; CUDA allows 49152" in r.stderr
    ok = tessera("compile", big, "--target", "hsaco", "--arch", "gfx90a", "-o",
                 tmp_path / "b.hsaco", check=0)  # 64 KiB of LDS fits on AMD
    assert "65536 bytes shared memory" in ok.stdout


def test_compile_spirv_dumps_every_stage_and_validates(tmp_path):
    out = tmp_path / "s.spv"
    dump = tmp_path / "dump"
    r = tessera("compile", ROOT / "ir/examples/row_softmax.tir", "--target", "spirv-vulkan", "-o", out,
                "--dump-dir", dump, check=0)
    words = out.read_bytes()
    assert words[:4] == bytes.fromhex("03022307")  # the SPIR-V magic, little-endian
    assert (dump / "1-spirv.spv").read_bytes() == words
    assert "OpEntryPoint GLCompute" in (dump / "2-spirv.dis.txt").read_text()
    assert "@row_softmax" in r.stdout and "validated" in r.stdout
    val = subprocess.run(["spirv-val", "--target-env", "vulkan1.2", str(out)], capture_output=True,
                         text=True)
    assert val.returncode == 0, val.stderr
    alias = tmp_path / "alias.spv"  # `spirv` is short for the Vulkan flavour
    tessera("compile", ROOT / "ir/examples/row_softmax.tir", "--target", "spirv", "-o", alias,
            check=0)
    assert alias.read_bytes() == words


def test_compile_ptx_container_carries_cubin_and_ptx(tmp_path):
    out = tmp_path / "s.tsrx"
    r = tessera("compile", ROOT / "ir/examples/saxpy.tir", "--target", "ptx", "--arch", "sm_90",
                "-o", out, check=0)
    data = out.read_bytes()
    header, rest = data.split(b"\n", 1)
    assert header == b"TSRX1 cuda", header
    assert rest.startswith(b"kernel saxpy 0 0 32 4 ")
    assert b".entry saxpy" in data  # the PTX fallback
    if "bytes of cubin" in r.stdout:  # ptxas was found: the image is the cubin (an ELF)
        assert b"\x7fELF" in data


EMPTY_AND_I64 = """
kernel @copy(%x: buffer<f32, readonly>, %y: buffer<f32>, %n: i32) {
  %i = global_id.x : i32
  %in = cmp.slt %i, %n : i32
  if %in {
    %v = load %x[%i] : f32
    store %v, %y[%i] : f32
  }
}
launch @copy grid(1) workgroup(64) {
  %x[0] = uniform(-1.0, 1.0)
  %y[0] = fill(0.0)
  %n = 0
}

kernel @inc(%x: buffer<i64, readonly>, %y: buffer<i64>, %z: buffer<i64>) {
  %i = global_id.x : i32
  %v = load %x[%i] : i64
  %one = const 1 : i64
  %w = add %v, %one : i64
  store %w, %y[%i] : i64
}
launch @inc grid(1) workgroup(64) seed(5) {
  %x[64] = uniform(-9223372036854775808, 9223372036854775807)
  %y[64] = fill(0)
  %z[3] = iota(9007199254740993, 1)
}
"""


def test_run_empty_buffers_and_exact_i64_generators(tmp_path):
    # Issue #11 bug 4: `%x[0]` is an empty buffer that every device runs, and i64 generator
    # arguments are exact (uniform over the whole i64 range, values above 2^53 kept).
    src = tmp_path / "empty_i64.tir"
    src.write_text(EMPTY_AND_I64)
    out = tessera("interp", src, check=0).stdout
    y = next(l for l in out.splitlines() if l.startswith("%y: i64"))
    lo, hi = (int(y.split(k + "=")[1].split()[0]) for k in ("min", "max"))
    assert lo < -2**62 and hi > 2**62, y  # x + 1 over the full range, not INT64_MIN + 1
    assert "%z: i64[3] min=9007199254740993 max=9007199254740995" in out, out
    assert "%y: f32[0]" in out, out
    env = run_env(tmp_path)
    devices = [d["name"] for d in json.loads(tessera("devices", "--json", check=0).stdout)["devices"]]
    for dev in [d for d in ("cpu:0", "vulkan:0") if d in devices]:
        r = tessera_env(env, "run", src, "--device", dev, "--check")
        assert r.returncode == 0, f"{dev}\n{r.stdout}\n{r.stderr}"
        lines = [l for l in r.stdout.splitlines() if l.startswith("@")]
        assert len(lines) == 3 and all(": ok" in l for l in lines), r.stdout
