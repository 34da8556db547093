"""The TD(lambda) baseline on Nannon (NDMZ paper, Sections 2.2 and 4.2; Tesauro's
TD-Gammon): an afterstate value network, trained by self-play, that moves greedily
by one-ply lookahead.

- **Afterstates**: V(s) is the value of position s for the side to move there,
  before it rolls (the position a move leaves for the opponent). A player with
  roll d picks the legal move whose successor s' maximises -V(s') (the successor
  is the opponent's to move; a successor where the game is over has its exact
  value). Moves come from the exact solver's move tables (`polyzero.games.
  nannon_solver.Tables`), so a round of games is played in one batch.
- **TD(lambda)** with the paper's lambda = 0.7, gamma = 1, learning rate 0.001 and
  300 self-play games per round: after a round, each game's positions s_0..s_T
  (alternating sides) get the lambda-return targets of the sign-corrected values
  W_t = (-1)^t V(s_t), G_t = (1 - lambda) W_{t+1} + lambda G_{t+1} with G_T the
  outcome, and one SGD step per game on sum_t (G_t - W_t)^2 / 2 — the forward
  view of TD(lambda) with the game's updates accumulated (offline), equal to the
  backward view with eligibility traces summed over the game.
- **Network**: the NDMZ preset's MLP (two hidden layers of 256, SELU, LeCun
  normal) on the game's observation tensor with the die one-hot left at zero, and
  a tanh on its output, so V lies in the outcome's range [-1, 1] as TD-Gammon's
  sigmoid output lies in its [0, 1]. The paper does not name the output; with a
  linear one, bootstrapped targets outside [-1, 1] fed back into ever larger
  errors and 12-5-6's seed 2 reached NaN weights in the 10th game of its first
  round (journal 2026-12-02-nannon-1256-td-divergence). A non-finite loss stops
  training with an error rather than train on.
- **Evaluation**: the greedy policy as an action table, scored exactly against
  the optimal player and random play (`evaluate_policy`).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from ..games.nannon_policies import evaluate_policy
from ..games.nannon_solver import Solution, observations
from ..nets.ndmz import lecun_normal_, selu_mlp


class TDLambda:
    def __init__(
        self,
        sol: Solution,
        width: int = 256,
        layers: int = 2,
        lam: float = 0.7,
        learning_rate: float = 1e-3,
        games_per_round: int = 300,
        seed: int = 0,
    ):
        self.sol = sol
        self.lam = lam
        self.games_per_round = games_per_round
        self.rng = np.random.default_rng(seed)
        torch.manual_seed(seed)
        pos, prm = sol.positions, sol.params
        features = observations(sol, np.array([pos.initial]), 1).shape[1]
        self.net = nn.Sequential(selu_mlp(features, width, layers), nn.Linear(width, 1))
        lecun_normal_(self.net)
        self.net.append(nn.Tanh())  # V in [-1, 1], the outcome's range (no parameters)
        self.optimizer = torch.optim.SGD(self.net.parameters(), lr=learning_rate)
        obs = observations(sol, np.arange(pos.size), 1)
        obs[:, 2 * prm.points + 4 * (prm.checkers + 1) : -1] = 0.0  # afterstates: no roll yet
        self.features = torch.from_numpy(obs)
        self.terminal, self.terminal_value = pos.terminal_values()
        self.rounds = 0
        self.games = 0

    # -- values and the greedy policy ------------------------------------------------
    def values(self, rows: np.ndarray | None = None) -> np.ndarray:
        """V for the side to move at each position (exact where the game is over);
        index S (the move tables' padding) is -inf for the mover's lookahead."""
        with torch.no_grad():
            v = self.net(self.features if rows is None else self.features[rows]).squeeze(1).numpy()
        if rows is None:
            v = np.where(self.terminal, self.terminal_value, v)
            return np.append(v, np.inf)  # padding successor: -V = -inf, never chosen
        return np.where(self.terminal[rows], self.terminal_value[rows], v)

    def greedy_slots(self, value: np.ndarray) -> np.ndarray:
        """[S, D] the move slot maximising -V(successor)."""
        return np.argmax(-value[self.sol.tables.succ], axis=2)

    def policy_table(self) -> np.ndarray:
        """[S, D] action ids of the greedy policy (for `evaluate_policy`)."""
        slots = self.greedy_slots(self.values())
        return np.take_along_axis(self.sol.tables.source, slots[..., None], axis=2)[..., 0].astype(np.int64)

    def evaluate(self) -> dict:
        table = self.policy_table()
        out = {}
        for opponent in ("optimal", "random"):
            score = evaluate_policy(self.sol, table, opponent)
            out[f"vs_{opponent}"] = score.score
        return out

    # -- self-play and learning ----------------------------------------------------------
    def play_round(self) -> list[tuple[np.ndarray, float]]:
        """`games_per_round` greedy self-play games at once: per game, its positions
        (each seen by the side to move) and the outcome for the side to move at the first."""
        tb, pos, prm = self.sol.tables, self.sol.positions, self.sol.params
        slots = self.greedy_slots(self.values())
        n, D = self.games_per_round, prm.die_sides
        rows = np.full(n, pos.initial)
        if prm.opening == "difference":
            rolloff = self.rng.choice(
                2 * (D - 1), size=n, p=[(D - d) / (D * (D - 1)) for _ in range(2) for d in range(1, D)]
            )
            rolls = rolloff % (D - 1) + 1
        else:
            rolls = self.rng.integers(1, D + 1, n)
        history = [[int(r)] for r in rows]
        outcome = np.zeros(n)
        live = np.arange(n)
        while len(live):
            nxt = tb.succ[rows[live], rolls[live] - 1, slots[rows[live], rolls[live] - 1]].astype(np.int64)
            over = self.terminal[nxt]
            for g, s in zip(live, nxt):
                history[g].append(int(s))
            done = live[over]
            # the game ended at a position whose side to move lost: the first mover's outcome
            plies = np.array([len(history[g]) - 1 for g in done])
            outcome[done] = np.where(plies % 2 == 1, -1, 1) * self.terminal_value[nxt[over]]
            live, nxt = live[~over], nxt[~over]
            rows[live] = nxt
            rolls[live] = self.rng.integers(1, D + 1, len(live))
        self.games += n
        return [(np.array(h), float(o)) for h, o in zip(history, outcome)]

    def lambda_returns(self, values: np.ndarray, outcome: float) -> np.ndarray:
        """G_t for t < T from sign-corrected values W_t (W_T unused: the outcome ends the game)."""
        T = len(values) - 1
        g = np.empty(T)
        acc = outcome  # G_{T-1}: one move from the end, every n-step return is the outcome
        for t in range(T - 1, -1, -1):
            if t + 1 < T:
                acc = (1 - self.lam) * values[t + 1] + self.lam * acc
            g[t] = acc
        return g

    def learn(self, games: list[tuple[np.ndarray, float]]) -> float:
        """One SGD step per game on its lambda-return errors; returns the mean squared error."""
        errors = []
        self.net.train()
        for positions, outcome in games:
            sign = np.where(np.arange(len(positions)) % 2 == 0, 1.0, -1.0)
            v = self.net(self.features[positions]).squeeze(1)
            w = v * torch.from_numpy(sign).float()
            targets = self.lambda_returns(w.detach().numpy().astype(float), outcome)
            loss = 0.5 * ((torch.from_numpy(targets).float() - w[:-1]) ** 2).sum()
            total = loss.item()
            if not math.isfinite(total):
                raise FloatingPointError(f"TD(lambda) diverged: a non-finite loss in round {self.rounds + 1}")
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            errors.append(2 * total / max(len(targets), 1))
        self.net.eval()
        self.rounds += 1
        return float(np.mean(errors))

    def train_round(self) -> float:
        return self.learn(self.play_round())
