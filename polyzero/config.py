"""Typed run configuration: dataclasses loaded from TOML with `key=value` overrides.

Precedence: the defaults below < the shipped preset for (algo, game), if any
< `--config FILE` < `--set key=value`. Every unknown key, wrong type or
impossible value is rejected before any work starts, naming the key.
"""

from __future__ import annotations

import dataclasses
import difflib
import tomllib
import typing
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from .errors import UsageError
from .validation import check_finite, check_int_range, check_sections_of_algo, check_seed
from .nets import INFERENCE_PATHS
from .search.params import (CHANCE_BACKUPS, GUMBEL_POLICY_LOSSES, GUMBEL_Q_NORMALISATIONS,
                            Q_NORMALISATIONS, SEARCH_KINDS, SELECTION_RULES, UNVISITED_Q, SearchParams)


@dataclass
class NetConfig:
    kind: str = "resnet"  # "resnet" for games with planes, "mlp" for any
    channels: int = 64
    blocks: int = 3
    width: int = 128
    layers: int = 2
    value_hidden: int = 64
    # Residual blocks (resnet): "basic" (AlphaZero's) or "bottleneck" (Gumbel paper,
    # Appendix F.1: 1x1 down to bottleneck_channels, 3x3, 3x3, 1x1 up), where every
    # broadcast_every-th block is a global broadcasting block (0: none).
    block: str = "basic"
    bottleneck_channels: int = 0  # 0: channels // 2 (the paper's 256 -> 128)
    broadcast_every: int = 8  # bottleneck towers only
    # The input: "mover" shows a two-player game's shared observation from the side of
    # the player to move (polyzero.games.encoders), "raw" is OpenSpiel's tensor as is.
    perspective: str = "mover"
    # Student of Games, kind "resnet": a board game's CVPN runs AlphaZero's convolutional
    # tower (blocks x channels) over the board planes; false: dense residual blocks of width.
    board_tower: bool = True
    # How self-play, evaluation and search call the network (polyzero.nets.compiled):
    # "auto" is ONNX Runtime on the CPU when installed (the fastest exact path measured,
    # docs/benchmarks.md), else eager; or "eager", "script", "inductor", "onnx".
    inference: str = "auto"

    def validate(self):
        _choice("net.kind", self.kind, ("resnet", "mlp"))
        _choice("net.inference", self.inference, INFERENCE_PATHS)
        _choice("net.perspective", self.perspective, ("mover", "raw"))
        _choice("net.block", self.block, ("basic", "bottleneck"))
        for k in ("channels", "blocks", "width", "layers", "value_hidden"):
            _positive(f"net.{k}", getattr(self, k), allow_zero=k == "blocks")
        _positive("net.bottleneck_channels", self.bottleneck_channels, allow_zero=True)
        _positive("net.broadcast_every", self.broadcast_every, allow_zero=True)


