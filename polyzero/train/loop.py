"""The one training loop: the run directory (created, locked, resumed), the learner,
metrics, progress, checkpoints and signals, for every algorithm and executor.

A learning step collects data from the run's data sources (`polyzero.train.sources`:
trajectory self-play, Reanalyze, Go-Exploit's archive, Student of Games' games and
queries), makes `train.minibatches_per_step` minibatch updates from the replay, and
publishes the new weights to the sources (Go-Exploit Table 4's b_step / b_batch). A
checkpoint holds the learner and the loop's counters, written once here, and each
source's own parts (`DataSource.state`); `--resume` restores them in the same order,
so a resumed run reaches the same weights as an uninterrupted one.

The trainers are this loop with their sources: `driver.Trainer` (the algorithms of
`polyzero.plugins.ALGORITHMS`), Student of Games' `SoGTrainer` (through
`polyzero.plugins.RUNTIMES`); their Ray subclasses replace where the sources run.
"""

from __future__ import annotations

import io
import json
import shutil
import signal
import sys
import time
from collections.abc import Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..config import RunConfig, to_toml
from ..errors import UsageError
from ..games import game_spec_string, load_game
from ..nets.inference import resolve_device, set_threads
from . import checkpoint as ckpt, rundir
from .executor import IN_PROCESS
from .metrics import MetricsLog
from .progress import Progress
from .resume import apply_optimizer_settings, prepare_resume
from .rundir import resume_command


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
    failures = 0
    step = 0  # faults of Ray actors, each counted once (`ray/worker_failures`), kept in checkpoints

    def _check_interrupt(self) -> None:
        if self.interrupt_requested:
            raise Interrupted()

    def save(self) -> Path:
        """Write a checkpoint of the run as it stands; its path."""
        raise NotImplementedError

    def _restore(self, path: Path) -> None:
        """Continue from checkpoint `path`."""
        raise NotImplementedError

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
            trainer = cls(cfg, run_dir, progress, **driver)  # type: ignore[call-arg]  # the trainer's own
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
    def resume(cls, run_dir: Path, overrides: Sequence[str] = (), progress: bool = True, lock: bool = True, **driver):
        """The run in `run_dir` from its last checkpoint; `lock=False` for a Ray learner,
        whose supervisor holds the lock."""
        cfg, latest = prepare_resume(run_dir, list(overrides), lock)  # locked until the trainer holds it
        try:
            trainer = cls(cfg, run_dir, progress, **driver)  # type: ignore[call-arg]  # the trainer's own
            if lock:
                rundir.hold(trainer, run_dir)
        finally:
            if lock:
                rundir.unlock(run_dir)
        trainer._restore(latest)
        return trainer


