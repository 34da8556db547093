"""MuZero: planning with a learned model (MuZero paper, Sections 3-4, Appendices A-H).

The search is the shared batched core stepping the dynamics function g
instead of the game (`search.learned.LearnedModel`): legal actions are masked
at the root only and nothing inside the tree is terminal (Appendix A). The
network is trained on K-step unrolls of replayed trajectories with the loss of
Eq. 1,

    l = sum_k l^p(pi_{t+k}, p^k) + l^v(z_{t+k}, v^k) + l^r(u_{t+k}, r^k) + c ||theta||^2,

scalar squared errors for board games (no reward loss, Appendix G) and
cross-entropies on the categorical support for single-agent environments
(Appendix F); the losses of unrolled steps are scaled by 1/K and the gradient
entering the dynamics function by 1/2 (Appendix G).

With `muzero.consistency_weight` > 0 (not in the MuZero paper) the loss adds
EfficientZero's temporal consistency term (Ye et al. 2021, Section 4.1): at
each unrolled step, -cos(P(proj(s^k)), sg(proj(h(o_{t+k})))), SimSiam's
negative cosine similarity with the stored observation's representation as a
stop-gradient target, scaled like the other unrolled terms. EfficientZero's other
two switches, for single-agent games: `muzero.value_prefix` (Section 4.2) makes
the reward outputs value prefixes of an LSTM over the unroll
(`polyzero/nets/value_prefix.py`), and `muzero.off_policy_correction`
(Section 4.3) shortens the n-step targets of old samples
(`SequenceReplay.bootstrap_steps`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from ..config import RunConfig
from ..errors import UsageError
from ..games import GameRequirements, ObservationEncoder, legal_action_mask
from ..games.symmetry import action_planes, augment, board_symmetries
from ..nets.alphazero import NetSpec
from ..nets.muzero import MuZeroInference, MuZeroNet, MuZeroSpec
from ..nets.support import scalar_to_support
from ..replay import SequenceReplay
from ..search.learned import LearnedModel
from ..search.mcts import SearchHooks, SearchResult, search
from ..search.params import SearchParams
from .base import Trajectory


def scale_gradient(x: torch.Tensor, scale: float) -> torch.Tensor:
    """Identity forward; the gradient flowing back is multiplied by `scale`."""
    return x * scale + x.detach() * (1.0 - scale)


class MuZero:
    name = "muzero"
    # The game class AlphaZero plays, plus single-agent environments whose
    # start and dynamics are random (they need no simulator inside the search).
    requirements = GameRequirements(sampled_stochastic=True)

    @staticmethod
    def data_sources(cfg: RunConfig) -> tuple[str, ...]:
        """Reanalyze (Appendix H) beside self-play when muzero.reanalyse_fraction > 0."""
        return ("reanalyse",) if cfg.muzero.reanalyse_fraction > 0 else ()

    def __init__(self, cfg: RunConfig, game):
        self.cfg = cfg
        self.mz = cfg.muzero
        self.unroll_steps = self.mz.unroll_steps  # a learned model (what `polyzero probe` reads)
        self.terminal_reward = self.mz.terminal_reward
        self.game = game
        self.encoder = ObservationEncoder(game, cfg.net.perspective)
        self.num_actions = game.num_distinct_actions()
        self.num_players = game.num_players()
        self.single_agent = self.num_players == 1
        # Edge discount with mctx's sign convention: -1 between alternating players.
        self.edge_discount = self.mz.discount if self.single_agent else -1.0
        # Single-agent episodes enter replay in chunks (Appendix D; board games whole),
        # each with the K + n positions of look-ahead its targets read.
        self.chunk_length = self.mz.chunk_length if self.single_agent else 0
        self.chunk_overlap = self.mz.unroll_steps + self.mz.td_steps
        self._hidden_store = None  # the last search's hidden states, reused by the next
        if self.mz.value_prefix and not self.single_agent:
            raise UsageError(
                f"muzero.value_prefix needs intermediate rewards; {cfg.game} is a "
                "board game, rewarded only at its end (switch it off)"
            )
        if self.mz.off_policy_correction and not self.single_agent:
            raise UsageError(
                f"muzero.off_policy_correction shortens n-step value targets; {cfg.game} is a "
                "board game, whose value targets are its final outcome (switch it off)"
            )
        self.prefix_horizon = self.mz.value_prefix_horizon if self.mz.value_prefix else 0
        # Self-play keeps each finished game's final position (muzero.consistency_terminal,
        # muzero.terminal_value).
        self.records_final_observation = (
            self.mz.consistency_terminal or self.mz.terminal_value
        ) and not self.single_agent

    # ------------------------------------------------------------ network and search
    def build_network(self) -> MuZeroNet:
        net = NetSpec.from_config(self.cfg.net, self.encoder.shape)
        spec = MuZeroSpec(
            net=net,
            hidden_size=self.mz.hidden_size,
            support=self.mz.support if self.single_agent else 0,
            scale_hidden=self.mz.scale_hidden,
            downsample=self._downsample(net.kind),
            zero_init_heads=self.mz.zero_init_heads,
            unroll_norm=self.mz.unroll_norm,
            consistency=self.mz.consistency_weight > 0,
            terminal_reward=self.mz.terminal_reward and not self.single_agent,
            dynamics_blocks=self.mz.dynamics_blocks,
            value_prefix_horizon=self.prefix_horizon,
            prefix_discount=self.mz.discount,
        )
        spatial = self.mz.action_planes == "game" and not spec.downsample  # planes at the board's size
        planes = action_planes(self.game, self.encoder.shape) if spatial else None
        return MuZeroNet(self.encoder.shape, self.num_actions, spec, planes)

    def _downsample(self, kind: str) -> bool:
        """Appendix F's downsampling for image inputs: `auto` when frames are 32 x 32 or more."""
        if kind != "resnet" or self.mz.downsample == "off":
            return False
        return self.mz.downsample == "on" or min(self.encoder.shape[1:]) >= 32

    def make_evaluator(self, net: torch.nn.Module, device, selfplay: bool = False) -> MuZeroInference:
        """One evaluator for self-play and for evaluation: `selfplay` changes nothing here."""
        return MuZeroInference(net, device, self.cfg.net.inference)

    def encode(self, states: Sequence) -> np.ndarray:
        return self.encoder.encode(states)

    def search(
        self,
        evaluate: MuZeroInference,
        states: Sequence,
        params: SearchParams,
        rng: np.random.Generator,
        add_noise: bool,
        hooks: SearchHooks | None = None,
    ) -> SearchResult:
        legal = legal_action_mask(states, self.num_actions)
        return self.search_observations(evaluate, self.encode(states), legal, params, rng, add_noise, hooks)

    def search_observations(
        self,
        evaluate: MuZeroInference,
        obs: np.ndarray,
        legal: np.ndarray,
        params: SearchParams,
        rng: np.random.Generator,
        add_noise: bool,
        hooks: SearchHooks | None = None,
    ) -> SearchResult:
        """Search from encoded observations alone (self-play, and Reanalyze on stored positions)."""
        hidden, logits, value = evaluate.initial(obs)
        model = LearnedModel(
            logits,
            value,
            hidden,
            evaluate.recurrent,
            discount=self.edge_discount,
            root_legal=legal,
            num_nodes=params.num_simulations + 1,
            store=self._hidden_store,
            program=getattr(evaluate, "program", None),
            fuse=getattr(evaluate, "fuse", "auto"),
        )
        result = search(model, params, rng, add_noise=add_noise, hooks=hooks)
        self._hidden_store = model.hidden  # the next search writes into mapped memory
        return result

    def encode_final(self, state, last_mover: int) -> np.ndarray:
        """A finished game's final position (muzero.consistency_terminal, terminal_value) as
        the side that would move next sees it: the perspective of the unroll's step after the
        last move.
        (The encoder gives a terminal state player 0's view, which for a game the first
        player ended is the wrong side's.)"""
        return self.encoder.encode([state], players=[(last_mover + 1) % self.num_players])[0]

    def acting_temperature(self, step: int) -> float:
        """Appendix D: for single-agent environments T = 1, 0.5, 0.25 after 50% and 75% of
        the training steps; board games keep the configured temperature."""
        base = self.cfg.selfplay.temperature
        if not (self.single_agent and self.mz.temperature_schedule):
            return base
        done = step / max(self.cfg.train.steps, 1)
        return base if done < 0.5 else base * 0.5 if done < 0.75 else base * 0.25

    # ------------------------------------------------------------ training data
    def make_replay(self) -> SequenceReplay:
        """With `train.symmetries`, each sampled unroll is seen under a random board
        symmetry: its observation, its K actions and its K + 1 policy targets alike."""
        mz = self.mz
        prioritized = mz.prioritized == "on" or (mz.prioritized == "auto" and self.single_agent)
        symmetries = board_symmetries(self.game, self.encoder.shape) if self.cfg.train.symmetries else []
        consistency = mz.consistency_weight > 0
        terminal_value = mz.terminal_value and not self.single_agent
        obs_keys = ("obs",) + (("next_obs",) if consistency else ()) + (("final_obs",) if terminal_value else ())
        transform = (
            functools.partial(
                augment,
                symmetries=symmetries,
                obs_keys=obs_keys,
                policy_keys=("target_policy",),
                action_keys=("actions",),
            )
            if symmetries
            else None
        )
        return SequenceReplay(
            self.cfg.train.replay_size,
            self.encoder.shape,
            self.num_actions,
            unroll_steps=mz.unroll_steps,
            td_steps=mz.td_steps,
            discount=mz.discount,
            board_game=not self.single_agent,
            prioritized=prioritized,
            alpha=mz.priority_alpha,
            beta=mz.priority_beta,
            reanalyse_fraction=mz.reanalyse_fraction,
            transform=transform,
            next_observations=consistency,
            terminal_reward=mz.terminal_reward,
            final_observations=self.records_final_observation,
            final_values=terminal_value,
            value_prefix_horizon=self.prefix_horizon,
            horizon_decay_positions=self._horizon_decay_positions(),
        )

    def _horizon_decay_positions(self) -> float:
        """The off-policy correction's age per step of horizon, in stored positions:
        off_policy_age_ratio * train.steps learning steps of train.positions_per_step each."""
        if not self.mz.off_policy_correction:
            return 0.0
        train = self.cfg.train
        return self.mz.off_policy_age_ratio * train.steps * train.positions_per_step

    def trajectory_examples(self, traj: Trajectory) -> dict[str, np.ndarray]:
        """One replay segment: per position the observation, action, the reward that
        followed it, the search value and policy, and the outcome for the mover. An
        unfinished chunk's look-ahead positions are context, not samples."""
        returns_before = np.asarray(traj.returns_before, np.float32)
        done = traj.returns is not None
        final = np.asarray(traj.returns if done else [returns_before[-1]] * self.num_players, np.float32)
        players = np.asarray(traj.players)
        # The mover's return after the move: the next position's running return in
        # single-agent games, the final return after the last move (a chunk's last
        # position is context, and its reward unknown yet: 0).
        after = np.append(returns_before[1:], final[players[-1]])
        reward = after - returns_before if self.single_agent else np.zeros_like(returns_before)
        if self.mz.terminal_reward and done and not self.single_agent:
            reward[-1] = final[players[-1]] - returns_before[-1]  # the last mover's outcome
        n = len(traj.actions)
        samples = n if traj.samples is None else traj.samples
        extra = {}
        if self.records_final_observation:  # kept at the game's last position, zeros elsewhere
            final_obs = np.zeros((n, *self.encoder.shape), np.float32)
            has_final = np.zeros(n, np.bool_)
            if traj.final_observation is not None:  # none where the game was cut, not finished
                final_obs[-1], has_final[-1] = traj.final_observation, True
            extra = {"final_obs": final_obs, "has_final": has_final}
        return {
            "obs": np.asarray(traj.observations, np.float32),
            "action": np.asarray(traj.actions, np.int64),
            "reward": reward.astype(np.float32),
            "root_value": np.asarray(traj.root_values, np.float32),
            "policy": np.asarray(traj.policies, np.float32),
            "legal": np.asarray(traj.legal, np.bool_).reshape(n, self.num_actions),
            "outcome": (final[players] - returns_before).astype(np.float32),
            "sampleable": np.arange(n) < samples,
            "done": np.array([done]),
            **extra,
        }

    def loss(self, net: MuZeroNet, batch: dict[str, torch.Tensor]):
        """Eq. 1 over a K-step unroll with Appendix G's gradient scaling; per-sample
        importance weights; the new priorities p = |nu - z| at the first step, nu the
        search value stored with the sample (Appendix G) or, with muzero.priority_value =
        "network", the value predicted for it now.

        g runs K times in turn; f and every loss term run on all K + 1 steps at once
        (tensors [K + 1, B, ...]), except where batch norm makes f's statistics per step."""
        mz = self.mz
        k_steps = batch["actions"].shape[1]
        weight = batch["weight"]
        states, reward_outs = self._unroll(net, batch["obs"], batch["actions"])
        logits, value_outs = self._predict_steps(net, states)
        by_step = lambda x: x.transpose(0, 1)  # noqa: E731 -- [B, K + 1, ...] -> [K + 1, B, ...]
        value_loss = self._scalar_loss(value_outs, by_step(batch["target_value"]))
        policy_loss = -(by_step(batch["target_policy"]) * F.log_softmax(logits, -1)).sum(-1) * by_step(
            batch["policy_mask"]
        )
        step = mz.value_loss_weight * value_loss + policy_loss  # [K + 1, B]
        parts = {"value": value_loss.mean(1).sum() / (k_steps + 1), "policy": policy_loss.mean(1).sum() / (k_steps + 1)}
        unrolled = step[1:]
        if reward_outs is not None:
            reward_loss = self._scalar_loss(reward_outs, by_step(batch["target_reward"])[1:])
            unrolled = unrolled + reward_loss
            parts["reward"] = reward_loss.mean(1).sum() / k_steps
        if mz.consistency_weight:
            consistency = self._consistency(net, states[1:], batch)
            unrolled = unrolled + mz.consistency_weight * consistency
            parts["consistency"] = consistency.mean(1).sum() / k_steps
        scale = 1.0 / k_steps if mz.gradient_scaling else 1.0
        total = step[0] + scale * unrolled.sum(0)
        nu = batch["search_value"] if mz.priority_value == "search" else net.value_scalar(value_outs[0])
        priority = (nu - batch["target_value"][:, 0]).abs().detach()
        if "final_obs" in batch:  # muzero.terminal_value: the final position, weighted as a step k > 0
            _, final_value = net.predict(net.represent(batch["final_obs"]), root=True)
            terminal = self._scalar_loss(final_value, batch["final_value"]) * batch["final_mask"]
            total = total + terminal / k_steps
            parts["terminal"] = terminal.mean()
        out = {f"loss/{name}": v for name, v in parts.items()}
        out["priority"] = priority
        return (total * weight).mean(), out

    def _unroll(self, net: MuZeroNet, obs: torch.Tensor, actions: torch.Tensor):
        """s^0 = h(o), then s^k, r^k = g(s^(k-1), a^k) for k = 1..K, the gradient into g
        halved (Appendix G): the K + 1 states and the K reward outputs stacked (None
        for board games without a reward head). With the value prefix, the outputs are
        the prefixes P_k of an LSTM whose state restarts after every H-th step."""
        s = net.represent(obs)
        states, rewards, lstm = [s], [], None
        for k in range(actions.shape[1]):
            if self.mz.gradient_scaling:
                s = scale_gradient(s, 0.5)
            s, reward_out = net.dynamics(s, actions[:, k])
            if self.prefix_horizon:
                reward_out, lstm = net.value_prefix(s, lstm)
                lstm = None if (k + 1) % self.prefix_horizon == 0 else lstm
            states.append(s)
            rewards.append(reward_out)
        return states, None if rewards[0] is None else torch.stack(rewards)

    @staticmethod
    def _predict_steps(net: MuZeroNet, states: list[torch.Tensor]):
        """f at every step: policy logits [K + 1, B, A] and value outputs [K + 1, B, ...].
        An MLP's f is one call on all steps' states; a resnet's heads keep one call per
        step (their batch norm's statistics are per step, and h's states have their own)."""
        if net.spec.net.kind == "mlp":
            logits, values = net.predict(torch.cat(states))
            return logits.unflatten(0, (len(states), -1)), values.unflatten(0, (len(states), -1))
        outs = [net.predict(s, root=k == 0) for k, s in enumerate(states)]
        return torch.stack([o[0] for o in outs]), torch.stack([o[1] for o in outs])

    def _consistency(self, net: MuZeroNet, unrolled: list[torch.Tensor], batch) -> torch.Tensor:
        """EfficientZero's term at k = 1..K, [K, B]: -cos(P(proj(s^k)), sg(proj(h(o_{t+k})))),
        masked where o_{t+k} is not stored. One projector call per step (batch norm)."""
        k_steps, b = len(unrolled), batch["weight"].shape[0]
        with torch.no_grad():  # the stop-gradient branch: h(o_{t+k}) through the projector
            target = net.project(net.represent(batch["next_obs"].flatten(0, 1)), predict=False)
            target = target.view(b, k_steps, -1).transpose(0, 1)
        similarity = torch.stack(
            [F.cosine_similarity(net.project(s, predict=True), target[k], dim=-1) for k, s in enumerate(unrolled)]
        )
        return -similarity * batch["next_obs_mask"].transpose(0, 1)

    def _scalar_loss(self, out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Squared error on scalars (board games) or cross-entropy to phi(target) (Appendix F)."""
        if not self.mz.support or not self.single_agent:
            return (out - target) ** 2
        return -(scalar_to_support(target, self.mz.support) * F.log_softmax(out, -1)).sum(-1)
