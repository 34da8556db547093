"""How long Nannon games are in decisions, and so how many of NDMZ's value targets an
n-step bootstrap (`ndmz.td_steps` = n, docs/ndmz.md) changes.

Plays --games games of the optimal player against itself (the solver's greedy move,
true dice, seeded) and writes, for n = 1..10, the fraction of decisions that have an
n-th decision after them in their game (their target bootstraps; the others keep the
final outcome): sum over games of max(L - n, 0) / sum of L, L a game's decisions.

    python benchmarks/nannon_game_length.py --games 1000 --out nannon_636_game_length
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, git_commit, results_name, utcnow  # noqa: E402
from polyzero.errors import UsageError  # noqa: E402
from polyzero.validation import count_arg  # noqa: E402

HORIZONS = tuple(range(1, 11))


def bootstrapped_fraction(lengths: np.ndarray, n: int) -> float:
    """The fraction of the decisions in games of `lengths` decisions with an n-th decision after them."""
    lengths = np.asarray(lengths)
    return float(np.maximum(lengths - n, 0).sum() / lengths.sum())


def optimal_game_lengths(game, games: int, seed: int) -> np.ndarray:
    from polyzero.games.nannon_solver import shared_solution

    sol, rng, lengths = shared_solution(game), np.random.default_rng(seed), []
    for _ in range(games):
        state, n = game.new_initial_state(), 0
        while not state.is_terminal():
            if state.is_chance_node():
                outcomes, probs = zip(*state.chance_outcomes())
                state.apply_action(int(rng.choice(outcomes, p=np.asarray(probs) / sum(probs))))
            else:
                state.apply_action(sol.action(state))
                n += 1
        lengths.append(n)
    return np.asarray(lengths)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--game", default="nannon")
    p.add_argument("--games", type=count_arg, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=results_name, default="nannon_636_game_length")
    args = p.parse_args(argv)
    try:
        from polyzero.games import load_game

        game = load_game(args.game)
    except (UsageError, ValueError) as exc:
        p.exit(2, f"{p.prog}: error: {exc}\n")
    lengths = optimal_game_lengths(game, args.games, args.seed)
    result = {
        "game": args.game,
        "games": args.games,
        "seed": args.seed,
        "command": "python benchmarks/nannon_game_length.py " + " ".join(sys.argv[1:]),
        "git": git_commit(),
        "time": utcnow(),
        "decisions_mean": float(lengths.mean()),
        "decisions_percentiles_10_50_90": [float(x) for x in np.percentile(lengths, [10, 50, 90])],
        "bootstrapped_fraction": {str(n): bootstrapped_fraction(lengths, n) for n in HORIZONS},
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.out}.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        f"# Nannon game length under optimal play ({result['time']})",
        "",
        f"`{result['command']}` at {result['git'][:7]}: {args.games} games of the optimal player against "
        f"itself on {args.game}, seed {args.seed}. Decisions per game: mean {result['decisions_mean']:.2f}, "
        "10th/50th/90th percentiles " + " / ".join(f"{x:.0f}" for x in result["decisions_percentiles_10_50_90"]) + ".",
        "",
        "| n (ndmz.td_steps) | " + " | ".join(map(str, HORIZONS)) + " |",
        "|---|" + "---|" * len(HORIZONS),
        "| decisions whose target bootstraps | "
        + " | ".join(f"{result['bootstrapped_fraction'][str(n)]:.3f}" for n in HORIZONS)
        + " |",
    ]
    (RESULTS / f"{args.out}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
