"""Game records (SGF, PGN, JSON lines), `--record` on arena / ladder / tournament / play,
`polyzero replay`, and the fuzz test of both engines."""

from __future__ import annotations

import io
import random

import chess.pgn
import numpy as np
import pytest

from engine_fixtures import untrained_checkpoint
from polyzero.cli import main
from polyzero.engines.agent import EngineAgent
from polyzero.engines.gtp import GtpEngine
from polyzero.engines.uci import UciEngine, _go_limits
from polyzero.eval import make_player
from polyzero.eval.records import read_record, replay_lines, write_record
from polyzero.games import load_game
from polyzero.nets.inference import set_threads


def random_game(spec, seed=0, max_moves=10_000):
    rng = np.random.default_rng(seed)
    game = load_game(spec)
    state = game.new_initial_state()
    while not state.is_terminal() and len(state.history()) < max_moves:
        if state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes())
            state.apply_action(int(rng.choice(outcomes, p=probs)))
        else:
            state.apply_action(int(rng.choice(state.legal_actions())))
    return game, state


def test_sgf_record_round_trip(tmp_path):
    from sgfmill import sgf

    game, state = random_game("go(board_size=7,komi=7.5)", seed=4)
    path = write_record(tmp_path / "g.sgf", state, ("black-player", "white-player"), state.returns())
    record = sgf.Sgf_game.from_bytes(path.read_bytes())
    root = record.get_root()
    assert root.get("PB") == "black-player" and record.get_komi() == 7.5 and record.get_size() == 7
    winner = record.get_winner()
    assert winner == ("b" if state.returns()[0] > 0 else "w" if state.returns()[0] < 0 else None)
    read_game, actions, _ = read_record(path)
    assert actions == list(state.history()) and str(read_game) == str(game)
    lines = list(replay_lines(path))
    assert lines[-1] == f"returns: {list(state.returns())}"


def test_pgn_record_round_trip(tmp_path):
    game, state = random_game("chess", seed=2)
    path = write_record(tmp_path / "g.pgn", state, ("black", "white"), state.returns(), None)
    record = chess.pgn.read_game(open(path))
    assert not record.errors and record.headers["White"] == "white" and record.headers["Black"] == "black"
    expected = {1.0: "0-1", -1.0: "1-0", 0.0: "1/2-1/2"}[state.returns()[0]]
    assert record.headers["Result"] == expected
    board = record.board()
    for move in record.mainline_moves():
        assert move in board.legal_moves
        board.push(move)
    assert board.is_game_over(claim_draw=True)  # python-chess agrees the game is over
    _, actions, _ = read_record(path)
    assert actions == list(state.history())


@pytest.mark.parametrize("spec", ["tic_tac_toe", "pig", "hex(board_size=3)"])
def test_jsonl_record_round_trip_with_chance(tmp_path, spec):
    game, state = random_game(spec, seed=1, max_moves=300)
    path = write_record(tmp_path / "g.jsonl", state, ("a", "b"), state.returns(), "a note")
    text = path.read_text().splitlines()
    assert len(text) == 1 + len(state.full_history())
    _, actions, head = read_record(path)
    assert actions == list(state.history()) and head["reason"] == "a note"
    assert list(replay_lines(path))[-2] == str(state)


