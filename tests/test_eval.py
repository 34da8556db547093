"""Tests for polyzero.eval: intervals, arena, reference players, play, plots."""

import json

import pyspiel
import pytest

from polyzero.errors import UsageError
from polyzero.eval import (
    LADDER_MULTIPLIERS,
    MatchResult,
    MCTSPlayer,
    RandomPlayer,
    ladder_specs,
    make_player,
    play_in_terminal,
    play_match,
    play_single_agent,
    players as players_mod,
    plot_run,
    plot_runs,
    reference_player,
    register_player_loader,
    wilson_interval,
)


@pytest.fixture(scope="module")
def ttt():
    return pyspiel.load_game("tic_tac_toe")


class FirstLegal:
    """Deterministic: the lowest legal action. Records every batch it is given."""

    def __init__(self, name="first"):
        self.name = name
        self.batches = []  # one list of (history, player) per act call

    def reset(self, seed):
        self.batches = []

    def act(self, states):
        self.batches.append([(tuple(s.history()), s.current_player()) for s in states])
        return [s.legal_actions()[0] for s in states]


# ------------------------------------------------------------------ stats
@pytest.mark.parametrize(
    "score,n,expected",
    [
        (0.5, 100, (0.4038, 0.5962)),
        (0.0, 10, (0.0, 0.2775)),  # z^2/(n+z^2) = 3.8415/13.8415
        (1.0, 10, (0.7225, 1.0)),
        (0.8, 50, (0.6696, 0.8876)),
    ],
)
def test_wilson_hand_computed(score, n, expected):
    lo, hi = wilson_interval(score, n)
    assert lo == pytest.approx(expected[0], abs=1e-4)
    assert hi == pytest.approx(expected[1], abs=1e-4)


def test_wilson_no_games():
    assert wilson_interval(0.0, 0) == (0.0, 1.0)


def test_match_result_arithmetic():
    r = MatchResult(wins=130, draws=25, losses=45, name_a="A", name_b="B")
    assert r.games == 200
    assert r.score == pytest.approx((130 + 12.5) / 200)
    assert (r.ci_low, r.ci_high) == pytest.approx(wilson_interval(r.score, 200))
    assert str(r) == "A vs B: 0.713 [0.646, 0.771] (W 130 D 25 L 45, 200 games)"
    d = r.to_dict()
    assert d["wins"] == 130 and d["games"] == 200 and d["score"] == r.score
    assert MatchResult(1, 0, 0, 1).games == 1
    with pytest.raises(ValueError):
        MatchResult(1, 0, 0, games=5)


# ------------------------------------------------------------------ players
def test_reference_player_parsing(ttt):
    assert isinstance(reference_player("random", ttt), RandomPlayer)
    p = reference_player("mcts:25", ttt)
    assert isinstance(p, MCTSPlayer) and not p.solve and p.simulations == 25 and p.name == "mcts:25"
    p = reference_player("mcts-solver:7", ttt)
    assert p.solve and p.uct_c == 2.0 and p.rollouts == 1 and p.name == "mcts-solver:7"
    assert reference_player("runs/foo", ttt) is None
    assert reference_player("alphazero:3", ttt) is None
    for bad in ("mcts:abc", "mcts:0", "mcts-solver:", "mcts:-5"):
        with pytest.raises(UsageError) as exc:
            reference_player(bad, ttt)
        assert "\n" not in str(exc.value)


def test_reference_players_of_sog_and_engines_come_through_the_plugin_loaders(ttt, monkeypatch):
    monkeypatch.setattr(players_mod, "_REFERENCE_LOADERS", [])
    monkeypatch.setattr(players_mod, "_REFERENCE_DISCOVERED", False)
    kuhn = pyspiel.load_game("kuhn_poker")
    assert reference_player("cfr:3", kuhn).name == "cfr:3"
    from polyzero.engines.players import external_player
    from polyzero.sog.players import sog_reference_player

    assert players_mod._REFERENCE_LOADERS == [sog_reference_player, external_player]
    assert reference_player("nothing:1", ttt) is None


