"""Nondeterministic MuZero (NDMZ paper, Sections 3-4 and Appendix A).

MuZero extended to games with chance events: the model learns who acts (the
identity policy of g over N = {0, 1, chance, terminal}) and how chance acts
(the chance policy of f), and the search (:mod:`polyzero.search.ndmz`) plans
through learned chance and terminal nodes. Self-play records every chance event
(:attr:`Trajectory.chance`), so that the unroll steps through chance steps as
the game did; the loss is Eq. 1,

    l = sum_{k=0..K} l^r(u, r^k) + l^v(z, v^k) + l^p(pi, p^k) + l^c(psi, c^k) + l^i(iota, i^k),

squared errors for value and reward (k >= 1), cross-entropies for the three
policies over the full action set (identity from k = 1: g makes it), without
MuZero's 1/K and 1/2 gradient scaling (Section 4.2); c ||theta||^2 is the
learner's. Targets are no-op for a policy whose player is not to move, and
the step past a terminal state takes the terminal player's end action.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from ..config import RunConfig
from ..errors import UsageError
from ..games import GameRequirements, ObservationEncoder, legal_action_mask
from ..nets.ndmz import CHANCE, TERMINAL, ActionLayout, NDMZInference, NDMZNet, NDMZSpec
from ..replay import NDMZReplay
from ..search.mcts import SearchHooks
from ..search.ndmz import ndmz_search
from ..search.params import SearchParams
from .base import Trajectory


def trajectory_steps(
    traj: Trajectory, layout: ActionLayout, num_players: int = 2, cut: bool = False
) -> dict[str, np.ndarray]:
    """A finished self-play game as NDMZ steps: each decision t followed by the chance
    events played after its move, and a terminal step when the game ended (not when it
    was `cut` at selfplay.max_moves: its losses past the cut are then masked)."""
    a = layout.size
    noop = np.zeros(a, np.float32)
    noop[layout.noop] = 1.0
    n = len(traj.actions)
    done = traj.returns is not None and not cut
    returns_before = np.asarray(traj.returns_before, np.float64)
    final = (
        np.asarray(traj.returns, np.float64)
        if traj.returns is not None
        else np.full(num_players, returns_before[-1] if n else 0.0)
    )
    obs_shape = np.asarray(traj.observations[0]).shape if n else (0,)
    chance = traj.chance if len(traj.chance) == n else [[] for _ in range(n)]
    keys = ("obs", "action", "identity", "policy", "chance_policy", "outcome", "root_value", "reward", "sampleable")
    rows = {k: [] for k in keys}
    nu = traj.root_values if len(traj.root_values) == n else [0.0] * n

    def push(obs, action, identity, choice, chance_t, value, reward, sampleable, root_value=0.0):
        rows["obs"].append(obs)
        rows["action"].append(action)
        rows["identity"].append(identity)
        rows["policy"].append(choice)
        rows["chance_policy"].append(chance_t)
        rows["outcome"].append(value)
        rows["root_value"].append(root_value)  # the search value nu_t at choice steps
        rows["reward"].append(reward)
        rows["sampleable"].append(sampleable)

    blank = np.zeros(obs_shape, np.float32)
    for t in range(n):
        player = int(traj.players[t])
        outcome = float(final[player] - returns_before[t])
        policy = np.zeros(a, np.float32)
        policy[: layout.choice] = np.asarray(traj.policies[t], np.float32)[: layout.choice]
        obs_t = np.asarray(traj.observations[t], np.float32)
        push(obs_t, int(traj.actions[t]), player, policy, noop, outcome, 0.0, True, float(nu[t]))
        for outcome_id, dist in chance[t]:
            psi = np.zeros(a, np.float32)
            for o, p in dist:
                psi[layout.chance_action(o)] = p
            push(blank, layout.chance_action(outcome_id), CHANCE, noop, psi, outcome, 0.0, False)
    if done and n:
        last = int(traj.players[-1])
        # The last mover's reward over its move and the chance events after it.
        push(
            blank,
            layout.end,
            TERMINAL,
            noop,
            noop,
            float(final[last] - returns_before[-1]),
            float(final[last] - returns_before[-1]),
            False,
        )
    out = {k: np.asarray(v) for k, v in rows.items()}
    out["obs"] = out["obs"].astype(np.float32)
    out["policy"] = out["policy"].astype(np.float32).reshape(-1, a)
    out["chance_policy"] = out["chance_policy"].astype(np.float32).reshape(-1, a)
    out["outcome"] = out["outcome"].astype(np.float32)
    out["root_value"] = out["root_value"].astype(np.float32)
    out["reward"] = out["reward"].astype(np.float32)
    out["done"] = np.array([done])
    return out


class NDMZ:
    name = "ndmz"
    # Two choice players plus chance (N = {1, 2, c, d}); board games with outcomes at the end.
    requirements = GameRequirements(chance_nodes=True, single_player=False)

    def __init__(self, cfg: RunConfig, game):
        self.cfg = cfg
        self.nd = cfg.ndmz
        self.unroll_steps = self.nd.unroll_steps  # a learned model (what `polyzero probe` reads)
        self.game = game
        self.encoder = ObservationEncoder(game, cfg.net.perspective)
        self.layout = ActionLayout.of(game)
        self.num_actions = game.num_distinct_actions()  # the choice actions: what self-play records
        self.num_players = game.num_players()
        self.last_search = None
        if cfg.search.leaf_batch > 1:
            raise UsageError(
                "search.leaf_batch > 1 is not available with algo ndmz: its iterations "
                "expand identity and chance nodes that back nothing up (use leaf_batch = 1)"
            )

    # ------------------------------------------------------------ network and search
    def build_network(self) -> NDMZNet:
        spec = NDMZSpec(width=self.cfg.net.width, layers=self.cfg.net.layers, hidden_size=self.nd.hidden_size)
        return NDMZNet(int(np.prod(self.encoder.shape)), self.layout, spec)

    def make_evaluator(self, net: torch.nn.Module, device, selfplay: bool = False) -> NDMZInference:
        """One evaluator for self-play and for evaluation: `selfplay` changes nothing here."""
        return NDMZInference(net, device, self.cfg.net.inference)

    def encode(self, states: Sequence) -> np.ndarray:
        return self.encoder.encode(states)

    def search(
        self,
        evaluate: NDMZInference,
        states: Sequence,
        params: SearchParams,
        rng: np.random.Generator,
        add_noise: bool,
        hooks: SearchHooks | None = None,
    ):
        """Appendix A's search (pUCT with `ndmz.c_puct`; a run refuses the [search] keys
        it does not read, `polyzero.algos.ndmz_config.unread`)."""
        legal = legal_action_mask(states, self.num_actions)
        # Identities are relative to the root's player (polyzero.replay.ndmz): it is player 0.
        players = np.zeros(len(states), np.int32)
        result = ndmz_search(
            evaluate,
            self.encode(states),
            legal,
            players,
            self.layout,
            params.num_simulations,
            self.nd.c_puct,
            rng,
            dirichlet_alpha=params.dirichlet_alpha,
            dirichlet_fraction=params.dirichlet_fraction if add_noise else 0.0,
            hooks=hooks,
        )
        # A root that no iteration backed up to (possible with very few simulations)
        # counts one visit per legal action, so that a move can always be read off.
        empty = result.root_visits.sum(1) == 0
        result.root_visits[empty] = legal[empty]
        self.last_search = result
        return result

    # ------------------------------------------------------------ training data
    def make_replay(self) -> NDMZReplay:
        return NDMZReplay(
            self.cfg.train.replay_size, self.encoder.shape, self.layout, self.nd.unroll_steps, self.nd.td_steps
        )

    def trajectory_examples(self, traj: Trajectory) -> dict[str, np.ndarray]:
        cut = traj.returns is not None and not traj.ended  # stopped at selfplay.max_moves
        return trajectory_steps(traj, self.layout, self.num_players, cut=cut)

    def loss(self, net: NDMZNet, batch: dict[str, torch.Tensor]):
        """The NDMZ loss (Section 3.2): value, choice and chance policy at every step
        k = 0..K, identity and reward at k >= 1, masked past the end. g runs K times in
        turn; f (an MLP, no batch statistics) and every loss term run on all K + 1 steps
        at once ([K + 1, B, ...])."""
        k_steps = batch["actions"].shape[1]
        by_step = lambda x: x.transpose(0, 1)  # noqa: E731 -- [B, K + 1, ...] -> [K + 1, B, ...]
        mask = by_step(batch["mask"])
        s = net.represent(batch["obs"])
        states, rewards, idents = [s], [], []
        for k in range(k_steps):
            reward, s, ident = net.dynamics(s, batch["actions"][:, k])
            states.append(s)
            rewards.append(reward)
            idents.append(ident)
        p, c, v = (x.unflatten(0, (k_steps + 1, -1)) for x in net.predict(torch.cat(states)))
        idents = torch.stack(idents)  # [K, B, 4]
        l_i = (
            F.cross_entropy(
                idents.flatten(0, 1), by_step(batch["target_identity"])[1:].flatten(), reduction="none"
            ).view(k_steps, -1)
            * mask[1:]
        )
        l_r = (torch.stack(rewards) - by_step(batch["target_reward"])[1:]) ** 2 * mask[1:]
        l_v = (v - by_step(batch["target_value"])) ** 2 * mask
        l_p = -(by_step(batch["target_policy"]) * F.log_softmax(p, -1)).sum(-1) * mask
        l_c = -(by_step(batch["target_chance"]) * F.log_softmax(c, -1)).sum(-1) * mask
        total = (l_v + l_p + l_c).sum(0) + (l_i + l_r).sum(0)
        parts = {"value": l_v, "policy": l_p, "chance": l_c, "identity": l_i, "reward": l_r}
        out = {f"loss/{name}": x.mean(1).sum() / (k_steps + 1) for name, x in parts.items()}
        return (total * batch["weight"]).mean(), out


def nannon_raw_policy(sol, net: NDMZNet) -> np.ndarray:
    """int [S, D]: the move the raw choice policy f(h(o)) ranks first among the legal ones,
    at every Nannon position and roll, for `polyzero.games.nannon_policies.evaluate_policy`."""
    from ..games.nannon_solver import observations

    pos, tb = sol.positions, sol.tables
    table = tb.source[:, :, 0].astype(np.int8).copy()
    rows = np.flatnonzero(pos.decision)
    net = net.eval()
    for d in range(sol.params.die_sides):
        with torch.inference_mode():
            logits = net(torch.from_numpy(observations(sol, rows, d + 1)))[0].numpy()
        src = tb.source[rows, d].astype(np.int64)
        score = np.where(tb.legal[rows, d], np.take_along_axis(logits, np.maximum(src, 0), axis=1), -np.inf)
        best = np.take_along_axis(src, score.argmax(1)[:, None], axis=1)[:, 0]
        table[rows, d] = np.where(tb.num_legal[rows, d] >= 1, best, table[rows, d])
    return table
