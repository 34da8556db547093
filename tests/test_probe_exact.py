"""`polyzero probe` against a game's exact values (Nannon 6-3-6; polyzero.train.probe_exact)."""

import numpy as np
import pytest
import torch

from polyzero.games import load_game
from polyzero.games.nannon_solver import moves, observations, shared_solution
from polyzero.train.probe import probe, record_games

GAME = "nannon"  # 6-3-6


@pytest.fixture(scope="module")
def solved():
    game = load_game(GAME)
    return game, shared_solution(game)


def _decision(game, player: int, roll: int, mine, theirs):
    state = game.new_initial_state()
    state.set_position(player, roll, mine, theirs)
    return state


def test_exact_values_on_positions_checked_by_hand(solved):
    game, sol = solved
    # Player 1 to move with roll 1, one checker on its point 6 (the other two in SAFETY),
    # player 0 all at HOME: the only move bears off and wins, 1 point.
    win = _decision(game, 1, 1, (0, 0b100000), (3, 0))
    assert win.legal_actions() == [6]
    assert sol.move_values(win) == {6: 1.0}
    assert sol.state_value(win, 1) == 1.0 and sol.state_value(win, 0) == -1.0
    # The same before its roll: every roll bears that checker off.
    before = _decision(game, 1, 0, (0, 0b100000), (3, 0))
    assert before.is_chance_node() and sol.state_value(before, 1) == 1.0 and sol.state_value(before, 0) == -1.0
    # Player 0 all at HOME, player 1's last checker on its point 6 (player 0's point 1):
    # with roll 6 player 0 can only enter on its point 6, and any roll bears player 1 off,
    # so the game is lost (-1); with roll 1 it enters on point 1 and hits that checker.
    lost = _decision(game, 0, 6, (3, 0), (0, 0b100000))
    assert sol.move_values(lost) == {0: -1.0} and sol.state_value(lost, 0) == -1.0
    assert sol.state_value(lost, 1) == 1.0
    hit = _decision(game, 0, 1, (3, 0), (0, 0b100000))
    assert list(sol.move_values(hit)) == [0] and -1.0 < sol.state_value(hit, 0) < 1.0
    # The game over: the returns.
    done = game.new_initial_state()
    done.set_position(0, 0, (0, 0), (0, 0b1))  # player 0 has all three in SAFETY
    assert done.is_terminal() and sol.state_value(done, 0) == 1.0 and sol.state_value(done, 1) == -1.0


def test_a_rolls_value_is_the_mean_of_the_decisions_after_it(solved):
    """The sign convention at chance and decision steps agrees: V(before the roll) is the
    mean over rolls of the mover's best move value, for both players' views."""
    game, sol = solved
    steps = record_games(game, lambda s: np.zeros((len(s), 1)), 3, seed=4)
    assert steps.exact_value == [] or np.isnan(steps.exact_value).all()  # no solution passed
    rng = np.random.default_rng(0)
    state, checked = game.new_initial_state(), 0
    while not state.is_terminal():
        if state.is_chance_node():
            if state.turn is not None:
                after = []
                for d in range(1, 7):
                    child = state.clone()
                    child.apply_action(d - 1)
                    after.append(sol.state_value(child, state.turn))
                assert sol.state_value(state, state.turn) == pytest.approx(np.mean(after), abs=1e-12)
                assert sol.state_value(state, 1 - state.turn) == pytest.approx(-np.mean(after), abs=1e-12)
                checked += 1
            outcomes = state.chance_outcomes()
            state.apply_action(outcomes[rng.integers(len(outcomes))][0])
        else:
            legal = state.legal_actions()
            state.apply_action(legal[rng.integers(len(legal))])
    assert checked >= 5