@dataclass
class SearchConfig:
    """Defaults: Go-Exploit Table 6 (Connect Four) for AlphaZero; MuZero Appendix B for c1, c2."""

    num_simulations: int = 100  # Go-Exploit Table 4
    kind: str = "puct"  # how the root is searched (see polyzero.search.params.SEARCH_KINDS)
    selection: str = "alphazero"
    c_puct: float = 1.0
    c1: float = 1.25
    c2: float = 19652.0
    q_normalisation: str = "bounds"
    value_min: float = -1.0
    value_max: float = 1.0
    unvisited_q: str = "zero"
    dirichlet_alpha: float = 1.0
    dirichlet_fraction: float = 0.25
    # Gumbel search (kind "gumbel" or "full_gumbel"; docs/gumbel.md): the Gumbel paper's
    # defaults. Gumbel roots ignore the Dirichlet keys (Appendix F: no Dirichlet noise).
    max_considered_actions: int = 16  # m = min(n, this, #legal) sampled by Gumbel-Top-k
    c_visit: float = 50.0  # sigma(q) = (c_visit + max_b N(b)) * c_scale * q (Eq. 8)
    c_scale: float = 1.0  # 0.1 for single-agent games (the paper's Atari runs)
    gumbel_scale: float = 1.0  # Gumbel noise in self-play
    eval_gumbel_scale: float = 0.0  # Gumbel noise in evaluation (0: deterministic, Appendix F)
    # Q normalisation before sigma: "bounds" (value_min/value_max: board games),
    # "minmax" (per node over visited Q and v_mix: unbounded values, Section 7), or
    # "completed_minmax" (mctx's qtransform_completed_by_mix_value).
    gumbel_q_normalisation: str = "bounds"
    policy_loss: str = "kl"  # "kl": pi' target (Eq. 12); "simple": one-hot A_{n+1} (Eq. 9)
    chance_backup: str = "sample"  # chance nodes: "sample" (sampled returns) or "expectation"
    leaf_batch: int = 1  # leaves of one tree per network call, with virtual loss (1: sequential)

    def validate(self):
        _positive("search.num_simulations", self.num_simulations)
        _choice("search.kind", self.kind, SEARCH_KINDS)
        _choice("search.selection", self.selection, SELECTION_RULES)
        _choice("search.q_normalisation", self.q_normalisation, Q_NORMALISATIONS)
        _choice("search.unvisited_q", self.unvisited_q, UNVISITED_Q)
        _positive("search.c_puct", self.c_puct)
        _positive("search.c1", self.c1)
        _positive("search.c2", self.c2)
        _positive("search.dirichlet_alpha", self.dirichlet_alpha)
        _fraction("search.dirichlet_fraction", self.dirichlet_fraction)
        _positive("search.max_considered_actions", self.max_considered_actions)
        _positive("search.c_visit", self.c_visit, allow_zero=True)
        _positive("search.c_scale", self.c_scale, allow_zero=True)
        _positive("search.gumbel_scale", self.gumbel_scale, allow_zero=True)
        _positive("search.eval_gumbel_scale", self.eval_gumbel_scale, allow_zero=True)
        _choice("search.gumbel_q_normalisation", self.gumbel_q_normalisation, GUMBEL_Q_NORMALISATIONS)
        _choice("search.policy_loss", self.policy_loss, GUMBEL_POLICY_LOSSES)
        _choice("search.chance_backup", self.chance_backup, CHANCE_BACKUPS)
        if not self.value_max > self.value_min:
            raise UsageError("search.value_max must be greater than search.value_min")
        self.params()  # SearchParams validates the rest (search.leaf_batch and its kind)

    def params(self, num_simulations: int | None = None, discount: float = 1.0) -> SearchParams:
        fields = dataclasses.asdict(self)
        if num_simulations is not None:
            fields["num_simulations"] = num_simulations
        return SearchParams(discount=discount, **fields)


@dataclass
class SelfPlayConfig:
    concurrent_games: int = 64  # the search batch B of one actor
    temperature: float = 1.0  # tau (Go-Exploit Table 6)
    sample_moves: int = 10  # k: moves sampled from pi before playing the most visited
    max_moves: int = 0  # cap on a game's length; 0 = the game's own maximum

    def validate(self):
        _positive("selfplay.concurrent_games", self.concurrent_games)
        _positive("selfplay.temperature", self.temperature, allow_zero=True)
        _positive("selfplay.sample_moves", self.sample_moves, allow_zero=True)
        _positive("selfplay.max_moves", self.max_moves, allow_zero=True)


@dataclass
class TrainConfig:
    steps: int = 100  # learning steps
    positions_per_step: int = 512  # b_step (Go-Exploit Table 4: 2^12, scaled down)
    minibatches_per_step: int = 4  # b_batch (Table 4: 8 of 2^9, scaled down)
    batch_size: int = 256
    replay_size: int = 50_000  # |B| (Table 4: 2^17, scaled down)
    learning_rate: float = 1e-3  # lr (Table 6)
    # "cosine": lr * (1 + cos(pi * u / U)) / 2 over the U = steps * minibatches_per_step
    # updates of the run (Loshchilov & Hutter 2017); "constant" keeps lr throughout.
    lr_schedule: str = "constant"
    l2: float = 1e-5  # c (Table 6)
    optimizer: str = "adam"
    momentum: float = 0.9  # for sgd
    checkpoint_every: int = 10
    keep_checkpoints: int = 3
    # Only the newest checkpoint is resumed, so the older ones kept are weights only (the
    # network, no optimizer state or replay: what arena, ladders and play read). K > 0
    # keeps the full state of every checkpoint whose step is a multiple of K, to resume from.
    keep_replay_every: int = 0
    # Each sampled example under a random board symmetry of its game (polyzero.games.symmetry;
    # AlphaGo Zero did this, AlphaZero did not): connect_four, tic_tac_toe and go know theirs.
    symmetries: bool = False
    # The learner's loss (forward and backward) through torch.compile (inductor): the same
    # loss to float rounding, compiled at the first update (minutes on a 2-core CPU), then
    # faster where batch norm and elementwise work dominate (docs/benchmarks.md).
    compile: bool = False
    # The optimizer's step as one fused kernel per tensor and the L2 term as its gradient
    # (one foreach call): the same update to float rounding, cheaper (docs/benchmarks.md).
    # Off by default: a float-level change takes a run elsewhere from the same seed, and
    # the single-seed learning tests were set on the default's runs (Student of Games'
    # Kuhn test, seed 0: 29.97 mbb/h with it where its threshold is 20).
    fused_step: bool = False

    def validate(self):
        for k in ("steps", "positions_per_step", "minibatches_per_step", "batch_size",
                  "replay_size", "checkpoint_every", "keep_checkpoints"):
            _positive(f"train.{k}", getattr(self, k))
        _positive("train.keep_replay_every", self.keep_replay_every, allow_zero=True)
        _positive("train.learning_rate", self.learning_rate)
        if self.learning_rate > 10:
            raise UsageError(f"train.learning_rate must be at most 10, not {self.learning_rate}")
        _positive("train.l2", self.l2, allow_zero=True)
        _choice("train.optimizer", self.optimizer, ("adam", "sgd"))
        _choice("train.lr_schedule", self.lr_schedule, ("constant", "cosine"))
        _fraction("train.momentum", self.momentum)
        if self.replay_size < self.batch_size:
            raise UsageError("train.replay_size must be at least train.batch_size")


