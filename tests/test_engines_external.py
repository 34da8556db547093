"""External engines as players: the scripted peer's every failure forfeits one game and
the match goes on; processes are reaped; GNU Go and Stockfish for real."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import chess.pgn
import pytest

from engine_fixtures import need_binary, scripted
from polyzero.engines.players import GtpPlayer, UciPlayer, external_player
from polyzero.engines.process import EngineProcess
from polyzero.errors import UsageError
from polyzero.eval import make_player, play_match
from polyzero.eval.arena import Forfeit
from polyzero.eval.records import match_recorder
from polyzero.games import load_game

GO5 = "go(board_size=5,komi=0.5)"


def test_scripted_gtp_engine_plays_whole_games():
    game = load_game(GO5)
    engine = make_player(f"gtp:{scripted('gtp')}", game)
    assert isinstance(engine, GtpPlayer)
    res = play_match(game, engine, make_player("random", game), 4, seed=1)
    assert res.wins + res.draws + res.losses == 4
    engine.close()


@pytest.mark.parametrize(
    "protocol,mode,reason",
    [
        ("gtp", "die", "exited with status 3"),
        ("gtp", "hang", "no answer within"),
        ("gtp", "illegal", "illegal move"),
        ("gtp", "garbage", "illegal move '%%%'"),
        ("gtp", "resign", "resigned"),
        ("gtp", "refuse", "refused 'play"),
        ("uci", "die", "exited with status 3"),
        ("uci", "hang", "no answer within"),
        ("uci", "illegal", "illegal move 'e2e5'"),
        ("uci", "garbage", "illegal move '%%%'"),
    ],
)
def test_a_failing_engine_forfeits_and_the_match_goes_on(protocol, mode, reason, capsys, tmp_path):
    game = load_game(GO5 if protocol == "gtp" else "chess")
    cls = GtpPlayer if protocol == "gtp" else UciPlayer
    argv = scripted(protocol, mode, after=2).split()
    engine = cls(argv, f"scripted-{mode}", game, timeout=0.5)
    opponent = make_player("random", game)
    res = play_match(game, engine, opponent, 3, seed=0, on_game_end=match_recorder(tmp_path, game, "e", "r"))
    assert res.losses >= 1 and res.wins + res.draws + res.losses == 3
    log = capsys.readouterr().err
    assert f"scripted-{mode} forfeits:" in log and reason in log, log
    assert len(list(tmp_path.iterdir())) == 3  # every game recorded, forfeits included
    engine.close()
    assert engine.proc is None


def test_forfeit_is_recorded_with_its_reason(tmp_path):
    game = load_game("chess")
    engine = UciPlayer(scripted("uci", "illegal", 1).split(), "bad", game, timeout=5.0)
    play_match(game, engine, make_player("random", game), 1, on_game_end=match_recorder(tmp_path, game, "bad", "r"))
    engine.close()
    (path,) = tmp_path.iterdir()
    record = chess.pgn.read_game(open(path))
    assert record.headers["Result"] == "1-0"  # A sits in seat 0 of game 0: OpenSpiel's black
    assert "illegal move 'e2e5'" in record.comment


def test_processes_are_reaped_after_hang_and_close(tmp_path):
    pidfile = tmp_path / "pid"
    game = load_game(GO5)
    engine = GtpPlayer(scripted("gtp", "hang", 1, pidfile).split(), "hang", game, timeout=0.5)
    (answer,) = engine.act([game.new_initial_state()])
    assert isinstance(answer, Forfeit) and "no answer within 0.5 s" in answer.reason
    pid = int(pidfile.read_text())
    assert engine.proc is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # killed and waited for: not even a zombie


# Python installs its Ctrl-C handler only where SIGINT was not ignored at start, and a
# background job of a non-interactive shell starts with it ignored: the child restores it.
WITH_CTRL_C = "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "


def test_ctrl_c_that_lands_on_the_reader_thread_still_stops_a_wait_for_the_engine():
    """The kernel may hand a process's SIGINT to any thread; Python's handler then only
    flags it, and the main thread must notice while it waits for an answer (without the
    sliced wait it slept through the whole timeout)."""
    engine = EngineProcess([sys.executable, "-c", "import time; time.sleep(60)"])
    # Python's own handler, also when this run inherited SIGINT ignored (a background job).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        interrupt = threading.Timer(0.3, signal.pthread_kill, (engine._pump_thread.ident, signal.SIGINT))
        start = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            interrupt.start()
            engine.read_line(timeout=30)
        assert time.monotonic() - start < 5
    finally:
        signal.signal(signal.SIGINT, previous)
        engine.close()


@pytest.mark.e2e
def test_ctrl_c_leaves_no_engine_behind(tmp_path):
    """SIGINT to `polyzero arena` against an engine: exit 130, the engine is gone."""
    pidfile = tmp_path / "pid"
    spec = f"gtp:{scripted('gtp', 'hang', 3, pidfile)}"
    argv = ["arena", spec, "random", "--game", GO5, "--games", "2", "--no-progress"]
    proc = subprocess.Popen(
        [sys.executable, "-c", WITH_CTRL_C + "from polyzero.cli import main; sys.exit(main(sys.argv[1:]))", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "POLYZERO_ENGINE_TIMEOUT": "600"},
    )
    for _ in range(600):
        if pidfile.exists() and pidfile.read_text():
            break
        time.sleep(0.1)
    time.sleep(1.0)  # the engine is now hanging on its third move
    pid = int(pidfile.read_text())
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in err, err
    for _ in range(50):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"engine {pid} outlived polyzero")


def test_spec_errors_are_usage_errors():
    go, chess_game = load_game(GO5), load_game("chess")
    for spec, game, message in (
        ("gnugo:11", go, "from 0 to 10"),
        ("gnugo:x", go, "whole number"),
        ("pachi:0", go, "from 1 to"),
        ("stockfish:21", chess_game, "from 0 to 20"),
        ("stockfish:0:0", chess_game, "from 1 to"),
        ("gtp:", go, "name the engine"),
        ("gtp:'unclosed", go, "No closing quotation"),
        ("gtp:/no/such/engine --gtp", go, "cannot find the program"),
        (f"uci:{scripted('uci')}", go, "UCI engines play chess"),
        (f"gtp:{scripted('gtp')}", chess_game, "GTP plays Go and Hex"),
    ):
        with pytest.raises(UsageError, match=message):
            make_player(spec, game)
    assert external_player("mcts:5", go) is None


def test_missing_binary_names_the_package(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr("polyzero.engines.process.os.access", lambda *a: False)
    with pytest.raises(UsageError, match="apt-get install gnugo"):
        make_player("gnugo:1", load_game(GO5))
    with pytest.raises(UsageError, match="platform game"):
        make_player("pachi:100", load_game(GO5))


def test_gnugo_plays_legal_games_and_records_valid_sgf(tmp_path):
    need_binary("gnugo")
    from sgfmill import sgf

    game = load_game(GO5)
    engine = make_player("gnugo:1", game, seed=3)
    res = play_match(game, engine, make_player("random", game), 2, on_game_end=match_recorder(tmp_path, game, "g", "r"))
    engine.close()
    assert res.wins == 2  # GNU Go beats random play on 5x5
    for path in sorted(tmp_path.iterdir()):
        record = sgf.Sgf_game.from_bytes(path.read_bytes())
        assert record.get_size() == 5 and record.get_winner() is not None
        assert len(record.get_main_sequence()) > 5


@pytest.mark.e2e
def test_polyzero_gtp_engine_against_gnugo_through_pipes():
    """Our own GTP engine, run as an external `gtp:` player, against GNU Go."""
    need_binary("gnugo")
    game = load_game(GO5)
    ours = make_player(f"gtp:{sys.executable} -m polyzero gtp --agent mcts:20 --game '{GO5}'", game)
    gnugo = make_player("gnugo:1", game)
    res = play_match(game, ours, gnugo, 2, seed=0)
    ours.close()
    gnugo.close()
    assert res.wins + res.draws + res.losses == 2


def test_stockfish_beats_random_with_legal_moves(tmp_path):
    need_binary("stockfish")
    game = load_game("chess")
    engine = make_player("stockfish:0:200", game)
    res = play_match(game, engine, make_player("random", game), 2, on_game_end=match_recorder(tmp_path, game, "s", "r"))
    engine.close()
    assert res.losses == 0 and res.wins >= 1
    for path in tmp_path.iterdir():
        record = chess.pgn.read_game(open(path))
        assert not record.errors and record.headers["Result"] in ("1-0", "0-1", "1/2-1/2")
        board = record.board()
        for move in record.mainline_moves():
            assert move in board.legal_moves
            board.push(move)


def test_training_evaluation_and_play_take_external_engines(tmp_path):
    """`eval.opponents` during training and `polyzero play --agent` name engines too."""
    from engine_fixtures import tiny_search_player
    from polyzero.config import build_config
    from polyzero.eval.play import play_in_terminal
    from polyzero.train.driver import evaluate_agent

    game = load_game(GO5)
    cfg = build_config(GO5, "alphazero")
    spec = f"gtp:{scripted('gtp')}"
    scores = evaluate_agent(game, cfg, tiny_search_player(GO5, simulations=2), 2, 0, opponents=[spec])
    assert 0.0 <= scores[f"eval/{spec}/score"] <= 1.0
    lines = []
    dying = make_player(f"gtp:{scripted('gtp', 'die', 1)}", game)
    answers = lambda prompt: "n" if "again" in prompt else "pass"  # noqa: E731
    results = play_in_terminal(game, dying, human_seat=1, input_fn=answers, output_fn=lines.append)
    assert results == [[-1.0, 1.0]] and any("forfeits: GTP engine exited with status 3" in ln for ln in lines)
