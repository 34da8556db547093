"""Student of Games' learning step computes what it computed before it was made faster
(docs/journal/2026-11-30-sog-step-speed.md): a few learning steps of tiny Kuhn and Leduc
runs end with these network weights, replay and query-buffer contents and metrics, bit
for bit. The digests were written by the code before the speed work (commit 937fb45,
torch 2 on x86-64 CPU, one thread); a change to what a step computes (a search's
arithmetic, a query's targets, an example's rows, the order of a floating-point sum)
changes them. Regenerate only for an intended change, and say so:
``PYTHONPATH=. python tests/test_sog_step_exact.py``."""

from __future__ import annotations

import hashlib
import json
import sys

import numpy as np
import pytest
import torch

from polyzero.config import build_config

# Settings small enough for seconds of CPU, large enough that every part of a step
# runs: self-play with queries collected, solves with recursive queries, updates.
# The CPU always: the digests are the CPU's numbers (`device=auto` takes a GPU where
# there is one, whose arithmetic differs).
SETTINGS = [
    "device=cpu",
    "threads=1",
    "train.batch_size=16",
    "train.minibatches_per_step=2",
    "train.replay_size=256",
    "train.checkpoint_every=100000",
    "eval.every=0",
    "eval.final_games=0",
    "net.width=16",
    "net.layers=1",
    "sog.simulations=6",
    "sog.solve_simulations=6",
    "sog.episodes_per_step=1",
    "sog.solves_per_step=6",
    "sog.q_search=0.5",
    "sog.q_recursive=0.3",
]
STEPS = 3
# Metrics that depend on what was computed, not on how long it took.
METRIC_PREFIXES = ("loss/", "sog/")
METRIC_KEYS = {"selfplay/games", "selfplay/positions", "train/updates", "train/learning_rate"}

EXPECTED = {
    "kuhn_poker": {
        "weights": "738060e4c30a8bd8",
        "replay": "e89f0b04eab926dd",
        "queries": "e9dd591b0d064c15",
        "counts": {
            "games": 3,
            "positions": 6,
            "solves": 18,
            "queries_seen": 69,
            "queries_kept": 33,
            "td_targets": 1,
            "updates": 4,
        },
        "metrics": "fd957388a2f68247",
    },
    "leduc_poker": {
        "weights": "577bbb43afbdab01",
        "replay": "8da4d648e5655565",
        "queries": "dc5e0af7eb1076c5",
        "counts": {
            "games": 3,
            "positions": 15,
            "solves": 18,
            "queries_seen": 1366,
            "queries_kept": 518,
            "td_targets": 2,
            "updates": 4,
        },
        "metrics": "b05b699c90d8a572",
    },
}


def _digest(parts) -> str:
    h = hashlib.sha256()
    for name, array in parts:
        a = np.ascontiguousarray(array)
        h.update(f"{name}:{a.dtype}:{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


def fingerprint(game: str, run_dir) -> dict:
    from polyzero.sog.trainer import SoGTrainer

    torch.set_num_threads(1)
    cfg = build_config(game, "sog", None, [f"train.steps={STEPS}", *SETTINGS])
    trainer = SoGTrainer.create(cfg, run_dir, progress=False)
    trainer.run()
    weights = trainer.learner.weights()
    metrics = []
    for line in (run_dir / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        metrics.append({k: v for k, v in sorted(row.items()) if k.startswith(METRIC_PREFIXES) or k in METRIC_KEYS})
    return {
        "weights": _digest((k, weights[k].numpy()) for k in sorted(weights)),
        "replay": _digest(sorted(trainer.replay.to_arrays().items())),
        "queries": _digest(sorted(trainer.queries.to_arrays().items())),
        "counts": dict(trainer.counts),
        "metrics": hashlib.sha256(json.dumps(metrics).encode()).hexdigest()[:16],
    }


@pytest.mark.parametrize("game", sorted(EXPECTED))
def test_learning_steps_compute_what_they_did(game, tmp_path):
    assert fingerprint(game, tmp_path / "run") == EXPECTED[game]


if __name__ == "__main__":
    import tempfile
    from pathlib import Path

    for name in sys.argv[1:] or sorted(EXPECTED):
        with tempfile.TemporaryDirectory() as tmp:
            print(f"    {name!r}: {fingerprint(name, Path(tmp) / 'run')!r},")
