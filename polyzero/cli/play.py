"""`polyzero play`: play against a player in the terminal."""

from __future__ import annotations

from ..validation import check_output_dir, path_arg, seed_arg

EXAMPLES = """examples:
  polyzero play tic_tac_toe --agent mcts-solver:1000
  polyzero play connect_four --agent runs/c4 --human-seat 1 --analyse
  polyzero play 'go(board_size=9)' --agent runs/go9@400
  polyzero play kuhn_poker --agent cfr:1000     # you see only your own card
"""


def register(sub) -> None:
    import argparse

    pl = sub.add_parser(
        "play",
        help="play against a player in the terminal",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=EXAMPLES,
        description="Play a two-player game against a player in the terminal. The board is "
        "drawn with coordinates; type a move's text, a coordinate (e5, b4) or, "
        "where unambiguous, its id; 'undo' takes back your last move, 'moves' "
        "lists every legal move, Ctrl-D quits. In a game of imperfect "
        "information you see only what your seat observes.",
    )
    pl.add_argument("game", help="the game, e.g. connect_four or 'go(board_size=9)'")
    pl.add_argument(
        "--agent",
        required=True,
        help="the opponent: a run directory or checkpoint (PATH@SIMS sets its search "
        "simulations), or a reference player such as mcts-solver:1000",
    )
    pl.add_argument(
        "--human-seat",
        type=int,
        choices=[0, 1],
        default=0,
        help="your seat, 0 (default) or 1; seat 0 moves first in most games (in chess "
        "seat 1, white, does); the game's first line says",
    )
    pl.add_argument(
        "--analyse",
        action="store_true",
        help="before each of its moves, show the agent's value and its most visited moves "
        "(learned agents, perfect-information games)",
    )
    pl.add_argument("--seed", type=seed_arg, default=0, help="seed of the chance outcomes and the agent (default: 0)")
    pl.add_argument(
        "--record",
        type=path_arg(check_output_dir, "--record"),
        metavar="DIR",
        help="write each game to DIR (SGF for Go, PGN for chess, JSON lines otherwise)",
    )
    pl.set_defaults(run=run)


def run(args) -> int:
    from ..eval import make_player
    from ..eval.boards import check_playable
    from ..eval.play import play_in_terminal
    from ..games import load_game

    game = load_game(args.game)
    check_playable(game, args.game)
    agent = make_player(args.agent, game, seed=args.seed)
    play_in_terminal(
        game,
        agent,
        args.human_seat,
        seed=args.seed,
        analyse=args.analyse,
        game_spec=args.game,
        on_end=_recorder(args.record, game, agent.name, args.human_seat) if args.record else None,
    )
    return 0


def _recorder(out_dir, game, agent_name: str, human_seat: int):
    from ..eval.records import record_path, write_record

    names = ["human", agent_name] if human_seat == 0 else [agent_name, "human"]

    def on_end(state, returns):
        print(f"record: {write_record(record_path(out_dir, game, 'play'), state, names, returns)}")

    return on_end
