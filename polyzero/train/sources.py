"""The data sources of the training loop (`polyzero.train.loop`), and what an algorithm
or plug-in declares to the runtime, asked here so that `polyzero.train` names no
algorithm (docs/adding_an_algorithm.md):

* `data_sources(cfg)` (a static method of the algorithm's class, optional): the data
  sources beyond self-play its config asks for, by name; "reanalyse" is MuZero
  Reanalyze (Appendix H): stored positions re-searched with the latest weights.
* `extra_actors(cfg)` (of a runtime of its own, `polyzero.plugins.RUNTIMES`): its Ray
  actors beside the self-play workers, config key -> count.
"""

from __future__ import annotations

from typing import Protocol

from ..plugins import algorithm_class, own_runtime
from . import checkpoint as ckpt
from .actor_threads import ActorThreads, first_actor_state

REANALYSE = "reanalyse"


def declared_sources(cfg) -> tuple[str, ...]:
    """The data sources beyond self-play that `cfg`'s algorithm declares for this config."""
    declare = getattr(algorithm_class(cfg.algo), "data_sources", None)
    return tuple(declare(cfg)) if declare is not None else ()


def extra_actors(cfg) -> dict[str, int]:
    """The run's Ray actors beside the self-play workers, by the config key that sets
    their number: evaluation and reanalyse actors (the common runtime), or what a runtime
    of its own declares."""
    runtime = own_runtime(cfg.algo)
    if runtime is not None:
        return runtime.extra_actors(cfg)
    return {
        "ray.evaluators": cfg.ray.evaluators if cfg.eval.every else 0,
        "ray.reanalysers": cfg.ray.reanalysers if REANALYSE in declared_sources(cfg) else 0,
        "ray.inference_servers": cfg.ray.inference_servers if cfg.selfplay.shared_inference else 0,
    }


class DataSource(Protocol):
    """What the loop asks of a data source, each learning step and at each checkpoint."""

    def collect(self, loop) -> None:
        """This step's new data into the loop's replay (checking `loop._check_interrupt`
        between units of work)."""

    def publish(self, loop) -> None:
        """The learner's weights after a step (`loop.learner`, `loop.step`) to whatever
        plays or searches with them."""

    def end_step(self, loop, updates: int) -> dict:
        """Bookkeeping after the step's `updates` minibatch updates; the step's metrics."""

    def state(self) -> tuple[dict, dict[str, ckpt.Content]]:
        """(entries of the checkpoint's state.json, files of the checkpoint)."""

    def load(self, path, state: dict) -> None:
        """Restore from checkpoint `path` (its state.json is `state`)."""

    def resumed(self, loop) -> str:
        """After a restore, the loop's counters set: publish weights; a note for the
        resume's message (or "")."""


class RayPart(Protocol):
    """A data source's part under the Ray executor (`ray_driver.RaySelfPlay`), which a
    source may provide as `ray_part(executor)` (None: nothing to add): actors of its own
    beside the self-play workers, what each self-play task carries and what the learner
    takes from its result. The part reads its own settings; the executor reads none."""

    actors: list  # its actors: they get the workers' weights, and are stopped with them

    def start(self, executor) -> None:
        """Start its actors (`executor.start_workers`)."""

    def task(self, positions: int) -> dict:
        """Keyword arguments a self-play task for `positions` positions carries (the
        worker's actor's `begin_task`)."""

    def take(self, loop, out: dict) -> None:
        """A self-play task's result (its examples are in the replay already)."""

    def submit(self, actor):
        """A task for one of its own actors; its object reference."""

    def result(self, loop, out: dict) -> None:
        """What that task returned."""

    def publish(self, executor, weights_ref, step: int) -> None:
        """After the workers got the weights of learning step `step` (`weights_ref`, in
        Ray's object store): what else it does with them."""

    def finish(self, executor) -> None:
        """At the end of the run: wait for its work still running."""

    def metrics(self) -> dict:
        """Its `ray/...` metrics of the step."""

    def stop(self, executor) -> None:
        """Stop what it started beside `actors` (the executor stops those)."""


