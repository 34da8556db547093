"""AlphaZero (Go-Exploit paper, Section 2; MuZero paper, Appendix A).

f_theta(s) = (p, v) guides a search that steps the real game; self-play
produces (s_t, pi_t, z) and the network minimises
(z - v)^2 - pi^T log p + c ||theta||^2.

With ``search.kind`` "gumbel" or "full_gumbel" this is Gumbel AlphaZero: pi_t is
the search's pi' (Gumbel paper, Eq. 11), so the same cross-entropy is
KL(pi', p) up to a constant (Eq. 12), or -log p(A_{n+1}) with
``search.policy_loss = "simple"`` (Eq. 9).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from ..config import RunConfig
from ..games import GameRequirements, ObservationEncoder
from ..games.symmetry import board_symmetries
from ..nets.alphazero import NetSpec, PolicyValueNet
from ..nets.inference import Evaluator
from ..nets.winograd import chosen_tile
from ..replay import ReplayBuffer
from ..replay.gather import SymmetricGather
from ..search.mcts import SearchHooks, SearchResult, search
from ..search.params import SearchParams
from .base import Trajectory
from .simulator import SimulatorModel


class AlphaZero:
    name = "alphazero"
    # Two-player zero-sum or one-player, sequential, perfect information; explicit
    # chance nodes are searched with their known probabilities (simulator.py).
    requirements = GameRequirements(chance_nodes=True)

    def __init__(self, cfg: RunConfig, game):
        self.cfg = cfg
        self.game = game
        self.encoder = ObservationEncoder(game, cfg.net.perspective)
        self.num_actions = game.num_distinct_actions()
        self.num_players = game.num_players()

    def build_network(self) -> torch.nn.Module:
        return PolicyValueNet(
            self.encoder.shape, self.num_actions, NetSpec.from_config(self.cfg.net, self.encoder.shape)
        )

    def make_evaluator(self, net: torch.nn.Module, device, selfplay: bool = False) -> Evaluator:
        """What `search` calls the network through (NumPy in, NumPy out); `selfplay`: for
        self-play's batched searches, whose default convolution (`net.winograd = "auto"`,
        polyzero.nets.winograd.chosen_tile) is not evaluation's and play's."""
        sp = self.cfg.selfplay
        games = sp.concurrent_games if selfplay else 0  # the rows of an actor's calls (more when shared)
        if sp.shared_inference and sp.inference_max_batch:
            games = min(games, sp.inference_max_batch)  # the service's forwards take no more
        tile = chosen_tile(self.cfg.net.winograd, net, games)
        return Evaluator(net, device, self.cfg.net.inference, self.cfg.net.cache, tile)

    def encode(self, states: Sequence) -> np.ndarray:
        return self.encoder.encode(states)

    def search(
        self,
        evaluate,
        states: Sequence,
        params: SearchParams,
        rng: np.random.Generator,
        add_noise: bool,
        hooks: SearchHooks | None = None,
    ) -> SearchResult:
        model = SimulatorModel(
            [s.clone() for s in states],
            self.encoder,
            evaluate,
            self.num_actions,
            params.discount,
            rng=rng,
            width=self.game.max_chance_outcomes(),
        )
        result = search(model, params, rng, add_noise=add_noise, hooks=hooks)
        if model.num_actions == self.num_actions:
            return result
        # A tree widened for chance outcomes: the root is a decision, so only its first A columns count.
        a = self.num_actions
        return dataclasses.replace(
            result,
            root_prior=result.root_prior[:, :a],
            root_visits=result.root_visits[:, :a],
            root_q=result.root_q[:, :a],
            policy_target=None if result.policy_target is None else result.policy_target[:, :a],
        )

    # ------------------------------------------------------------ training data
    def example_specs(self):
        return {
            "obs": (tuple(self.encoder.shape), np.float32),
            "policy": ((self.num_actions,), np.float32),
            "outcome": ((), np.float32),
        }

    def make_replay(self) -> ReplayBuffer:
        """Uniform replay of (s, pi, z) positions (Go-Exploit Table 4's |B|), each sampled
        example under a random board symmetry with `train.symmetries`."""
        symmetries = board_symmetries(self.game, self.encoder.shape) if self.cfg.train.symmetries else []
        transform = SymmetricGather(symmetries) if symmetries else None  # `augment`'s arrays, one pass each
        return ReplayBuffer(self.cfg.train.replay_size, self.example_specs(), transform)

    def trajectory_examples(self, traj: Trajectory) -> dict[str, np.ndarray]:
        """(s_t, pi_t, z): z is what the mover at t went on to receive (the final
        outcome in games with terminal rewards only)."""
        z = np.asarray([traj.returns[p] - before for p, before in zip(traj.players, traj.returns_before)], np.float32)
        return {
            "obs": np.asarray(traj.observations, np.float32),
            "policy": np.asarray(traj.policies, np.float32),
            "outcome": z,
        }

    def loss(self, net: torch.nn.Module, batch: dict[str, torch.Tensor]):
        """(z - v)^2 - pi^T log p (the L2 term c ||theta||^2 is added by the learner)."""
        logits, value = net(batch["obs"])
        outcome = batch["outcome"]
        # F.mse_loss's kernel without the wrapper's broadcast_tensors where the shapes agree
        # (the same numbers; two views and their backward nodes fewer)
        value_loss = (
            torch._C._nn.mse_loss(value, outcome, 1) if value.shape == outcome.shape else F.mse_loss(value, outcome)
        )  # reduction 1: "mean"
        policy_loss = -(batch["policy"] * F.log_softmax(logits, dim=-1)).sum(-1).mean()
        return value_loss + policy_loss, {"loss/value": value_loss, "loss/policy": policy_loss}
