"""benchmarks/muzero_shape.py: the exact scorer on hand-checked tic-tac-toe positions,
the aggregation over seeds by learning steps and at equal CPU seconds, and its
arguments."""

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import muzero_shape as bench  # noqa: E402


@pytest.fixture(scope="module")
def ttt():
    from polyzero.games import load_game

    game = load_game("tic_tac_toe")
    return game, bench.solved_positions(game)


def _table(solved, pick):
    return bench.tabulate(lambda states: [[pick(s)] for s in states], [s for s, _ in solved.values()])


def _position(game, moves):
    state = game.new_initial_state()
    for a in moves:
        state.apply_action(a)
    return state


def test_exact_score_on_a_hand_checked_position(ttt):
    game, solved = ttt
    optimal = lambda s: solved[bench.state_key(s)][1]  # noqa: E731
    uniform = lambda s: s.legal_actions()  # noqa: E731
    # X on 0 and 1, O on 3 and 4, X to move: 2 wins at once.
    state = _position(game, [0, 3, 1, 4])
    lowest = _table(solved, lambda s: s.legal_actions()[0])
    highest = _table(solved, lambda s: s.legal_actions()[-1])
    assert bench.exact_score(lowest, optimal, state, seat=0) == 1.0  # plays 2
    # Plays 8; the perfect O then wins (5 at once, or 2 with two threats).
    assert bench.exact_score(highest, optimal, state, seat=0) == 0.0
    # Against random O after X's 8, each of O's four moves with 1/4: 5 wins for O; 2
    # makes two threats (5, 6) and both replies win; after 6, X plays 7 and O's 5 and 2
    # both win; after 7, X plays 6, then O's 5 wins and O's 2 leaves X 5, a draw (1/2).
    assert bench.exact_score(highest, uniform, state, seat=0) == pytest.approx((0 + 0 + 0 + 0.5 / 2) / 4)
    # An agent tied between 2 and 8 there (the player breaks ties at random): the mean.
    tied = {**highest, bench.state_key(state): [2, 8]}
    assert bench.exact_score(tied, optimal, state, seat=0) == 0.5


def test_a_perfect_agent_scores_one_half_against_the_perfect_player(ttt):
    game, solved = ttt
    perfect = _table(solved, lambda s: solved[bench.state_key(s)][1][0])
    scores = bench.scores_over_seats(game, perfect, solved)
    assert scores["exact_vs_optimal"] == pytest.approx(0.5)
    assert scores["exact_vs_random"] > 0.9  # a perfect player never loses and mostly wins
    first = _table(solved, lambda s: s.legal_actions()[0])
    assert bench.scores_over_seats(game, first, solved)["exact_vs_optimal"] < 0.5


def _row(step, cpu, optimal):
    return {"step": step, "cpu_s": cpu, "exact_vs_optimal": optimal, "exact_vs_random": 1 - optimal}


def test_aggregate_by_steps_and_at_equal_cpu():
    rows = {
        ("a", 0): [_row(0, 0, 0.1), _row(10, 20, 0.2), _row(20, 40, 0.3)],
        ("a", 1): [_row(0, 0, 0.1), _row(10, 24, 0.4), _row(20, 44, 0.5)],
        ("b", 0): [_row(0, 0, 0.1), _row(10, 10, 0.3), _row(20, 20, 0.4)],
        ("b", 1): [_row(0, 0, 0.1), _row(10, 12, 0.2), _row(20, 24, 0.2)],
    }
    agg = bench.aggregate(rows, ["a", "b"], cpu_points=2)
    a20 = next(c for c in agg["by_steps"] if (c["arm"], c["opponent"], c["step"]) == ("a", "optimal", 20))
    assert a20["values"] == [0.3, 0.5] and a20["mean"] == pytest.approx(0.4)
    # t(0.975, 1) = 12.706, sd = 0.1414: half-width 12.706 * 0.1 = 1.2706
    assert a20["ci95"] == pytest.approx([0.4 - 1.2706, 0.4 + 1.2706], abs=1e-3)
    assert agg["cpu_cost"]["b"] == {"step": 20, "cpu_s": 22.0, "per_step": 1.1}
    # CPU marks up to the cheaper arm's mean CPU (22 s): 0, 11, 22; at 11 s arm a's seeds
    # are still at step 0, b's seed 0 at step 10 and seed 1 at step 0.
    at11 = {c["arm"]: c for c in agg["by_cpu"] if c["opponent"] == "optimal" and c["cpu_s"] == 11}
    assert at11["a"]["steps"] == [0, 0] and at11["b"]["steps"] == [10, 0]
    assert at11["b"]["values"] == [0.3, 0.1]
    at22 = {c["arm"]: c for c in agg["by_cpu"] if c["opponent"] == "optimal" and c["cpu_s"] == 22}
    assert at22["a"]["steps"] == [10, 0] and at22["b"]["steps"] == [20, 10]
    # The late window: steps past half the last (20): only step 20 here.
    late = {c["arm"]: c for c in agg["late"] if c["opponent"] == "optimal"}
    assert late["a"]["steps"] == [20] and late["a"]["values"] == [0.3, 0.5]
    rows[("a", 0)].append(_row(30, 60, 0.7))
    rows[("a", 1)].append(_row(30, 64, 0.1))
    late = {c["arm"]: c for c in bench.aggregate(rows, ["a"])["late"] if c["opponent"] == "optimal"}
    assert late["a"]["steps"] == [20, 30] and late["a"]["values"] == pytest.approx([0.5, 0.3])