class SelfPlaySource:
    """Trajectory self-play in this process: an actor's finished games enter the replay
    until b_step new positions have (positions of games still in play are the
    checkpoint's `actor.npz`: a resume continues them)."""

    def __init__(self, algo, actor, evaluator, replay, positions_per_step: int):
        self.algo, self.actor, self.evaluator, self.replay = algo, actor, evaluator, replay
        self.positions_per_step = positions_per_step
        self.pending = 0  # positions added since the last learning step
        self.actor_state = actor.state_dict  # a Ray trainer's actor state is its workers' totals

    def collect(self, loop) -> None:
        while self.pending < self.positions_per_step:
            loop._check_interrupt()  # between ticks: every game in a slot is still in play
            for traj in self.actor.tick():
                self.pending += self.replay.add(self.algo.trajectory_examples(traj))
        self.pending -= self.positions_per_step

    def publish(self, loop) -> None:
        self.evaluator.load_state_dict(loop.learner.weights())
        self.set_temperature(loop.step)

    def set_temperature(self, step: int) -> None:
        schedule = getattr(self.algo, "acting_temperature", None)
        if schedule is not None:
            self.actor.temperature = schedule(step)

    def end_step(self, loop, updates: int) -> dict:
        return {}

    def state(self) -> tuple[dict, dict[str, ckpt.Content]]:
        """The replay is its writer: the checkpoint streams it into `replay.npz`."""
        meta, arrays = self.actor_state()
        return (
            {"pending": self.pending, "actor": meta},
            {"replay.npz": self.replay.write_npz, "actor.npz": ckpt.npz_writer(arrays)},
        )

    def load(self, path, state: dict) -> None:
        self.replay.load_npz(path / "replay.npz")
        meta, arrays = state["actor"], ckpt.read_npz(path, "actor.npz")
        if not isinstance(self.actor, ActorThreads):
            meta, arrays = first_actor_state(meta, arrays)
        self.actor.load_state_dict(meta, arrays)
        self.pending = state["pending"]
        self.in_flight = len(meta["slots"])

    def resumed(self, loop) -> str:
        self.evaluator.load_state_dict(loop.learner.weights())
        self.set_temperature(loop.step)
        return (
            f"{self.in_flight} games in flight at that checkpoint continue"
            if self.in_flight
            else "games in flight were not in it and start anew"
        )


class ReanalyseSource:
    """MuZero Reanalyze (Appendix H) in this process: the replay re-searches part of each
    minibatch with the latest weights (`Reanalyser`); its target network and random state
    are the checkpoint's `reanalyser.pt`."""

    FILE = "reanalyser.pt"

    def __init__(self, algo, cfg, device, replay, weights: dict):
        from ..algos.reanalyse import Reanalyser

        self.seed = cfg.seed
        self.reanalyser = Reanalyser(algo, cfg, device, cfg.seed)
        self.reanalyser.set_weights(weights, 0)
        replay.reanalyser = self.reanalyser

    def ray_part(self, executor) -> RayPart:
        """Under Ray: reanalyse actors of their own (`ray_reanalyse.RayReanalyse`)."""
        from .ray_reanalyse import RayReanalyse

        return RayReanalyse(self.reanalyser, self.seed)

    def collect(self, loop) -> None:
        """Nothing: the replay reanalyses as it samples."""

    def publish(self, loop) -> None:
        self.reanalyser.set_weights(loop.learner.weights(), loop.step)

    def end_step(self, loop, updates: int) -> dict:
        return {}

    def state(self) -> tuple[dict, dict[str, ckpt.Content]]:
        return {}, {self.FILE: ckpt.torch_writer(self.reanalyser.state_dict())}

    def load(self, path, state: dict) -> None:
        self.reanalyser.load_state_dict(ckpt.read_torch(path, self.FILE))

    def resumed(self, loop) -> str:
        self.reanalyser.set_weights(loop.learner.weights(), -1)
        return ""


class SearchControlSource:
    """A self-play plug-in's part (`polyzero.plugins.SELFPLAY_PLUGINS`: Go-Exploit's
    archive and archive actor, KataGo's statistics) after each step: states of interest
    into the archive, archive games played; its state is the checkpoint part the plug-in
    names."""

    def __init__(self, control, plugin, selfplay: SelfPlaySource):
        self.control, self.plugin, self.selfplay = control, plugin, selfplay
        self.file = plugin.CHECKPOINT_FILE

    def ray_part(self, executor) -> RayPart | None:
        """The plug-in's part under Ray (its `ray_part(control, executor)`), if it has one."""
        make = getattr(self.plugin, "ray_part", None)
        return make(self.control, executor) if make is not None else None

    def collect(self, loop) -> None:
        """Nothing: the self-play actor starts its games from the archive itself."""

    def publish(self, loop) -> None:
        """Nothing: its archive actor plays with the self-play actor's network."""

    def end_step(self, loop, updates: int) -> dict:
        return self.control.end_step(self.selfplay.actor)

    def state(self) -> tuple[dict, dict[str, ckpt.Content]]:
        return {}, {self.file: self.control.to_bytes()}

    def load(self, path, state: dict) -> None:
        if (path / self.file).is_file():
            self.control.load_bytes((path / self.file).read_bytes())

    def resumed(self, loop) -> str:
        return ""
