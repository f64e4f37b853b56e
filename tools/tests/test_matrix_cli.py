"""Matrix ops (issue #13) through the `tessera` command line, written from the design
(docs/ir.md, "Matrix ops"), not from the implementation:

- hostile matrix kernels (tools/tests/hostile/mx_*.tir) on every device: robust mode gives
  the defined results written out here (FNV-1a of the little-endian i32 values), checked mode
  fails with OUT_OF_RANGE at the matrix op, a workgroup that is not a multiple of the subgroup
  size is refused, and the `@after` kernel then runs on the same device;
- bad matrix IR through `tessera ir verify`: `file:line:col: error:` naming the op;
- every matrix conformance kernel compiled for every target: success, or a compile error
  naming a matrix op and its location (a shape the target cannot do), never a signal;
- the matrix examples run with --check on every device.
"""
import os
import pathlib
import re
import struct
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("TESSERA_BIN", ROOT / "build/default/tools/tessera"))
HOSTILE = ROOT / "tools/tests/hostile"
DEVICES = ["cpu:0", "vulkan:0"]
AFTER = [v * v for v in range(64)]


def fnv1a(values):
    h = 0xCBF29CE484222325
    for byte in struct.pack(f"<{len(values)}i", *values):
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def tessera(*args, timeout=300):
    env = dict(os.environ, XDG_RUNTIME_DIR=os.environ.get("XDG_RUNTIME_DIR", "/tmp"))
    return subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=env)


def run(name, device, *extra):
    return tessera("run", HOSTILE / f"{name}.tir", "--device", device, "--no-cache", *extra)


def digest(stdout, kernel, device, param):
    block = stdout.split(f"@{kernel} on {device}", 1)
    assert len(block) == 2, f"@{kernel} did not run on {device}:\n{stdout}"
    m = re.search(rf"%{param}: i32\[\d+\] min=(-?\d+) max=(-?\d+) sum=(\S+) hash=([0-9a-f]+)",
                  block[1])
    assert m, stdout
    return m.group(4)


def op_location(name, mnemonic):
    """line:col of the first op `mnemonic` in hostile/name.tir (counted here from the text): an
    op's location is the first token of its statement (`%m` of `%m = matrix_load ...`)."""
    for n, line in enumerate((HOSTILE / f"{name}.tir").read_text().splitlines(), 1):
        if not line.lstrip().startswith("//") and re.search(rf"\b{mnemonic}\b", line):
            return f"{n}:{len(line) - len(line.lstrip()) + 1}"
    raise AssertionError(f"{mnemonic} not in {name}")


@pytest.fixture(scope="module", autouse=True)
def binary_exists():
    if not BIN.exists():
        pytest.fail(f"tessera binary not found at {BIN}; build first")


def have(device):
    r = tessera("devices", "--json")
    return r.returncode == 0 and f'"{device}"' in r.stdout


@pytest.fixture(params=DEVICES)
def device(request):
    if not have(request.param):
        pytest.skip(f"no {request.param} here")
    return request.param


# Known wrong answers, each a bug to fix (strict: a fix makes the test fail until this goes).
KNOWN_BAD = {}


def known_bad(request, device, kernel):
    reason = KNOWN_BAD.get((device, kernel))
    if reason:
        request.applymarker(pytest.mark.xfail(strict=True, reason=reason))


ROBUST = [
    ("mx_oob_load", "out", list(range(1, 61)) + [0] * 4),
    ("mx_oob_store", "out", list(range(1, 61))),
    ("mx_stride_overflow", "out", list(range(1, 9)) + [0] * 56),
    ("mx_stride_overflow", "out2", [-1] * 8 + [7] * 8 + [-1] * 48),
    ("mx_negative_stride", "out", [57 - 8 * r + c for r in range(8) for c in range(8)]),
    ("mx_negative_stride", "out2", [-1] * 64),
    ("mx_negative_stride", "out3", list(range(1, 65))),
]


@pytest.mark.parametrize("kernel,param,values", ROBUST,
                         ids=[f"{c[0]}-{c[1]}" for c in ROBUST])