class TrainingLoop(RunDirectory):
    """The loop, the checkpoint and its restore. A subclass's `__init__` calls `_open`,
    builds `learner` and `replay`, and lists its data sources in `sources` (in the order
    they receive new weights), then calls `_start_counters`."""

    executor: Any = IN_PROCESS  # where the sources run (`executor.py`)
    learner: Any = None  # a `learner.Learner`
    replay: Any = None  # what the learner samples: `sample(batch_size, rng)`, `len`
    sources: list = []

    def _start_counters(self) -> None:
        self.sample_rng = np.random.default_rng([self.cfg.seed, 1])
        self.step = 0
        self.elapsed = 0.0  # wall-clock of earlier sessions of this run
        self.train_time = 0.0  # the same without evaluation time
        self.last_eval: dict = {}

    # ------------------------------------------------------------ checkpoints
    def save(self) -> Path:
        learner = self.learner.state_dict()
        learner["torch_rng"] = torch.get_rng_state()
        state = {
            "step": self.step,
            "elapsed": self._now(),
            "train_time": self.train_time,
            "sample_rng": self.sample_rng.bit_generator.state,
            "last_eval": self.last_eval,
            "game": game_spec_string(self.game),
            "faults": {"worker_failures": self.failures},
        }
        files: dict[str, ckpt.Content] = {
            "config.toml": to_toml(self.cfg.to_dict()).encode(),
            "learner.pt": ckpt.torch_writer(learner),
        }
        for source in self.sources:
            entries, parts = source.state()
            state.update(entries)
            files.update(parts)
        files["state.json"] = json.dumps(state).encode()
        return ckpt.save_checkpoint(
            self.run_dir, self.step, files, self.cfg.train.keep_checkpoints, self.cfg.train.keep_replay_every
        )

    def _restore(self, path: Path) -> None:
        state = ckpt.read_state(path)
        learner = ckpt.read_learner(path)
        try:
            self.learner.load_state_dict(learner)
            apply_optimizer_settings(self.learner.optimizer, self.cfg.train)  # then a source's schedule
            torch.set_rng_state(learner["torch_rng"])
            for source in self.sources:
                source.load(path, state)
        except UsageError:
            raise
        except Exception as exc:
            why = f"{type(exc).__name__}: {exc}".splitlines()[0]
            raise UsageError(f"checkpoint {path} does not match this run ({why})") from None
        self.sample_rng.bit_generator.state = state["sample_rng"]
        self.step = state["step"]
        self.elapsed, self.train_time = state["elapsed"], state["train_time"]
        self.last_eval = state.get("last_eval", {})
        self.failures = state.get("faults", {}).get("worker_failures", 0)
        notes = [note for note in (source.resumed(self) for source in self.sources) if note]
        self.executor.restored(self)
        dropped = MetricsLog(self.run_dir, tensorboard=False).truncate_after(self.step)
        print(resume_message(self.run_dir, self.step, self.cfg.train.steps, dropped, "; ".join(notes)), file=sys.stderr)

    def _now(self) -> float:
        return self.elapsed + (time.perf_counter() - self._t0)

    @property
    def num_workers(self) -> int:
        return self.executor.num_workers

    # ------------------------------------------------------------ the loop
    def run(self) -> dict:
        with self.executor.session(self):
            return self._run()

    def _run(self) -> dict:
        log, progress = self._start_run()
        try:
            with self._checkpoint_on_interrupt(progress, log):
                while self.step < self.cfg.train.steps:
                    self._learning_step(log, progress)
            self._finish_background_work(log)
        finally:
            self.elapsed, self._t0 = self._now(), time.perf_counter()  # a later run() continues the clock
        progress.close()
        log.close()
        return {"step": self.step, "time": self._now(), "train_time": self.train_time}

    def _learning_step(self, log, progress) -> None:
        cfg = self.cfg
        self._check_interrupt()
        t_step = time.perf_counter()
        before = dict(self.selfplay_stats)
        self._collect()
        t_collected = time.perf_counter()
        losses = self._updates()
        t_updated = time.perf_counter()
        self.step += 1
        self._publish_weights()
        ended = self._end_step(len(losses))
        t_end = time.perf_counter()
        dt = t_end - t_step
        self.train_time += dt
        loss = {k: float(np.mean([m[k] for m in losses])) for k in losses[0]} if losses else {}
        data = self._step_metrics(before, ended, dt)
        runtime = self._runtime_metrics(dt)
        # where the step's time went: waiting for / taking in new data, the updates, and the
        # rest (weights to the actors, the sources' end of step) -- what bounds a run whose
        # self-play outpaces its learner (docs/cluster.md, "One GPU box")
        phases = {
            "step_time/collect_s": t_collected - t_step,
            "step_time/update_s": t_updated - t_collected,
            "step_time/publish_s": t_end - t_updated,
        }
        log.log(
            "train",
            self.step,
            self._now(),
            {**loss, **data, **runtime, **phases, "replay/size": len(self.replay), "train_time": self.train_time},
        )
        self._periodic_evaluation(log)
        if self.step % cfg.train.checkpoint_every == 0 or self.step == cfg.train.steps:
            self.save()
        shown = loss or {k: float("nan") for k in ("loss/total", "loss/value", "loss/policy")}
        progress.update(
            self.step, {**shown, **runtime}, self.selfplay_stats, data["selfplay/positions_per_s"], self.last_eval
        )

    def _updates(self) -> list[dict]:
        """This step's minibatch updates (fewer if the replay has no batch yet); prioritized
        replays get the new priorities back."""
        out = []
        for _ in range(self.cfg.train.minibatches_per_step):
            batch = self.replay.sample(self.cfg.train.batch_size, self.sample_rng)
            if batch is None:
                break
            metrics = self.learner.update(batch)
            priority = metrics.pop("priority", None)
            if priority is not None and getattr(self.replay, "prioritized", False):
                self.replay.update_priorities(batch["index"], priority)
            out.append(metrics)
        return out

    # ------------------------------------------------------------ where the sources run
    # The executor's (in this process, or on Ray actors); a test or a subclass may wrap these.
    def _collect(self) -> None:
        """This step's new data into the replay, from every source."""
        self.executor.collect(self)

    def _publish_weights(self, force: bool = False) -> None:
        """The learner's new weights to every source, in their order."""
        self.executor.publish(self, force)

    def _end_step(self, updates: int) -> dict:
        """Each source's bookkeeping after a learning step (in this process); its metrics."""
        out: dict = {}
        for source in self.sources:
            out.update(source.end_step(self, updates))
        return out

    def _step_metrics(self, before: dict, ended: dict, step_seconds: float) -> dict:
        """The step's data metrics: the self-play totals (`before` them: at the step's start)
        and what the sources reported. Keys `selfplay/positions_per_s` at least."""
        raise NotImplementedError

    def _runtime_metrics(self, step_seconds: float) -> dict:
        return self.executor.runtime_metrics(self, step_seconds)

    @property
    def selfplay_stats(self) -> dict:
        """Totals over the run: games and positions at least."""
        raise NotImplementedError

    def _periodic_evaluation(self, log) -> None:
        """Every eval.every learning steps, score the network here, unless the executor
        hands it to an evaluation actor (training goes on meanwhile)."""
        if self.executor.evaluate(self, log):
            return
        if self.cfg.eval.every and self.step % self.cfg.eval.every == 0:
            self.last_eval = self._evaluate_now()
            self.log_evaluation(log, self.step, self.last_eval, self.train_time)

    def _evaluate_now(self) -> dict:
        raise NotImplementedError

    def log_evaluation(self, log, step: int, scores: dict, train_time: float) -> None:
        log.log("eval", step, self._now(), {**scores, "train_time": train_time})

    def _finish_background_work(self, log) -> None:
        """Evaluations (and reanalysis) still running when the run ends (none in-process)."""
        self.executor.finish(self, log)


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


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    ckpt.npz_writer(arrays)(buf)
    return buf.getvalue()
