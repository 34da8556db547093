"""`polyzero solve`: solve a Nannon game exactly and cache the solution."""

from __future__ import annotations

import argparse

from ..errors import UsageError


def register(sub) -> None:
    sv = sub.add_parser(
        "solve",
        help="solve a game exactly (Nannon) and cache the solution",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="""examples:
  polyzero solve nannon
  polyzero solve 'nannon(points=8,checkers=3)' --force
""",
        description="Solve a Nannon game exactly by value iteration, cache the optimal "
        "values and policy (under $POLYZERO_CACHE or ~/.cache/polyzero), and "
        "print the opening values. The 'optimal' player reads this cache.",
    )
    sv.add_argument("game", help="a nannon game, e.g. nannon or 'nannon(points=12,checkers=5)'")
    sv.add_argument("--force", action="store_true", help="recompute even when a cached solution exists")
    sv.add_argument("--no-progress", action="store_true", help="no progress bar")
    sv.set_defaults(run=run)


def run(args) -> int:
    from ..games import game_spec_string, load_game

    game = load_game(args.game)
    if game.get_type().short_name != "nannon":
        raise UsageError(f"solve knows only nannon games (exact value iteration); got '{args.game}'")
    from ..games.nannon_solver import NannonParams, solve

    params = NannonParams.from_game(game)
    sol = solve(params, progress=not args.no_progress, force=args.force)
    info, values = sol.info, sol.opening_values()
    how = "loaded from the cache" if info.get("cached") else f"solved in {info['seconds']:.1f} s"
    print(
        f"{game_spec_string(game)}: {sol.positions.size:,} positions, {how} "
        f"({info['sweeps']} sweeps, Bellman residual {info['residual']:.1e})"
    )

    def show(points: float) -> str:  # a win probability only where points are +-1
        return f"{points:+.6f}" + ("" if params.double else f" (wins {(1 + points) / 2:.4%})")

    print(f"first mover, before its roll:     {show(values['first_mover'])}")
    print(f"winner of the difference roll-off: {show(values['rolloff_winner'])}")
    print(f"player 0 under opening={params.opening}: {show(values['player0'])}")
    print(f"cached at {info['path']}")
    return 0
