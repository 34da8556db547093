"""Fingerprints of short in-process training runs, to show that a refactoring of the
runtime changed nothing: the final weights, optimizer state, torch RNG, every NumPy
part of the checkpoint (replay, games in flight, archive, query buffer), Reanalyze's
state, state.json and the metrics (without the keys that measure time), for an
uninterrupted run and for one resumed half way, per scenario (alphazero, gumbel,
muzero with and without Reanalyze, Go-Exploit's two archives with KataGo's playout
cap, NDMZ on Nannon, Student of Games on Kuhn poker).

    PYTHONPATH=OLD_TREE python scripts/run_fingerprints.py before.json
    PYTHONPATH=NEW_TREE python scripts/run_fingerprints.py after.json
    python scripts/run_fingerprints.py --compare before.json after.json   # exit 1 on a difference

    # a run written by OLD_TREE resumed by NEW_TREE, against OLD_TREE's uninterrupted run:
    PYTHONPATH=OLD_TREE python scripts/run_fingerprints.py --write-half DIR
    PYTHONPATH=NEW_TREE python scripts/run_fingerprints.py --resume-half DIR before.json

Each scenario runs in a process of its own (about 10 s each on one core).
Compare fingerprints taken on one machine: the same commit printed other values on an
AVX-512 Intel Xeon than on an AMD EPYC (the CPU's float kernels round differently).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

SMALL = {
    "train.steps": 8,
    "train.checkpoint_every": 4,
    "train.keep_checkpoints": 2,
    "train.positions_per_step": 24,
    "train.minibatches_per_step": 2,
    "train.batch_size": 16,
    "train.replay_size": 512,
    "search.num_simulations": 4,
    "selfplay.concurrent_games": 4,
    "net.kind": "mlp",
    "net.width": 16,
    "net.layers": 1,
    "net.value_hidden": 8,
    "eval.every": 0,
    "eval.final_games": 0,
    "threads": 1,
    "seed": 11,
}
SOG = {
    "train.steps": 8,
    "train.checkpoint_every": 4,
    "train.keep_checkpoints": 2,
    "train.batch_size": 16,
    "train.minibatches_per_step": 2,
    "train.replay_size": 512,
    "eval.every": 4,
    "eval.final_games": 0,
    "net.width": 16,
    "net.layers": 1,
    "sog.simulations": 4,
    "sog.solve_simulations": 4,
    "sog.episodes_per_step": 1,
    "sog.solves_per_step": 2,
    "sog.eval_seeds": 1,
    "sog.eval_simulations": 4,
    "threads": 1,
    "seed": 11,
}
SCENARIOS = {  # name: (game, algo, overrides)
    "alphazero": (
        "tic_tac_toe",
        "alphazero",
        {**SMALL, "eval.every": 4, "eval.games": 4, "eval.opponents": ["random"]},
    ),
    "muzero": ("tic_tac_toe", "muzero", {**SMALL, "muzero.hidden_size": 16}),
    "muzero-reanalyse": (
        "tic_tac_toe",
        "muzero",
        {**SMALL, "muzero.hidden_size": 16, "muzero.reanalyse_fraction": 0.5},
    ),
    "gumbel": ("tic_tac_toe", "alphazero", {**SMALL, "search.kind": "gumbel"}),
    "go-exploit": (
        "tic_tac_toe",
        "alphazero",
        {**SMALL, "start.archive": "search", "start.initial_probability": 0.2, "start.archive_size": 500},
    ),
    "go-exploit-visited-katago": (
        "tic_tac_toe",
        "alphazero",
        {
            **SMALL,
            "start.archive": "visited",
            "start.archive_size": 500,
            "katago.playout_cap_probability": 0.5,
            "start.track_unique_states": True,
        },
    ),
    "ndmz": ("nannon", "ndmz", {**SMALL, "ndmz.hidden_size": 16}),
    "sog": ("kuhn_poker", "sog", SOG),
}
VOLATILE = {"time", "train_time", "elapsed", "selfplay/positions_per_s", "selfplay/simulations_per_s"}


def _hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _tensors(obj) -> str:
    import torch

    return json.dumps(obj, sort_keys=True, default=lambda t: t.tolist() if torch.is_tensor(t) else str(t))


def fingerprint(run: Path) -> dict:
    """Hashes of the latest checkpoint's parts and of the metrics, and the last record."""
    import numpy as np
    import torch

    from polyzero.train.checkpoint import latest_checkpoint, read_learner

    point = latest_checkpoint(run)
    learner = read_learner(point)
    out = {
        "checkpoint": point.name,
        "learner_keys": sorted(learner),
        "net": _hash(b"".join(v.cpu().numpy().tobytes() for v in learner["net"].values())),
        "torch_rng": _hash(learner["torch_rng"].numpy().tobytes()),
    }
    if learner.get("optimizer") is not None:
        out["optimizer"] = _hash(_tensors(learner["optimizer"]["state"]).encode())
    for part in sorted(point.iterdir()):
        if part.suffix == ".npz":
            with np.load(part, allow_pickle=False) as z:
                out[part.name] = _hash(b"".join(k.encode() + z[k].tobytes() for k in sorted(z.files)))
        elif part.name not in ("learner.pt", "config.toml", "state.json") and part.suffix == ".pt":
            out[part.name] = _hash(_tensors(torch.load(part, weights_only=True)).encode())
    state = {k: v for k, v in json.loads((point / "state.json").read_text()).items() if k not in VOLATILE}
    out["state"], out["state_keys"] = _hash(json.dumps(state, sort_keys=True).encode()), sorted(state)
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines() if line.strip()]
    clean = [{k: v for k, v in r.items() if k not in VOLATILE and not k.startswith("step_time/")} for r in records]
    out["metrics"], out["last_record"] = _hash(json.dumps(clean, sort_keys=True).encode()), clean[-1]
    return out