@pytest.mark.parametrize(
    ("game", "message"), [("no_such_game", "unknown game"), ("connect_four", "has more than 100,000 positions")]
)
def test_a_game_it_cannot_score_exactly_is_one_line_and_exit_code_2(tmp_path, capsys, game, message):
    with pytest.raises(SystemExit) as stop:
        bench.main(["train", "--game", game, "--work", str(tmp_path / "work")])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "work").exists()


def test_an_unknown_arm_is_one_line_and_exit_code_2():
    out = subprocess.run(
        [sys.executable, str(Path(bench.__file__)), "report", "--arms", "preset,k9"], capture_output=True, text=True
    )
    assert out.returncode == 2
    assert "unknown arm" in out.stderr and "Traceback" not in out.stderr


def test_the_agents_choice_keeps_every_tied_most_visited_move():
    import numpy as np

    class Result:
        root_visits = np.array([[3, 9, 9, 0], [1, 2, 20, 2]])
        action = None

    class Algo:
        def search(self, evaluate, states, params, rng, add_noise):
            assert add_noise is False
            return Result()

    class Player:
        algo, evaluate, params, rng = Algo(), None, None, None

    assert bench.most_visited(Player())(["a", "b"]) == [[1, 2], [2]]
    Result.action = np.array([0, 3])  # a Gumbel root chooses itself
    assert bench.most_visited(Player())(["a", "b"]) == [[0], [3]]


def test_uniform_random_play_and_perfect_play_score_their_known_values_in_each_seat(ttt):
    """An independent check of the scorer in each seat, ties included: an agent tied among
    all legal moves is uniform random play, and random against random ends in X's win in
    737, O's in 363 and a draw in 160 of 1,260 (tic-tac-toe's known odds: 58.5%, 28.8%,
    12.7%), so X scores (737 + 160 / 2) / 1260 and O (363 + 80) / 1260; a perfect agent
    draws against the perfect player in either seat."""
    game, solved = ttt
    uniform = bench.tabulate(lambda states: [s.legal_actions() for s in states], [s for s, _ in solved.values()])
    start = game.new_initial_state()
    random_opponent = lambda s: s.legal_actions()  # noqa: E731
    assert bench.exact_score(uniform, random_opponent, start, seat=0) == pytest.approx(817 / 1260, abs=1e-12)
    assert bench.exact_score(uniform, random_opponent, start, seat=1) == pytest.approx(443 / 1260, abs=1e-12)
    perfect = _table(solved, lambda s: solved[bench.state_key(s)][1][-1])
    optimal = lambda s: solved[bench.state_key(s)][1]  # noqa: E731
    assert [bench.exact_score(perfect, optimal, start, seat) for seat in (0, 1)] == [0.5, 0.5]


def test_an_interrupted_run_logs_its_cpu_and_resumes_counting_it(tmp_path, monkeypatch):
    """Ctrl-C or SIGTERM checkpoints mid-chunk: the CPU so far is logged at that step, so
    the resumed run's CPU seconds go on from it (else the interrupted chunk's were lost)."""
    import argparse

    from polyzero.train.driver import Trainer

    collect = Trainer._collect

    def interrupted_after_the_first(self):
        collect(self)
        self.interrupt_requested = True  # as SIGTERM's handler does: a checkpoint at the next step's start

    args = argparse.Namespace(game="tic_tac_toe", steps=3, chunk_steps=2)
    small = ["train.positions_per_step=16", "train.batch_size=8", "search.num_simulations=2"]
    monkeypatch.setitem(bench.ARMS, "k1", ["muzero.unroll_steps=1", *small, "selfplay.concurrent_games=4"])
    monkeypatch.setattr(Trainer, "_collect", interrupted_after_the_first)
    with pytest.raises(Exception, match="interrupted at learning step 1"):
        bench.train_one(args, tmp_path, "k1", 0)
    monkeypatch.setattr(Trainer, "_collect", collect)
    bench.train_one(args, tmp_path, "k1", 0)
    log = bench.read_jsonl(tmp_path / "k1_s0" / "cpu.jsonl")
    assert [r["step"] for r in log] == [0, 1, 3]
    assert 0 < log[1]["cpu_s"] < log[2]["cpu_s"]
    assert [c["step"] for c in bench.checkpoints(tmp_path, "k1", 0)] == [0, 1, 3]
