"""The supervised learner of `polyzero train --workers N`.

The trainer under Ray (`RayTrainer`; `RaySoGTrainer` for Student of Games), that
is the learner, the replay buffer and the loop feeding them, runs as one Ray actor
placed on the node of the command, so the run directory is this node's; this
process supervises it:

* This process holds the run directory's lock (`polyzero.train.rundir`) for the
  whole run; the learner actors write the directory in its name.
* A new run is created here first and its step-0 checkpoint written, by the
  in-process trainer: a bad config fails before Ray starts, and every learner
  actor, the first included, resumes from a checkpoint.
* The progress display and the learner's messages come from the run directory
  (`metrics.jsonl`, `learner.log`).
* If the learner's process dies, a new learner actor resumes the run from the
  last checkpoint: the learning steps after it (at most `train.checkpoint_every`)
  are lost, and the message says how many. The actors the dead learner owned
  (self-play, evaluation, reanalyse, archive, query solvers) die with it (Ray's
  fate sharing); the new learner starts its own.
  A learner killed while it starts is such a death too.
* A second death within `ray.learner_restart_window` seconds stops the run,
  its last checkpoint intact; every message that stops a run names that
  checkpoint and the command that continues.
* Ctrl-C or SIGTERM here reaches the learner as SIGTERM: it writes a checkpoint
  and stops.
"""

from __future__ import annotations

import math
import os
import signal
import sys
import time
from pathlib import Path

from ..errors import RunStopped, UsageError
from ..nets.inference import resolve_device, set_threads
from . import checkpoint as ckpt, rundir
from .driver import Interrupted, trainer_classes
from .progress import Progress
from .resume import prepare_resume

LOG = "learner.log"


class LearnerActor:
    """A plain class Ray runs as an actor: the Ray trainer, resumed from the run directory."""

    def __init__(self, algo: str, run_dir: str, overrides: list[str], workers: int, threads: int):
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the supervisor decides; SIGTERM stops the run
        sys.stderr = open(Path(run_dir) / LOG, "a", buffering=1)  # noqa: SIM115 - for the actor's life
        set_threads(threads)
        self.trainer = trainer_classes(algo)[1].resume(
            run_dir, overrides, progress=False, lock=False, workers=workers
        )  # the supervisor holds the lock
        self.report = None

    def pid(self) -> int:
        return os.getpid()

    def run(self) -> dict:
        return self.trainer.run()

    def next_report_line(self, summary: dict) -> str | None:
        """The final report (`polyzero.train.report`) one line at a time, as each is ready."""
        if self.report is None:
            self.report = self.trainer.final_report(summary)
        return next(self.report, None)