def test_bad_records_are_usage_errors(tmp_path, capsys):
    (tmp_path / "x.sgf").write_text("(;SZ[5];B[zz])")
    (tmp_path / "x.pgn").write_text("1. e4 e5 2. Ke3 *")
    (tmp_path / "x.jsonl").write_text("{}")
    (tmp_path / "x.txt").write_text("")
    for name in ("x.sgf", "x.pgn", "x.jsonl", "x.txt", "missing.sgf"):
        assert main(["replay", str(tmp_path / name)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("polyzero: error: ") and err.count("\n") == 1, err


def test_arena_record_and_replay_commands(tmp_path, capsys):
    out = tmp_path / "games"
    assert (
        main(
            [
                "arena",
                "random",
                "mcts:5",
                "--game",
                "tic_tac_toe",
                "--games",
                "3",
                "--no-progress",
                "--record",
                str(out),
            ]
        )
        == 0
    )
    files = sorted(out.iterdir())
    assert [f.name for f in files] == [f"random-vs-mcts_5-{i:04d}.jsonl" for i in range(3)]
    assert main(["replay", str(files[1]), "--every"]) == 0
    text = capsys.readouterr().out
    assert "players: ['mcts:5', 'random']" in text and "returns:" in text  # game 1: A in seat 1


def test_ladder_tournament_and_play_record(tmp_path, monkeypatch):
    run = tmp_path / "run"
    ckpt = untrained_checkpoint(run, "tic_tac_toe", simulations=2)
    (run / "config.toml").write_text((ckpt / "config.toml").read_text())
    assert (
        main(
            ["ladder", str(run), "--games", "2", "--levels", "1", "--no-progress", "--record", str(tmp_path / "ladder")]
        )
        == 0
    )
    assert len(list((tmp_path / "ladder").iterdir())) == 2
    assert (
        main(
            [
                "tournament",
                str(run),
                "--references",
                "random",
                "--games",
                "2",
                "--no-progress",
                "--out",
                str(tmp_path / "t"),
                "--record",
                str(tmp_path / "tour"),
            ]
        )
        == 0
    )
    assert len(list((tmp_path / "tour").iterdir())) == 2
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(f"{i}\n" for _ in range(9) for i in range(9))))
    assert main(["play", "tic_tac_toe", "--agent", "random", "--record", str(tmp_path / "play")]) == 0
    (path,) = (tmp_path / "play").iterdir()
    assert read_record(path)[2]["players"] == ["human", "random"]


def _random_line(rng: random.Random, commands: list[str], words: list[str]) -> str:
    """A command (mostly) followed by random words, numbers and characters."""
    pieces = [rng.choice(commands)] if rng.random() < 0.8 else []
    for _ in range(rng.randint(0, 5)):
        kind = rng.random()
        if kind < 0.5:
            pieces.append(rng.choice(words))
        elif kind < 0.8:
            pieces.append(str(rng.choice([rng.randint(-5, 30), rng.uniform(-1e3, 1e3), "nan", "inf", "1e999"])))
        else:
            pieces.append("".join(chr(rng.randint(0, 0x2FF)) for _ in range(rng.randint(1, 8))))
    return " ".join(pieces)


def test_fuzz_gtp_engine():
    rng = random.Random(0)
    game = load_game("go(board_size=5,komi=0.5)")
    eng = GtpEngine(EngineAgent(make_player("random", game)), game)
    commands = [c for c in eng.commands if c != "quit"] + ["5 play", "fly"]
    words = ["b", "w", "black", "white", "pass", "A1", "C3", "E5", "Z9", "a", "interval", "#", "/dev/zero", "/"]
    answers = {"=": 0, "?": 0}
    for _ in range(3000):
        line = _random_line(rng, commands, words)
        out = []
        eng.handle(line, out.append)
        answer = "".join(out)
        assert answer == "" or (answer[0] in "=?" and answer.endswith("\n\n")), (line, answer)
        assert not eng.done
        if answer:
            answers[answer[0]] += 1
    assert answers["="] > 500 and answers["?"] > 500
    out = []
    eng.handle("name", out.append)
    assert out == ["= polyzero\n\n"]


def test_fuzz_uci_engine():
    rng = random.Random(1)
    game = load_game("chess")
    lines = []
    eng = UciEngine(EngineAgent(make_player("random", game)), game, write=lines.append)
    commands = [
        "uci",
        "isready",
        "ucinewgame",
        "position",
        "position startpos moves",
        "go",
        "stop",
        "setoption name",
        "debug",
        "xyzzy",
    ]
    words = [
        "startpos",
        "fen",
        "moves",
        "e2e4",
        "e7e5",
        "g1f3",
        "nodes",
        "movetime",
        "wtime",
        "btime",
        "winc",
        "binc",
        "infinite",
        "name",
        "value",
        "Simulations",
        "Threads",
        "UCI_ShowWDL",
        "true",
        "8/8/8/8/8/8/8/8",
    ]
    searches = 0
    for _ in range(3000):
        line = _random_line(rng, commands, words)
        eng.handle(line)
        if line.split()[:1] == ["go"] and _go_limits(line.split()[1:]) is not None:
            searches += 1
        assert not eng.done
    eng.wait()
    assert searches > 100 and sum(ln.startswith("bestmove") for ln in lines) == searches
    lines.clear()
    eng.handle("isready")
    assert lines == ["readyok"]
    set_threads(1)  # the fuzz may have set Threads