class _ExactModel(torch.nn.Module):
    """A stand-in NDMZ network whose model is the game itself: the hidden state is
    (position index, roll, kind, who: 0 the unroll's first mover, 1 the other; at a roll
    the one to roll), g the true successor and who acts there, and f the exact value and
    an optimal move."""

    def __init__(self, sol, layout):
        super().__init__()
        self.sol, self.layout = sol, layout
        self.by_obs = {}
        rows = np.flatnonzero(sol.positions.decision)
        for d in range(1, sol.params.die_sides + 1):
            for row, obs in zip(rows, observations(sol, rows, d)):
                self.by_obs[obs.tobytes()] = (row, d)

    def represent(self, obs):
        out = [(*self.by_obs[np.asarray(o, np.float32).tobytes()], 0, 0) for o in obs.numpy()]
        return torch.tensor(out, dtype=torch.float64)

    def _q(self, s, d):
        return {a: -self.sol.value[t] for a, t in moves(self.sol.positions, s, d)}

    def predict(self, h):
        a, rolls = self.layout.size, self.layout.choice + np.arange(self.sol.params.die_sides)
        p, v, c = np.zeros((len(h), a)), np.zeros(len(h)), np.full((len(h), a), -50.0)
        c[:, rolls] = 0.0  # the ordinary rolls, equally likely; the roll-off's outcomes ~0
        for i, (s, d, kind, _) in enumerate(h.numpy().astype(int)):
            if kind == 0:  # a decision: the mover's best move value; the optimal move first
                q = self._q(s, d)
                v[i] = max(q.values())
                p[i, self.sol.policy[s, d - 1]] = 10.0
            else:  # a chance or terminal step: the last mover's value, -V(s) seen by the next
                v[i] = -self.sol.value[s]
        return torch.from_numpy(p), torch.from_numpy(c), torch.from_numpy(v)

    def dynamics(self, h, action):
        out, ident = [], torch.zeros(len(h), 4)
        for (s, d, kind, who), a in zip(h.numpy().astype(int), action.numpy()):
            if kind == 0:  # the move's successor, seen by the opponent, who rolls next
                t = dict(moves(self.sol.positions, s, d))[int(a)]
                over = self.sol.positions.safe[self.sol.positions.other[t]] == self.sol.params.checkers
                out.append((t, 0, 2 if over else 1, 1 - who))
                ident[len(out) - 1, 3 if over else 2] = 1.0  # the game over, or chance
            elif kind == 1 and int(a) - self.layout.choice < self.sol.params.die_sides:  # a roll: a decision
                out.append((s, int(a) - self.layout.choice + 1, 0, who))
                ident[len(out) - 1, who] = 1.0
            else:  # the game over, or a roll-off outcome (never taken here)
                out.append((s, 0, 2, who))
                ident[len(out) - 1, 3] = 1.0
        return torch.zeros(len(h)), torch.tensor(out, dtype=torch.float64), ident


def test_the_exact_metrics_are_zero_for_the_exact_model_and_not_for_an_untrained_one(solved):
    from polyzero.algos import make_algorithm
    from polyzero.config import build_config

    game, sol = solved
    algo = make_algorithm(build_config(GAME, "ndmz", None, []), game)
    steps = record_games(game, algo.encode, 20, seed=3, ndmz_layout=algo.layout, exact=sol)
    exact = probe(_ExactModel(sol, algo.layout), steps, 4, ndmz_layout=algo.layout)["metrics"]
    for k in range(5):
        errors = ("value_vs_exact", "move_value_vs_exact", "roll_value_vs_exact", "regret_exact")
        errors += ("greedy_regret_exact", "roll_regret_exact")
        for name in errors if k % 2 == 0 else ("chance_value_vs_exact",):
            assert exact[name][k] == pytest.approx(0.0, abs=1e-9), (name, k)
        if k % 2 == 0:
            assert exact["agree_exact"][k] == exact["greedy_agree_exact"][k] == exact["roll_agree_exact"][k] == 1.0
        if k == 0:  # the value head on the true positions after each move and roll (no g)
            assert exact["real_roll_value_vs_exact"][0] == pytest.approx(0.0, abs=1e-9)
            assert exact["real_roll_agree_exact"][0] == 1.0 and exact["real_roll_regret_exact"][0] == 0.0
        if k:  # who acts, the choice players named relative to the unroll's first (polyzero.replay.ndmz)
            assert exact["identity_acc"][k] == 1.0, k
    torch.manual_seed(0)
    untrained = probe(algo.build_network(), steps, 4, ndmz_layout=algo.layout)["metrics"]
    for k in (0, 2):
        assert untrained["value_vs_exact"][k] > 0.1 and untrained["move_value_vs_exact"][k] > 0.1
        assert untrained["roll_value_vs_exact"][k] > 0.1 and untrained["roll_regret_exact"][k] > 0.01
        assert untrained["regret_exact"][k] > 0.01 and untrained["agree_exact"][k] < 0.9
    assert untrained["chance_value_vs_exact"][1] > 0.1 and untrained["real_roll_value_vs_exact"][0] > 0.1
    assert untrained["real_roll_regret_exact"][0] > 0.01 and untrained["real_roll_value_vs_exact"][2] is None
