"""Lean NumPy-in, NumPy-out inference: the per-call overhead dominates small-batch
search on CPU, so every call goes through one compiled entry point
(:mod:`polyzero.nets.compiled`, `net.inference`)."""

from __future__ import annotations

import ctypes
import glob
import os

import numba
import numpy as np
import scipy
import torch
from torch import nn

from .compiled import CompiledCall, resolve_path
from .eval_cache import EvaluationCache
from .winograd import WinogradNet, supports as winograd_supports

# The thread count this process chose (set_threads), None until one did.
_chosen_threads: int | None = None


def set_threads(threads: int) -> None:
    """Threads for torch's intra-op work and for the search's tree kernels (numba's
    parallel twins, :mod:`polyzero.search.kernels`); 0 leaves both at their
    defaults (all cores). Numba's threading layer, once started (by the first
    parallel kernel or thread call), sets OpenMP's count, torch's pool included, to
    every core: it is started first here, so torch's count set after it stays. SciPy's
    OpenBLAS, which the MLP programs' large layers call (``search.kernels.mlp``), gets
    the count too."""
    global _chosen_threads
    _chosen_threads = threads
    if threads:
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))  # type: ignore[attr-defined]
        torch.set_num_threads(threads)
        set_blas_threads(threads)


def set_blas_threads(threads: int) -> bool:
    """Threads of the OpenBLAS bundled with SciPy (the BLAS behind np.dot in Numba code):
    it starts one per core, and above ~262k multiply-adds a product splits across them,
    which a search given one thread must not do. False when SciPy's BLAS is not such a
    bundled OpenBLAS (then OPENBLAS_NUM_THREADS, read at its load, is the knob)."""
    libs = os.path.join(os.path.dirname(os.path.dirname(scipy.__file__)), "scipy.libs")
    found = False
    for path in glob.glob(os.path.join(libs, "*openblas*.so*")):
        lib = ctypes.CDLL(path)
        for name in ("scipy_openblas_set_num_threads", "scipy_openblas_set_num_threads64_"):
            if hasattr(lib, name):
                getattr(lib, name)(ctypes.c_int(threads))
                found = True
                break
    return found


def default_threads(threads: int) -> None:
    """:func:`set_threads` with `threads` unless this process chose its threads
    already (a trainer's config, an engine's ``--threads``): the first algorithm a
    process builds brings its config's ``threads`` (the agents of arena, play, a
    ladder, an engine), which the first search would otherwise leave at every core."""
    if _chosen_threads is None:
        set_threads(threads)


def resolve_device(name: str) -> torch.device:
    """'auto' picks CUDA when present; 'cuda' without a GPU is a usage error upstream."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda was asked for but no CUDA device is available")
    if name not in ("cpu", "cuda"):
        raise ValueError(f"device must be auto, cpu or cuda, not {name!r}")
    return torch.device(name)


class Evaluator:
    """Calls a policy-value network on a float32 batch and returns NumPy arrays
    (logits [M, A], value [M]) through the `inference` path (`net.inference`), reading
    back the rows it evaluated before from a cache of `cache` rows (`net.cache`, 0:
    none; :mod:`polyzero.nets.eval_cache`). With `winograd` = m > 0 (`net.winograd`) a
    residual tower of basic blocks run through ONNX Runtime computes its 3x3
    convolutions as F(m x m, 3 x 3) (:mod:`polyzero.nets.winograd`); other networks and
    paths ignore it."""

    def __init__(
        self,
        net: nn.Module,
        device: torch.device | str = "cpu",
        inference: str = "auto",
        cache: int = 0,
        winograd: int = 0,
    ):
        self.device = torch.device(device)
        self.net = net.to(self.device).eval()
        module = self.net
        self._winograd = None
        if winograd and resolve_path(inference, self.device) == "onnx" and winograd_supports(net):
            module = self._winograd = WinogradNet(self.net, winograd)
        self._forward = CompiledCall(module, (np.float32,), inference, self.device)
        self.cache = EvaluationCache(cache) if cache else None

    def load_state_dict(self, state: dict) -> None:
        self.net.load_state_dict(state)
        self.net.eval()
        if self._winograd is not None:
            self._winograd.refresh()
        self._forward.refresh()
        if self.cache is not None:
            self.cache.clear()

    def __call__(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.cache is not None:
            return self.cache(obs, self._forward)  # type: ignore[return-value]
        return self._forward(obs)