class SupervisedRun:
    """The command's side: the trainer interface `polyzero train` uses (create, resume,
    run, final_report), keeping a learner actor alive."""

    def __init__(
        self,
        cfg,
        run_dir: Path,
        overrides: list[str],
        progress: bool,
        workers: int,
        ray_address: str | None,
        fresh: bool,
    ):
        self.cfg, self.run_dir, self.overrides = cfg, Path(run_dir), list(overrides)
        self.show_progress, self.workers, self.ray_address, self.fresh = progress, workers, ray_address, fresh
        try:
            self.device = resolve_device(cfg.device)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        from .ray_driver import _import_ray, check_ray_inference

        check_ray_inference(cfg, workers)  # here, not in the learner actor: one line, exit 2
        self.ray = _import_ray()  # before a new run's directory is written
        self.actor = None
        self._owns_ray = False
        self.restarts = 0
        self.signals = 0  # Ctrl-C and SIGTERM received

    @classmethod
    def create(cls, cfg, run_dir: Path, progress: bool = True, workers: int = 2, ray_address: str | None = None):
        run = cls(cfg, run_dir, [], progress, workers, ray_address, fresh=True)
        # Its step-0 checkpoint, for the first learner; the run directory's lock, for this process.
        run._creator = trainer_classes(cfg.algo)[0].create(cfg, run_dir, progress=False)
        return run

    @classmethod
    def resume(
        cls,
        run_dir: Path,
        overrides: list[str] = (),
        progress: bool = True,
        workers: int = 2,
        ray_address: str | None = None,
    ):
        # Locked for the life of this process: the learner actors write the directory.
        cfg, _ = prepare_resume(run_dir, overrides)
        return cls(cfg, run_dir, overrides, progress, workers, ray_address, fresh=False)

    # ------------------------------------------------------------ the run
    def run(self) -> dict:
        from .ray_driver import check_cpus, cpu_demand, start_ray

        self._owns_ray = start_ray(self.ray, cpu_demand(self.cfg, self.workers), self.ray_address)
        # The handlers only count: an exception raised inside ray.get comes out garbled.
        previous = {sig: signal.signal(sig, self._count_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            check_cpus(self.ray, self.cfg, self.workers)
            return self._supervise()
        except BaseException:
            self.close()
            raise
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _count_signal(self, signum, frame) -> None:
        self.signals += 1

    def _get(self, ref, what: str):
        """ray.get, polling for Ctrl-C or SIGTERM."""
        while not self.ray.wait([ref], timeout=0.5)[0]:
            if self.signals:
                raise Interrupted(self._stopped(f"interrupted while {what}"))
        return _unwrap(self.ray, ref)

    def _supervise(self) -> dict:
        ray = self.ray
        metrics, log = _Follow(self.run_dir / "metrics.jsonl"), _Follow(self.run_dir / LOG)
        log.skip()  # what earlier runs of this directory wrote there is not news
        display = _Display(self.cfg.train.steps, self.show_progress)
        deaths: list[float] = []
        quiet = self.fresh  # a new run's first learner: its "resumed at step 0" is no news
        try:
            while True:
                try:
                    pid = self._start_learner(metrics, log, quiet)
                    quiet = False
                    return self._wait(self.actor.run.remote(), pid, metrics, log, display)
                except ray.exceptions.RayActorError as exc:  # the learner's process died
                    self._echo(log, display)
                    deaths.append(time.monotonic())
                    display.write(self._learner_lost(exc, deaths, display.step))
        finally:
            display.close()

    def _start_learner(self, metrics, log, quiet: bool) -> int:
        import torch
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        ray = self.ray
        node = ray.get_runtime_context().get_node_id()
        gpus = self.cfg.ray.learner_gpus if self.device.type == "cuda" else 0
        threads = self.cfg.threads or torch.get_num_threads()
        # No runtime_env of its own: the actors it starts would inherit it (Ray's one thread each stays).
        remote = ray.remote(num_cpus=0, num_gpus=gpus, max_restarts=0)(LearnerActor).options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)
        )
        self.actor = remote.remote(self.cfg.algo, str(self.run_dir), self.overrides, self.workers, threads)
        try:
            pid = self._get(self.actor.pid.remote(), "the learner started")
        except ray.exceptions.RayActorError as exc:
            if not getattr(exc, "actor_init_failed", False):
                raise  # its process died while starting: a death like any other (`_supervise`)
            # Its constructor raised (a refused checkpoint): the error's last line says why.
            why = [line for line in str(exc).splitlines() if line.strip()][-1].strip()
            raise RunStopped(self._stopped(f"the learner actor could not start: {why}")) from None
        metrics.skip()  # the resume has truncated the metrics to its checkpoint
        if quiet:
            log.skip()
        return pid

    def _wait(self, ref, pid: int, metrics, log, display) -> dict:
        """The learner's run, following its metrics and messages. Ctrl-C or SIGTERM here
        reaches the learner as SIGTERM, and its own Interrupted (naming the checkpoint it
        wrote) comes back; a second one stops without waiting for it."""
        ray, told = self.ray, 0
        while True:
            ready, _ = ray.wait([ref], timeout=0.5)
            for rec in metrics.records():
                display.show(rec)
            self._echo(log, display)
            if ready:
                try:
                    return _unwrap(ray, ref)
                except ray.exceptions.RayActorError:
                    if told:  # it died while stopping
                        raise Interrupted(self._stopped("the learner died while stopping")) from None
                    raise
            if self.signals > told:
                if told:
                    raise Interrupted(self._stopped("stopped without waiting for the learner's checkpoint"))
                os.kill(pid, signal.SIGTERM)
                told = self.signals

    def _stopped(self, what: str) -> str:
        """`what` happened, the last good checkpoint and the command that continues."""
        return (
            f"{what}; the last checkpoint, {ckpt.latest_checkpoint(self.run_dir)}, is intact: "
            f"{rundir.resume_command(self.run_dir, self.workers)} continues"
        )

    def _learner_lost(self, exc, deaths: list[float], last_step: int) -> str:
        """The message of a learner that died and will be recreated (RunStopped when it
        died twice within the window)."""
        window = self.cfg.ray.learner_restart_window
        latest = ckpt.latest_checkpoint(self.run_dir)
        resumed = int(latest.name.split("_")[-1])
        if len(deaths) > 1 and deaths[-1] - deaths[-2] <= window:
            raise RunStopped(
                self._stopped(
                    f"the learner died twice within {window:g} s (ray.learner_restart_window); the run stopped"
                )
            )
        self.restarts += 1  # the new learner gets the same --set overrides: the checkpoint may predate them
        return (
            f"the learner's process died ({type(exc).__name__}); a new learner resumes from {latest}: "
            f"{max(last_step - resumed, 0)} learning steps lost (learner restart {self.restarts})"
        )

    def _echo(self, log, display) -> None:
        for line in log.lines():
            display.write(line)

    # ------------------------------------------------------------ after the run
    def final_report(self, summary: dict):
        """The learner's final report, line by line; then Ray shuts down."""
        try:
            while (
                line := self._get(self.actor.next_report_line.remote(summary), "the final evaluation ran")
            ) is not None:
                yield line
        except self.ray.exceptions.RayActorError:
            raise RunStopped(
                f"the learner died in the final evaluation; the run itself is complete "
                f"({ckpt.latest_checkpoint(self.run_dir)}); polyzero arena or ladder "
                f"evaluates it"
            ) from None
        finally:
            self.close()

    def close(self) -> None:
        if self.actor is not None:
            self.ray.kill(self.actor, no_restart=True)
            self.actor = None
        if self._owns_ray:
            self.ray.shutdown()
            self._owns_ray = False


