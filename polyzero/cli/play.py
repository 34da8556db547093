"""`polyzero play`: play against a player in the terminal."""

from __future__ import annotations

from ..errors import UsageError


def register(sub) -> None:
    pl = sub.add_parser("play", help="play against a player in the terminal")
    pl.add_argument("game")
    pl.add_argument("--agent", required=True, help="the opponent: a run directory, checkpoint or reference player")
    pl.add_argument("--human-seat", type=int, choices=[0, 1], default=0)
    pl.add_argument("--seed", type=int, default=0)
    pl.add_argument("--record", metavar="DIR", help="write the game to DIR (SGF for Go, PGN for chess, JSON lines otherwise)")
    pl.set_defaults(run=run)


def run(args) -> int:
    from ..eval import make_player
    from ..eval.play import play_in_terminal
    from ..games import load_game

    game = load_game(args.game)
    if game.num_players() != 2:
        raise UsageError(f"play needs a two-player game; '{args.game}' has {game.num_players()} players")
    agent = make_player(args.agent, game, seed=args.seed)
    play_in_terminal(game, agent, args.human_seat, seed=args.seed,
                     on_end=_recorder(args.record, game, agent.name, args.human_seat) if args.record else None)
    return 0


def _recorder(out_dir, game, agent_name: str, human_seat: int):
    from ..eval.records import record_path, write_record

    names = ["human", agent_name] if human_seat == 0 else [agent_name, "human"]

    def on_end(state, returns):
        print(f"record: {write_record(record_path(out_dir, game, 'play'), state, names, returns)}")

    return on_end
