"""Row kernels (softmax, log_softmax, layer_norm, rms_norm) at the shapes of the three models of
bench/torch_models.py, and two long reductions (a full sum of 3M elements, var over rows of
4096), on one device, against eager torch in the same run.

Each graph is written as the torch front end decomposes the op (ir/graph/examples/layernorm.tg)
and lowers to one row kernel. Tessera runs on device Buffers (no host copies) and waits for
the stream; eager torch runs the aten op on a CPU tensor. Rounds alternate between the two so
that the load of other jobs hits both alike; the table gives medians and best-of-N in us (wall
time, or with --cpu-time the process's CPU time over all threads).

  PYTHONPATH=python python3 bench/row_kernels.py [--device cpu:0] [--reps 200] [--rounds 7]
      [--torch-threads N] [--cpu-time] [--only softmax,layer_norm] [--kernel-only]
"""
import argparse
import statistics
import time

import numpy as np
import torch

import tessera

SOFTMAX = """graph @softmax(%x: tensor<f32, [{n}, {r}]>) {{
  %mx = amax %x {{axes = [1], keepdim = true}}
  %d = sub %x, %mx
  %e = exp %d
  %den = sum %e {{axes = [1], keepdim = true}}
  %sm = div %e, %den
  return %sm
}}"""

LOG_SOFTMAX = """graph @log_softmax(%x: tensor<f32, [{n}, {r}]>) {{
  %mx = amax %x {{axes = [1], keepdim = true}}
  %d = sub %x, %mx
  %e = exp %d
  %den = sum %e {{axes = [1], keepdim = true}}
  %lden = log %den
  %lsm = sub %d, %lden
  return %lsm
}}"""

LAYER_NORM = """graph @layer_norm(%x: tensor<f32, [{n}, {r}]>, %w: tensor<f32, [{r}]>,
                         %b: tensor<f32, [{r}]>) {{
  %mu = mean %x {{axes = [1], keepdim = true}}
  %var = var %x {{axes = [1], keepdim = true, correction = 0}}
  %eps = constant {{value = 1e-05, dtype = "f32"}}
  %ve = add %var, %eps
  %rstd = rsqrt %ve
  %xc = sub %x, %mu
  %xn = mul %xc, %rstd
  %xw = mul %xn, %w
  %ln = add %xw, %b
  return %ln
}}"""

RMS_NORM = """graph @rms_norm(%x: tensor<f32, [{n}, {r}]>, %w: tensor<f32, [{r}]>) {{
  %sq = mul %x, %x
  %ms = mean %sq {{axes = [1], keepdim = true}}
  %eps = constant {{value = 1e-06, dtype = "f32"}}
  %mse = add %ms, %eps
  %rr = rsqrt %mse
  %xr = mul %x, %rr
  %rms = mul %xr, %w
  return %rms
}}"""

# The block's attention softmax with its causal mask (torch.tril(torch.ones(t, t))) as two
# iotas in the same row kernel: {n} = batch * heads, {r} = tokens.
MASKED_SOFTMAX = """graph @masked_softmax(%x: tensor<f32, [{n}, {r}, {r}]>) {{
  %i = iota {{shape = [{r}, {r}], axis = 0, dtype = "i64"}}
  %j = iota {{shape = [{r}, {r}], axis = 1, dtype = "i64"}}
  %ok = ge %i, %j
  %ninf = constant {{value = -inf, dtype = "f32"}}
  %xm = where %ok, %x, %ninf
  %mx = amax %xm {{axes = [2], keepdim = true}}
  %d = sub %xm, %mx
  %e = exp %d
  %s = sum %e {{axes = [2], keepdim = true}}
  %y = div %e, %s
  return %y
}}"""

# Long reductions: a full sum (one row of 3M: split into chunk kernels and a combine,
# docs/graph_ir.md "Split rows") and var over rows of 4096 (f64 accumulation, "Numerics").
SUM = """graph @sum(%x: tensor<f32, [{n}, {r}]>) {{
  %s = sum %x {{axes = [1], keepdim = true}}
  return %s
}}"""

VAR = """graph @var(%x: tensor<f32, [{n}, {r}]>) {{
  %v = var %x {{axes = [1], keepdim = true, correction = 1}}
  return %v
}}"""