def test_robust_mode_gives_the_defined_results(request, device, kernel, param, values):
    known_bad(request, device, kernel)
    r = run(kernel, device)  # robust is the default
    assert r.returncode == 0, f"stdout:{r.stdout}\nstderr:{r.stderr}"
    assert digest(r.stdout, kernel, device, param) == fnv1a(values), r.stdout
    assert digest(r.stdout, "after", device, "out") == fnv1a(AFTER), r.stdout


def test_defined_results_agree_with_the_interpreter(device):
    r = run("mx_negative_stride", device, "--check", "--kernel", "mx_negative_stride")
    assert r.returncode == 0, f"stdout:{r.stdout}\nstderr:{r.stderr}"
    assert "MISMATCH" not in r.stdout, r.stdout


CHECKED = [
    ("mx_oob_load", "load", "matrix_load", r"index 6[0-3] outside \[0, 60\) of parameter 0"),
    ("mx_oob_store", "store", "matrix_store", r"index 6[0-3] outside \[0, 60\) of parameter 1"),
    ("mx_stride_overflow", "load", "matrix_load", r"outside \[0, 64\) of parameter 0"),
]


@pytest.mark.parametrize("kernel,kind,mnemonic,index", CHECKED, ids=[c[0] for c in CHECKED])
def test_checked_mode_reports_the_matrix_op(request, device, kernel, kind, mnemonic, index):
    known_bad(request, device, kernel)
    r = run(kernel, device, "--bounds", "checked")
    assert r.returncode == 1, f"stdout:{r.stdout}\nstderr:{r.stderr}"
    where = op_location(kernel, mnemonic)
    head = (f"tessera run: @{kernel} on {device}: tsr_stream_synchronize: kernel @{kernel}: "
            f"out-of-bounds")
    assert head in r.stderr, r.stderr
    line = r.stderr[r.stderr.index(head):].splitlines()[0]
    assert f"at {where}" in line and kind in line, line
    assert re.search(index, line), line
    assert digest(r.stdout, "after", device, "out") == fnv1a(AFTER), r.stdout


def test_workgroup_not_a_multiple_of_the_subgroup_size_is_refused(device):
    r = run("mx_bad_workgroup", device)
    assert r.returncode == 1, f"stdout:{r.stdout}\nstderr:{r.stderr}"
    m = re.search(r"kernel @mx_bad_workgroup uses matrix ops: the workgroup has 20 work-items, "
                  r"not a multiple of the subgroup size (\d+)", r.stderr)
    assert m, r.stderr
    assert 20 % int(m.group(1)) != 0
    assert digest(r.stdout, "after", device, "out") == fnv1a(AFTER), r.stdout


def test_interpreter_reports_the_element_and_the_index():
    r = tessera("interp", HOSTILE / "mx_oob_load.tir", "--kernel", "mx_oob_load")
    assert r.returncode == 1, r.stdout + r.stderr
    where = op_location("mx_oob_load", "matrix_load")
    assert f"mx_oob_load.tir:{where}: error: matrix_load" in r.stderr, r.stderr
    assert "(7, 4)" in r.stderr and "60" in r.stderr, r.stderr
    r = tessera("interp", HOSTILE / "mx_bad_workgroup.tir", "--kernel", "mx_bad_workgroup",
                "--subgroup-size", "8")
    assert r.returncode == 1
    assert ("kernel @mx_bad_workgroup uses matrix ops: the workgroup has 20 work-items, not a "
            "multiple of the subgroup size 8") in r.stderr, r.stderr


