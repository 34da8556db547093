"""The GTP engine (`polyzero gtp`): every command, every error path, Go and Hex, the
lz-analyze stream, search by the clock, and the real process over pipes."""

from __future__ import annotations

import math
import re
import subprocess
import sys

import numpy as np
import pytest

from engine_fixtures import tiny_search_player, untrained_checkpoint
from polyzero.engines.agent import Analysis, Candidate, EngineAgent
from polyzero.engines.boards import GtpBoard
from polyzero.engines.gtp import GtpEngine, parse_line
from polyzero.eval import make_player
from polyzero.eval.records import board_rows, tromp_taylor_score
from polyzero.games import load_game

GO5 = "go(board_size=5,komi=0.5)"
# Sabaki's and katrain's reading of Leela Zero's analysis lines.
LZ_ENTRY = re.compile(
    r"info move (\S+) visits (\d+) winrate (\d+) prior (\d+) lcb (\d+) order (\d+) pv (\S+(?: \S+)*?)"
    r"(?= info move|$)"
)


def engine(spec="random", game=GO5, fixed=False, player=None):
    g = load_game(game)
    return GtpEngine(EngineAgent(player or make_player(spec, g, seed=0)), g, fixed_size=fixed)


def ask(eng, line, interrupted=lambda: True):
    out = []
    eng.handle(line, out.append, interrupted)
    return "".join(out)


def ok(eng, line):
    answer = ask(eng, line)
    assert answer.startswith("=") and answer.endswith("\n\n"), (line, answer)
    return answer[1:].strip()


def fails(eng, line, message):
    answer = ask(eng, line)
    assert answer.startswith("? ") and answer.endswith("\n\n"), (line, answer)
    assert message in answer, (line, answer)


def test_vertices_follow_openspiel_and_gtp_letters():
    for size in (2, 9, 19):  # OpenSpiel's Go plays up to 19x19
        board = GtpBoard(load_game(f"go(board_size={size})"))
        letters = "ABCDEFGHJKLMNOPQRSTUVWXYZ"[:size]
        expected = [f"{c}{r}" for r in range(1, size + 1) for c in letters]
        assert [board.vertex(a) for a in range(size * size)] == expected
        assert board.vertex(size * size) == "pass" and board.action("PASS") == size * size
        assert all(board.action(v.lower()) == a for a, v in enumerate(expected))
    hexb = GtpBoard(load_game("hex(board_size=11)"))
    assert hexb.vertex(0) == "a1" and hexb.vertex(10) == "k1" and hexb.vertex(11) == "a2"
    assert hexb.action("I1") == 8 and hexb.pass_action is None  # Hex keeps the letter i


def test_tromp_taylor_matches_openspiel_returns():
    """Our final_score agrees in sign with OpenSpiel's result on finished random games."""
    rng = np.random.default_rng(0)
    for size, komi in ((5, 0.5), (7, 7.5)):
        game = load_game(f"go(board_size={size},komi={komi})")
        checked = 0
        for _ in range(30):
            s = game.new_initial_state()
            while not s.is_terminal():
                legal = s.legal_actions()
                # mostly stones, passes late: games end by two passes, with regions to score
                p = np.where(np.array(legal) == size * size, 0.02 + len(s.history()) / 200, 1.0)
                s.apply_action(int(rng.choice(legal, p=p / p.sum())))
            score = tromp_taylor_score(board_rows(s, size), komi)
            if s.returns()[0] != 0:  # a draw is OpenSpiel's superko rule
                assert np.sign(score) == np.sign(s.returns()[0])
                checked += 1
        assert checked >= 20


