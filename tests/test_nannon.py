"""Nannon (shared/specs/nannon.md) and its exact solver: rules on hand-built positions,
the state counts of the NDMZ paper's Eq. 2, the value-iteration solution, the exact
policy evaluator against sampled games, the `optimal` player and `polyzero solve`."""

import math

import numpy as np
import pyspiel
import pytest

from polyzero.cli import main
from polyzero.errors import UsageError
from polyzero.eval import make_player, play_match
from polyzero.games import check_game, load_game, nannon_policies as npol, nannon_solver as ns
from polyzero.games.nannon import count_positions

Z99 = 2.5758293035489004  # two-sided 99% normal quantile


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("POLYZERO_CACHE", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def sol():
    return ns.solve(ns.NannonParams(), use_cache=False)


@pytest.fixture(scope="module")
def sol_double():
    return ns.solve(ns.NannonParams(scoring="nannon_double"), use_cache=False)


def mask(*points):
    return sum(1 << (k - 1) for k in points)


def at(spec="nannon", player=0, roll=1, mine=(0, 0), theirs=(0, 0)):
    """A state with `player` to move with `roll`; views are (HOME count, own-point mask)."""
    state = load_game(spec).new_initial_state()
    state.set_position(player, roll, mine, theirs)
    return state


def moves(state):
    return {state.action_to_string(state.current_player(), a) for a in state.legal_actions()}


# --- rules -------------------------------------------------------------------------------


def test_setup_and_layouts():
    game = load_game("nannon")
    assert pyspiel.load_game("nannon").num_distinct_actions() == 8  # HOME, points 1..6, pass
    s = game.new_initial_state()
    assert s.is_chance_node() and s.home == [1, 1] and s.safe == [0, 0]
    assert s.own_view(0) == (1, mask(1, 2)) and s.own_view(1) == (1, mask(1, 2))
    assert [i for i, v in enumerate(s.board) if v == 1] == [5, 6]  # o's points 1, 2 are squares 6, 5


@pytest.mark.parametrize("dice", [6, 5, 2])
def test_opening_distribution(dice):
    s = load_game(f"nannon(die_sides={dice})").new_initial_state()
    outcomes = dict(s.chance_outcomes())
    assert math.isclose(sum(outcomes.values()), 1.0)
    assert len(outcomes) == 2 * (dice - 1)  # no ties: they re-roll
    by_roll = {}
    for action, p in outcomes.items():
        c = s.clone()
        c.apply_action(action)
        assert c.current_player() in (0, 1) and 1 <= c.roll < dice
        by_roll[c.roll] = by_roll.get(c.roll, 0.0) + p
    for d, p in by_roll.items():
        assert math.isclose(p, 2 * (dice - d) / (dice * (dice - 1)))
    single = load_game("nannon(opening=single_die)").new_initial_state()
    assert single.chance_outcomes() == [(r, 1 / 6) for r in range(6)]
    single.apply_action(3)
    assert single.current_player() == 0 and single.roll == 4


def test_entering_and_own_blocks():
    s = at(roll=3, mine=(1, mask(1)), theirs=(3, 0))
    assert moves(s) == {"H-3", "1-4"}
    s.apply_action(0)
    assert s.home[0] == 0 and s.board[3] == 0 and s.current_player() == pyspiel.PlayerId.CHANCE
    blocked = at(roll=3, mine=(1, mask(3, 4)), theirs=(3, 0))
    assert moves(blocked) == {"3-6", "4-off"}  # entering on 3 lands on its own checker


def test_leaving_needs_no_exact_roll():
    s = at(roll=6, mine=(1, mask(2)), theirs=(3, 0))
    assert moves(s) == {"H-6", "2-off"}  # 2 + 6 = 8 > 7: off without an exact roll
    s.apply_action(2)
    assert s.safe[0] == 2 and s.board[2] == -1 and not s.is_terminal()


def test_home_checker_never_leaves_directly():
    s = at("nannon(points=4,checkers=2,die_sides=6)", roll=5, mine=(1, mask(2)), theirs=(2, 0))
    assert moves(s) == {"2-off"}


def test_hitting_and_protected_checkers():
    # o on its points 2 and 4 (squares 5 and 3): single checkers, x hits from point 1.
    s = at(roll=2, mine=(1, mask(1)), theirs=(1, mask(2, 4)))
    assert "1-3" in moves(s)
    s.apply_action(1)
    assert s.board[3] == 0 and s.home[1] == 2 and s.own_view(1) == (2, mask(2))
    # o on its points 3 and 4 (squares 4 and 3): a block, neither can be hit.
    p = at(roll=2, mine=(1, mask(1, 2)), theirs=(1, mask(3, 4)))
    assert moves(p) == {"pass"}  # 1-3 and 2-4 land on the block, H-2 on its own checker
    # The same block with one checker taken away: now a hit.
    q = at(roll=2, mine=(1, mask(1, 2)), theirs=(2, mask(4)))
    assert moves(q) == {"1-3", "2-4"}


def test_forced_pass():
    s = at(roll=1, mine=(1, mask(1, 2)), theirs=(1, mask(3, 4)))  # a block of o on squares 3, 4
    assert s.legal_actions() == [7] and moves(s) == {"pass"}
    before = (list(s.board), list(s.home), list(s.safe))
    s.apply_action(7)
    assert (s.board, s.home, s.safe) == before and s.is_chance_node()
    s.apply_action(0)
    assert s.current_player() == 1
    with pytest.raises(ValueError, match="pass is illegal"):
        at(roll=2, mine=(1, mask(1)), theirs=(3, 0)).apply_action(7)  # a move is legal


@pytest.mark.parametrize(
    "scoring, theirs, points", [("single", (3, 0), 1.0), ("nannon_double", (3, 0), 2.0), ("nannon_double", (2, 0), 1.0)]
)
def test_win_and_scoring(scoring, theirs, points):
    s = at(f"nannon(scoring={scoring})", roll=1, mine=(0, mask(6)), theirs=theirs)
    s.apply_action(6)
    assert s.is_terminal() and s.returns() == [points, -points]
    assert "x wins" in str(s)


def test_observation_from_the_mover():
    s = at(player=1, roll=4, mine=(1, mask(2)), theirs=(0, mask(6)))  # o to move
    obs = np.asarray(s.observation_tensor(1)).reshape(-1)
    n, c1 = 6, 4
    assert obs[:n].tolist() == [0, 1, 0, 0, 0, 0]  # o's own point 2
    assert obs[n : 2 * n].tolist() == [1, 0, 0, 0, 0, 0]  # x's point 6 is o's point 1
    assert obs[2 * n + 1] == 1 and obs[2 * n + c1 + 1] == 1  # my HOME 1, my SAFETY 1
    assert obs[2 * n + 2 * c1 + 0] == 1 and obs[2 * n + 3 * c1 + 2] == 1  # their HOME 0, SAFETY 2
    assert obs[2 * n + 4 * c1 + 3] == 1 and obs[-1] == 1  # roll 4, observer to move
    assert obs.sum() == 8 and np.asarray(s.observation_tensor(0))[-1] == 0


@pytest.mark.parametrize(
    "spec",
    [
        "nannon",
        "nannon(points=12,checkers=5)",
        "nannon(points=4,checkers=2,die_sides=8,opening=single_die,scoring=nannon_double)",
    ],
)
def test_conformance_and_openspiel_tools(spec):
    game = load_game(spec)
    report = check_game(game, num_games=10, seed=1)
    assert report.max_length <= game.max_game_length()
    pyspiel.random_sim_test(game, num_sims=20, serialize=False, verbose=False)
    assert str(pyspiel.load_game(str(game))) == str(game)


def test_bad_parameters():
    with pytest.raises(UsageError, match="points >= 4"):
        load_game("nannon(points=3)")
    with pytest.raises(UsageError, match="opening must be one of"):
        load_game("nannon(opening=coin)")


# --- positions and the solver ---------------------------------------------------------------


def test_state_counts():
    assert count_positions(6, 3) == 2530 and count_positions(12, 5) == 1_780_776
    assert ns.Positions(ns.NannonParams()).size == 2530
    assert ns.Positions(ns.NannonParams(12, 5, 6)).size == 1_780_776


@pytest.mark.parametrize("spec", ["nannon", "nannon(points=4,checkers=2,die_sides=6)"])
def test_move_tables_match_the_game(spec):
    """Every position and roll: the solver's array rules give the engine's moves and successors."""
    game = load_game(spec)
    pos = ns.Positions(ns.NannonParams.from_game(game))
    tables = ns.Tables(pos)
    for s in range(pos.size):
        mine = (int(pos.home[pos.mover[s]]), int(pos.mask[pos.mover[s]]))
        theirs = (int(pos.home[pos.other[s]]), int(pos.mask[pos.other[s]]))
        for d in range(1, game.die_sides + 1):
            state = game.new_initial_state()
            state.set_position(0, d, mine, theirs)
            if state.is_terminal():
                continue
            assert pos.index_of_state(state) == s
            legal = state.legal_actions()
            assert legal == [int(a) for a in tables.source[s, d - 1] if a >= 0]
            for slot, action in enumerate(legal):
                child = state.clone()
                child.apply_action(action)
                if child.is_terminal():
                    want = pos.pair_index[pos.placement_id[child.own_view(1)], pos.placement_id[child.own_view(0)]]
                else:
                    child.apply_action(0)  # any roll: the position is the same
                    want = pos.index_of_state(child)
                assert tables.succ[s, d - 1, slot] == want


@pytest.mark.parametrize("which", ["sol", "sol_double"])
def test_bellman_residual(which, request):
    solution = request.getfixturevalue(which)
    residual = ns.bellman_residual(solution.value, solution.positions, solution.tables)
    assert residual.shape == (2530,) and residual.max() < 1e-10
    top = 2.0 if which == "sol_double" else 1.0
    assert np.abs(solution.value).max() <= top + 1e-12


def test_no_single_deviation_helps(sol):
    tb, pos = sol.tables, sol.positions
    ext = np.append(sol.value, np.inf)
    q = -ext[tb.succ]  # [S, D, M]
    chosen = np.take_along_axis(q, npol._slots_of_actions(tb, sol.policy, pos)[..., None].astype(np.int64), 2)
    assert (q <= chosen + 1e-12).all()  # the one-step deviation check, every decision
    # Whole-game check: a policy that deviates at one decision never scores above 0.5.
    rng = np.random.default_rng(0)
    choices = np.argwhere((tb.num_legal >= 2) & pos.decision[:, None])
    for s, d in choices[rng.choice(len(choices), 15, replace=False)]:
        dev = sol.policy.copy()
        others = [a for a in tb.source[s, d] if a >= 0 and a != sol.policy[s, d]]
        dev[s, d] = others[0]
        assert npol.evaluate_policy(sol, dev, "optimal").points <= 1e-12
        pi, sigma = npol._Policy(sol, dev), npol._Policy(sol, "optimal")
        A, _ = npol._policy_values(sol, pi, sigma, "points")
        assert (A[:-1] <= sol.value + 1e-10).all()


def test_exact_scores(sol):
    self_play = npol.evaluate_policy(sol, "optimal", "optimal")
    assert abs(self_play.score - 0.5) < 1e-12
    vs_random = npol.evaluate_policy(sol, "optimal", "random")
    assert vs_random.score > 0.65 and abs(vs_random.seat_scores[0] - vs_random.seat_scores[1]) < 1e-12
    assert abs(npol.evaluate_policy(sol, "random", "optimal").score - (1 - vs_random.score)) < 1e-12
    # An action table, and the same as probabilities, score exactly like "optimal".
    probs = np.zeros((2530, 6, 8))
    np.put_along_axis(probs, sol.policy[..., None].astype(np.int64), 1.0, axis=2)
    assert abs(npol.evaluate_policy(sol, probs, "random").score - vs_random.score) < 1e-12
    with pytest.raises(ValueError, match="illegal action"):
        npol.evaluate_policy(sol, np.full((2530, 6), 7, np.int8))


@pytest.mark.parametrize(
    "params", [ns.NannonParams(), ns.NannonParams(opening="single_die"), ns.NannonParams(scoring="nannon_double")]
)
def test_exact_evaluator_matches_sampled_games(params):
    solution = ns.solve(params, use_cache=False)
    for policy, opponent in (("optimal", "random"), ("random", "optimal")):
        exact = npol.evaluate_policy(solution, policy, opponent)
        points = npol.sample_games(solution, policy, opponent, 100_000, seed=7)
        wins = (points > 0).mean()
        assert abs(wins - exact.score) <= Z99 * math.sqrt(exact.score * (1 - exact.score) / len(points))
        assert abs(points.mean() - exact.points) <= Z99 * points.std() / math.sqrt(len(points))


def test_optimal_player_in_the_engine(sol):
    """The pyspiel game, the optimal player and the arena agree with the exact score."""
    game = load_game("nannon")
    player = make_player("optimal", game)
    table = npol.tabulate_player(sol, game, player)
    decisions = (sol.tables.num_legal >= 2) & sol.positions.decision[:, None]
    assert (table[decisions] == sol.policy[decisions]).all()
    exact = npol.evaluate_policy(sol, "optimal", "random").score
    res = play_match(game, player, make_player("random", game), 2000, seed=3)
    assert abs(res.score - exact) <= Z99 * math.sqrt(exact * (1 - exact) / 2000)
    with pytest.raises(UsageError, match="needs a nannon game"):
        make_player("optimal", load_game("tic_tac_toe"))


def test_observations_match_the_game(sol):
    game = load_game("nannon")
    pos = sol.positions
    rows = np.random.default_rng(1).choice(np.flatnonzero(pos.decision), 50)
    obs = ns.observations(sol, rows, 5)
    for s, o in zip(rows, obs):
        state = game.new_initial_state()
        state.set_position(
            1,
            5,
            (int(pos.home[pos.mover[s]]), int(pos.mask[pos.mover[s]])),
            (int(pos.home[pos.other[s]]), int(pos.mask[pos.other[s]])),
        )
        assert o.tolist() == state.observation_tensor(1)


# --- cache and CLI -----------------------------------------------------------------------


def test_cache_round_trip_and_corruption(sol):
    first = ns.solve(ns.NannonParams())
    path = ns.cache_path(ns.NannonParams())
    assert path.exists() and not first.info["cached"]
    again = ns.solve(ns.NannonParams())
    assert again.info["cached"] and np.array_equal(again.value, sol.value)
    assert np.array_equal(again.policy, sol.policy)
    path.write_bytes(b"not a npz file")
    redone = ns.solve(ns.NannonParams())
    assert not redone.info["cached"] and np.array_equal(redone.value, sol.value)
    assert not list(path.parent.glob("*.tmp"))


def test_cli_solve(capsys):
    assert main(["solve", "nannon", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "2,530 positions, solved in" in out and "cached at" in out
    assert "first mover, before its roll:     +0.1396" in out
    assert main(["solve", "nannon", "--no-progress"]) == 0
    assert "loaded from the cache" in capsys.readouterr().out
    assert main(["arena", "optimal", "random", "--game", "nannon", "--games", "20", "--no-progress"]) == 0
    assert "score" in capsys.readouterr().out


def test_cli_solve_refuses_other_games(capsys):
    assert main(["solve", "tic_tac_toe"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("polyzero: error: solve knows only nannon games") and "\n" not in err


def test_td_lambda_returns_by_hand_and_learning_beats_random():
    """TD(lambda) baseline (NDMZ paper, Section 4.2): lambda-returns by hand, then a few
    rounds of self-play raise the greedy policy's exact score against random play."""
    import torch

    from polyzero.baselines.td_lambda import TDLambda
    from polyzero.games import load_game
    from polyzero.games.nannon_solver import shared_solution

    sol = shared_solution(load_game("nannon"))
    td = TDLambda(sol, width=64, games_per_round=300, learning_rate=1e-2, seed=0)
    # W = [0.1, -0.2, 0.4, (terminal)], outcome 1, lambda 0.7:
    # G_2 = 1; G_1 = 0.3 * 0.4 + 0.7 * 1 = 0.82; G_0 = 0.3 * -0.2 + 0.7 * 0.82 = 0.514
    assert np.allclose(td.lambda_returns(np.array([0.1, -0.2, 0.4, 9.9]), 1.0), [0.514, 0.82, 1.0])
    games = td.play_round()
    assert len(games) == 300 and all(abs(o) == 1 for _, o in games)
    before = td.evaluate()["vs_random"]
    for _ in range(10):
        td.train_round()
    after = td.evaluate()["vs_random"]
    print(f"TD(lambda) exact score vs random: {before:.3f} -> {after:.3f}")
    assert after >= before + 0.05
    assert np.abs(td.values()[:-1]).max() <= 1.0  # the outcome's range (a linear head diverged)
    with torch.no_grad():
        td.net[1].bias.fill_(float("nan"))
    with pytest.raises(FloatingPointError, match="TD\\(lambda\\) diverged: a non-finite loss in round 11"):
        td.train_round()