@dataclass
class EvalConfig:
    every: int = 10  # learning steps between evaluations; 0 turns periodic evaluation off
    games: int = 20
    simulations: int = 100  # the agent's search in evaluation (Go-Exploit Table 4)
    opponents: list[str] = field(default_factory=lambda: ["random", "mcts-solver:1x"])
    final_games: int = 50  # games per opponent in the evaluation that ends a run
    sample_moves: int = 0  # opening moves the agent samples from its visits (0: always the most visited)
    # The ladder's costly levels, e.g. ["mcts-solver:100x", "mcts-solver:1000x"], join the opponents
    # at every high_every-th evaluation (Go-Exploit, Section 4: the 100x and 1000x levels every 10th round).
    high_opponents: list[str] = field(default_factory=list)
    high_every: int = 10

    def validate(self):
        _positive("eval.every", self.every, allow_zero=True)
        _positive("eval.games", self.games)
        _positive("eval.simulations", self.simulations)
        _positive("eval.final_games", self.final_games, allow_zero=True)
        _positive("eval.sample_moves", self.sample_moves, allow_zero=True)
        _positive("eval.high_every", self.high_every)
        for key, specs in (("eval.opponents", self.opponents), ("eval.high_opponents", self.high_opponents)):
            if not isinstance(specs, list) or not all(isinstance(spec, str) and spec for spec in specs):
                raise UsageError(f"{key} must be a list of player names")

    def opponent_specs(self, step: int | None = None) -> list[str]:
        """The opponents; with `step`, those of the periodic evaluation at that learning
        step (high_opponents too at every high_every-th evaluation). `mcts-solver:Mx` is
        the ladder level M times the agent's evaluation simulations."""
        names = list(self.opponents)
        if step is not None and self.every and (step // self.every) % self.high_every == 0:
            names += self.high_opponents
        out = []
        for spec in names:
            kind, _, sims = spec.partition(":")
            if sims.endswith("x") and sims[:-1].isdigit():
                spec = f"{kind}:{int(sims[:-1]) * self.simulations}"
            out.append(spec)
        return out


@dataclass
class RayConfig:
    """Settings of the Ray driver (`polyzero train --workers N`)."""

    weights_every: int = 1  # learning steps between weight broadcasts to the workers
    worker_cpus: float = 1.0  # Ray resources each self-play worker asks for
    worker_gpus: float = 0.0  # e.g. 0.25: four workers share a GPU for their inference
    reanalysers: int = 1  # Ray actors running MuZero Reanalyze (when muzero.reanalyse_fraction > 0)
    solvers: int = 1  # Ray actors solving Student of Games' queries (--algo sog)
    evaluators: int = 1  # Ray actors for the periodic evaluation (eval.every); a free one scores the newest weights
    learner_gpus: float = 1.0  # the learner actor's share of a GPU when the device is CUDA
    learner_restart_window: float = 600.0  # seconds: a second learner death within it stops the run

    def validate(self):
        _positive("ray.weights_every", self.weights_every)
        _positive("ray.reanalysers", self.reanalysers)
        _positive("ray.solvers", self.solvers)
        _positive("ray.evaluators", self.evaluators)
        _positive("ray.worker_cpus", self.worker_cpus, allow_zero=True)
        _positive("ray.worker_gpus", self.worker_gpus, allow_zero=True)
        _positive("ray.learner_gpus", self.learner_gpus)
        _positive("ray.learner_restart_window", self.learner_restart_window, allow_zero=True)


@dataclass
class MuZeroConfig:
    """MuZero's learned model and targets; defaults from the MuZero paper's appendices."""

    unroll_steps: int = 5  # K (Appendix G)
    td_steps: int = 10  # n of the n-step value target, single-agent (Appendix G; 5 with Reanalyze)
    discount: float = 0.997  # gamma, single-agent (Appendix C); board games use 1
    hidden_size: int = 64  # mlp models: size of the hidden state
    scale_hidden: bool = True  # min-max scale hidden states to [0, 1] (Appendix G)
    zero_init_heads: bool = False  # value and reward heads start at 0 (not in the paper)
    support: int = 300  # categorical value/reward support -S..S, single-agent (Appendix F)
    value_loss_weight: float = 1.0  # 0.25 with Reanalyze (Appendix H)
    gradient_scaling: bool = True  # 1/K on unrolled steps, 1/2 into the dynamics (Appendix G)
    prioritized: str = "auto"  # auto: prioritized for single-agent, uniform for board games
    priority_alpha: float = 1.0  # alpha = beta = 1 (Appendix G)
    priority_beta: float = 1.0
    # p_i = |nu_i - z_i| with nu the value of the acting search at sample i (Appendix G);
    # "network": the prediction function's value of the sample when it is trained instead.
    priority_value: str = "search"
    temperature_schedule: bool = True  # single-agent acting temperature 1, 0.5, 0.25 (Appendix D)
    reanalyse_fraction: float = 0.0  # share of samples whose policy targets are re-searched (0.8, Appendix H)
    target_update_every: int = 100  # training steps between target-network refreshes (Reanalyze)
    reanalyse_network: str = "latest"  # Reanalyze searches with the latest parameters (Appendix H) or the target network
    # What Reanalyze refreshes: "both" (Appendix H), or only the "policy" targets or the
    # "value" bootstraps, to tell their effects apart.
    reanalyse_targets: str = "both"
    # c_scale of the reanalysis searches alone (Gumbel root, sigma of the Gumbel paper's
    # Eq. 8); 0: the search's own `search.c_scale`. A smaller one keeps a re-searched
    # target from moving the logits it came from by sigma's whole range at every step.
    reanalyse_c_scale: float = 0.0
    # The n-step bootstrap v-_{t+n}: the target network's prediction f-(h-(o)) ("network",
    # Appendix H), or the root value of a search with the target network ("search", as
    # EfficientZero reanalyses values), which values the searched, improved policy.
    reanalyse_bootstrap: str = "network"
    chunk_length: int = 200  # single-agent episodes enter replay every 200 moves (Appendix D); 0: whole
    downsample: str = "auto"  # Appendix F's stack for image inputs; auto: frames of 32 x 32 or more
    # Normalisation inside g and in f's heads at unrolled steps k >= 1 (resnet models):
    # "batch" (the paper's batch norm) or "layer" (per sample, the same in training and search).
    unroll_norm: str = "batch"
    # The plane each action gives the resnet dynamics (Appendix E): "game" where the games
    # layer knows where actions act (Connect Four: the column), "cell" a one at the
    # action's flat cell index (what runs saved before 2026-11-25 used).
    action_planes: str = "game"
    # Weight of EfficientZero's temporal consistency loss (Ye et al. 2021; 2 there): the
    # dynamics' state s^k is pulled towards h(o_{t+k}) through SimSiam heads. Not in the
    # MuZero paper; 0 (its default) leaves it out.
    consistency_weight: float = 0.0
    # Board games, with the consistency loss: the target at the step after a finished
    # game's last move is h of the final position (kept with the game), where there is
    # none otherwise -- the one transition whose result the final outcome decides.
    consistency_terminal: bool = False
    # Board games: the final outcome as the last move's reward, learned by a reward head,
    # with value 0 past the end (the published pseudocode's treatment), instead of no
    # reward loss (Appendix G) and the side to move past the end having lost.
    terminal_reward: bool = False
    # Board games: h and f also learn a finished game's final position (kept with the game,
    # seen by the side that would move next) with the value the unroll gives the step after
    # the last move (the loser's -1, 0 after a draw), at the weight of one unrolled step.
    # Not in the MuZero paper.
    terminal_value: bool = False
    # The dynamics function's size, a lever on the learner's speed (a K-step unroll runs g
    # K times): residual blocks of g's tower (resnet) or hidden layers (mlp); -1: the same
    # as h's (net.blocks or net.layers), as in the paper (Appendix F).
    dynamics_blocks: int = -1
    # EfficientZero's value prefix (Ye et al. 2021, Section 4.2; single-agent games): g's
    # reward head is an LSTM predicting the discounted reward sum since its last reset,
    # every value_prefix_horizon steps; the search's edge reward is the sum's increment.
    value_prefix: bool = False
    value_prefix_horizon: int = 5  # H, the LSTM's reset period (5 in the paper)
    # EfficientZero's off-policy correction (Section 4.3; single-agent games): the n-step
    # horizon shrinks with a sample's age, one step per off_policy_age_ratio * train.steps
    # learning steps (0.3, the authors' code), down to 1, and the bootstrap is the root value of
    # a fresh search with the target network (needs Reanalyze with reanalyse_bootstrap "search").
    off_policy_correction: bool = False
    off_policy_age_ratio: float = 0.3

    def validate(self):
        _positive("muzero.value_prefix_horizon", self.value_prefix_horizon)
        _positive("muzero.off_policy_age_ratio", self.off_policy_age_ratio)
        if self.off_policy_correction and not (self.reanalyse_fraction > 0 and self.reanalyse_bootstrap == "search"
                                               and self.reanalyse_targets != "policy"):
            raise UsageError("muzero.off_policy_correction bootstraps from a fresh search: it needs "
                             "muzero.reanalyse_fraction > 0, muzero.reanalyse_bootstrap=\"search\" and "
                             "muzero.reanalyse_targets \"both\" or \"value\"")
        _positive("muzero.consistency_weight", self.consistency_weight, allow_zero=True)
        if self.dynamics_blocks < -1:
            raise UsageError(f"muzero.dynamics_blocks must be -1 (as net.blocks) or >= 0, not {self.dynamics_blocks}")
        if self.consistency_terminal and not self.consistency_weight:
            raise UsageError("muzero.consistency_terminal needs the consistency loss (muzero.consistency_weight > 0)")
        _positive("muzero.reanalyse_c_scale", self.reanalyse_c_scale, allow_zero=True)
        _positive("muzero.chunk_length", self.chunk_length, allow_zero=True)
        for k in ("unroll_steps", "td_steps", "hidden_size", "target_update_every"):
            _positive(f"muzero.{k}", getattr(self, k))
        _positive("muzero.support", self.support, allow_zero=True)
        _fraction("muzero.discount", self.discount)
        _positive("muzero.value_loss_weight", self.value_loss_weight)
        _choice("muzero.prioritized", self.prioritized, ("auto", "on", "off"))
        _choice("muzero.priority_value", self.priority_value, ("search", "network"))
        _choice("muzero.downsample", self.downsample, ("auto", "on", "off"))
        _choice("muzero.unroll_norm", self.unroll_norm, ("batch", "layer"))
        _choice("muzero.action_planes", self.action_planes, ("game", "cell"))
        _choice("muzero.reanalyse_network", self.reanalyse_network, ("latest", "target"))
        _choice("muzero.reanalyse_targets", self.reanalyse_targets, ("both", "policy", "value"))
        _choice("muzero.reanalyse_bootstrap", self.reanalyse_bootstrap, ("network", "search"))
        _positive("muzero.priority_alpha", self.priority_alpha, allow_zero=True)
        _positive("muzero.priority_beta", self.priority_beta, allow_zero=True)
        _fraction("muzero.reanalyse_fraction", self.reanalyse_fraction)


@dataclass
class NDMZConfig:
    """Nondeterministic MuZero (docs/ndmz.md): defaults from the NDMZ paper, Section 4.2."""

    unroll_steps: int = 6  # K
    hidden_size: int = 128  # size of the hidden state (MLP towers take net.width and net.layers)
    c_puct: float = 1.25  # the constant of pUCT among result nodes (Appendix A)

    def validate(self):
        _positive("ndmz.unroll_steps", self.unroll_steps)
        _positive("ndmz.hidden_size", self.hidden_size)
        _positive("ndmz.c_puct", self.c_puct)


@dataclass
class SoGConfig:
    """Student of Games training (docs/student_of_games.md, part 2). The paper's
    Scotland Yard settings where they fit (the learning rate, the loss weights); the
    per-step work is the in-process round-robin of actors, solvers and learner."""

    simulations: int = 20  # s of the self-play searches, SoG(s, c)
    expansions_per_update: float = 1.0  # c
    max_depth: int = 0  # depth limit of every search (0: none)
    solve_simulations: int = 20  # s_solve of the query solver
    solve_expansions_per_update: float = 1.0  # c_solve
    q_search: float = 0.3  # probability a search's network query enters the query buffer
    q_recursive: float = 0.1  # the same for the solver's own queries
    p_td: float = 0.5  # probability a main-line state's value target is the outcome (else solved)
    episodes_per_step: int = 2  # self-play games per learning step (round-robin)
    solves_per_step: int = 8  # queries solved per learning step
    query_buffer: int = 10_000  # queries waiting; the oldest are dropped beyond it
    max_updates: int = 5  # minibatches an example may be used in
    value_weight: float = 1.0
    policy_weight: float = 0.05  # the paper's policy loss weight
    lr_halve_every: int = 0  # learning steps between halvings of the learning rate (0: never)
    eval_simulations: int = 100  # s_eval of SoG(s_eval, 1) in periodic evaluation
    eval_seeds: int = 3  # seeds of the exploitability evaluation

    def validate(self):
        for k in ("simulations", "solve_simulations", "max_depth", "episodes_per_step", "solves_per_step",
                  "lr_halve_every", "eval_simulations"):
            _positive(f"sog.{k}", getattr(self, k), allow_zero=True)
        for k in ("expansions_per_update", "solve_expansions_per_update", "query_buffer", "max_updates",
                  "eval_seeds", "value_weight"):
            _positive(f"sog.{k}", getattr(self, k))
        _positive("sog.policy_weight", self.policy_weight, allow_zero=True)
        for k in ("q_search", "q_recursive", "p_td"):
            _fraction(f"sog.{k}", getattr(self, k))

    def search_settings(self, solver: bool = False):
        from .sog.gtcfr import SoGSettings

        return SoGSettings(simulations=self.solve_simulations if solver else self.simulations,
                           expansions_per_update=(self.solve_expansions_per_update if solver
                                                  else self.expansions_per_update),
                           max_depth=self.max_depth or None)


@dataclass
class StartConfig:
    """Go-Exploit search control (Go-Exploit paper, Sections 3.1-3.2; Appendix A): where
    self-play trajectories start. Defaults: Table 6 (Connect Four), GEVC/GESC columns."""

    archive: str = "none"  # "none" (AlphaZero), "visited" (GEVE/GEVC) or "search" (GESR/GESC)
    archive_type: str = "circular"  # "expanding", "circular" or "reservoir" (Algorithm 5)
    archive_size: int = 1_000_000  # |A| of circular and reservoir archives (Table 6: 10^6)
    initial_probability: float = 0.1  # lambda: start from s_0 with this probability (Table 6)
    # Search states (Algorithm 3): complete games from s_0 played by archive actors that
    # train nothing. In-process: this many archive games per learning step (Table 4's 50
    # archive actors beside 700 training actors, about one archive game per 14 trajectories
    # of a full-length game); under Ray, `archive_workers` extra workers do the same.
    archive_games_per_step: int = 2
    archive_workers: int = 1
    track_unique_states: bool = False  # Section 6.1: count unique nonterminal states per depth

    def validate(self):
        _choice("start.archive", self.archive, ("none", "visited", "search"))
        _choice("start.archive_type", self.archive_type, ("expanding", "circular", "reservoir"))
        _positive("start.archive_size", self.archive_size)
        _fraction("start.initial_probability", self.initial_probability)
        _positive("start.archive_games_per_step", self.archive_games_per_step, allow_zero=True)
        _positive("start.archive_workers", self.archive_workers, allow_zero=True)
        if self.archive == "search" and self.archive_games_per_step == 0:
            raise UsageError("start.archive = \"search\" needs start.archive_games_per_step > 0 "
                             "(archive actors are what fill the archive)")


@dataclass
class KataGoConfig:
    """KataGo's self-play techniques (Wu 2019; Go-Exploit Section 5; docs/goexploit.md).
    The defaults turn every technique off; KataGo's own values are in the comments."""

    playout_cap_probability: float = 1.0  # p of a full search (KataGo: 0.25); 1: always full
    cheap_simulations: int = 0  # n of a cheap search (KataGo: 100 of 600); 0: num_simulations // 6
    cheap_value_samples: bool = False  # keep cheap positions as value-only samples (zero policy target)
    forced_playouts: bool = False  # forced playouts at the root and policy target pruning (Wu 3.2)
    forced_k: float = 2.0  # n_forced(c) = (k P(c) sum_c' N(c'))^(1/2)
    init_moves: int = 0  # moves from s_0 sampled from the raw policy p before searching (trajectory init)
    branch_probability: float = 0.0  # per move: start a side game from another action there

    def validate(self):
        _fraction("katago.playout_cap_probability", self.playout_cap_probability)
        if self.playout_cap_probability == 0.0:
            raise UsageError("katago.playout_cap_probability must be positive (some searches must be full)")
        _positive("katago.cheap_simulations", self.cheap_simulations, allow_zero=True)
        _positive("katago.forced_k", self.forced_k)
        _positive("katago.init_moves", self.init_moves, allow_zero=True)
        _fraction("katago.branch_probability", self.branch_probability)


@dataclass
class RunConfig:
    game: str = "connect_four"
    algo: str = "alphazero"
    seed: int = 0
    device: str = "auto"
    # torch intra-op threads, and the threads the search's tree kernels split a
    # batch of 64 or more trees over; 0 leaves both at their defaults (all cores).
    # One is the safe default: self-play batches are small, and on a busy machine
    # spinning intra-op threads can slow inference down tenfold.
    threads: int = 1
    net: NetConfig = field(default_factory=NetConfig)
    search: SearchConfig = field(default_factory=SearchConfig)
    selfplay: SelfPlayConfig = field(default_factory=SelfPlayConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    ray: RayConfig = field(default_factory=RayConfig)
    muzero: MuZeroConfig = field(default_factory=MuZeroConfig)
    start: StartConfig = field(default_factory=StartConfig)
    katago: KataGoConfig = field(default_factory=KataGoConfig)
    ndmz: NDMZConfig = field(default_factory=NDMZConfig)
    sog: SoGConfig = field(default_factory=SoGConfig)

    def validate(self):
        if self.algo not in ALGOS:  # the message polyzero.algos.make_algorithm gives
            raise UsageError(f"unknown algorithm '{self.algo}'; available: {', '.join(ALGOS)}")
        check_seed("seed", self.seed)
        _choice("device", self.device, ("auto", "cpu", "cuda"))
        _positive("threads", self.threads, allow_zero=True)
        for section in (self.net, self.search, self.selfplay, self.train, self.eval, self.ray, self.muzero,
                        self.start, self.katago, self.ndmz, self.sog):
            section.validate()
        return self

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


# ---------------------------------------------------------------- validation helpers
ALGOS = ("alphazero", "muzero", "ndmz", "sog")  # polyzero.algos.TRAINABLE (config sits below algos)


def _positive(key, value, allow_zero=False):
    if value < 0 or (value == 0 and not allow_zero):
        raise UsageError(f"{key} must be {'non-negative' if allow_zero else 'positive'}, not {value}")


def _fraction(key, value):
    if not 0.0 <= value <= 1.0:
        raise UsageError(f"{key} must lie in [0, 1], not {value}")


def _choice(key, value, choices):
    if value not in choices:
        raise UsageError(f"{key} must be one of {', '.join(sorted(choices))}, not {value!r}")


# ---------------------------------------------------------------- loading
def _check_type(key: str, value, annotation):
    origin = typing.get_origin(annotation)
    if origin is list:
        (item,) = typing.get_args(annotation)
        if not isinstance(value, list):
            raise UsageError(f"{key} must be a list, not {type(value).__name__}")
        for v in value:
            _check_type(key, v, item)
        return value
    ok = {
        int: isinstance(value, int) and not isinstance(value, bool),
        float: isinstance(value, (int, float)) and not isinstance(value, bool),
        str: isinstance(value, str),
        bool: isinstance(value, bool),
    }[annotation]
    if not ok:
        raise UsageError(f"{key} must be of type {annotation.__name__}, not {type(value).__name__} ({value!r})")
    if annotation is float:
        return check_finite(key, float(value))
    if key == "seed":
        return check_seed(key, value)
    return check_int_range(key, value) if annotation is int else value


def _merge(obj, data: dict, prefix: str = ""):
    """Write `data` (nested dicts) into the dataclass `obj`, checking keys and types."""
    hints = typing.get_type_hints(type(obj))
    names = [f.name for f in dataclasses.fields(obj)]
    for key, value in data.items():
        full = prefix + key
        if key not in names:
            close = difflib.get_close_matches(key, names, n=3)
            hint = f"; did you mean {', '.join(prefix + c for c in close)}?" if close else \
                f"; valid keys: {', '.join(prefix + n for n in names)}"
            raise UsageError(f"unknown config key '{full}'{hint}")
        current = getattr(obj, key)
        if dataclasses.is_dataclass(current):
            if not isinstance(value, dict):
                raise UsageError(f"config key '{full}' is a section, not a value")
            _merge(current, value, full + ".")
        else:
            setattr(obj, key, _check_type(full, value, hints[key]))


def parse_override(text: str) -> dict:
    """'search.num_simulations=64' -> {'search': {'num_simulations': 64}} (TOML values;
    a bare word is taken as a string)."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise UsageError(f"--set expects key=value, not {text!r}")
    try:
        value = tomllib.loads(f"v = {raw.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw.strip()
    out: dict = {}
    node = out
    parts = key.split(".")
    for p in parts[:-1]:
        node = node.setdefault(p, {})
    node[parts[-1]] = value
    return out


def read_toml(path: str | Path) -> dict:
    from .validation import read_text

    try:
        return tomllib.loads(read_text(path, "config file"))
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"config file {path} is not valid TOML: {exc}") from None


def preset_name(algo: str, game: str) -> str:
    base = game.split("(")[0]
    return f"{algo}_{base}.toml"


def load_preset(algo: str, game: str) -> dict | None:
    """The shipped preset for this algorithm and game, if there is one."""
    res = resources.files("polyzero.presets").joinpath(preset_name(algo, game))
    if not res.is_file():
        return None
    return tomllib.loads(res.read_text())


# Settings added after runs had been saved, whose defaults changed what a run does:
# a saved config without them ran with these values.
_SAVED_BEFORE = {("net", "perspective"): "raw", ("muzero", "priority_value"): "network",
                 ("muzero", "action_planes"): "cell", ("net", "board_tower"): False}


def _as_saved(base: dict) -> dict:
    base = {k: dict(v) if isinstance(v, dict) else v for k, v in base.items()}
    for (table, key), value in _SAVED_BEFORE.items():
        base.setdefault(table, {}).setdefault(key, value)
    return base


def build_config(game: str | None = None, algo: str | None = None, config_file: str | None = None,
                 overrides: list[str] = (), base: dict | None = None) -> RunConfig:
    """Resolve a run's configuration (see the module docstring for precedence)."""
    cfg = RunConfig()
    layers: list[dict] = []
    if base is not None:
        layers.append(_as_saved(base))
    file_data = read_toml(config_file) if config_file else {}
    sets = [parse_override(o) for o in overrides]
    game = _one_value("game", game, file_data, sets, base)
    algo = _one_value("algo", algo, file_data, sets, base)
    algo = algo or file_data.get("algo") or (base or {}).get("algo") or cfg.algo
    game = game or file_data.get("game") or (base or {}).get("game") or cfg.game
    if not isinstance(game, str) or not isinstance(algo, str):
        raise UsageError("game and algo must be strings")
    if base is None:
        preset = load_preset(algo, game)
        if preset is not None:
            layers.append(preset)
    layers.append(file_data)
    layers.extend(sets)
    layers.append({"game": game, "algo": algo})
    for layer in layers:
        _merge(cfg, layer)
    cfg.validate()
    for source, layer in [(f"config file {config_file}", file_data)] + [(f"--set {o}", d) for o, d in zip(overrides, sets)]:
        check_sections_of_algo(layer, algo, RunConfig(), source)
    return cfg


def _one_value(key: str, given, file_data: dict, sets: list[dict], base: dict | None):
    """`game` or `algo` from --set, applied where nothing else names another one: a --set
    that disagrees with the command line, or tries to change a saved run's, is refused."""
    values = [d[key] for d in sets if key in d]
    if not values:
        return given
    value = values[-1]
    if given is not None and value != given:
        raise UsageError(f"--set {key}={value} disagrees with the {key} given as {given!r}; give it once")
    if base is not None and value != base.get(key):
        raise UsageError(f"--set {key}={value}: a resumed run keeps its {key} ({base.get(key)!r}); "
                         "start a new run for another")
    return value


def to_toml(data: dict, prefix: str = "") -> str:
    """A minimal TOML writer for the resolved config (scalars, lists of strings, tables)."""
    lines, tables = [], []
    for k, v in data.items():
        if isinstance(v, dict):
            tables.append((k, v))
        else:
            lines.append(f"{k} = {_toml_value(v)}")
    out = "\n".join(lines)
    for k, v in tables:
        out += f"\n\n[{prefix}{k}]\n" + to_toml(v, prefix + k + ".")
    return out.strip() + "\n"


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(type(v))