def test_basic_commands_and_ids():
    eng = engine()
    assert ok(eng, "protocol_version") == "2"
    assert ok(eng, "name") == "polyzero"
    assert ask(eng, "7 version").startswith("=7 ")
    listed = ok(eng, "list_commands").split("\n")
    for command in (
        "protocol_version",
        "name",
        "version",
        "known_command",
        "list_commands",
        "quit",
        "boardsize",
        "clear_board",
        "komi",
        "play",
        "genmove",
        "undo",
        "showboard",
        "final_score",
        "time_settings",
        "time_left",
        "kgs-genmove_cleanup",
        "loadsgf",
        "lz-analyze",
    ):
        assert command in listed and ok(eng, f"known_command {command}") == "true"
    assert ok(eng, "known_command fly") == "false"
    fails(eng, "fly", "unknown command")
    assert ask(eng, "12 fly").startswith("?12 unknown command")
    assert ask(eng, "# a comment") == "" and ask(eng, "   ") == ""
    assert parse_line("3\tplay  b\x01 D4  # note") == ("3", "play", ["b", "D4"])
    assert ok(eng, "quit") == "" and eng.done


def test_play_undo_genmove_and_errors():
    eng = engine("mcts:20")
    ok(eng, "boardsize 5")
    ok(eng, "clear_board")
    ok(eng, "play b C3")
    fails(eng, "play w C3", "illegal move")  # occupied
    fails(eng, "play w Z9", "illegal move")  # off the board
    fails(eng, "play w %%", "syntax error")
    fails(eng, "play x C2", "invalid color")
    fails(eng, "play b", "syntax error")
    move = ok(eng, "genmove w")
    assert GtpBoard(load_game(GO5)).action(move) is not None and move.upper() != "C3"
    assert len(eng.moves) == 2
    ok(eng, "undo")
    ok(eng, "undo")
    fails(eng, "undo", "cannot undo")
    # Out of turn: the other colour passes first (handicap stones), and undo takes both back.
    ok(eng, "play b A1")
    ok(eng, "play b B1")
    assert eng.moves == [0, 25, 1]
    ok(eng, "undo")
    assert eng.moves == [0] and eng.state.current_player() == 1
    fails(eng, "boardsize 20", "unacceptable size")  # beyond OpenSpiel's Go
    fails(eng, "boardsize 26", "unacceptable size")
    fails(eng, "boardsize 0", "unacceptable size")
    fails(eng, "boardsize 1", "unacceptable size")
    fails(eng, "boardsize nine", "syntax error")
    fails(eng, "komi nan", "syntax error")
    fails(eng, "komi", "syntax error")
    ok(eng, "komi 6.5")
    assert eng.board.komi == 6.5 and eng.moves == [0]  # komi keeps the position


def test_any_board_size_and_final_score():
    eng = engine("random")
    for size in (2, 3, 9, 13, 19):  # OpenSpiel plays 2x2 to 19x19
        ok(eng, f"boardsize {size}")
        assert eng.board.size == size
        assert len([ln for ln in ok(eng, "showboard").splitlines() if ln[:3].strip().isdigit()]) == size
    ok(eng, "boardsize 5")
    ok(eng, "komi 0.5")
    ok(eng, "play b C3")
    assert ok(eng, "final_score") == "B+24.5"
    ok(eng, "play w pass")
    ok(eng, "play b pass")
    assert eng.state.is_terminal()
    fails(eng, "play w A1", "game is over")
    assert ok(eng, "genmove w") == "pass"


def test_learned_agent_holds_its_board_size():
    eng = engine(player=tiny_search_player(GO5, simulations=8), fixed=True)
    fails(eng, "boardsize 9", "unacceptable size")
    ok(eng, "boardsize 5")
    move = ok(eng, "genmove b")
    assert eng.board.action(move) is not None


def test_hex_through_the_same_engine():
    eng = engine("mcts:20", game="hex(board_size=5)")
    ok(eng, "boardsize 3")
    ok(eng, "komi 7.5")  # accepted and ignored
    for vertex in ("a1", "a2"):
        ok(eng, f"play b {vertex}")
        ok(eng, f"play w {'bc'[vertex == 'a2']}1")
    fails(eng, "play w c2", "not to move")
    fails(eng, "play b pass", "illegal move")
    fails(eng, "final_score", "not over")
    ok(eng, "play b a3")  # joins row 1 to row 3
    assert eng.state.is_terminal() and ok(eng, "final_score") == "B+"
    ok(eng, "clear_board")
    assert re.fullmatch(r"[a-c][1-3]", ok(eng, "genmove b"))


