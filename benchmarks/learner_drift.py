"""Whether `train.fused_step` trains as the default step does (`learner_speed.py --drift
ARMS`): the evidence the switch needs before it could become the default.

The fused step changes float rounding only (torch's fused Adam kernel, the L2 gradient
inside it as Adam's weight_decay = 2c, the value one dot product: the same update to
rounding, Kingma & Ba's Algorithm 1 on the loss plus c ||theta||^2). Rounding
differences grow in training as any perturbation does, so the question is not whether
the fused run's weights equal the default run's (they do not), but whether they drift
from it further than a rounding-sized perturbation of the default run itself does.
Four learners take the same minibatches, in the same rounds:

* default: the default step;
* fused: `train.fused_step`, from the same weights;
* ulp: the default step from the same weights moved by one unit in the last place
  (every weight, towards +inf): a rounding-sized difference, nothing else;
* seed: the default step from another initialisation (`torch.manual_seed(1)`): the
  spread between runs that nobody would call different training.

At marks along the run: each one's distance from the default run's weights over the
distance the default run has travelled, and the loss (mean over the last `window`
updates) of each. Training is "unchanged" where fused stays within the ulp run's
distance, and its loss within the seed run's difference.
"""

from __future__ import annotations

import dataclasses
import statistics

import numpy as np
import torch

from learner_arms import Arm, setup
from polyzero.train.learner import Learner


def _flat(learner: Learner) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1) for p in learner.net.parameters()])


def drift(arm: Arm, batch: int, steps: int, window: int = 100) -> dict:
    algo, cfg, sampler = setup(arm, batch)
    cpu = torch.device("cpu")
    torch.manual_seed(0)
    runs = {"default": Learner(algo, cfg.train, cpu)}
    runs["fused"] = Learner(algo, dataclasses.replace(cfg.train, fused_step=True), cpu)
    runs["ulp"] = Learner(algo, cfg.train, cpu)
    torch.manual_seed(1)
    runs["seed"] = Learner(algo, cfg.train, cpu)
    start = runs["default"].net.state_dict()
    runs["fused"].net.load_state_dict(start)
    runs["ulp"].net.load_state_dict(
        {
            k: torch.nextafter(v, torch.full_like(v, float("inf"))) if v.is_floating_point() else v
            for k, v in start.items()
        }
    )
    theta0 = _flat(runs["default"])
    rng = np.random.default_rng(0)
    losses: dict[str, list[float]] = {k: [] for k in runs}
    marks = sorted(
        {m for m in (1, 10, 100, 1000, steps) if m <= steps} | set(range(0, steps + 1, max(1, steps // 10))[1:])
    )
    rows = []
    for step in range(1, steps + 1):
        b = sampler.sample(cfg.train.batch_size, rng)
        for name, learner in runs.items():
            losses[name].append(learner.update(b)["loss/total"])
        if step in marks:
            ref = _flat(runs["default"])
            travelled = float(torch.linalg.vector_norm(ref - theta0))
            row = {"step": step, "travelled": travelled}
            for name in ("fused", "ulp", "seed"):
                row[f"{name}_distance"] = float(torch.linalg.vector_norm(_flat(runs[name]) - ref)) / travelled
            for name in runs:
                row[f"{name}_loss"] = statistics.fmean(losses[name][-window:])
            rows.append(row)
            print(
                f"drift {arm.name} B={cfg.train.batch_size} step {step}: distance / travelled fused "
                f"{row['fused_distance']:.2e}, ulp {row['ulp_distance']:.2e}, seed {row['seed_distance']:.2e}; loss "
                + ", ".join(f"{k} {row[f'{k}_loss']:.5f}" for k in runs),
                flush=True,
            )
    return {"arm": arm.name, "batch": cfg.train.batch_size, "steps": steps, "window": window, "rows": rows}


def render_drift(results: list[dict]) -> list[str]:
    lines = []
    for r in results:
        lines += [
            "",
            f"`train.fused_step` against the default step, {r['arm']}, batch {r['batch']}, {r['steps']} updates on "
            "the same minibatches (`--drift`): each run's distance from the default run's weights over the distance "
            "the default run has travelled from the start; ulp: the default step from the start moved by one unit in "
            "the last place; seed: the default step from another initialisation; losses: mean loss/total over the "
            f"last {r['window']} updates:",
            "",
            "| update | fused distance | ulp distance | seed distance | default loss | fused loss | ulp loss "
            "| seed loss | fused - default | seed - default |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
            *(
                f"| {x['step']} | {x['fused_distance']:.2e} | {x['ulp_distance']:.2e} | {x['seed_distance']:.2e} "
                f"| {x['default_loss']:.5f} | {x['fused_loss']:.5f} | {x['ulp_loss']:.5f} | {x['seed_loss']:.5f} "
                f"| {x['fused_loss'] - x['default_loss']:+.2e} | {x['seed_loss'] - x['default_loss']:+.2e} |"
                for x in r["rows"]
            ),
        ]
    return lines
