"""torch.compile(backend="tessera") against eager torch and Inductor on the three models of
issue #14, in one run: steady-state time per iteration (median) and first-call compile time.

    ./run.sh python bench/torch_models.py [--iters N] [--rounds R] [--quick] [--json]
        [--no-vulkan]
        [--models mlp,block,classifier] [--first-call in-process|fresh|both]

mlp and block run inference (torch.no_grad); classifier runs a training step (forward with
the cross-entropy loss, and backward). First call = the wall time of the first iteration
(Dynamo trace + AOTAutograd + the backend's compile + one run). Inductor gets a fresh
TORCHINDUCTOR_CACHE_DIR and Tessera a fresh TESSERA_CACHE_DIR (unless one is set: then that
cache, maybe warm, is used), so both compile cold.
Each compiled result is checked against eager (torch.testing.assert_close) before timing.
The steady state is timed in R interleaved rounds (eager, Inductor, Tessera in turn, the order
rotating), and a ratio is the median over rounds of the two modes' medians in the same round:
a shared machine's speed drifts by up to 2x within a minute, which a one-block-per-mode timing
charges to whichever mode ran then.

Two first-call figures: "in-process" is the first call of each model in this one process, so
a compiler's one-time start-up (Inductor's imports and checks, LLVM's) is paid by whichever
model comes first; "fresh" runs each model's first call in a new Python process with empty
caches on both sides (fresh TORCHINDUCTOR_CACHE_DIR and TESSERA_CACHE_DIR): what running a
script costs. --first-call picks which (default both; fresh costs a process per model and
compiler).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="inductor-bench-")
os.environ.setdefault("TESSERA_CACHE_DIR", tempfile.mkdtemp(prefix="tessera-bench-"))

import torch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

from tessera.torch import tessera_backend, wait_tier_up  # noqa: E402
from tessera.torch.examples import (MLP, Classifier, TransformerBlock,  # noqa: E402
                                    classifier_data)


def make(name, quick):
    torch.manual_seed(0)
    if name == "mlp":
        m = MLP(d_in=64, d_hidden=128, d_out=32) if quick else MLP(256, 512, 128)
        return m, (torch.randn(16 if quick else 64, m.linears[0].in_features),), False
    if name == "block":
        m = TransformerBlock(64, 4, 128) if quick else TransformerBlock(256, 8, 512)
        return m, (torch.randn(2, 16, 64) if quick else torch.randn(4, 64, 256),), False
    m = Classifier(32, 64, 10) if quick else Classifier(128, 256, 10)
    return m, classifier_data(64 if quick else 256, 32 if quick else 128, 10), True


def step(fn, inputs, train):
    if train:
        loss = fn(*inputs)
        loss.backward()
        return loss.detach()
    with torch.no_grad():
        return fn(*inputs)


def compiled(model, mode, device="cpu:0"):
    """`model` as `mode` runs it: eager, Inductor, or Tessera on `device`."""
    if mode == "eager":
        return model
    if mode == "inductor":
        return torch.compile(model)
    # strict: a segment the runtime refuses is an error here, never timed eager torch
    return torch.compile(model, backend=tessera_backend, options={"device": device, "strict": True})


def prepare(name, mode, quick, device="cpu:0"):
    """Builds `name` under `mode`, times its first call and checks it against eager."""
    model, inputs, train = make(name, quick)
    fn = compiled(model, mode, device)
    t0 = time.perf_counter()
    out = step(fn, inputs, train)
    first = time.perf_counter() - t0
    if mode == "tessera":  # the steady state is the full tier's (a cold compile starts quick)
        wait_tier_up()
    ref_model, _, _ = make(name, quick)
    torch.testing.assert_close(out, step(ref_model, inputs, train), rtol=1e-4, atol=1e-4)
    return {"fn": fn, "model": model, "inputs": inputs, "train": train, "first_s": first}


def steady(prepared, iters, rounds):
    """Steady-state ms per iteration of each prepared mode, timed in `rounds` interleaved
    rounds (each mode runs iters / rounds steps per round, the order rotating), so a drift in
    the machine's speed (common on a shared 2-core VM) lands on every mode alike. Returns, per
    mode, the median of all its steps and the per-round medians (for per-round ratios)."""
    per = max(3, iters // rounds)
    modes = list(prepared)
    times = {m: [] for m in modes}
    by_round = {m: [] for m in modes}
    for r in range(rounds):
        for m in modes[r % len(modes):] + modes[:r % len(modes)]:
            p = prepared[m]
            ts = []
            for _ in range(per):
                p["model"].zero_grad(set_to_none=True)
                t0 = time.perf_counter()
                step(p["fn"], p["inputs"], p["train"])
                ts.append(time.perf_counter() - t0)
            times[m] += ts
            by_round[m].append(statistics.median(ts) * 1e3)
    return {m: {"first_s": prepared[m]["first_s"],
                "median_ms": statistics.median(times[m]) * 1e3,
                "round_ms": by_round[m]} for m in modes}


def round_ratio(peer, tessera):
    """The median over rounds of peer ms / tessera ms in the same round."""
    return statistics.median(a / b for a, b in zip(peer["round_ms"], tessera["round_ms"]))


def first_call_fresh(name, mode, quick):
    """The first call of `name` under `mode` in a new process with empty compile caches."""
    import subprocess

    env = dict(os.environ)
    env["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="inductor-fresh-")
    env["TESSERA_CACHE_DIR"] = tempfile.mkdtemp(prefix="tessera-fresh-")
    cmd = [sys.executable, os.path.abspath(__file__), "--first-call-child", f"{name}:{mode}"]
    if quick:
        cmd.append("--quick")
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        raise RuntimeError(f"fresh first call of {name} ({mode}) failed:\n{r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])["first_s"]


def first_call_child(spec, quick):
    name, mode = spec.split(":")
    model, inputs, train = make(name, quick)
    fn = compiled(model, mode)
    t0 = time.perf_counter()
    step(fn, inputs, train)
    print(json.dumps({"first_s": time.perf_counter() - t0}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iters", type=int, default=100, help="timed steps per mode (default 100)")
    ap.add_argument("--rounds", type=int, default=5,
                    help="interleaved rounds the timed steps are split into (default 5)")
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--no-vulkan", action="store_true")
    ap.add_argument("--no-inductor", action="store_true")
    ap.add_argument("--models", default="mlp,block,classifier")
    ap.add_argument("--first-call", choices=("in-process", "fresh", "both"), default="both",
                    help="which first-call figure to measure (see the module's doc)")
    ap.add_argument("--first-call-child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.first_call_child:
        first_call_child(args.first_call_child, args.quick)
        return
    import tessera

    names = [d.name for d in tessera.devices()]
    results = {"cpu:0": {}, "vulkan:0": {}}
    for name in args.models.split(","):
        torch._dynamo.reset()
        modes = ("eager", "tessera") if args.no_inductor else ("eager", "inductor", "tessera")
        print(f"{name}: compiling and checking {', '.join(modes)}; then {args.rounds} "
              f"interleaved rounds of {max(3, args.iters // args.rounds)} steps each...",
              file=sys.stderr, flush=True)
        prepared = {m: prepare(name, m, args.quick) for m in modes}
        row = steady(prepared, args.iters, args.rounds)
        for peer in ("eager", "inductor"):
            if peer in row:
                row["tessera"][f"vs_{peer}"] = round_ratio(row[peer], row["tessera"])
        if args.first_call != "in-process":
            for mode in ("tessera",) if args.no_inductor else ("inductor", "tessera"):
                print(f"first call of {name} ({mode}) in a fresh process...", file=sys.stderr,
                      flush=True)
                row[mode]["fresh_first_s"] = first_call_fresh(name, mode, args.quick)
        if args.first_call == "fresh":
            for mode in row:
                row[mode].pop("first_s", None)
        results["cpu:0"][name] = row
        if "vulkan:0" in names and not args.no_vulkan:
            try:
                t = steady({"tessera": prepare(name, "tessera", args.quick, "vulkan:0")},
                           max(3, args.iters // 10), 1)["tessera"]
            except Exception as e:  # reported in the table, the other rows still run
                t = {"error": str(e).strip().splitlines()[-1][:300]}
            results["vulkan:0"][name] = {"eager_cpu": row["eager"], "tessera": t}
    if args.json:
        print(json.dumps(results, indent=2))
        return
    nan = {"median_ms": float("nan")}
    print("cpu:0 (ms per iteration, median over all rounds; speed = the median over the "
          "interleaved rounds of peer ms / tessera ms in the same round)")
    print(f"{'model':<11}{'eager':>9}{'inductor':>10}{'tessera':>9}{'vs eager':>10}{'vs ind.':>9}")
    for name, row in results["cpu:0"].items():
        e, t, i = row["eager"], row["tessera"], row.get("inductor", nan)
        print(f"{name:<11}{e['median_ms']:>9.3f}{i['median_ms']:>10.3f}{t['median_ms']:>9.3f}"
              f"{t['vs_eager']:>9.2f}x{t.get('vs_inductor', float('nan')):>8.2f}x")
    print("\nfirst call, s (ratio = tessera / inductor; in-process: this process, after the "
          "models above; fresh: a new process, empty caches)")
    print(f"{'model':<11}{'ind. in-proc':>13}{'tes. in-proc':>13}{'ratio':>8}"
          f"{'ind. fresh':>12}{'tes. fresh':>12}{'ratio':>8}")
    for name, row in results["cpu:0"].items():
        t, i = row["tessera"], row.get("inductor", {})
        cols = ""
        for key, width in (("first_s", 13), ("fresh_first_s", 12)):
            a, b = i.get(key, float("nan")), t.get(key, float("nan"))
            cols += f"{a:>{width}.2f}{b:>{width}.2f}{b / a:>7.3f}x"
        print(f"{name:<11}{cols}")
    if results["vulkan:0"]:
        print("\nvulkan:0 against eager torch on the CPU (ms per iteration, median)")
        for name, row in results["vulkan:0"].items():
            e, t = row["eager_cpu"], row["tessera"]
            if "error" in t:
                print(f"{name:<11} eager cpu {e['median_ms']:9.3f}  tessera vulkan:0 failed: "
                      f"{t['error']}")
                continue
            print(f"{name:<11} eager cpu {e['median_ms']:9.3f}  tessera vulkan:0 "
                  f"{t['median_ms']:9.3f}  ({e['median_ms'] / t['median_ms']:.2f}x)  "
                  f"first call {t['first_s']:.2f} s")


if __name__ == "__main__":
    main()
