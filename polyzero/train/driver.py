"""The in-process driver: self-play actor, replay buffer, learner and evaluator in
one process, deterministic under a seed.

A learning step is b_step new positions followed by b_batch minibatch updates
(Go-Exploit paper, Table 4). Checkpoints every N learning steps hold
everything needed to continue exactly: `--resume` after `kill -9` reaches the
same weights at step N as an uninterrupted run.
"""

from __future__ import annotations

import json
import shutil
import signal
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch

from ..algos import make_algorithm
from ..algos.player import SearchPlayer
from ..config import RunConfig, to_toml
from ..errors import UsageError
from ..games import game_spec_string, load_game
from ..nets.inference import resolve_device, set_threads
from ..plugins import selfplay_plugin
from . import checkpoint as ckpt, rundir
from .learner import Learner
from .metrics import MetricsLog
from .progress import Progress
from .resume import apply_optimizer_settings, prepare_resume
from .rundir import resume_command
from .selfplay import SelfPlayActor
from .sources import REANALYSE, declared_sources


class Interrupted(Exception):
    """SIGTERM or Ctrl-C: the run stops after writing a checkpoint."""


class RunDirectory:
    """Creating and resuming a run directory, for every trainer: a subclass takes
    (cfg, run_dir, progress, **driver) and restores itself from a checkpoint in `_restore`."""

    def _open(self, cfg: RunConfig, run_dir: Path, progress: bool) -> None:
        """What every trainer sets first: config, run directory, threads, device, game."""
        self.cfg = cfg
        self.run_dir = Path(run_dir)
        self.show_progress = progress
        self._t0 = time.perf_counter()  # `run` restarts it; a checkpoint saved before then needs it too
        set_threads(cfg.threads)
        try:
            self.device = resolve_device(cfg.device)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        self.game = load_game(cfg.game)

    def _start_run(self):
        """The clock, metrics log and progress display every trainer's `run` opens."""
        self._t0 = time.perf_counter()
        return MetricsLog(self.run_dir), Progress(self.cfg.train.steps, self.step, enabled=self.show_progress)

    #: Signals only set this flag; the loops look at it at safe points (`_check_interrupt`:
    #: between learning steps, between self-play ticks, every half second of a Ray wait),
    #: so the interrupt checkpoint never holds a half-done tick (a finished game still in
    #: its slot) and a library never sees an exception raised inside its own code.
    interrupt_requested = False
    failures = 0  # faults of Ray actors, each counted once (`ray/worker_failures`), kept in checkpoints

    def _check_interrupt(self) -> None:
        if self.interrupt_requested:
            raise Interrupted()

    def _resume_hint(self) -> str:
        return resume_command(self.run_dir, getattr(self, "num_workers", 0))

    @contextmanager
    def _checkpoint_on_interrupt(self, progress, log):
        """SIGTERM or Ctrl-C inside: the flag is set, and at the next safe point a checkpoint
        is written, the display and the log closed, and Interrupted raised naming the
        checkpoint. A second Ctrl-C stops at once, with the last checkpoint as it was."""

        def on_signal(signum, frame):
            if signum == signal.SIGINT and self.interrupt_requested:
                raise KeyboardInterrupt
            self.interrupt_requested = True

        previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            yield
        except (Interrupted, KeyboardInterrupt) as exc:
            if isinstance(exc, Interrupted):
                what = f"interrupted at learning step {self.step}; checkpoint written to {self.save()}"
            else:
                what = f"stopped at once; the last checkpoint, {ckpt.latest_checkpoint(self.run_dir)}, is intact"
            progress.close()
            log.close()
            raise Interrupted(f"{what}; {self._resume_hint()} continues") from None
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def final_report(self, summary: dict):
        """What `polyzero train` prints when the run ends, line by line (`polyzero.train.report`)."""
        from .report import final_report

        return final_report(self, summary)

    @classmethod
    def create(cls, cfg: RunConfig, run_dir: Path, progress: bool = True, **driver):
        """A new run in `run_dir`, locked to this process, with its step-0 checkpoint
        written before this returns: from then on `--resume` always has a state to take."""
        run_dir = Path(run_dir)
        created = not run_dir.exists()
        run_dir.mkdir(parents=True, exist_ok=True)
        rundir.lock(run_dir)  # until the trainer holds it
        try:
            metrics = run_dir / "metrics.jsonl"
            if ckpt.latest_checkpoint(run_dir) is not None or (metrics.is_file() and metrics.stat().st_size):
                raise UsageError(f"{run_dir} already holds a run; use --resume {run_dir} to continue it")
            ckpt.recover(run_dir)  # what a kill before the step-0 checkpoint left
            trainer = cls(cfg, run_dir, progress, **driver)
        except BaseException:  # a refused game or setting leaves no empty run directory behind
            rundir.unlock(run_dir)
            if created:
                shutil.rmtree(run_dir, ignore_errors=True)
            raise
        rundir.hold(trainer, run_dir)
        rundir.unlock(run_dir)
        ckpt.atomic_write(run_dir / "config.toml", to_toml(cfg.to_dict()).encode())
        trainer.save()
        return trainer

    @classmethod
    def resume(cls, run_dir: Path, overrides: list[str] = (), progress: bool = True, lock: bool = True, **driver):
        """The run in `run_dir` from its last checkpoint; `lock=False` for a Ray learner,
        whose supervisor holds the lock."""
        cfg, latest = prepare_resume(run_dir, overrides, lock)  # locked until the trainer holds it
        try:
            trainer = cls(cfg, run_dir, progress, **driver)
            if lock:
                rundir.hold(trainer, run_dir)
        finally:
            if lock:
                rundir.unlock(run_dir)
        trainer._restore(latest)
        return trainer