F = torch.nn.functional
CASES = [  # name, graph, rows, row length, eager, parameters besides x
    ("softmax", SOFTMAX, 32 * 64, 64, lambda x: torch.softmax(x, -1), 0),
    ("layer_norm", LAYER_NORM, 64, 512, None, 2),
    ("rms_norm", RMS_NORM, 256, 256, None, 1),
    ("log_softmax", LOG_SOFTMAX, 256, 10, lambda x: torch.log_softmax(x, -1), 0),
    ("masked_softmax", MASKED_SOFTMAX, 32, 64, None, 0),
    ("sum_long", SUM, 1, 3_000_000, lambda x: x.sum(-1, keepdim=True), 0),
    ("var_rows", VAR, 64, 4096, lambda x: x.var(-1, keepdim=True), 0),
]


def timed(fn, reps, clock):
    t0 = clock()
    for _ in range(reps):
        fn()
    return (clock() - t0) / reps * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu:0")
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--only", default="")
    ap.add_argument("--cpu-time", action="store_true",
                    help="process CPU time (all threads) instead of wall time: steadier when "
                         "other jobs load the machine")
    ap.add_argument("--kernel-only", action="store_true",
                    help="Tessera's kernel alone: CompiledGraph.profile (each launch timed by "
                         "itself, no per-call overhead), min / median over --reps runs; steadier "
                         "than wall time when other jobs load the machine")
    ap.add_argument("--torch-threads", type=int, default=0,
                    help="eager torch's intra-op threads (0: its default)")
    a = ap.parse_args()
    torch.set_grad_enabled(False)
    if a.torch_threads:
        torch.set_num_threads(a.torch_threads)
    dev = tessera.Device(a.device)
    if not a.kernel_only:
        print(f"{'kernel':14} {'shape':>10} {'tessera us':>18} {'eager us':>18} {'eager/tessera':>14}")
    for name, text, n, r, eager, nparams in CASES:
        if a.only and name not in a.only.split(","):
            continue
        g = tessera.compile_graph(text.format(n=n, r=r), a.device)
        g.wait_tier_up()  # the steady state: the full tier's kernel, not the quick tier's
        kinds = [k["kind"] for k in g.kernels]
        want = ["row", "reduce"] if name == "sum_long" else ["row"]  # split: chunks, combine
        assert kinds == want, f"{name}: expected kernels {want}, got {kinds}"
        rng = np.random.default_rng(1)
        shape = (n, r, r) if name == "masked_softmax" else (n, r)
        x = rng.standard_normal(shape).astype(np.float32)
        ps = [rng.standard_normal(r).astype(np.float32) for _ in range(nparams)]
        xt, pt = torch.from_numpy(x), [torch.from_numpy(p) for p in ps]
        if name == "layer_norm":
            eager = lambda t: F.layer_norm(t, (r,), pt[0], pt[1])  # noqa: E731
        elif name == "rms_norm":
            eager = lambda t: F.rms_norm(t, (r,), pt[0], 1e-6)  # noqa: E731
        elif name == "masked_softmax":
            causal = torch.tril(torch.ones(r, r, dtype=torch.bool))
            eager = lambda t: t.masked_fill(~causal, float("-inf")).softmax(-1)  # noqa: E731
        bufs = [tessera.from_dlpack(v, a.device) for v in [x] + ps]
        # Correct first: a fast wrong kernel is no result.
        got = torch.from_dlpack(g.run(bufs)[0])
        torch.testing.assert_close(got, eager(xt), rtol=1e-5, atol=2e-6)

        if a.kernel_only:
            prof = g.profile([x] + ps, runs=a.reps)
            lo, med = (sum(p[k] for p in prof) for k in ("min_ms", "median_ms"))
            print(f"{name:14} {'x'.join(map(str, shape)):>10} kernel min {lo * 1e3:7.1f} "
                  f"median {med * 1e3:7.1f} us")
            continue

        def run_tessera():
            g.run(bufs)
            dev.synchronize()

        ts, es = [], []
        run_tessera(), eager(xt)  # warm
        for _ in range(a.rounds):
            clock = time.process_time if a.cpu_time else time.perf_counter
            ts.append(timed(run_tessera, a.reps, clock))
            es.append(timed(lambda: eager(xt), a.reps, clock))
        tm, em = statistics.median(ts), statistics.median(es)
        print(f"{name:14} {'x'.join(map(str, shape)):>10} {tm:9.1f} (best {min(ts):6.1f}) "
              f"{em:9.1f} (best {min(es):6.1f}) {em / tm:13.2f}x")


if __name__ == "__main__":
    main()
