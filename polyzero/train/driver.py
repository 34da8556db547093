"""The common runtime's trainer: the training loop (`loop.TrainingLoop`) with
trajectory self-play and the data sources its algorithm and plug-ins declare, in one
process and deterministic under a seed (`ray_driver.RayTrainer` runs the sources on
Ray actors).

A learning step is b_step new positions followed by b_batch minibatch updates
(Go-Exploit paper, Table 4). Checkpoints every N learning steps hold
everything needed to continue exactly: `--resume` after `kill -9` reaches the
same weights at step N as an uninterrupted run.
"""

from __future__ import annotations

from pathlib import Path

import torch

from ..algos import make_algorithm
from ..algos.player import SearchPlayer
from ..config import RunConfig
from ..errors import UsageError
from ..plugins import own_runtime, selfplay_plugin
from .actor_threads import ActorThreads
from .learner import Learner
from .loop import (  # noqa: F401 - their home was here; callers import them from here
    Interrupted,
    RunDirectory,
    TrainingLoop,
    npz_bytes as _npz_bytes,
    resume_message,
)
from .selfplay import SelfPlayActor
from .sources import REANALYSE, ReanalyseSource, SearchControlSource, SelfPlaySource, declared_sources


class Trainer(TrainingLoop):
    """The loop with trajectory self-play, and the data sources the algorithm and the
    self-play plug-ins declare (Reanalyze, Go-Exploit's archive)."""

    actor_threads_here = True  # selfplay.shared_inference's actor threads (not under Ray: its workers)

    def __init__(self, cfg: RunConfig, run_dir: Path, progress: bool = True):
        self._open(cfg, run_dir, progress)
        self.algo = make_algorithm(cfg, self.game)
        torch.manual_seed(cfg.seed)
        self.learner = Learner(self.algo, cfg.train, self.device)
        self.actor_evaluator = self.algo.make_evaluator(self.algo.build_network(), self.device, selfplay=True)
        self.actor_evaluator.load_state_dict(self.learner.weights())
        # Go-Exploit start states and KataGo's techniques, when configured.
        self.search_control = None
        plugin = selfplay_plugin(cfg)  # polyzero.plugins.SELFPLAY_PLUGINS
        publish_to = self.actor_evaluator
        if plugin is not None:
            if cfg.selfplay.shared_inference:
                raise UsageError(
                    "selfplay.shared_inference does not run with a self-play plug-in "
                    "(Go-Exploit, KataGo's techniques) yet"
                )
            self.search_control = plugin.search_control(cfg, self.game, self.algo, self.actor_evaluator, cfg.seed)
            self.actor = self.search_control.make_actor(self.algo, self.game, cfg, self.actor_evaluator, cfg.seed)
        elif cfg.selfplay.shared_inference and self.actor_threads_here:  # threads around one service
            self.actor = ActorThreads(self.algo, self.game, cfg, self.actor_evaluator, seed=cfg.seed)
            publish_to = self.actor.evaluator
        else:
            self.actor = SelfPlayActor(self.algo, self.game, cfg, self.actor_evaluator, seed=cfg.seed)
        self.replay = self.algo.make_replay()
        self.selfplay = SelfPlaySource(self.algo, self.actor, publish_to, self.replay, cfg.train.positions_per_step)
        self.sources = [self.selfplay]  # in the order they receive new weights
        self.reanalyser = None
        if REANALYSE in declared_sources(cfg):
            reanalyse = ReanalyseSource(self.algo, cfg, self.device, self.replay, self.learner.weights())
            self.reanalyser = reanalyse.reanalyser
            self.sources.insert(0, reanalyse)
        if self.search_control is not None:
            self.sources.append(SearchControlSource(self.search_control, plugin, self.selfplay))
        self._start_counters()

    @property
    def pending(self) -> int:
        """Positions added since the last learning step."""
        return self.selfplay.pending

    @pending.setter
    def pending(self, value: int) -> None:
        self.selfplay.pending = value

    @property
    def selfplay_stats(self) -> dict:
        """Totals over the run: games, positions, searches, simulations."""
        gathered = self.executor.stats(self)  # a Ray executor's, from its workers
        return self.actor.stats if gathered is None else gathered

    def _step_metrics(self, before: dict, ended: dict, step_seconds: float) -> dict:
        stats = self.selfplay_stats
        sp = {f"selfplay/{k}": stats[k] for k in ("games", "positions")}
        sp["selfplay/positions_per_s"] = (stats["positions"] - before["positions"]) / step_seconds
        sp["selfplay/simulations_per_s"] = (stats["simulations"] - before["simulations"]) / step_seconds
        sp["selfplay/games_per_step"] = stats["games"] - before["games"]  # Go-Exploit Section 6.2
        if self.game.num_players() == 1 and sp["selfplay/games_per_step"]:
            sp["selfplay/mean_return"] = (stats["return_sum"] - before["return_sum"]) / sp["selfplay/games_per_step"]
        return {**sp, **ended}

    # ------------------------------------------------------------ evaluation
    def _evaluate_now(self) -> dict:
        return self.evaluate(self.cfg.eval.games, opponents=self.cfg.eval.opponent_specs(self.step))

    def agent_player(
        self, simulations: int | None = None, seed: int = 0, sample_moves: int | None = None
    ) -> SearchPlayer:
        """The current network with the evaluation search settings."""
        return agent_player(
            self.algo, self.cfg, self.learner.weights(), self.device, self.step, seed, simulations, sample_moves
        )

    def evaluate(
        self, games: int, seed: int | None = None, opponents: list[str] | None = None, progress: bool = False
    ) -> dict:
        """Score the current network against each of `opponents` (the configured ones)."""
        seed = self.cfg.seed + 1000 * self.step if seed is None else seed
        return evaluate_agent(self.game, self.cfg, self.agent_player(seed=seed), games, seed, opponents, progress)