def test_make_player_loaders(ttt, monkeypatch):
    monkeypatch.setattr(players_mod, "_LOADERS", [])
    monkeypatch.setattr(players_mod, "_DISCOVERED", False)
    with pytest.raises(UsageError, match="unknown player 'xyz': expected random, mcts:SIMS"):
        make_player("xyz", ttt)
    # The run-directory loader that polyzero.plugins names was found without registration.
    from polyzero.train.agents import load_search_player

    assert players_mod._LOADERS == [load_search_player]
    loader = lambda spec, game, seed: FirstLegal(spec) if spec == "xyz" else None  # noqa: E731
    register_player_loader(loader)
    register_player_loader(loader)  # registering twice must not duplicate
    assert players_mod._LOADERS == [load_search_player, loader]
    assert make_player("xyz", ttt).name == "xyz"
    assert isinstance(make_player("random", ttt), RandomPlayer)


def test_ladder():
    assert LADDER_MULTIPLIERS == (1, 10, 100, 1000)
    assert ladder_specs(50) == ["mcts-solver:50", "mcts-solver:500", "mcts-solver:5000", "mcts-solver:50000"]
    assert ladder_specs(3, (2,)) == ["mcts-solver:6"]


# ------------------------------------------------------------------ arena
def test_seat_alternation_and_batching(ttt):
    a = FirstLegal()
    res = play_match(ttt, a, RandomPlayer(), 10, seed=3)
    assert res.games == 10
    # The opening move of each game is A's exactly when A holds seat 0.
    openings = [h for batch in a.batches for h, p in batch if h == ()]
    assert len(openings) == 5
    seats = {p for batch in a.batches for _, p in batch}
    assert seats == {0, 1}
    assert max(len(b) for b in a.batches) > 1  # concurrent games reach act together


def test_max_concurrent_limits_batch(ttt):
    a = FirstLegal()
    play_match(ttt, a, RandomPlayer(), 9, max_concurrent=2)
    assert max(len(b) for b in a.batches) <= 2


def test_deterministic_given_seed(ttt):
    a, b = make_player("mcts:20", ttt), make_player("random", ttt)
    assert play_match(ttt, a, b, 12, seed=5).to_dict() == play_match(ttt, a, b, 12, seed=5).to_dict()


def test_first_legal_self_play_is_scored_per_seat(ttt):
    # Both deterministic: game i is the same line with the seats swapped, so A's
    # wins in seat 0 become losses in seat 1.
    res = play_match(ttt, FirstLegal("a"), FirstLegal("b"), 4)
    assert (res.wins, res.draws, res.losses) == (2, 0, 2)


def test_solver_beats_random(ttt):
    # Deterministic for this seed; 1000 simulations do not always solve the opening,
    # so a few draws as the second player are expected.
    res = play_match(ttt, make_player("mcts-solver:1000", ttt), make_player("random", ttt), 20, seed=1)
    assert res.score >= 0.9, str(res)


def test_solver_never_loses_to_mcts(ttt):
    res = play_match(ttt, make_player("mcts-solver:1000", ttt), make_player("mcts:100", ttt), 10, seed=0)
    assert res.losses == 0, str(res)


def test_chance_and_single_agent():
    game = pyspiel.load_game("pig", {"players": 2, "winscore": 10})
    res = play_match(game, RandomPlayer(), RandomPlayer(1), 6, seed=0)
    assert res.games == 6
    with pytest.raises(ValueError):
        play_single_agent(game, RandomPlayer(), 2)


def test_play_single_agent():
    game = pyspiel.load_game("catch")
    out = play_single_agent(game, RandomPlayer(), 20, seed=0)
    assert len(out["returns"]) == 20
    assert out["ci_low"] <= out["mean_return"] <= out["ci_high"]


# ------------------------------------------------------------------ play
def test_play_in_terminal_scripted(ttt):
    # Human X: 4 by its move string, then a bad id, then ids 2 and 6 (diagonal 2-4-6);
    # the bot (lowest legal action) answers 0 and 1, so X wins.
    inputs = iter(["banana", "x(1,1)", "99", "0", "2", "6", "n"])
    lines = []
    returns = play_in_terminal(
        ttt,
        FirstLegal("bot"),
        0,
        input_fn=lambda _: next(inputs),
        output_fn=lambda *a: lines.append(" ".join(map(str, a))),
    )
    text = "\n".join(lines)
    assert "'banana' is not a legal move" in text and "'99' is not a legal move" in text
    assert "'0' is not a legal move" in text  # taken by the bot
    assert "legal moves: x(0,0), x(0,1)" in text  # legal moves listed by their text
    assert "bot plays o(0,0)" in text and "bot plays o(0,1)" in text
    assert returns == [[1.0, -1.0]] and "you win" in lines[-1]