def _unwrap(ray, ref):
    """ray.get, raising the learner's own Interrupted or UsageError (not Ray's wrapper)."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        if isinstance(exc.cause, (Interrupted, UsageError, OSError)):
            raise exc.cause from None
        raise


class _Follow:
    """The new complete lines of a file another process appends to."""

    def __init__(self, path: Path):
        self.path, self.offset = path, 0

    def _size(self) -> int:
        try:
            return self.path.stat().st_size
        except FileNotFoundError:
            return 0

    def skip(self) -> None:
        self.offset = self._size()

    def lines(self) -> list[str]:
        if self._size() < self.offset:  # rewritten shorter (a resume truncates the metrics)
            self.offset = 0
        if self._size() == self.offset:
            return []
        with open(self.path, "rb") as fh:
            fh.seek(self.offset)
            data = fh.read()
        end = data.rfind(b"\n") + 1
        self.offset += end
        return data[:end].decode(errors="replace").splitlines()

    def records(self) -> list[dict]:
        import json

        out = []
        for line in self.lines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        return out


class _Display:
    """The in-process progress display, fed from the learner's metrics records."""

    def __init__(self, steps: int, enabled: bool):
        self.progress, self.step, self.last_eval = None, 0, {}
        self.steps, self.enabled = steps, enabled

    def show(self, rec: dict) -> None:
        if rec.get("kind") == "eval":
            self.last_eval = {k: v for k, v in rec.items() if k.startswith("eval/")}
        if rec.get("kind") != "train":
            return
        self.step = rec["step"]
        if self.progress is None:
            self.progress = Progress(self.steps, self.step - 1, enabled=self.enabled)
        loss = dict.fromkeys(("loss/total", "loss/value", "loss/policy"), math.nan) | rec
        stats = {"games": rec.get("selfplay/games", 0), "positions": rec.get("selfplay/positions", 0)}
        self.progress.update(self.step, loss, stats, rec.get("selfplay/positions_per_s", 0.0), self.last_eval)

    def write(self, line: str) -> None:
        if self.progress is not None:
            self.progress.bar.write(line, file=sys.stderr)
        else:
            print(line, file=sys.stderr)

    def close(self) -> None:
        if self.progress is not None:
            self.progress.close()
