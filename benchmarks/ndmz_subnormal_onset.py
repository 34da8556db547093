"""When an NDMZ run's weights turn subnormal, beside its seconds per learning step: a
finished or running `nannon_636.py train --method ndmz` run directory's metrics
(train_time by learning step, in windows) and each kept checkpoint's count of
subnormal weights (nonzero, below float32's smallest normal 1.18e-38) per tensor.

Why: the weights of inputs that are never nonzero (Nannon 6-3-6's chance outcomes 6-15
and no-op in g's one-hot action, two observation features always 0) get no gradient
but the L2 term's and decay to subnormal floats; x86 multiplies them in microcode
(docs/ndmz.md, "Training speed").

  python benchmarks/ndmz_subnormal_onset.py --run RUN_DIR --window 20 --out ndmz_subnormal_onset

Writes benchmarks/results/OUT.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import results_name, utcnow, write_results  # noqa: E402

TINY = float(np.finfo(np.float32).tiny)


def step_times(run: Path, window: int) -> list[dict]:
    """train_time seconds per learning step over windows of `window` steps (the last
    session's records where a resume repeated steps)."""
    at: dict[int, float] = {}
    for line in (run / "metrics.jsonl").read_text().splitlines():
        rec = json.loads(line) if line.strip() else {}
        if rec.get("kind") == "train" and "train_time" in rec:
            at[int(rec["step"])] = float(rec["train_time"])
    out = []
    for start in range(0, max(at, default=0) - window + 1, window):
        if start in at and start + window in at:
            out.append({"from": start, "to": start + window, "s_per_step": (at[start + window] - at[start]) / window})
    return out


def subnormals(run: Path, every: int) -> list[dict]:
    """Per kept checkpoint (steps that are multiples of `every`): subnormal weights per tensor."""
    from polyzero.train.checkpoint import read_learner

    out = []
    for ckpt in sorted((run / "checkpoints").glob("step_*")):
        step = int(ckpt.name[5:])
        if step % every or not (ckpt / "learner.pt").exists():
            continue
        net = read_learner(ckpt)["net"]  # weights_only=True: no code runs on load
        counts = {}
        for name, tensor in net.items():
            a = tensor.numpy()
            n = int(((a != 0) & (np.abs(a) < TINY)).sum())
            if n:
                counts[name] = n
        out.append({"step": step, "subnormal": counts, "total": sum(counts.values())})
    return out


def product_times(repeats: int = 40) -> dict:
    """Milliseconds of CPU time (one thread) of g's first layer's three products at the
    preset's shapes (batch 512, 128 + 26 inputs, 256 units), with the weights of the 11
    never-used action columns normal and subnormal: x @ W.t() (forward), grad @ W (the
    input's gradient), grad.t() @ x (the weight's gradient)."""
    import time

    import torch

    torch.set_num_threads(1)
    torch.manual_seed(0)
    x, grad = torch.randn(512, 154), torch.randn(512, 256)
    x[:, 142:153] = 0.0  # the one-hot columns of actions that never occur
    w = torch.randn(256, 154) * 0.05
    w_sub = w.clone()
    w_sub[:, 142:153] = 5e-39
    out = {}
    for name, weight in (("normal", w), ("subnormal", w_sub)):
        for op, fn in (
            ("forward", lambda: x.mm(weight.t())),
            ("input_grad", lambda: grad.mm(weight)),
            ("weight_grad", lambda: grad.t().mm(x)),
        ):
            fn()
            t0 = time.process_time()
            for _ in range(repeats):
                fn()
            out[f"{name}/{op}_ms"] = (time.process_time() - t0) / repeats * 1e3
    return out


def markdown(meta: dict, times: list[dict], subs: list[dict], products: dict) -> str:
    lines = [
        "# NDMZ on Nannon 6-3-6: subnormal weights and seconds per learning step",
        "",
        f"- {meta['when']}; command: `{meta['command']}`",
        f"- run: {meta['run_name']} (train_time is wall clock on a shared machine: other jobs' load is in it)",
        "",
        "| learning steps | train_time s per step |",
        "|---|---:|",
        *(f"| {t['from']}-{t['to']} | {t['s_per_step']:.2f} |" for t in times),
        "",
        "| checkpoint step | subnormal weights | by tensor |",
        "|---:|---:|---|",
        *(
            f"| {s['step']} | {s['total']} | {', '.join(f'{k} {v}' for k, v in s['subnormal'].items()) or '-'} |"
            for s in subs
        ),
        "",
        "g's first layer's products, CPU ms per call (one thread; 11 of 154 weight columns normal or subnormal):",
        "",
        "| weights | x @ W.t() | grad @ W | grad.t() @ x |",
        "|---|---:|---:|---:|",
        *(
            f"| {k} | {products[k + '/forward_ms']:.3f} | {products[k + '/input_grad_ms']:.3f} | "
            f"{products[k + '/weight_grad_ms']:.3f} |"
            for k in ("normal", "subnormal")
        ),
        "",
    ]
    return "\n".join(lines)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--run", type=Path, required=True, help="the NDMZ run directory (WORK/ndmz/run)")
    p.add_argument("--window", type=int, default=20, help="learning steps per row of the time table")
    p.add_argument("--every", type=int, default=50, help="checkpoints of steps that are multiples of this")
    p.add_argument("--label", default=None, help="the run's name on the page (default: the directory's)")
    p.add_argument("--out", type=results_name, default="ndmz_subnormal_onset")
    args = p.parse_args(argv)
    times, subs, products = step_times(args.run, args.window), subnormals(args.run, args.every), product_times()
    meta = {
        "when": utcnow(),
        "command": "python benchmarks/ndmz_subnormal_onset.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "run_name": args.label or args.run.parent.parent.name,
    }
    result = {"meta": meta, "step_times": times, "subnormals": subs, "products": products}
    write_results(HERE / "results" / f"{args.out}.json", result, markdown(meta, times, subs, products))


if __name__ == "__main__":
    main()
