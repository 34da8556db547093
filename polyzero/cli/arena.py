"""`polyzero arena`: play two players against each other."""

from __future__ import annotations

import argparse

from ..errors import UsageError
from ..validation import check_output_dir, count_arg, path_arg, seed_arg


def register(sub) -> None:
    a = sub.add_parser(
        "arena",
        help="play two players against each other",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="""examples:
  polyzero arena runs/c4 mcts-solver:1000 --games 100
  polyzero arena runs/c4@400 runs/c4-old@400 --games 200     # PATH@SIMS: the run's agent at SIMS simulations
  polyzero arena random mcts:100 --game tic_tac_toe --games 50
  polyzero arena runs/go9 gnugo:1 --games 200 --record games/   # external engines; SGF records
""",
        description="Play N games between two players, seats alternated, and print the "
        "score (W + D/2)/N of PLAYER_A with its Wilson 95% interval. A player is "
        "random, mcts:SIMS, mcts-solver:SIMS, a run directory / checkpoint "
        "(optionally PATH@SIMS to set its search simulations), or an external engine: "
        "gnugo:LEVEL, pachi:PLAYOUTS, stockfish:SKILL[:NODES], gtp:'CMD', uci:'CMD'.",
    )
    a.add_argument(
        "player_a",
        help="a player: random, mcts:SIMS, mcts-solver:SIMS, a run directory, PATH@SIMS, "
        "gnugo:LEVEL, stockfish:SKILL[:NODES], ...",
    )
    a.add_argument("player_b", help="the other player, the same kinds")
    a.add_argument("--game", help="the game (default: the game a run-directory player was trained on)")
    a.add_argument("--games", type=count_arg, default=100, help="number of games (default: 100)")
    a.add_argument("--seed", type=seed_arg, default=0, help="seed of the match and the players (default: 0)")
    a.add_argument("--no-progress", action="store_true", help="no progress bar")
    a.add_argument(
        "--record",
        type=path_arg(check_output_dir, "--record"),
        metavar="DIR",
        help="write every game to DIR (SGF for Go, PGN for chess, JSON lines otherwise)",
    )
    a.set_defaults(run=run)


def run(args) -> int:
    from ..eval import make_player, play_match
    from ..games import load_game
    from ..games.capabilities import check_match_game
    from ..train.agents import checkpoint_game

    if args.games < 1:
        raise UsageError("--games must be at least 1")
    game_spec = args.game or checkpoint_game(args.player_a) or checkpoint_game(args.player_b)
    if game_spec is None:
        raise UsageError("arena needs --game GAME when neither player is a run directory")
    game = load_game(game_spec)
    check_match_game(game, "arena")
    a = make_player(args.player_a, game, seed=args.seed)
    b = make_player(args.player_b, game, seed=args.seed + 1)
    record = None
    if args.record is not None:
        from ..eval.records import match_recorder

        record = match_recorder(args.record, game, args.player_a, args.player_b)
    res = play_match(game, a, b, args.games, seed=args.seed, progress=not args.no_progress, on_game_end=record)
    print(f"{args.player_a} vs {args.player_b} on {game_spec}, {args.games} games, seats alternated")
    print(
        f"score {res.score:.3f}  95% CI [{res.ci_low:.3f}, {res.ci_high:.3f}]  "
        f"(W {res.wins} D {res.draws} L {res.losses})"
    )
    return 0