BAD_IR = [
    # (text, line, col, substrings)
    ("kernel @k(%A: buffer<f32>) {\n  %z = const 0.0 : f32\n"
     "  %a = matrix_fill %z : matrix<f32, 16, 16, a>\n"
     "  %b = matrix_fill %z : matrix<f32, 8, 16, b>\n"
     "  %c = matrix_fill %z : matrix<f32, 16, 16, acc>\n"
     "  %d = matrix_mad %a, %b, %c : matrix<f32, 16, 16, a>, matrix<f32, 8, 16, b>, "
     "matrix<f32, 16, 16, acc>\n}\n", 6, 3, ["matrix_mad", "matrix<f32, 8, 16, b>"]),
    ("kernel @k(%A: buffer<f32>) {\n  %i = local_id.x : i32\n"
     "  %m = matrix_load %A[%i] stride %i : matrix<f32, 16, 16, a>\n}\n", 3, 3,
     ["matrix_load: operand %i is not subgroup-uniform (it depends on local_id at 2:3)"]),
    ("kernel @k(%A: buffer<f32>) {\n  %g = global_id.x : i32\n  %z = const 0 : i32\n"
     "  %c = cmp.eq %g, %z : i32\n  if %c {\n    %f = const 1.0 : f32\n"
     "    %m = matrix_fill %f : matrix<f32, 16, 16, acc>\n  }\n}\n", 7, 5,
     ["matrix_fill: not in subgroup-uniform control flow (the if at 5:3 depends on "
      "global_id"]),
]


@pytest.mark.parametrize("text,line,col,parts", BAD_IR, ids=["shape", "operand", "control"])
def test_verify_reports_bad_matrix_ir(tmp_path, text, line, col, parts):
    f = tmp_path / "bad.tir"
    f.write_text(text)
    r = tessera("ir", "verify", f)
    assert r.returncode == 1, r.stdout + r.stderr
    first = [ln for ln in r.stderr.splitlines() if "error:" in ln][0]
    assert first.startswith(f"{f}:{line}:{col}: error: "), r.stderr
    for p in parts:
        assert p in first, first


# Each target with the cases that reach its matrix paths (cuda: mma.sync for bf16/f16 and i8,
# FMA for f32; rocm: MFMA on gfx90a, WMMA on gfx1100; vulkan: the portable lowering). The CPU
# compiles every case in `tessera conform` already; here only the epilogue file.
COMPILES = [("cpu", None, "matrix_epilogue"),
            ("vulkan", None, "matrix_f32"), ("vulkan", None, "matrix_bf16"),
            ("vulkan", None, "matrix_i8"), ("vulkan", None, "matrix_epilogue"),
            ("cuda", "sm_80", "matrix_bf16"), ("cuda", "sm_80", "matrix_i8"),
            ("cuda", "sm_80", "matrix_f32"), ("cuda", "sm_90", "matrix_f16"),
            ("rocm", "gfx90a", "matrix_bf16"), ("rocm", "gfx90a", "matrix_i8"),
            ("rocm", "gfx1100", "matrix_bf16"), ("rocm", "gfx1100", "matrix_epilogue")]


@pytest.mark.parametrize("target,arch,case", COMPILES,
                         ids=[f"{t}-{a}-{c}" for t, a, c in COMPILES])
def test_every_target_compiles_or_names_the_op(tmp_path, target, arch, case):
    args = ["compile", ROOT / f"conformance/kernels/{case}.tir", "--target", target,
            "-o", tmp_path / "out"]
    if arch:
        args += ["--arch", arch]
    r = tessera(*args, timeout=600)
    assert r.returncode in (0, 1), f"rc {r.returncode}: {r.stderr}"  # never a signal
    if r.returncode == 1:
        # A shape the target cannot do: a located error that names a matrix op and its type.
        assert re.search(r":\d+:\d+: error: '?matrix_\w+'?.*matrix<", r.stderr), r.stderr


EXAMPLES = ["gemm_f32", "gemm_bf16", "gemm_bias_gelu", "gemm_batched"]


@pytest.mark.parametrize("example", EXAMPLES)
def test_matrix_examples_match_the_interpreter(device, example):
    r = tessera("run", ROOT / f"ir/examples/{example}.tir", "--device", device, "--check")
    assert r.returncode == 0, f"stdout:{r.stdout}\nstderr:{r.stderr}"
    assert "MISMATCH" not in r.stdout and " ok" in r.stdout, r.stdout