def scenario(name: str) -> dict:
    """An uninterrupted run, and one stopped at half its steps then resumed."""
    from polyzero.api import open_run, train

    game, algo, overrides = SCENARIOS[name]
    steps = overrides["train.steps"]
    tmp = Path(tempfile.mkdtemp())
    train(game, algo, overrides=overrides, run_dir=tmp / "full")
    train(game, algo, overrides={**overrides, "train.steps": steps // 2}, run_dir=tmp / "half")
    open_run(tmp / "half").resume(steps=steps)
    return {"full": fingerprint(tmp / "full"), "resumed": fingerprint(tmp / "half")}


def compare(before: dict, after: dict) -> list[str]:
    out = []
    for name, runs in before.items():
        for run, fp in runs.items():
            other = after.get(name, {}).get(run, {})
            out += [f"{name} {run} {k}: {v} != {other.get(k)}" for k, v in fp.items() if other.get(k) != v]
    return out


OPTIONS = {"--one": 1, "--compare": 2, "--write-half": 1, "--resume-half": 2}  # option: its arguments


def usage_error(argv: list[str]) -> str | None:
    """What is wrong with a command line, in one line; None when it runs. An option it does
    not know is refused rather than taken for the output file (a run of `--help` once wrote
    every fingerprint to a file of that name)."""
    if not argv:
        return "give an output file (or --compare, --write-half, --resume-half); --help shows how"
    first = argv[0]
    if first.startswith("-") and first not in OPTIONS:
        return f"unknown option {first}; --help shows how"
    if first in OPTIONS and len(argv) != OPTIONS[first] + 1:
        return f"{first} takes {OPTIONS[first]} argument(s), got {len(argv) - 1}"
    reads = {"--compare": argv[1:3], "--resume-half": argv[1:3]}.get(first, [])
    missing = [f for f in reads if not Path(f).exists()]
    if missing:
        return f"{missing[0]} does not exist"
    names = argv[1:2] if first == "--one" else [] if first in OPTIONS else argv[1:]
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        return f"unknown scenario {unknown[0]}; the scenarios: {', '.join(SCENARIOS)}"
    return None


def main(argv: list[str]) -> int:
    if argv[:1] in (["--help"], ["-h"]):
        print(__doc__)
        return 0
    error = usage_error(argv)
    if error is not None:
        print(f"run_fingerprints.py: {error}", file=sys.stderr)
        return 2
    if argv[0] == "--one":
        print(json.dumps(scenario(argv[1])))
        return 0
    if argv[0] == "--compare":
        before, after = (json.loads(Path(p).read_text()) for p in argv[1:3])
        found = compare(before, after)
        print("\n".join(found) if found else f"identical: {len(before)} scenarios, uninterrupted and resumed")
        return 1 if found else 0
    if argv[0] in ("--write-half", "--resume-half"):
        return _across_trees(argv)
    out, names = Path(argv[0]), argv[1:] or list(SCENARIOS)
    results = {}
    for name in names:
        proc = subprocess.run([sys.executable, __file__, "--one", name], capture_output=True, text=True, check=True)
        results[name] = json.loads(proc.stdout.strip().splitlines()[-1])
        print(name, results[name]["full"]["net"], flush=True)
    out.write_text(json.dumps(results, indent=1))
    return 0


def _across_trees(argv: list[str]) -> int:
    """Half runs written by one tree; resumed by another and compared with the first
    tree's uninterrupted runs (`before.json`)."""
    from polyzero.api import open_run, train

    root = Path(argv[1])
    if argv[0] == "--write-half":
        for name, (game, algo, overrides) in SCENARIOS.items():
            half = {**overrides, "train.steps": overrides["train.steps"] // 2}
            train(game, algo, overrides=half, run_dir=root / name)
        return 0
    before, found = json.loads(Path(argv[2]).read_text()), []
    for name, (_, _, overrides) in SCENARIOS.items():
        open_run(root / name).resume(steps=overrides["train.steps"])
        found += compare({name: {"full": before[name]["full"]}}, {name: {"full": fingerprint(root / name)}})
    print(
        "\n".join(found)
        if found
        else "identical: every run written by the first tree, resumed by the second, "
        "ends as the first tree's uninterrupted run"
    )
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