def trainer_classes(algo: str) -> tuple[type, type]:
    """(in-process trainer, Ray trainer) of an algorithm: the common ones, or those of a
    runtime of its own (`polyzero.plugins.RUNTIMES`)."""
    runtime = own_runtime(algo)
    if runtime is not None:
        return runtime.trainer_classes()
    from .ray_driver import RayTrainer

    return Trainer, RayTrainer


def agent_player(
    algo,
    cfg,
    weights: dict,
    device,
    step: int,
    seed: int = 0,
    simulations: int | None = None,
    sample_moves: int | None = None,
) -> SearchPlayer:
    """A network's weights as a player with the evaluation search settings."""
    net = algo.build_network()
    net.load_state_dict(weights)
    sims = simulations or cfg.eval.simulations
    sample = cfg.eval.sample_moves if sample_moves is None else sample_moves
    return SearchPlayer(
        algo,
        algo.make_evaluator(net, device),
        cfg.search.params(sims),
        name=f"agent#{step}",
        seed=seed,
        sample_moves=sample,
    )


def evaluate_agent(
    game, cfg, agent, games: int, seed: int, opponents: list[str] | None = None, progress: bool = False
) -> dict:
    """The agent's scores against each of `opponents` (the configured ones), with Wilson
    95% intervals and the wins, draws and losses (one-player games: its mean return over
    `games` episodes); `progress` shows a bar per match."""
    from ..eval import make_player, play_match, play_single_agent

    if game.num_players() == 1:
        res = play_single_agent(game, agent, games, seed=seed, progress=progress)
        return {
            "eval/return/mean": res["mean_return"],
            "eval/return/ci_low": res["ci_low"],
            "eval/return/ci_high": res["ci_high"],
        }
    out = {}
    for spec in cfg.eval.opponent_specs() if opponents is None else opponents:
        res = play_match(game, agent, make_player(spec, game, seed=seed), games, seed=seed, progress=progress)
        for key in ("score", "ci_low", "ci_high", "wins", "draws", "losses"):
            out[f"eval/{spec}/{key}"] = getattr(res, key)
    return out