class Trainer(RunDirectory):
    def __init__(self, cfg: RunConfig, run_dir: Path, progress: bool = True):
        self._open(cfg, run_dir, progress)
        self.algo = make_algorithm(cfg, self.game)
        torch.manual_seed(cfg.seed)
        self.learner = Learner(self.algo, cfg.train, self.device)
        self.actor_evaluator = self.algo.make_evaluator(self.algo.build_network(), self.device)
        self.actor_evaluator.load_state_dict(self.learner.weights())
        # Go-Exploit start states and KataGo's techniques (polyzero.goexploit), when configured.
        self.search_control = None
        plugin = selfplay_plugin(cfg)  # polyzero.plugins.SELFPLAY_PLUGINS
        if plugin is not None:
            self.search_control = plugin.search_control(cfg, self.game, self.algo, self.actor_evaluator, cfg.seed)
            self.control_file = plugin.CHECKPOINT_FILE
            self.actor = self.search_control.make_actor(self.algo, self.game, cfg, self.actor_evaluator, cfg.seed)
        else:
            self.actor = SelfPlayActor(self.algo, self.game, cfg, self.actor_evaluator, seed=cfg.seed)
        self.replay = self.algo.make_replay()
        self.reanalyser = None
        if REANALYSE in declared_sources(cfg):
            from .reanalyse import Reanalyser

            self.reanalyser = Reanalyser(self.algo, cfg, self.device, cfg.seed)
            self.reanalyser.set_weights(self.learner.weights(), 0)
            self.replay.reanalyser = self.reanalyser
        self.sample_rng = np.random.default_rng([cfg.seed, 1])
        self.step = 0
        self.pending = 0  # positions added since the last learning step
        self.elapsed = 0.0  # wall-clock of earlier sessions of this run
        self.train_time = 0.0  # the same without evaluation time
        self.last_eval: dict = {}

    def _restore(self, path: Path) -> None:
        state = ckpt.read_state(path)
        learner = ckpt.read_learner(path)
        try:
            self.learner.load_state_dict(learner)
            apply_optimizer_settings(self.learner.optimizer, self.cfg.train)
            torch.set_rng_state(learner["torch_rng"])
            self.replay.load_bytes((path / "replay.npz").read_bytes())
            self.actor.load_state_dict(state["actor"], ckpt.read_npz(path, "actor.npz"))
        except UsageError:
            raise
        except Exception as exc:
            why = f"{type(exc).__name__}: {exc}".splitlines()[0]
            raise UsageError(f"checkpoint {path} does not match this run ({why})") from None
        self.actor_evaluator.load_state_dict(self.learner.weights())
        self.sample_rng.bit_generator.state = state["sample_rng"]
        self.step, self.pending = state["step"], state["pending"]
        self._set_acting_temperature()
        if self.reanalyser is not None:
            extra = ckpt.read_torch(path, "reanalyser.pt")
            self.reanalyser.load_state_dict(extra)
            self.reanalyser.set_weights(self.learner.weights(), -1)
        if self.search_control is not None and (path / self.control_file).is_file():
            self.search_control.load_bytes((path / self.control_file).read_bytes())
        self.elapsed, self.train_time = state["elapsed"], state["train_time"]
        self.last_eval = state.get("last_eval", {})
        self.failures = state.get("faults", {}).get("worker_failures", 0)
        dropped = MetricsLog(self.run_dir, tensorboard=False).truncate_after(self.step)
        in_flight = (
            f"{len(state['actor']['slots'])} games in flight at that checkpoint continue"
            if state["actor"]["slots"]
            else "games in flight were not in it and start anew"
        )
        print(resume_message(self.run_dir, self.step, self.cfg.train.steps, dropped, in_flight), file=sys.stderr)

    def save(self) -> Path:
        meta, arrays = self._actor_state()
        learner = self.learner.state_dict()
        learner["torch_rng"] = torch.get_rng_state()
        state = {
            "step": self.step,
            "pending": self.pending,
            "elapsed": self._now(),
            "train_time": self.train_time,
            "sample_rng": self.sample_rng.bit_generator.state,
            "actor": meta,
            "last_eval": self.last_eval,
            "game": game_spec_string(self.game),
            "faults": {"worker_failures": self.failures},
        }
        buf = _npz_bytes(arrays)
        files = {
            "config.toml": to_toml(self.cfg.to_dict()).encode(),
            "learner.pt": ckpt.torch_bytes(learner),
            "replay.npz": self.replay.to_bytes(),
            "actor.npz": buf,
            "state.json": json.dumps(state).encode(),
        }
        if self.reanalyser is not None:
            files["reanalyser.pt"] = ckpt.torch_bytes(self.reanalyser.state_dict())
        if self.search_control is not None:  # the archive and the archive actor
            files[self.control_file] = self.search_control.to_bytes()
        return ckpt.save_checkpoint(
            self.run_dir, self.step, files, self.cfg.train.keep_checkpoints, self.cfg.train.keep_replay_every
        )

    def _now(self) -> float:
        return self.elapsed + (time.perf_counter() - self._t0)

    # ------------------------------------------------------------ what a driver plugs in
    @property
    def selfplay_stats(self) -> dict:
        """Totals over the run: games, positions, searches, simulations."""
        return self.actor.stats

    def _collect(self) -> None:
        """Self-play until b_step new positions have entered the replay buffer."""
        while self.pending < self.cfg.train.positions_per_step:
            self._check_interrupt()  # between ticks: every game in a slot is still in play
            for traj in self.actor.tick():
                self.pending += self.replay.add(self.algo.trajectory_examples(traj))

    def _publish_weights(self) -> None:
        self.actor_evaluator.load_state_dict(self.learner.weights())
        self._set_acting_temperature()

    def _set_acting_temperature(self) -> None:
        schedule = getattr(self.algo, "acting_temperature", None)
        if schedule is not None:
            self.actor.temperature = schedule(self.step)

    def _runtime_metrics(self, step_seconds: float) -> dict:
        return {}

    def _actor_state(self) -> tuple[dict, dict]:
        return self.actor.state_dict()

    def _update(self) -> dict:
        """One minibatch update; prioritized replays get the new priorities back."""
        batch = self.replay.sample(self.cfg.train.batch_size, self.sample_rng)
        metrics = self.learner.update(batch)
        priority = metrics.pop("priority", None)
        if priority is not None and getattr(self.replay, "prioritized", False):
            self.replay.update_priorities(batch["index"], priority)
        return metrics

    # ------------------------------------------------------------ the loop
    def run(self) -> dict:
        cfg = self.cfg
        log, progress = self._start_run()
        with self._checkpoint_on_interrupt(progress, log):
            while self.step < cfg.train.steps:
                self._check_interrupt()
                t_step = time.perf_counter()
                sp0 = dict(self.selfplay_stats)
                self._collect()
                self.pending -= cfg.train.positions_per_step
                losses = [self._update() for _ in range(cfg.train.minibatches_per_step)]
                self.step += 1
                if self.reanalyser is not None:
                    self.reanalyser.set_weights(self.learner.weights(), self.step)
                self._publish_weights()
                control = self.search_control.end_step(self.actor) if self.search_control is not None else {}
                dt = time.perf_counter() - t_step
                self.train_time += dt
                loss = {k: float(np.mean([m[k] for m in losses])) for k in losses[0]}
                stats = self.selfplay_stats
                sp = {f"selfplay/{k}": stats[k] for k in ("games", "positions")}
                sp["selfplay/positions_per_s"] = (stats["positions"] - sp0["positions"]) / dt
                sp["selfplay/simulations_per_s"] = (stats["simulations"] - sp0["simulations"]) / dt
                sp["selfplay/games_per_step"] = stats["games"] - sp0["games"]  # Go-Exploit Section 6.2
                if self.game.num_players() == 1 and sp["selfplay/games_per_step"]:
                    sp["selfplay/mean_return"] = (stats["return_sum"] - sp0["return_sum"]) / sp[
                        "selfplay/games_per_step"
                    ]
                sp.update(control)
                runtime = self._runtime_metrics(dt)
                log.log(
                    "train",
                    self.step,
                    self._now(),
                    {**loss, **sp, **runtime, "replay/size": len(self.replay), "train_time": self.train_time},
                )
                self._periodic_evaluation(log)
                if self.step % cfg.train.checkpoint_every == 0 or self.step == cfg.train.steps:
                    self.save()
                progress.update(self.step, {**loss, **runtime}, stats, sp["selfplay/positions_per_s"], self.last_eval)
        self._finish_background_work(log)
        progress.close()
        log.close()
        return {"step": self.step, "time": self._now(), "train_time": self.train_time}

    # ------------------------------------------------------------ evaluation
    def _periodic_evaluation(self, log) -> None:
        """Every eval.every learning steps, score the network here (the Ray driver hands
        this to an evaluation actor, so training goes on meanwhile)."""
        if self.cfg.eval.every and self.step % self.cfg.eval.every == 0:
            self.last_eval = self.evaluate(self.cfg.eval.games, opponents=self.cfg.eval.opponent_specs(self.step))
            self.log_evaluation(log, self.step, self.last_eval, self.train_time)

    def log_evaluation(self, log, step: int, scores: dict, train_time: float) -> None:
        log.log("eval", step, self._now(), {**scores, "train_time": train_time})

    def _finish_background_work(self, log) -> None:
        """Evaluations (and reanalysis) still running when the run ends (none in-process)."""

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


def resume_message(run_dir, step: int, steps: int, dropped: int, in_flight: str = "") -> str:
    """What a resume says: where it continues, and only what it really discarded."""
    msg = f"resumed {run_dir} at learning step {step}"
    if step >= steps:
        return (
            f"{msg}: the run already finished (train.steps = {steps}); nothing to train "
            f"(--set train.steps=N with N > {step} trains on)"
        )
    if in_flight:
        msg += f"; {in_flight}"
    if dropped:
        msg += f"; what ran after that checkpoint was discarded ({dropped} metric records)"
    return msg


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


def _npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    import io

    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()