@pytest.mark.parametrize("path", ["generic", "avx2", None])
def test_cpu_matrix_runtime_paths_agree_with_the_interpreter(tmp_path, path):
    """The CPU matrix runtime's generic C++ path (forced by TESSERA_MX_PATH=generic), its avx2
    path (TESSERA_MX_PATH=avx2; the detected one where the host lacks AVX2) and the one CPUID
    picks, each on a fresh cache, judged against the interpreter."""
    env = dict(os.environ, TESSERA_CACHE_DIR=str(tmp_path))
    if path:
        env["TESSERA_MX_PATH"] = path
    for f in ["ir/examples/gemm_bf16.tir", "conformance/kernels/matrix_i8.tir"]:
        r = subprocess.run([str(BIN), "run", ROOT / f, "--device", "cpu:0", "--check"],
                           capture_output=True, text=True, timeout=600, env=env)
        assert r.returncode == 0, f"{f}:\n{r.stdout}\n{r.stderr}"
        assert "MISMATCH" not in r.stdout, r.stdout


# The interpreter's matrix_mad against numpy on the conformance kernels themselves (inputs made
# writable so that `tessera interp --dump` writes them too): i8 exactly modulo 2^32 (numpy
# int64 sums), floats within the design's contract of a float64 numpy product (whose own error,
# K 2^-53 S, is negligible next to the bound's K 2^-24 S), and within one f32 rounding per mad
# of the loop over K tiles (the reference rounds each mad once).
NUMPY_CASES = ["matrix_i8:mx_i8_t16x16x16_rr", "matrix_i8:mx_i8_t32x32x16_cc",
               "matrix_i8:mx_i8_wrap_k4096", "matrix_i8:mx_i8_special_a",
               "matrix_f32:mx_f32_t64x64x16_rc", "matrix_f32:mx_f32_t16x16x32_k4096_rr",
               "matrix_large:mx_bf16_t128x64x8_cr", "matrix_f16:mx_f16_t8x32x128_rc"]


@pytest.mark.parametrize("case", NUMPY_CASES)
def test_interpreter_matrix_mad_matches_numpy(tmp_path, case):
    np = pytest.importorskip("numpy")
    stem, kernel = case.split(":")
    text = (ROOT / f"conformance/kernels/{stem}.tir").read_text().replace(", readonly>", ">")
    src = tmp_path / "k.tir"
    src.write_text(text)
    r = tessera("interp", src, "--kernel", kernel, "--dump", tmp_path)
    assert r.returncode == 0, r.stderr
    launch = text.split(f"launch @{kernel} ", 1)[1].split("}", 1)[0]
    M, N, K = (int(re.search(rf"%{v} = (\d+)", launch).group(1)) for v in "MNK")
    elem = kernel.split("_")[1]

    def load(name, dtype):
        return np.fromfile(tmp_path / f"{kernel}.{name}.bin", dtype=dtype)

    if elem == "bf16":
        widen = lambda v: (v.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        A, B = widen(load("A", np.uint16)), widen(load("B", np.uint16))
    else:
        dt = {"i8": np.int8, "f16": np.float16, "f32": np.float32}[elem]
        A, B = load("A", dt).astype(np.int64 if elem == "i8" else np.float64), None
        B = load("B", dt).astype(np.int64 if elem == "i8" else np.float64)
    body = text.split(f"kernel @{kernel}(", 1)[1].split("\nlaunch ", 1)[0]
    tk = int(re.search(r"%tk = const (\d+)", body).group(1))
    A = A.reshape(K, M).T if "matrix_load.col %A" in body else A.reshape(M, K)
    B = B.reshape(N, K).T if "matrix_load.col %B" in body else B.reshape(K, N)
    if elem == "i8":
        C, D = load("C", np.int32).astype(np.int64), load("D", np.int32)
        want = ((C.reshape(M, N) + A @ B + 2**31) % 2**32 - 2**31).astype(np.int32)
        assert np.array_equal(D.reshape(M, N), want)
        return
    C = load("C", np.float32).astype(np.float64).reshape(M, N)
    D = load("D", np.float32).astype(np.float64).reshape(M, N)
    want = C + A @ B
    S = np.abs(C) + np.abs(A) @ np.abs(B)
    bound = (K + 1) * 2.0**-24 * S + (K + 1) * 2.0**-126
    assert np.all(np.abs(D - want) <= bound), np.max(np.abs(D - want) / bound)
    # ... and the reference is sharper than the contract: one rounding per mad (per K tile).
    tiles = -(-K // tk)
    assert np.all(np.abs(D - want) <= tiles * 2.0**-24 * S + K * 2.0**-50 * S)
