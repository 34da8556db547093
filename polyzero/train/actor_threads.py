"""Several self-play actors in threads of one process, sharing one inference service
(`selfplay.actors`, `selfplay.shared_inference`; issue 60, item 3).

Each actor is a :class:`~polyzero.train.selfplay.SelfPlayActor` with its own games and
random stream ([seed, its index]; actor 0: the seed) whose evaluator is a client of one
:class:`~polyzero.nets.inference_service.InferenceService`. A tick makes one move in
every actor's games, the actors in threads at once: while one waits for the network
the others walk their trees (the tree kernels release the GIL). Finished games come
back in actor order, so the trajectories of a tick do not depend on thread timing.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from ..nets.inference_service import InferenceService
from .selfplay import SelfPlayActor, new_stats


def service_settings(cfg) -> dict:
    """The inference service's keyword arguments from `selfplay`'s inference_* keys."""
    sp = cfg.selfplay
    return {
        "max_batch": sp.inference_max_batch,
        "buckets": tuple(sp.inference_buckets),
        "wait_ms": sp.inference_wait_ms,
        "dtype": sp.inference_dtype,
    }


def actor_seed(seed, index: int):
    """Actor 0 plays as the single actor with `seed` would; the others get streams of their
    own ([seed, index]: unlike seed + index, not another run's actor 0)."""
    if index == 0:
        return seed
    return [*seed, index] if isinstance(seed, (list, tuple)) else [seed, index]


class ActorThreads:
    """N actors behind the one actor interface the trainer drives (`tick`, `stats`,
    `temperature`, `state_dict`, `load_state_dict`); `evaluator` is what the trainer
    loads new weights into (the service, through one client)."""

    def __init__(self, algo, game, cfg, evaluator, seed: int, make_actor=SelfPlayActor):
        self.service = InferenceService(evaluator, **service_settings(cfg))
        self.clients = [self.service.client() for _ in range(cfg.selfplay.actors)]
        self.actors = [make_actor(algo, game, cfg, c, actor_seed(seed, i)) for i, c in enumerate(self.clients)]
        for c in self.clients:  # active during their actor's moves only (tick)
            c.idle()
        self.evaluator = self.clients[0]
        self._pool = ThreadPoolExecutor(len(self.actors), thread_name_prefix="polyzero-actor")

    def tick(self) -> list:
        for c in self.clients:  # all of them before any sends: the first batch waits for each
            c.active()
        futures = [self._pool.submit(self._tick, i) for i in range(len(self.actors))]
        finished = []
        for f in futures:  # in actor order; an actor's error is raised here
            finished += f.result()
        return finished

    def _tick(self, index: int) -> list:
        try:
            return self.actors[index].tick()
        finally:
            self.clients[index].idle()  # the others' batches stop waiting for this actor's requests

    @property
    def stats(self) -> dict:
        total = new_stats()
        for a in self.actors:
            for k in total:
                total[k] += a.stats[k]
        return total

    @property
    def temperature(self) -> float:
        return self.actors[0].temperature

    @temperature.setter
    def temperature(self, value: float) -> None:
        for a in self.actors:
            a.temperature = value

    def state_dict(self):
        """Every actor's games in flight; `slots` lists them all (a resume counts them).
        One actor writes a plain actor's state: the Ray executor's checkpoints and this
        one's then resume each other (`--workers` with selfplay.shared_inference)."""
        if len(self.actors) == 1:
            return self.actors[0].state_dict()
        metas, arrays = [], {}
        for i, a in enumerate(self.actors):
            meta, arrs = a.state_dict()
            metas.append(meta)
            arrays.update({f"actor{i}_{k}": v for k, v in arrs.items()})
        slots = [s for m in metas for s in m["slots"]]
        return {"actors": metas, "slots": slots, "stats": self.stats}, arrays

    def load_state_dict(self, meta: dict, arrays: dict) -> None:
        """A checkpoint of as many actors continues each; a plain actor's (one actor, or
        the Ray executor's) continues in actor 0; any other starts fresh games (the totals
        carried by actor 0)."""
        metas = meta.get("actors")
        if metas is None:
            self.actors[0].load_state_dict(meta, arrays)
            return
        if len(metas) != len(self.actors):
            first = self.actors[0]
            first.stats = {**new_stats(), **meta["stats"]}
            return
        for i, (a, m) in enumerate(zip(self.actors, metas)):
            prefix = f"actor{i}_"
            a.load_state_dict(m, {k[len(prefix) :]: v for k, v in arrays.items() if k.startswith(prefix)})

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        for c in self.clients:
            c.close()
        self.service.close()
