"""Atomic checkpoints: the contract between a run and whatever reads or resumes it.

A checkpoint is a directory `RUN/checkpoints/step_NNNNNN/` holding
  config.toml   the full resolved config
  learner.pt    weights, optimizer state, torch RNG (loaded with weights_only=True)
  replay.npz    the replay buffer
  actor.npz     search targets of the games in flight
  state.json    counters, NumPy RNG states, games in flight as action histories
  reanalyser.pt MuZero Reanalyze's target network and RNG (when it is on)
  goexploit.npz Go-Exploit's archive and archive actor (when it is on)
It is written into a temporary directory, fsynced, and renamed into place;
`RUN/checkpoints/latest` (replaced atomically) names the newest complete one,
so a kill at any moment leaves the previous checkpoint intact.

Only the newest checkpoint is resumed, so the older ones it keeps
(`train.keep_checkpoints`) drop their replay buffers, which are most of a
checkpoint's size: the rest is what `arena`, `play` and evaluation read.
"""

from __future__ import annotations

import io
import json
import os
import shutil
from pathlib import Path

import numpy as np
import torch

from ..errors import UsageError

LATEST = "latest"
BUFFERS = ("replay.npz", "queries.npz")  # read only when the run resumes


def _fsync_write(path: Path, data: bytes) -> None:
    with open(path, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes) -> None:
    """Write `data` to `path` so that readers see the old or the new file, never half."""
    tmp = path.with_name(f".{path.name}.tmp")
    _fsync_write(tmp, data)
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def torch_bytes(obj) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def save_checkpoint(run_dir: Path, step: int, files: dict[str, bytes], keep: int) -> Path:
    root = Path(run_dir) / "checkpoints"
    root.mkdir(parents=True, exist_ok=True)
    name = f"step_{step:06d}"
    tmp = root / f".tmp-{name}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    for fname, data in files.items():
        _fsync_write(tmp / fname, data)
    _fsync_dir(tmp)
    final = root / name
    if final.exists():
        shutil.rmtree(final)
    os.rename(tmp, final)
    _fsync_dir(root)
    atomic_write(root / LATEST, name.encode())
    _prune(root, keep)
    return final


def _prune(root: Path, keep: int) -> None:
    done = sorted(p for p in root.glob("step_*") if p.is_dir())
    for old in done[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    for older in done[-keep:-1]:
        for name in BUFFERS:
            (older / name).unlink(missing_ok=True)
    for stale in root.glob(".tmp-*"):
        shutil.rmtree(stale, ignore_errors=True)


def latest_checkpoint(run_dir: Path) -> Path | None:
    root = Path(run_dir) / "checkpoints"
    pointer = root / LATEST
    if not pointer.is_file():
        return None
    path = root / pointer.read_text().strip()
    return path if path.is_dir() else None


def resolve_checkpoint(path: str | Path) -> Path:
    """A run directory (its latest checkpoint), a checkpoint directory, or a file in one."""
    p = Path(path)
    if p.is_file():
        p = p.parent
    if not p.exists():
        raise UsageError(f"no such run directory or checkpoint: {path}")
    if (p / "learner.pt").is_file():
        return p
    latest = latest_checkpoint(p)
    if latest is None:
        raise UsageError(f"{path} holds no checkpoint (no checkpoints/latest)")
    return latest


def read_learner(ckpt: Path) -> dict:
    return read_torch(ckpt, "learner.pt")


def read_torch(ckpt: Path, name: str) -> dict:
    """A torch file of the checkpoint, loaded with weights_only=True (no code runs on load),
    always on the CPU: load_state_dict moves weights to their device, and torch's RNG
    state must stay a CPU tensor (set_rng_state refuses a CUDA one)."""
    try:
        return torch.load(ckpt / name, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise UsageError(f"checkpoint {ckpt} is incomplete: {name} is missing") from None
    except Exception as exc:  # corrupt pickle, truncated zip, foreign objects
        raise UsageError(f"checkpoint {ckpt} is corrupt: {name} could not be read ({type(exc).__name__})") from None


def read_state(ckpt: Path) -> dict:
    try:
        return json.loads((ckpt / "state.json").read_text())
    except FileNotFoundError:
        raise UsageError(f"checkpoint {ckpt} is incomplete: state.json is missing") from None
    except json.JSONDecodeError:
        raise UsageError(f"checkpoint {ckpt} is corrupt: state.json is not valid JSON") from None


def read_npz(ckpt: Path, name: str) -> dict[str, np.ndarray]:
    try:
        with np.load(ckpt / name, allow_pickle=False) as f:
            return {k: f[k] for k in f.files}
    except FileNotFoundError:
        raise UsageError(f"checkpoint {ckpt} is incomplete: {name} is missing") from None
    except Exception as exc:
        raise UsageError(f"checkpoint {ckpt} is corrupt: {name} could not be read ({type(exc).__name__})") from None
