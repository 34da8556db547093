"""Where a training loop's data sources run: the executor the loop (`loop.TrainingLoop`)
is given. `InProcess` runs them in the learner's process, one after another, so a
seed reproduces the run; the Ray executors run them on actors (`ray_driver.RaySelfPlay`
for trajectory self-play, Student of Games' `RayGamesAndQueries`), with the same
loop, checkpoints and metrics, so a run resumes under either."""

from __future__ import annotations

from contextlib import contextmanager


class InProcess:
    """Every data source in this process, in the loop's order."""

    num_workers = 0

    @contextmanager
    def session(self, loop):
        """Around `loop.run()`: what the executor starts and stops (nothing here)."""
        yield

    def collect(self, loop) -> None:
        for source in loop.sources:
            source.collect(loop)

    def publish(self, loop, force: bool = False) -> None:
        for source in loop.sources:
            source.publish(loop)

    def stats(self, loop) -> dict | None:
        """Self-play totals gathered here (None: the sources' own)."""
        return None

    def runtime_metrics(self, loop, step_seconds: float) -> dict:
        return {}

    def evaluate(self, loop, log) -> bool:
        """A periodic evaluation started elsewhere (False: the loop evaluates in process)."""
        return False

    def finish(self, loop, log) -> None:
        """Work still running when the run ends (none here)."""

    def restored(self, loop) -> None:
        """After the loop restored a checkpoint."""


IN_PROCESS = InProcess()


class ExecutorState:
    """A trainer whose executor's state (its workers, totals, ...) reads as the trainer's."""

    def __getattr__(self, name: str):
        executor = self.__dict__.get("executor")
        if executor is None:
            raise AttributeError(name)
        return getattr(executor, name)
