"""Atomic checkpoints: the contract between a run and whatever reads or resumes it.

A checkpoint is a directory `RUN/checkpoints/step_NNNNNN/` holding
  config.toml   the full resolved config
  learner.pt    weights, optimizer state, torch RNG (loaded with weights_only=True)
  replay.npz    the replay buffer
  actor.npz     search targets of the games in flight
  state.json    counters, NumPy RNG states, games in flight as action histories
  reanalyser.pt MuZero Reanalyze's target network and RNG (when it is on)
  goexploit.npz Go-Exploit's archive and archive actor (when it is on)

A file's content is its bytes or a writer (`Content`): a replay writes its npz
straight into the checkpoint's file (`write_npz`) and a resume reads it straight back
into the replay (`load_npz`), so neither holds a second copy of the replay in memory.

A write is safe at every instant (`save_checkpoint`): the files go into
`.tmp-step_NNNNNN`, fsynced; a checkpoint of the same step already there is
renamed aside (`.old-step_NNNNNN`), never deleted first; the new directory is
renamed in, `RUN/checkpoints/latest` switched atomically, and only then is
anything old deleted. `recover` (run at resume, under the run's lock) puts
back or cleans what a kill at any of those points left; `latest_checkpoint`
reads through the same leftovers without changing them.

Only the newest checkpoint is resumed, so the older ones it keeps
(`train.keep_checkpoints`) become weights only: their replay buffers (most of a
checkpoint's size) go, and `learner.pt` keeps the network without the optimizer's
state, which is what `arena`, `play`, ladders and evaluation read. With
`train.keep_replay_every = K` the checkpoints of steps that are multiples of K
keep everything, so a run can be resumed from them too.
"""

from __future__ import annotations

import errno
import io
import json
import os
import shutil
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO, cast

import numpy as np
import torch

from ..errors import UsageError
from ..validation import read_text

LATEST = "latest"
BUFFERS = ("replay.npz", "queries.npz")  # read only when the run resumes
RESUME_ONLY = (*BUFFERS, "reanalyser.pt")  # what a checkpoint behind the newest drops
TMP, ASIDE = ".tmp-", ".old-"
FAULT_ENV = "POLYZERO_CHECKPOINT_FAULT"  # tests and benchmarks/fault_injection.py: STAGE[:ACTION[:N]]
#: A checkpoint file's content: its bytes, or a writer that writes them into the open
#: binary file it is given (what a replay's `write_npz` is: nothing is copied in memory).
Content = bytes | Callable[[BinaryIO], Any]
#: The instants of a write `_fault_hook` can stop it at, in order.
STAGES = ("file", "written", "aside", "renamed", "pointer_written", "switched", "pruning", "pruned")


def _fault_hook(stage: str) -> None:
    """Called at each stage of a checkpoint write, so tests and the fault-injection
    soak stop a write at a chosen instant, deterministically. POLYZERO_CHECKPOINT_FAULT
    = STAGE[:ACTION[:N]] acts at the N-th time (1: the first) STAGE is reached: ACTION
    `kill` (SIGKILL to this process, the default), `enospc`, `erofs` or `eacces`
    (that OSError, as a full, read-only or forbidden run directory gives)."""
    spec = os.environ.get(FAULT_ENV)
    if not spec:
        return
    parts = spec.split(":")
    want, action, nth = parts[0], (parts[1:2] or ["kill"])[0], (parts[2:3] or ["1"])[0]
    if want != stage:
        return
    _fault_hook.seen = getattr(_fault_hook, "seen", 0) + 1
    if _fault_hook.seen != int(nth):
        return
    if action == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    code = {"enospc": errno.ENOSPC, "erofs": errno.EROFS, "eacces": errno.EACCES}[action]
    raise OSError(code, os.strerror(code), f"<{stage}>")


def _fsync_write(path: Path, data: Content) -> None:
    with open(path, "wb") as fh:
        if callable(data):
            data(fh)
        else:
            fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: Content, stage: str = "") -> None:
    """Write `data` (bytes or a writer) to `path` so that readers see the old or the new
    file, never half."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        _fsync_write(tmp, data)
    except Exception:
        tmp.unlink(missing_ok=True)
        raise
    if stage:
        _fault_hook(f"{stage}_written")
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def torch_bytes(obj) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def torch_writer(obj) -> Callable[[BinaryIO], None]:
    """`obj`'s torch file as a checkpoint writer (the same file `torch_bytes` gives)."""
    return lambda fh: torch.save(obj, fh)


def npz_writer(arrays: dict[str, np.ndarray]) -> Callable[[BinaryIO], None]:
    """`arrays` as a checkpoint writer of an npz (the file `np.savez` writes)."""
    return lambda fh: np.savez(fh, **cast("dict[str, Any]", arrays))  # the stubs read a key as `allow_pickle`


