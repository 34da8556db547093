"""What keeps a run directory whole: one process at a time (`lock`), and OS errors on
it (a full disk, a read-only or forbidden directory) told on one line with the remedy
(`os_error_message`), naming the command that continues the run (`resume_command`).

The lock is `flock` on `RUN_DIR/.lock`, which holds the PID of its owner for the
message a second process gets. The kernel releases a flock when its process dies,
however it dies, so a lock left by a killed run is simply taken over; the PID in the
file is only ever read for the message. (flock works on local filesystems and on
NFS since Linux 2.6.12, where it is emulated with fcntl byte-range locks.)
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

from ..errors import UsageError

LOCK = ".lock"
_held: dict[Path, list] = {}  # run directory -> [open lock file, holders in this process]


def lock(run_dir: Path) -> None:
    """Take the run directory's lock for this process (held already: one more holder),
    or raise UsageError naming the process that holds it. Each `lock` has its `unlock`."""
    run_dir = Path(run_dir).resolve()
    if run_dir in _held:
        _held[run_dir][1] += 1
        return
    fd = os.open(run_dir / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
        os.close(fd)
        raise UsageError(
            f"{run_dir} is in use by another training process (PID {holder}); wait for it to "
            f"end or stop it, then run again"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    _held[run_dir] = [fd, 1]


def unlock(run_dir: Path) -> None:
    """One holder fewer; the last releases the lock."""
    run_dir = Path(run_dir).resolve()
    held = _held.get(run_dir)
    if held is None:
        return
    held[1] -= 1
    if held[1] == 0:
        del _held[run_dir]
        os.close(held[0])  # closing the last descriptor releases the flock


def hold(owner, run_dir: Path) -> None:
    """Take the lock for as long as `owner` (a trainer) lives."""
    import weakref

    lock(run_dir)
    weakref.finalize(owner, unlock, run_dir)


def resume_command(run_dir: Path, workers: int = 0) -> str:
    """The command that continues the run in `run_dir`."""
    return f"polyzero train --resume {run_dir}" + (f" --workers {workers}" if workers else "")


_REMEDY = {
    errno.ENOSPC: "the disk is full: free space there (older runs, checkpoints) or lower train.keep_checkpoints",
    errno.EDQUOT: "the disk quota is used up: free space there or raise the quota",
    errno.EROFS: "the filesystem is read-only: remount it writable, or copy the run directory to a writable place",
    errno.EACCES: "permission denied: give this user write access to the run directory, or use another --run-dir",
    errno.EPERM: "operation not permitted: give this user write access to the run directory, or use another --run-dir",
}


def os_error_message(exc: OSError, run_dir: Path | None, workers: int = 0) -> str | None:
    """One line for an OS error on the run directory, naming the path and the remedy;
    None for an error this does not describe."""
    remedy = _REMEDY.get(exc.errno)
    if remedy is None:
        return None
    where = exc.filename if exc.filename and not str(exc.filename).startswith("<") else run_dir
    msg = f"cannot write {where}: {exc.strerror or os.strerror(exc.errno)}; {remedy}"
    if run_dir is not None and (Path(run_dir) / "checkpoints" / "latest").is_file():
        msg += f"; the checkpoints already written are intact, and {resume_command(run_dir, workers)} continues"
    return msg
