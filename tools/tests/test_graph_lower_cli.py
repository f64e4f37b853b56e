"""End-to-end tests of `tessera graph lower` (docs/graph_ir.md, "Lowering"): the printed plan
and module, its --check against the graph evaluator, and bad input.
"""
from test_cli import ROOT, binary_exists, tessera  # noqa: F401 (binary_exists: autouse fixture)

EXAMPLES = sorted((ROOT / "ir/graph/examples").glob("*.tg"))


def test_help_and_usage_errors():
    r = tessera("graph", "lower", "--help", check=0)
    assert r.stdout.startswith("usage: tessera graph lower"), r.stdout
    assert "lower" in tessera("graph", "--help", check=0).stdout
    r = tessera("graph", "lower", "--bogus")
    assert r.returncode == 2 and "unknown option '--bogus'" in r.stderr
    r = tessera("graph", "lower", EXAMPLES[0], "--subgroup-size", "0")
    assert r.returncode == 2 and "must be 1..1024" in r.stderr


def test_examples_lower_verify_and_check(tmp_path):
    for ex in EXAMPLES:
        out = tmp_path / (ex.stem + ".tir")
        r = tessera("graph", "lower", ex, "--check", "-o", out, check=0)
        assert r.stderr.count(": ok") >= 1 and "MISMATCH" not in r.stderr, r.stderr
        text = out.read_text()
        assert text.startswith("// plan of graph @")
        assert "// launch @k0_" in text
        tessera("ir", "verify", out, check=0)  # the output is a valid .tir file


def test_softmax_is_one_row_kernel(tmp_path):
    g = tmp_path / "sm.tg"
    g.write_text("""graph @sm(%x: tensor<f32, [5, 37]>) {
  %m = amax %x {axes = [1], keepdim = true}
  %s = sub %x, %m
  %e = exp %s
  %t = sum %e {axes = [1], keepdim = true}
  %y = div %e, %t
  return %y
}
""")
    r = tessera("graph", "lower", g, "--subgroup-size", "8", "--check", check=0)
    assert "// launch @k0_row (row: amax sub exp sum div)" in r.stdout, r.stdout
    assert r.stdout.count("// launch @") == 1
    assert "check output 0" in r.stderr and "ok" in r.stderr


def test_errors_name_the_file(tmp_path):
    bad = tmp_path / "bad.tg"
    bad.write_text("graph @g(%x: tensor<f32, [2]>) {\n  %y = exp %nope\n  return %y\n}\n")
    r = tessera("graph", "lower", bad)
    assert r.returncode == 1 and r.stderr == f"{bad}:2:12: error: undefined value %nope\n"