def save_checkpoint(run_dir: Path, step: int, files: dict[str, Content], keep: int, keep_replay_every: int = 0) -> Path:
    """Write checkpoint `step` (each file's bytes, or its writer streaming it into the
    file); at no instant is the run without a resumable checkpoint. An OSError (full
    disk, read-only directory) or a writer's error leaves the previous one as it was."""
    root = Path(run_dir) / "checkpoints"
    root.mkdir(parents=True, exist_ok=True)
    name = f"step_{step:06d}"
    tmp, final, aside = root / f"{TMP}{name}", root / name, root / f"{ASIDE}{name}"
    if tmp.exists():
        shutil.rmtree(tmp)
    try:
        tmp.mkdir()
        for fname, data in files.items():
            _fsync_write(tmp / fname, data)
            _fault_hook("file")
        _fsync_dir(tmp)
    except Exception:  # a full disk, a writer's error: nothing half-written stays (a kill leaves it to `recover`)
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _fault_hook("written")
    if final.exists():  # the same step again (an interrupt right after a checkpoint)
        if aside.exists():
            shutil.rmtree(aside)
        os.rename(final, aside)
        _fsync_dir(root)
        _fault_hook("aside")
    os.rename(tmp, final)
    _fsync_dir(root)
    _fault_hook("renamed")
    atomic_write(root / LATEST, name.encode(), stage="pointer")
    _fault_hook("switched")
    shutil.rmtree(aside, ignore_errors=True)
    _prune(root, keep, name, keep_replay_every)
    _fault_hook("pruned")
    return final


def _steps(root: Path) -> list[Path]:
    return sorted(p for p in root.glob("step_*") if p.is_dir())


def _prune(root: Path, keep: int, current: str | None = None, keep_replay_every: int = 0) -> None:
    """Keep the `keep` newest checkpoints up to `current` (what `latest` names); the older
    ones weights only, except those of steps that are multiples of `keep_replay_every`;
    delete the others and any leftovers of earlier writes."""
    current = current or _pointer(root)
    done = [p for p in _steps(root) if current is None or p.name <= current]
    for old in done[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
        _fault_hook("pruning")
    for older in done[-keep:-1]:
        if keep_replay_every and int(older.name[5:]) % keep_replay_every == 0:
            continue
        # The checkpoint `current` supersedes, or one whose thinning a kill cut short (its
        # buffers still there); the others were thinned when they were superseded.
        # Reading every kept one's learner.pt again at each save made a save's cost grow
        # with train.keep_checkpoints (the benchmarks keep them all).
        if older == done[-2] or any((older / name).exists() for name in RESUME_ONLY):
            _weights_only(older)
    for stale in list(root.glob(f"{TMP}*")) + list(root.glob(f"{ASIDE}*")):
        shutil.rmtree(stale, ignore_errors=True)


def _weights_only(ckpt: Path) -> None:
    """Drop what only a resume reads: the optimizer's state, then the buffers and
    Reanalyze's target network (in that order, so that a kill in between leaves the
    buffers that mark the checkpoint as not yet thinned)."""
    learner = ckpt / "learner.pt"
    try:
        state = torch.load(learner, map_location="cpu", weights_only=True)
    except Exception:  # noqa: BLE001 - unreadable: left for the reader to report
        state = None
    if isinstance(state, dict) and "net" in state and set(state) != {"net"}:
        atomic_write(learner, torch_writer({"net": state["net"]}))
    for name in RESUME_ONLY:
        (ckpt / name).unlink(missing_ok=True)


def _pointer(root: Path) -> str | None:
    try:
        name = (root / LATEST).read_bytes().decode().strip()
    except (FileNotFoundError, UnicodeDecodeError):
        return None
    return name if name.startswith("step_") and "/" not in name else None


def latest_checkpoint(run_dir: Path) -> Path | None:
    """The checkpoint `latest` names; if a kill left it renamed aside mid-write, that one
    (read-only: `recover` puts it back)."""
    root = Path(run_dir) / "checkpoints"
    name = _pointer(root)
    if name is None:
        return None
    for path in (root / name, root / f"{ASIDE}{name}"):
        if path.is_dir():
            return path
    return None


def recover(run_dir: Path) -> list[str]:
    """Make a run directory's checkpoints consistent after a kill or a failed write, and
    say what was done: a checkpoint left aside goes back when its replacement is not in
    place (and is deleted when it is), a checkpoint renamed in before `latest` named it
    is dropped (never committed), a missing `latest` points at the newest complete
    checkpoint, half-written temporaries are deleted. Runs under the run's lock."""
    root = Path(run_dir) / "checkpoints"
    if not root.is_dir():
        return []
    done: list[str] = []
    name = _pointer(root)
    if name is not None and not (root / name).is_dir() and (root / f"{ASIDE}{name}").is_dir():
        os.rename(root / f"{ASIDE}{name}", root / name)
        done.append(f"restored {name}, left aside by an interrupted checkpoint write")
    if name is None or not (root / name).is_dir():
        complete = [p for p in _steps(root) if (p / "state.json").is_file() and (p / "learner.pt").is_file()]
        if complete:
            name = complete[-1].name
            atomic_write(root / LATEST, name.encode())
            done.append(f"pointed latest at {name}")
    for orphan in _steps(root):
        if name is not None and orphan.name > name:
            shutil.rmtree(orphan)
            done.append(f"removed {orphan.name}, written but never made latest")
    stale = list(root.glob(f"{TMP}*")) + list(root.glob(f"{ASIDE}*")) + list(root.glob(".*.tmp"))
    for path in stale:
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    if stale:
        done.append(f"removed {len(stale)} leftover(s) of an interrupted write")
    return done


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
        pointer = p / "checkpoints" / LATEST
        if pointer.is_file():  # say what is wrong with it (read_text names a file that does not decode)
            name = read_text(pointer, "checkpoint pointer").strip()
            raise UsageError(
                f"{path} holds no checkpoint: {pointer} names {name!r}, which is not a checkpoint "
                f"(polyzero train --resume {path} repairs it from the newest complete one)"
            )
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