def test_cleanup_never_passes_while_a_stone_can_be_played():
    class Passer:  # an agent that would always pass
        name, simulations, max_simulations, searches = "passer", 1, 1, False

        def analyse(self, state, simulations=None, seconds=None):
            return Analysis(25, [Candidate(25, 5, 0.0, 0.5, [25]), Candidate(3, 0, math.nan, 0.1, [3])], 0.0, 5, 0.0)

    eng = engine()
    eng.agent = Passer()
    ok(eng, "play w pass")
    assert ok(eng, "genmove b") == "pass"
    ok(eng, "undo")
    assert ok(eng, "kgs-genmove_cleanup b") == "D1"


def test_time_controls_turn_into_search_seconds():
    seen = []

    class Clocked:
        name, simulations, max_simulations, searches = "clocked", 8, 8, True

        def analyse(self, state, simulations=None, seconds=None):
            seen.append(seconds)
            a = state.legal_actions()[0]
            return Analysis(a, [Candidate(a, 1, 0.0, 1.0, [a])], 0.0, 1, 0.0)

    eng = engine()
    eng.agent = Clocked()
    ok(eng, "genmove b")
    ok(eng, "time_settings 300 10 5")  # 5 min main time, then 5 moves per 10 s
    ok(eng, "genmove w")
    ok(eng, "time_left b 100 0")  # 100 s of main time left
    ok(eng, "genmove b")
    ok(eng, "time_left w 8 4")  # byo-yomi: 8 s for 4 stones
    ok(eng, "genmove w")
    ok(eng, "time_settings 0 1 0")  # GTP: no time limit
    ok(eng, "genmove b")
    fails(eng, "time_left q 1 1", "invalid color")
    fails(eng, "time_settings 1 -1 0", "syntax error")
    assert seen[0] is None and seen[-1] is None
    assert seen[1] == pytest.approx(300 / 20 + 10 / 5 - 0.1)
    assert seen[2] == pytest.approx(100 / 20 + 10 / 5 - 0.1)
    assert seen[3] == pytest.approx(8 / 4 - 0.1)


def test_clock_search_runs_more_simulations_with_more_time():
    agent = EngineAgent(make_player("mcts:10", load_game(GO5)))
    state = load_game(GO5).new_initial_state()
    short = agent.analyse(state, seconds=0.05)
    long = agent.analyse(state, seconds=0.6)
    assert long.nodes > 2 * short.nodes and long.seconds < 3.0


def test_loadsgf(tmp_path):
    from sgfmill import sgf

    record = sgf.Sgf_game(size=5)
    record.get_root().set("KM", 2.5)
    record.get_root().set_setup_stones([(0, 0), (4, 4)], [])  # two handicap stones
    for colour, point in (("w", (2, 2)), ("b", (1, 1)), ("w", None), ("b", (3, 3))):
        record.extend_main_sequence().set_move(colour, point)
    path = tmp_path / "g.sgf"
    path.write_bytes(record.serialise())
    eng = engine("random", game="go(board_size=9,komi=7.5)")
    ok(eng, f"loadsgf {path}")
    assert eng.board.size == 5 and eng.board.komi == 2.5
    rows = board_rows(eng.state, 5)
    assert rows[0][0] == "X" and rows[4][4] == "X" and rows[2][2] == "O" and rows[3][3] == "X"
    assert eng.state.current_player() == 1
    ok(eng, f"loadsgf {path} 3")  # the position before move 3: two moves after the setup
    assert board_rows(eng.state, 5)[3][3] == "+" and eng.state.current_player() == 1
    fails(eng, f"loadsgf {tmp_path / 'missing.sgf'}", "cannot load file")
    (tmp_path / "bad.sgf").write_text("not sgf")
    fails(eng, f"loadsgf {tmp_path / 'bad.sgf'}", "cannot load file")
    record.extend_main_sequence().set_move("w", (2, 2))  # onto a stone
    path.write_bytes(record.serialise())
    fails(eng, f"loadsgf {path}", "illegal move")
    assert eng.board.size == 5 and board_rows(eng.state, 5)[3][3] == "+"  # the old position stays
    fixed = engine(
        player=tiny_search_player("go(board_size=9,komi=7.5)", 4), game="go(board_size=9,komi=7.5)", fixed=True
    )
    fails(fixed, f"loadsgf {path}", "unacceptable size")


