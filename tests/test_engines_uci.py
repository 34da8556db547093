"""The UCI engine (`polyzero uci`): commands, limits, info lines, errors, and a real
referee (python-chess's engine module) driving the real process."""

from __future__ import annotations

import re
import sys
import threading
import time

import chess
import chess.engine
import pytest

from engine_fixtures import tiny_search_player, untrained_checkpoint
from polyzero.engines.agent import EngineAgent
from polyzero.engines.uci import UciEngine, _go_limits, centipawns
from polyzero.eval import make_player
from polyzero.games import load_game


class Lines:
    """The engine's output, waited on line by line."""

    def __init__(self):
        self.lines, self.cond = [], threading.Condition()

    def __call__(self, text):
        with self.cond:
            self.lines.append(text)
            self.cond.notify_all()

    def wait_for(self, prefix, timeout=60.0):
        end = time.monotonic() + timeout
        with self.cond:
            while not any(ln.startswith(prefix) for ln in self.lines):
                assert self.cond.wait(max(0.0, end - time.monotonic())), f"no {prefix!r} in {self.lines}"
            return next(ln for ln in self.lines if ln.startswith(prefix))


def uci(spec="random", player=None):
    game = load_game("chess")
    out = Lines()
    return UciEngine(EngineAgent(player or make_player(spec, game, seed=0)), game, write=out), out


def test_handshake_options_and_silence():
    eng, out = uci()
    eng.handle("uci")
    assert out.lines[0] == "id name polyzero" and out.lines[-1] == "uciok"
    assert any(re.fullmatch(r"option name Simulations type spin default \d+ min 1 max \d+", ln) for ln in out.lines)
    assert "option name Threads type spin default 1 min 1 max 64" in out.lines
    n = len(out.lines)
    for junk in ("xyzzy", "debug on", "register later", "", "   ", "ponderhit"):  # UCI: ignored
        eng.handle(junk)
    eng.handle("isready")
    assert out.lines[n:] == ["readyok"]


def test_bad_input_reports_and_keeps_the_position():
    eng, out = uci("mcts:10")
    eng.handle("position startpos moves e2e4")
    fen = eng.board.fen()
    for line, message in (
        ("position fen not/a/fen w - - 0 1", "bad FEN"),
        ("position fen 8/8/8/8/8/8/8/8 w - - 0 1", "not a legal position"),
        ("position startpos moves e2e4 e7e6 e4e6", "illegal move 'e4e6'"),
        ("position startpos moves zz", "illegal move 'zz'"),
        ("position", "startpos or fen"),
        ("setoption name Simulations value 0", "from 1 to"),
        ("setoption name Threads value many", "from 1 to 64"),
        ("setoption name UCI_ShowWDL value maybe", "true or false"),
        ("setoption name Hash value 16", "no option named 'Hash'"),
        ("setoption Simulations 5", "setoption needs"),
        ("go nodes lots", "go takes"),
    ):
        eng.handle(line)
        assert out.lines[-1].startswith("info string error:") and message in out.lines[-1], (line, out.lines[-1])
        assert eng.board.fen() == fen
    eng.handle("setoption name simulations value 7")  # names are case-insensitive
    assert eng.agent.simulations == 7


def test_positions_from_fen_and_moves():
    eng, out = uci()
    eng.handle("position fen r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1 moves e1g1 e8c8")
    assert eng.board.fen() == "2kr3r/8/8/8/8/8/8/R4RK1 w - - 2 2"
    assert str(eng.state).split()[0] == eng.board.fen().split()[0]  # OpenSpiel agrees
    eng.handle("position startpos moves e2e4 e7e5 g1f3")
    assert eng.state.current_player() == 0  # black (OpenSpiel's player 0) to move
    eng.handle("ucinewgame")
    assert eng.board.fen() == chess.STARTING_FEN


def test_go_nodes_info_and_bestmove_with_a_learned_agent():
    eng, out = uci(player=tiny_search_player("chess", simulations=4))
    eng.handle("setoption name UCI_ShowWDL value true")
    eng.handle("position startpos moves e2e4")
    eng.handle("go nodes 6")
    best = out.wait_for("bestmove").split()[1]
    assert chess.Move.from_uci(best) in eng.board.legal_moves
    info = next(ln for ln in out.lines if ln.startswith("info depth"))
    m = re.fullmatch(r"info depth (\d+) nodes 6 nps \d+ time \d+ score cp (-?\d+) wdl (\d+) 0 (\d+) pv (.+)", info)
    assert m, info
    assert int(m.group(3)) + int(m.group(4)) == 1000
    board = eng.board.copy()
    for move in m.group(5).split():  # the principal variation is legal from the position
        board.push_uci(move)


def test_infinite_waits_for_stop_and_isready_answers_meanwhile():
    eng, out = uci("mcts:10")
    eng.handle("go infinite")
    out.wait_for("info depth")
    eng.handle("isready")
    out.wait_for("readyok")
    assert not any(ln.startswith("bestmove") for ln in out.lines)
    eng.handle("stop")
    assert sum(ln.startswith("bestmove") for ln in out.lines) == 1
    eng.handle("stop")  # a second stop owes nothing
    assert sum(ln.startswith("bestmove") for ln in out.lines) == 1


def test_clock_limits():
    assert _go_limits("wtime 60000 btime 1000 winc 500 binc 0 movestogo 10".split()) == {
        "wtime": 60000,
        "btime": 1000,
        "winc": 500,
        "binc": 0,
        "movestogo": 10,
    }
    assert _go_limits(["movetime", "x"]) is None
    eng, _ = uci()
    assert eng._budget({"nodes": 50}) == (50, None)
    assert eng._budget({"movetime": 1000}) == (None, pytest.approx(0.9))
    sims, seconds = eng._budget({"wtime": 60000, "btime": 1000, "winc": 500, "movestogo": 10})
    assert sims is None and seconds == pytest.approx(6 + 0.4 - 0.1)  # white's clock: white to move
    eng.handle("position startpos moves e2e4")
    assert eng._budget({"wtime": 60000, "btime": 1000}) == (None, 0.0)  # black: 1 s / 20 moves < overhead


def test_mate_and_openspiel_draws_still_answer():
    eng, out = uci("random")
    eng.handle("position startpos moves f2f3 e7e5 g2g4 d8h4")  # fool's mate: white is mated
    eng.handle("go nodes 5")
    assert out.wait_for("bestmove") == "bestmove (none)"


def test_centipawns_are_monotone_and_bounded():
    values = [centipawns(v / 10) for v in range(-10, 11)]
    assert values == sorted(values) and values[10] == 0 and abs(values[0]) <= 12800


@pytest.mark.e2e
def test_python_chess_referee_drives_the_process(tmp_path):
    """A standard referee starts `polyzero uci` and plays moves from a real game."""
    ckpt = untrained_checkpoint(tmp_path / "run", "chess", simulations=2)
    engine = chess.engine.SimpleEngine.popen_uci(
        [sys.executable, "-m", "polyzero", "uci", "--agent", str(ckpt)], timeout=300
    )  # startup on a loaded machine
    try:
        assert engine.id["name"] == "polyzero"
        engine.configure({"Simulations": 2})
        board = chess.Board()
        for _ in range(4):
            result = engine.play(board, chess.engine.Limit(nodes=2), info=chess.engine.INFO_ALL)
            assert result.move in board.legal_moves
            assert result.info.get("nodes") == 2 and "score" in result.info
            board.push(result.move)
        info = engine.analyse(board, chess.engine.Limit(time=0.5))
        assert info["pv"] and info["pv"][0] in board.legal_moves
    finally:
        engine.quit()