def test_play_in_terminal_input_closed(ttt):
    def closed(_):
        raise EOFError

    # Ctrl-D ends play quietly: no error, no game recorded.
    assert play_in_terminal(ttt, RandomPlayer(), 1, input_fn=closed, output_fn=lambda *a: None) == []


# ------------------------------------------------------------------ plots
def _write_metrics(run_dir):
    recs = []
    for step in range(1, 6):
        recs.append(
            {
                "step": step,
                "time": 30.0 * step,
                "kind": "train",
                "loss/total": 2.0 / step,
                "loss/value": 1.0 / step,
                "loss/policy": 0.9 / step,
                "loss/l2": 0.1,
                "other": "x",
            }
        )
        recs.append({"step": step, "time": 30.0 * step + 1, "kind": "selfplay", "selfplay/games": step})
        if step % 2 == 0:
            recs.append(
                {
                    "step": step,
                    "time": 30.0 * step + 2,
                    "kind": "eval",
                    "eval/random/score": 0.6,
                    "eval/random/ci_low": 0.4,
                    "eval/random/ci_high": 0.8,
                    "eval/mcts-solver:100/score": 0.2,
                    "eval/mcts-solver:100/ci_low": 0.1,
                    "eval/mcts-solver:100/ci_high": 0.4,
                }
            )
    run_dir.mkdir(parents=True, exist_ok=True)
    text = "\n".join(json.dumps(r) for r in recs) + '\n{"step": 6, "time": 18'  # truncated crash line
    (run_dir / "metrics.jsonl").write_text(text)


def test_plot_run(tmp_path):
    run = tmp_path / "run-a"
    _write_metrics(run)
    paths = plot_run(run)
    assert sorted(p.name for p in paths) == ["losses.png", "scores.png"]
    for p in paths:
        assert p.parent == run / "plots" and p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_runs_overlay(tmp_path):
    for name in ("run-a", "run-b"):
        _write_metrics(tmp_path / name)
    paths = plot_runs([tmp_path / "run-a", tmp_path / "run-b"], tmp_path / "out")
    assert {p.name for p in paths} == {"losses.png", "scores.png"}