def test_lz_analyze_stream_in_sabaki_format():
    eng = engine(player=tiny_search_player(GO5, simulations=8))
    ok(eng, "play b C3")
    calls = iter(range(100))
    answer = ask(eng, "5 lz-analyze w 1", interrupted=lambda: next(calls) >= 3)
    head, *lines = answer.split("\n")
    assert head == "=5" and answer.endswith("\n\n")
    info = [ln for ln in lines if ln]
    assert info, answer
    entries = LZ_ENTRY.findall(info[-1])
    assert entries and [int(e[5]) for e in entries] == list(range(len(entries)))
    visits = [int(e[1]) for e in entries]
    assert visits == sorted(visits, reverse=True) and sum(visits) >= 8
    board = eng.board
    for move, _, winrate, prior, _, _, pv in entries:
        assert 0 <= int(winrate) <= 10000 and 0 <= int(prior) <= 10000
        assert pv.split()[0] == move and all(board.action(v) is not None for v in pv.split())
    assert eng.moves == [12]  # analysis plays nothing
    answer = ask(eng, "lz-analyze b 1")  # black is not to move: a copy where white passed
    assert answer.startswith("=\ninfo move ") and eng.moves == [12]
    fails(eng, "lz-analyze w fast", "cannot parse analyze tags")
    answer = ask(eng, "lz-genmove_analyze b 10")
    assert answer.startswith("=\ninfo move ") and re.search(r"\nplay \S+\n\n$", answer)


@pytest.mark.e2e
def test_gtp_process_over_pipes(tmp_path):
    """The real command: garbage never stops it, lz-analyze streams until the next command."""
    ckpt = untrained_checkpoint(tmp_path / "run", GO5, simulations=4)
    proc = subprocess.Popen(
        [sys.executable, "-m", "polyzero", "gtp", "--agent", str(ckpt)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        proc.stdin.write("\x00\x7f garbage ###\nboardsize 9\nplay b C3\ngenmove w\nlz-analyze 10\n")
        proc.stdin.flush()
        lines = []
        while not any(ln.startswith("info move") for ln in lines):  # the stream has begun
            lines.append(proc.stdout.readline())
        proc.stdin.write("name\nquit\n")
        proc.stdin.flush()
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    text = "".join(lines) + out
    assert proc.returncode == 0 and "Traceback" not in err
    answers = text.split("\n\n")
    assert answers[0] == "? unknown command" and answers[1] == "? unacceptable size" and answers[2] == "="
    assert re.fullmatch(r"= [A-E][1-5]|= pass", answers[3])
    assert answers[4].startswith("=\ninfo move ")  # the stream, then its empty line
    assert answers[5] == "= polyzero" and answers[6] == "="


def test_a_learned_agent_searches_one_tree_on_the_clock_with_leaf_batching():
    game = load_game(GO5)
    agent = EngineAgent(tiny_search_player(GO5, simulations=8))
    assert agent.player.params.leaf_batch == 16  # the engine's default: 16 leaves per network call
    state = game.new_initial_state()
    short = agent.analyse(state, seconds=0.05)
    long = agent.analyse(state, seconds=0.6)
    assert long.nodes > 2 * short.nodes and long.seconds < 3.0
    assert sum(c.visits for c in long.candidates) == long.nodes  # one tree: every simulation reached the root
    sequential = EngineAgent(tiny_search_player(GO5, simulations=8), leaf_batch=1)
    assert sequential.player.params.leaf_batch == 1 and sequential.analyse(state, simulations=24).nodes == 24


@pytest.mark.parametrize("command", ["gtp", "uci"])
def test_simulations_above_the_cap_are_refused_not_clamped(command, capsys):
    from polyzero.cli import main

    assert main([command, "--agent", "random", "--simulations", "200", "--max-simulations", "100"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(
        "--simulations 200 is above --max-simulations 100: no search runs more; raise --max-simulations"
    )
    assert "\n" not in err
