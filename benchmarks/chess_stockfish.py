"""Benchmark `chess_stockfish` (issue 57): polyzero's UCI engine (`polyzero uci`) against
Stockfish at Skill Level 0 with a node limit, refereed by python-chess's engine module.

Both engines are separate UCI processes; the referee (`chess.engine.SimpleEngine`) keeps
the board, asks the side to move for its move with a node limit, checks that every move
is legal (an illegal move loses the game), and ends a game as python-chess's rules do
with draws claimed (checkmate, stalemate, insufficient material, threefold repetition,
the 50-move rule: the rules OpenSpiel's chess applies by itself). Both engines are
deterministic at a node limit, so each pair of games starts from one of ten two-ply
openings, polyzero White in the first game of the pair and Black in the second. Every
game goes into one PGN file, which is read back and replayed to check it.
Strength is reported (score with its Wilson 95% interval, the Elo difference that score
implies); there is no target.

    python benchmarks/chess_stockfish.py --games 20                   # an untrained network
    python benchmarks/chess_stockfish.py --agent runs/chess --games 100 --nodes 200

`--agent untrained` (the default) writes an untrained AlphaZero network for chess
(polyzero's default network) to benchmarks/work/ and plays it: the point is the protocol,
the referee and the record, not strength. Writes benchmarks/results/chess_stockfish.{json,md,pgn}
(or NAME.* with --name).
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Both engines are deterministic at a node limit, so every pair of games starts from its own
# two-ply opening, played once with each colour (as match referees do with an opening book).
OPENINGS = (
    "e2e4 e7e5",
    "e2e4 c7c5",
    "d2d4 d7d5",
    "d2d4 g8f6",
    "c2c4 e7e5",
    "g1f3 d7d5",
    "e2e4 e7e6",
    "e2e4 c7c6",
    "d2d4 f7f5",
    "c2c4 c7c5",
)
RESULTS = ROOT / "benchmarks" / "results"
WORK = ROOT / "benchmarks" / "work"


def untrained_agent(seed: int) -> str:
    """A checkpoint of an untrained AlphaZero network for chess (the default network)."""
    import torch

    from polyzero.algos import make_algorithm
    from polyzero.config import build_config, to_toml
    from polyzero.games import load_game

    ckpt = WORK / f"chess_untrained_s{seed}" / "checkpoints" / "step_000000"
    if not (ckpt / "learner.pt").is_file():
        torch.manual_seed(seed)
        cfg = build_config("chess", "alphazero", overrides=[f"seed={seed}"])
        net = make_algorithm(cfg, load_game("chess")).build_network()
        ckpt.mkdir(parents=True, exist_ok=True)
        (ckpt / "config.toml").write_text(to_toml(cfg.to_dict()))
        torch.save({"net": net.state_dict()}, ckpt / "learner.pt")
    return str(ckpt)


def play_game(ours, stockfish, ours_white: bool, nodes: int, sf_nodes: int, index: int, names, opening: str):
    """One refereed game: (PGN game, polyzero's result 1 / 0.5 / 0, per-side seconds, plies,
    the side that moved illegally or None); an illegal move loses the game."""
    import chess
    import chess.engine
    import chess.pgn

    board = chess.Board()
    for move in opening.split():
        board.push_uci(move)
    seconds = {"polyzero": 0.0, "stockfish": 0.0}
    illegal = None
    while not board.is_game_over(claim_draw=True):
        ours_to_move = (board.turn == chess.WHITE) == ours_white
        engine, limit, side = (ours, nodes, "polyzero") if ours_to_move else (stockfish, sf_nodes, "stockfish")
        t0 = time.perf_counter()
        result = engine.play(board, chess.engine.Limit(nodes=limit))
        seconds[side] += time.perf_counter() - t0
        if result.move is None or result.move not in board.legal_moves:
            illegal = side
            print(f"game {index + 1}: {side} played an illegal move {result.move} in {board.fen()}", flush=True)
            break
        board.push(result.move)
    record = chess.pgn.Game.from_board(board)
    white, black = (names[0], names[1]) if ours_white else (names[1], names[0])
    record.headers.update(Event="polyzero chess_stockfish", Round=str(index + 1), White=white, Black=black)
    if illegal is not None:
        score = 0.0 if illegal == "polyzero" else 1.0
        winner_white = (score == 1.0) == ours_white
        record.headers.update(Result="1-0" if winner_white else "0-1", Termination="rules infraction")
        return record, score, seconds, len(board.move_stack), illegal
    outcome = board.outcome(claim_draw=True)
    record.headers.update(Result=outcome.result(), Termination=outcome.termination.name.lower())
    score = 0.5 if outcome.winner is None else float(outcome.winner == (chess.WHITE if ours_white else chess.BLACK))
    return record, score, seconds, len(board.move_stack), None


def check_pgn(text: str) -> int:
    """Games in the PGN text that read back without errors and replay legally."""
    import chess.pgn

    stream, good = io.StringIO(text), 0
    while (game := chess.pgn.read_game(stream)) is not None:
        board = game.board()
        legal = not game.errors
        for move in game.mainline_moves():
            legal = legal and move in board.legal_moves
            board.push(move)
        good += legal and board.result(claim_draw=True) == game.headers["Result"]
    return good


def elo_difference(score: float) -> float | None:
    """The logistic Elo difference a score implies; None at 0 or 1 (unbounded)."""
    if not 0 < score < 1:
        return None
    return -400 * math.log10(1 / score - 1)


def _elo_text(s: dict) -> str:
    lo, hi = s["elo_ci95"]
    bounds = f"[{'-inf' if lo is None else f'{lo:+.0f}'}, {'+inf' if hi is None else f'{hi:+.0f}'}]"
    return ("unbounded" if s["elo_difference"] is None else f"{s['elo_difference']:+.0f}") + " " + bounds


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--agent", default="untrained", help="a polyzero player spec (default: an untrained network)")
    p.add_argument("--games", type=int, default=20)
    p.add_argument("--nodes", type=int, default=32, help="polyzero's simulations a move (UCI go nodes)")
    p.add_argument("--skill", type=int, default=0, help="Stockfish's Skill Level (0-20)")
    p.add_argument("--sf-nodes", type=int, default=1000, help="Stockfish's nodes a move")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--name", default="chess_stockfish")
    args = p.parse_args(argv)

    import chess.engine

    sys.path.insert(0, str(ROOT))
    from polyzero.engines.process import find_binary

    sf_path = find_binary("stockfish")
    if sf_path is None:
        raise SystemExit("stockfish is not installed: apt-get install stockfish")
    agent = untrained_agent(args.seed) if args.agent == "untrained" else args.agent
    label = "untrained AlphaZero network" if args.agent == "untrained" else args.agent
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    ours = chess.engine.SimpleEngine.popen_uci(
        [sys.executable, "-m", "polyzero", "uci", "--agent", agent, "--threads", "1", "--seed", str(args.seed)],
        env=env,
        timeout=300,
    )  # startup: torch and numba imports
    stockfish = chess.engine.SimpleEngine.popen_uci(sf_path)
    stockfish.configure({"Skill Level": args.skill, "Threads": 1})
    names = (
        f"polyzero ({label}, {args.nodes} nodes)",
        f"{stockfish.id.get('name', 'Stockfish')} skill {args.skill}, {args.sf_nodes} nodes",
    )
    t0 = time.time()
    try:
        played = play_games(ours, stockfish, args, names)
    finally:
        ours.quit()
        stockfish.quit()
    text = "\n\n".join(played["pgn"]) + "\n"
    summary = summarize(args, argv, names, played, text, (time.time() - t0) / 60)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{args.name}.pgn").write_text(text)
    (RESULTS / f"{args.name}.json").write_text(json.dumps(summary, indent=1) + "\n")
    (RESULTS / f"{args.name}.md").write_text(markdown(summary))
    print(markdown(summary))


def play_games(ours, stockfish, args, names: tuple[str, str]) -> dict:
    """--games games, polyzero White in the first of each pair, each pair from one opening:
    their PGN records, polyzero's scores, their plies, the side of each illegal move and
    each engine's seconds in all."""
    pgn, scores, lengths, illegal = [], [], [], []
    seconds = {"polyzero": 0.0, "stockfish": 0.0}
    for i in range(args.games):
        opening = OPENINGS[(i // 2) % len(OPENINGS)]
        record, score, secs, moves, bad = play_game(
            ours, stockfish, i % 2 == 0, args.nodes, args.sf_nodes, i, names, opening
        )
        illegal += [bad] if bad else []
        pgn.append(str(record))
        scores.append(score)
        lengths.append(moves)
        for k in seconds:
            seconds[k] += secs[k]
        print(
            f"game {i + 1}/{args.games}: {opening}: {record.headers['Result']} "
            f"({record.headers['Termination']}, {moves} plies), polyzero {'white' if i % 2 == 0 else 'black'}",
            flush=True,
        )
    return {"pgn": pgn, "scores": scores, "lengths": lengths, "illegal": illegal, "seconds": seconds}


def summarize(args, argv, names: tuple[str, str], played: dict, text: str, wall_minutes: float) -> dict:
    """The results file's record of the games `play_games` played (`text`: their PGN)."""
    import chess

    from polyzero.eval.stats import wilson_interval

    scores, lengths, illegal = played["scores"], played["lengths"], played["illegal"]
    n = len(scores)
    wins, draws = scores.count(1.0), scores.count(0.5)
    score = sum(scores) / n
    lo, hi = wilson_interval(score, n)
    plies = sum(lengths)
    return {
        "benchmark": "chess_stockfish",
        "command": "python benchmarks/chess_stockfish.py " + " ".join(argv or sys.argv[1:]),
        "machine": f"{platform.node()} ({platform.processor() or platform.machine()}, {os.cpu_count()} CPUs), "
        f"load average {os.getloadavg()[0]:.1f} at the end",
        "referee": f"python-chess {chess.__version__} chess.engine",
        "polyzero": names[0],
        "stockfish": names[1],
        "games": n,
        "wins": wins,
        "draws": draws,
        "losses": n - wins - draws,
        "score": score,
        "ci95": [lo, hi],
        "elo_difference": elo_difference(score),
        "elo_ci95": [elo_difference(lo), elo_difference(hi)],
        "illegal_moves": {side: illegal.count(side) for side in ("polyzero", "stockfish")},
        "pgn_games_valid": check_pgn(text),
        "mean_plies": plies / n,
        "seconds_per_move": {k: v / max(1, plies / 2) for k, v in played["seconds"].items()},
        "wall_minutes": wall_minutes,
        "openings": list(OPENINGS),
        "results": [
            {
                "game": i + 1,
                "opening": OPENINGS[(i // 2) % len(OPENINGS)],
                "polyzero_white": i % 2 == 0,
                "score": s,
                "plies": m,
            }
            for i, (s, m) in enumerate(zip(scores, lengths))
        ],
    }


def markdown(s: dict) -> str:
    return "\n".join(
        [
            "# chess_stockfish",
            "",
            f"Command: `{s['command']}`  ",
            f"Machine: {s['machine']}  ",
            f"Referee: {s['referee']}; each pair of games from one two-ply opening, polyzero White in the "
            f"first of the pair.",
            "",
            "| polyzero | opponent | games | W / D / L | score [95% CI] | Elo difference [95% CI] | "
            "illegal moves (polyzero / Stockfish) | valid PGN games | mean plies |",
            "|---|---|---|---|---|---|---|---|---|",
            f"| {s['polyzero']} | {s['stockfish']} | {s['games']} | {s['wins']} / {s['draws']} / {s['losses']} | "
            f"{s['score']:.3f} [{s['ci95'][0]:.3f}, {s['ci95'][1]:.3f}] | {_elo_text(s)} | "
            f"{s['illegal_moves']['polyzero']} / {s['illegal_moves']['stockfish']} | "
            f"{s['pgn_games_valid']} / {s['games']} | {s['mean_plies']:.0f} |",
            "",
            f"Seconds a move: polyzero {s['seconds_per_move']['polyzero']:.3f}, "
            f"Stockfish {s['seconds_per_move']['stockfish']:.3f}; wall clock {s['wall_minutes']:.1f} min.",
            "",
        ]
    )


if __name__ == "__main__":
    main()