def test_plot_selfplay_returns_alone(tmp_path):
    """A one-player run trained without evaluations still gets its returns plot."""
    recs = [
        {"step": s, "time": 10.0 * s, "kind": "train", "loss/total": 1.0, "selfplay/mean_return": 0.1 * s}
        for s in range(1, 6)
    ]
    (tmp_path / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    assert "returns.png" in {p.name for p in plot_run(tmp_path)}


def test_plot_empty(tmp_path):
    with pytest.raises(UsageError, match="no metrics in .*metrics.jsonl"):
        plot_run(tmp_path)
    (tmp_path / "metrics.jsonl").write_text("not json\n")
    with pytest.raises(UsageError, match="no metrics in"):
        plot_run(tmp_path)


def test_mcts_players_on_a_game_written_in_python():
    """OpenSpiel's C++ MCTS bot crashes on Python games; the player uses its Python MCTS there."""
    from polyzero.games import load_game

    game = load_game("nannon")
    res = play_match(game, MCTSPlayer(game, 30, solve=True, seed=1), RandomPlayer(2), 20, seed=0)
    assert res.wins + res.draws + res.losses == 20 and res.score > 0.5


# ------------------------------------------------------------------ sound evaluation
@pytest.mark.parametrize("spec", ["mcts:10", "mcts-solver:10"])
@pytest.mark.parametrize("game_name", ["kuhn_poker", "leduc_poker", "dark_hex(board_size=2)", "liars_dice"])
def test_players_that_read_the_true_state_are_refused_on_hidden_information(spec, game_name):
    game = pyspiel.load_game(game_name)
    with pytest.raises(UsageError, match="searches the true state.*imperfect information"):
        make_player(spec, game)


def test_information_state_players_are_accepted_on_hidden_information():
    game = pyspiel.load_game("kuhn_poker")
    for spec in ("random", "cfr:5", "ismcts:10"):
        assert make_player(spec, game).reads_hidden_state is False
    res = play_match(game, make_player("ismcts:10", game), make_player("cfr:5", game), 4)
    assert res.wins + res.draws + res.losses == 4


def test_unknown_plugin_players_are_assumed_to_read_the_true_state(monkeypatch):
    """A loader's player that does not say it acts on the information state is refused."""
    monkeypatch.setattr(players_mod, "_LOADERS", [lambda spec, game, seed: FirstLegal() if spec == "x" else None])
    monkeypatch.setattr(players_mod, "_DISCOVERED", True)
    with pytest.raises(UsageError, match="'first' searches the true state"):
        make_player("x", pyspiel.load_game("kuhn_poker"))
    assert make_player("x", pyspiel.load_game("tic_tac_toe")).name == "first"


@pytest.mark.parametrize(
    "game_name,reason",
    [
        ("sheriff", "not zero-sum"),
        ("matrix_rps", "simultaneous moves"),
        ("kuhn_poker(players=3)", "has 3 players"),
        ("hanabi", "has imperfect information"),
    ],
)
@pytest.mark.parametrize(
    "command", [["arena", "random", "random"], ["play", "--agent", "random"], ["exploitability", "cfr:1"]]
)
def test_commands_refuse_games_that_are_not_two_player_zero_sum_sequential(command, game_name, reason, capsys):
    from polyzero.cli import main

    if game_name == "hanabi" and "hanabi" not in pyspiel.registered_names():
        game_name, reason = "kuhn_poker(players=4)", "has 4 players"
    args = ([command[0], game_name] + command[1:]) if command[0] == "play" else command + ["--game", game_name]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "needs a two-player zero-sum game" in err
    if game_name != "hanabi":
        assert reason in err


def test_a_match_never_picks_a_joint_action():
    with pytest.raises(UsageError, match="simultaneous"):
        play_match(pyspiel.load_game("matrix_rps"), RandomPlayer(), RandomPlayer(), 2)


def test_play_kuhn_shows_the_human_only_their_own_card():
    """Every view line of the human is their own card then the betting; the agent's card never."""
    game = pyspiel.load_game("kuhn_poker")
    for seat in (0, 1):
        lines, deals = [], []

        class Recording(RandomPlayer):
            def act(self, states):
                deals.append(states[0].history()[:2])
                return super().act(states)

        inputs = iter(["0", "0", "y", "1", "1", "y", "0", "1", "n"])
        play_in_terminal(
            game,
            Recording(),
            seat,
            input_fn=lambda _: next(inputs, "n"),
            output_fn=lambda *a: lines.append(" ".join(map(str, a))),
            seed=3,
        )
        views = [line.split(": ", 1)[1] for line in lines if line.startswith("your view")]
        assert views and deals
        own_cards = {str(d[seat]) for d in deals}
        for view in views:
            assert view[0] in own_cards and set(view[1:]) <= {"p", "b"}, view
        assert not any(" plays " in line or "chance:" in line for line in lines)


def test_exploitability_refuses_playerless_policies_big_games_and_solves_cfr_once(capsys, monkeypatch):
    from polyzero.cli import main
    from polyzero.sog import players as sog_players

    assert main(["exploitability", "random", "--game", "kuhn_poker"]) == 2
    assert "has no policy" in capsys.readouterr().err
    assert main(["exploitability", "cfr:1", "--game", "tic_tac_toe"]) == 2  # refused before any solve
    assert "more than 300,000 histories" in capsys.readouterr().err
    solves = []
    real = sog_players.CFRPlayer.__init__
    monkeypatch.setattr(
        sog_players.CFRPlayer, "__init__", lambda self, *a, **k: (solves.append(1), real(self, *a, **k))[1]
    )
    assert main(["exploitability", "cfr:5", "--game", "kuhn_poker", "--seeds", "4", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert len(solves) == 1 and "over 1 seeds" in out and "deterministic solver" in out
