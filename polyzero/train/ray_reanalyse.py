"""MuZero Reanalyze (Appendix H) under the Ray executor: the Ray form of
`sources.ReanalyseSource` (`sources.RayPart`). Reanalyse actors of their own refresh random
stored unrolls while the learner trains, instead of the learner re-searching its own
minibatches; the target network stays the source's, in the learner's process. Its
settings are the source's reanalyser's (`fraction`, `targets`); the executor reads none."""

from __future__ import annotations

import numpy as np

from ..algos.reanalyse import apply, plan
from .ray_actors import ReanalyseWorker


class RayReanalyse:
    def __init__(self, reanalyser, seed: int):
        self.reanalyser = reanalyser
        self.actors: list = []  # none plays self-play tasks
        self.reanalysers: list = []
        self.reanalysing: dict = {}  # in-flight reanalysis -> (actor, planned positions)
        self.reanalysed = 0  # stored policies refreshed by reanalyse actors
        self.rng = np.random.default_rng([seed, 9])

    def start(self, executor) -> None:
        loop, cfg = executor.loop, executor.cfg
        loop.replay.reanalyser = None  # the actors reanalyse; the replay samples as stored
        remote = executor.ray.remote(num_cpus=cfg.ray.worker_cpus, max_restarts=-1, max_task_retries=0)(ReanalyseWorker)
        cfg_dict = cfg.to_dict()
        self.reanalysers = [remote.remote(cfg_dict, i) for i in range(cfg.ray.reanalysers)]
        target = self.reanalyser.state_dict()["target"]
        for actor in self.reanalysers:
            actor.set_weights.remote(loop.learner.weights(), -1, target)

    def stop(self, executor) -> None:
        for actor in self.reanalysers:
            executor.ray.kill(actor, no_restart=True)
        self.reanalysers, self.reanalysing = [], {}

    def task(self, positions: int) -> dict:
        return {}

    def take(self, loop, out: dict) -> None:
        """Nothing: self-play tasks carry nothing of Reanalyze."""

    def submit(self, actor):
        raise AssertionError("reanalyse actors take no self-play tasks")

    def result(self, loop, out: dict) -> None:
        raise AssertionError("reanalyse actors take no self-play tasks")

    def publish(self, executor, weights_ref, step: int) -> None:
        """New weights to the reanalyse actors; then the finished reanalyses written back
        and new ones handed out."""
        for actor in self.reanalysers:
            actor.set_weights.remote(weights_ref, step)
        self._reanalyse(executor)

    def finish(self, executor) -> None:
        self._reanalyse(executor, wait=True, dispatch=False)

    def metrics(self) -> dict:
        return {"ray/reanalysed_positions": self.reanalysed} if self.reanalysers else {}

    def _reanalyse(self, executor, wait: bool = False, dispatch: bool = True) -> None:
        """Write back what reanalyse actors finished; give each idle one the unrolls of as
        many random stored positions as a learning step samples times the fraction."""
        ray, loop = executor.ray, executor.loop
        if self.reanalysing:
            done, _ = ray.wait(list(self.reanalysing), num_returns=len(self.reanalysing), timeout=None if wait else 0)
            for ref in done:
                actor, work = self.reanalysing.pop(ref)
                try:
                    self.reanalysed += apply(loop.replay, work, *ray.get(ref))
                    loop._down.discard(actor)
                except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError):
                    executor._fault(actor)
        if not dispatch:
            return
        busy = {actor for actor, _ in self.reanalysing.values()}
        train = executor.cfg.train
        count = int(round(self.reanalyser.fraction * train.minibatches_per_step * train.batch_size))
        for actor in self.reanalysers:
            if actor in busy or len(loop.replay) == 0:
                continue
            slots, _ = loop.replay.sample_slots(count, self.rng)
            work = plan(loop.replay, slots, self.reanalyser.targets)
            if work is not None:
                ref = actor.compute.remote(work["obs"], work["legal"], work["boot_obs"], work["boot_legal"])
                self.reanalysing[ref] = (actor, work)
