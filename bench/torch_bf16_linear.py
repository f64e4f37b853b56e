"""bf16 nn.Linear on cpu:0: torch.compile(backend="tessera") against eager torch (oneDNN) in the
same run, medians of 5 rounds of 20 calls after 30 warm-up calls (tiered compilation settles),
results checked with torch.testing.assert_close at its bf16 defaults first.

    ./run.sh python bench/torch_bf16_linear.py [--shapes 64x512x512,1024x1024x1024]

Shapes are M x K x N (input rows, in features, out features). Figures: docs/performance.md,
"bf16 Linear through the AMX GEMM"."""
import argparse
import statistics
import time

import torch
import tessera.torch  # noqa: F401  (registers the backend)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="64x512x512,256x1024x1024,1024x1024x1024")
    ap.add_argument("--device", default="cpu:0")
    args = ap.parse_args()
    torch.manual_seed(0)
    print(f"device {args.device}; median ms per call; ratio = eager / tessera (> 1: faster)")
    for spec in args.shapes.split(","):
        M, K, N = (int(v) for v in spec.split("x"))
        m = torch.nn.Linear(K, N).to(torch.bfloat16)
        x = torch.randn(M, K, dtype=torch.bfloat16)
        c = torch.compile(m, backend="tessera", options={"device": args.device})
        with torch.no_grad():
            torch.testing.assert_close(c(x), m(x))
            for _ in range(30):
                c(x), m(x)

            def timed(f):
                runs = []
                for _ in range(5):
                    t0 = time.perf_counter()
                    for _ in range(20):
                        f(x)
                    runs.append((time.perf_counter() - t0) / 20 * 1e3)
                return statistics.median(runs)
            te, tt = timed(m), timed(c)
        print(f"{M}x{K}x{N}: eager {te:.3f} ms, tessera {tt:.3f} ms, ratio {te / tt:.2f}")


if __name__ == "__main__":
    main()
