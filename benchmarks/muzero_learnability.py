"""Can MuZero's model learn Connect Four's one-move win test when it is taught directly?

A supervised check beside `selfplay_diversity.py`: the preset's network (h, g and a
reward head, `muzero.terminal_reward`) is trained on (position, column) pairs from
random play, the target 1 when the column wins at once and 0 otherwise, with the
squared error of the reward head after one dynamics step and nothing else. If it
learns here but not in self-play training, the model can represent the test and the
self-play signal is what is missing: there one reward target in about twenty is a
win (one per game), each at 1/K of the loss.

  python benchmarks/muzero_learnability.py --positives 0.4 --steps 600
  python benchmarks/muzero_learnability.py --positives 0.05 --steps 600   # self-play's share
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from polyzero.algos import make_algorithm  # noqa: E402
from polyzero.config import build_config  # noqa: E402
from polyzero.games import load_game  # noqa: E402
from selfplay_diversity import immediate_wins  # noqa: E402


def examples(algo, game, n: int, positives: float, rng: np.random.Generator):
    """n (observation, column, wins?) triples from random play, round(positives * n) of
    them winning columns, the rest columns that do not win (from any position)."""
    want = {True: int(round(positives * n))}
    want[False] = n - want[True]
    found = {True: [], False: []}
    while any(len(found[k]) < want[k] for k in found):
        state = game.new_initial_state()
        while not state.is_terminal():
            wins, legal = immediate_wins(state), state.legal_actions()
            a = int(rng.choice(wins)) if wins and rng.random() < 0.5 else int(rng.choice(legal))
            if len(found[a in wins]) < want[a in wins]:
                found[a in wins].append((algo.encode([state])[0], a))
            state.apply_action(int(rng.choice(legal)))
    pairs = [(o, a, 1.0) for o, a in found[True]] + [(o, a, 0.0) for o, a in found[False]]
    order = rng.permutation(len(pairs))
    return (
        torch.tensor(np.array([pairs[i][0] for i in order])),
        torch.tensor([pairs[i][1] for i in order]),
        torch.tensor([pairs[i][2] for i in order]),
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--positives", type=float, default=0.4, help="share of winning (position, column) pairs in the training set"
    )
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--set", action="append", default=[], help="config overrides, as for polyzero train")
    ap.add_argument("--out", type=Path, default=None, help="append the result to this JSON file")
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    cfg = build_config("connect_four", "muzero", overrides=["muzero.terminal_reward=true", *args.set])
    game = load_game("connect_four")
    algo = make_algorithm(cfg, game)
    net = algo.build_network()
    opt = torch.optim.Adam(net.parameters(), lr=cfg.train.learning_rate)
    test = examples(algo, game, 2000, 0.4, rng)  # the same test set (40% wins) for every --positives
    train = examples(algo, game, 40 * args.batch, args.positives, rng)
    rows, start = [], time.time()
    for step in range(1, args.steps + 1):
        net.train()
        idx = torch.randint(0, len(train[0]), (args.batch,))
        _, reward = net.dynamics(net.represent(train[0][idx]), train[1][idx])
        loss = ((reward - train[2][idx]) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 100 == 0 or step == args.steps:
            net.eval()
            with torch.no_grad():
                _, reward = net.dynamics(net.represent(test[0]), test[1])
            win = test[2] > 0
            rows.append(
                {
                    "step": step,
                    "loss": loss.item(),
                    "accuracy": ((reward > 0.5) == win).float().mean().item(),
                    "r_win": reward[win].mean().item(),
                    "r_other": reward[~win].mean().item(),
                    "seconds": round(time.time() - start, 1),
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    result = {"command": " ".join(["python", *sys.argv]), "train_positives": train[2].mean().item(), "rows": rows}
    if args.out:
        runs = json.loads(args.out.read_text()) if args.out.exists() else []
        args.out.write_text(json.dumps(runs + [result], indent=1))


if __name__ == "__main__":
    main()
