"""`polyzero play`: play against a player in the terminal."""

from __future__ import annotations

from ..errors import UsageError


def register(sub) -> None:
    pl = sub.add_parser("play", help="play against a player in the terminal")
    pl.add_argument("game")
    pl.add_argument("--agent", required=True, help="the opponent: a run directory, checkpoint or reference player")
    pl.add_argument("--human-seat", type=int, choices=[0, 1], default=0)
    pl.add_argument("--seed", type=int, default=0)
    pl.set_defaults(run=run)


def run(args) -> int:
    from ..eval import make_player
    from ..eval.play import play_in_terminal
    from ..games import load_game

    game = load_game(args.game)
    if game.num_players() != 2:
        raise UsageError(f"play needs a two-player game; '{args.game}' has {game.num_players()} players")
    agent = make_player(args.agent, game, seed=args.seed)
    play_in_terminal(game, agent, args.human_seat, seed=args.seed)
    return 0
