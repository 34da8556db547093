"""One inference service for the Ray self-play workers (`--workers N` with
`selfplay.shared_inference`; issue 60, item 3, docs/cluster.md "One GPU box").

The network lives in one Ray actor, :class:`InferenceServer`, on the run's device
(the GPU where there is one); Ray runs up to `max_concurrency` of its method calls at
once in threads, and each calls the :class:`~polyzero.nets.inference_service.InferenceService`
inside it, which joins the concurrent calls into one batch. Each worker's search calls
a :class:`RemoteEvaluator`, the evaluator interface over Ray, so the workers walk
their trees in processes of their own (no GIL shared) while the server batches their
leaves.
"""

from __future__ import annotations

import numpy as np

from ..nets.inference_service import EntryPoints


class InferenceServer:
    """A plain class Ray runs as a threaded actor: the run's network on its device
    behind one InferenceService; `workers` clients (the workers, each searching almost
    all the time, are the clients a batch waits for)."""

    def __init__(self, cfg_dict: dict, workers: int):
        from ..algos import make_algorithm
        from ..config import build_config
        from ..games import load_game
        from ..nets.inference import resolve_device, set_threads
        from ..nets.inference_service import InferenceService
        from .actor_threads import service_settings

        cfg = build_config(base=cfg_dict)
        set_threads(cfg.threads)
        algo = make_algorithm(cfg, load_game(cfg.game))
        evaluator = algo.make_evaluator(algo.build_network(), resolve_device(cfg.device), selfplay=True)
        self.service = InferenceService(evaluator, **service_settings(cfg))
        self.clients = [self.service.client() for _ in range(workers)]
        self.version = -1

    def call(self, method: str, arrays: tuple) -> tuple:
        return self.service.call(method, arrays)

    def set_weights(self, weights: dict, version: int) -> int:
        """The executor sends each publication once, and again when a lost actor or the
        server restarts: a version the server holds already is not loaded again (an ONNX
        Runtime refresh, 11-39 ms, stalls every worker's calls)."""
        if version != self.version:
            self.service.load_state_dict(weights)
            self.version = version
        return version

    def stats(self) -> dict:
        return {**self.service.stats, "version": self.version}


class RemoteEvaluator(EntryPoints):
    """The evaluator interface over Ray: each call one request to the server. Its weights
    are the server's (the Ray executor sends them there), so `load_state_dict` has
    nothing to load."""

    def __init__(self, server):
        import ray

        self.ray, self.server = ray, server

    def _call(self, method: str, arrays: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
        return self.ray.get(self.server.call.remote(method, arrays))

    def load_state_dict(self, state: dict) -> None:
        pass


def start_server(ray, cfg, workers: int):
    """The server actor: a worker's CPUs, and `ray.inference_gpus` of a GPU when the run's
    device is CUDA (refused on one line where the cluster has not that much free)."""
    from ..errors import UsageError
    from ..nets.inference import resolve_device

    gpus = cfg.ray.inference_gpus if resolve_device(cfg.device).type == "cuda" else 0
    free = ray.available_resources().get("GPU", 0)
    if gpus > free:
        raise UsageError(
            f"the inference server asks for ray.inference_gpus = {gpus:g} of a GPU and {free:g} is free "
            f"(the learner holds ray.learner_gpus = {cfg.ray.learner_gpus:g}): lower one of them"
        )
    remote = ray.remote(
        num_cpus=cfg.ray.worker_cpus, num_gpus=gpus, max_concurrency=workers + 1, max_restarts=-1, max_task_retries=0
    )
    return remote(InferenceServer).remote(cfg.to_dict(), workers)
