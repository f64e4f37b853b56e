"""End-to-end tests of `tessera graph verify|print|eval` (the graph IR, docs/graph_ir.md).

Expected values are recomputed here in plain Python from the inputs the command prints,
independently of the evaluator.
"""
import math
import struct

from test_cli import ROOT, binary_exists, tessera  # noqa: F401 (binary_exists: autouse fixture)

EXAMPLES = sorted((ROOT / "ir/graph/examples").glob("*.tg"))


def test_help():
    r = tessera("graph", "--help", check=0)
    for sub in ("graph verify", "graph print", "graph eval"):
        assert sub in r.stdout
    assert tessera("graph").returncode == 2
    r = tessera("graph", "frob")
    assert r.returncode == 2 and "unknown subcommand 'frob'" in r.stderr
    for sub in ("verify", "print", "eval"):
        r = tessera("graph", sub, "--help", check=0)
        assert r.stdout.startswith(f"usage: tessera graph {sub}"), r.stdout
        r = tessera("graph", sub, "--bogus")
        assert r.returncode == 2
        assert r.stderr == (f"tessera graph {sub}: unknown option '--bogus' "
                            f"(see 'tessera graph {sub} --help')\n"), r.stderr
    r = tessera("graph", "eval", "x.tg", "--seed", "abc")
    assert r.returncode == 2 and "--seed needs a whole number" in r.stderr


def test_verify_examples_and_errors(tmp_path):
    assert len(EXAMPLES) >= 3
    r = tessera("graph", "verify", *EXAMPLES, check=0)
    assert r.stdout.count(": ok") == len(EXAMPLES)
    bad = tmp_path / "bad.tg"
    bad.write_text("graph @g(%x: tensor<f32, [2]>) {\n  %y = exp %nope\n  return %y\n}\n")
    r = tessera("graph", "verify", bad, EXAMPLES[0])
    assert r.returncode == 1
    assert r.stderr == f"{bad}:2:12: error: undefined value %nope\n", r.stderr
    assert r.stdout == f"{EXAMPLES[0]}: ok\n"
    r = tessera("graph", "verify", tmp_path / "missing.tg")
    assert r.returncode == 1 and "missing.tg: error: cannot read" in r.stderr


def test_print_is_canonical(tmp_path):
    for ex in EXAMPLES:
        once = tessera("graph", "print", ex, check=0).stdout
        f = tmp_path / ex.name
        tessera("graph", "print", ex, "-o", f, check=0)
        assert f.read_text() == once
        assert tessera("graph", "print", f, check=0).stdout == once, ex.name


def parse_eval(stdout):
    """{label: (type, [values])} from `tessera graph eval` output."""
    tensors, label = {}, None
    for line in stdout.splitlines():
        if line.startswith("  ..."):
            continue
        if not line.startswith("  "):
            label, typ = line.split(": ", 1)
            tensors[label] = (typ, [])
        else:
            tensors[label][1].extend(float(v) for v in line.split())
    return tensors


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def test_eval_matches_python(tmp_path):
    src = tmp_path / "g.tg"
    src.write_text(
        "graph @g(%a: tensor<f32, [2, 3]>, %b: tensor<f32, [3]>) {\n"
        "  %s = add %a, %b\n  %t = tanh %s\n  %m = amax %t {axes = [1]}\n"
        "  %i = argmax %a {axes = [1]}\n  return %t, %m, %i\n}\n")
    r = tessera("graph", "eval", src, "--seed", "5", check=0)
    t = parse_eval(r.stdout)
    a, b = t["input %a"][1], t["input %b"][1]
    assert t["input %a"][0] == "tensor<f32, [2, 3]>" and len(a) == 6 and len(b) == 3
    assert all(-2 <= v < 2 for v in a + b)
    want = [f32(math.tanh(f32(a[r * 3 + c] + b[c]))) for r in range(2) for c in range(3)]
    got = t["output 0 %t"][1]
    assert all(abs(g - w) <= 1e-7 * max(1, abs(w)) for g, w in zip(got, want)), (got, want)
    assert t["output 1 %m"][1] == [max(got[0:3]), max(got[3:6])]
    assert t["output 2 %i"] == ("tensor<i64, [2]>",
                                [float(max(range(3), key=lambda c: (a[r * 3 + c], -c)))
                                 for r in range(2)])
    # another seed, other inputs; the same seed, the same output
    assert tessera("graph", "eval", src, "--seed", "6", check=0).stdout != r.stdout
    assert tessera("graph", "eval", src, "--seed", "5", check=0).stdout == r.stdout


def test_eval_limit_and_examples():
    r = tessera("graph", "eval", ROOT / "ir/graph/examples/mlp.tg", "--limit", "4", check=0)
    t = parse_eval(r.stdout)
    assert "more; --limit to show them" in r.stdout
    assert "output 0 %y" in r.stdout
    for ex in EXAMPLES:
        tessera("graph", "eval", ex, check=0)
    assert t["input %x"][0] == "tensor<f32, [8, 16]>" and len(t["input %x"][1]) == 4
