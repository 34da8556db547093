"""External engine processes, spoken to line by line with a deadline on every answer.

Every process started here is reaped: `close()` asks it to quit, then terminates and
kills it; a process whose owner is collected, and every one still alive when the
interpreter exits (Ctrl-C included), is closed the same way. Engines run in their own
process group, so a terminal's Ctrl-C reaches polyzero, which then closes them in order.
"""

from __future__ import annotations

import atexit
import os
import queue
import shutil
import subprocess
import threading
import time
import weakref

__all__ = ["EngineProcess", "EngineFailure", "find_binary"]


class EngineFailure(Exception):
    """The engine died, hung past its deadline or broke its protocol; the message says which."""


WAIT_SLICE_S = 0.1
_LIVE: weakref.WeakSet[EngineProcess] = weakref.WeakSet()


def _close_all() -> None:
    for proc in list(_LIVE):
        proc.close()


atexit.register(_close_all)


def find_binary(name: str) -> str | None:
    """`name` on PATH, or in /usr/games where Debian puts game engines (gnugo, stockfish)."""
    found = shutil.which(name)
    if found:
        return found
    candidate = os.path.join("/usr/games", name)
    return candidate if os.access(candidate, os.X_OK) else None


def _kill(popen: subprocess.Popen, grace: float) -> None:
    """Terminate, then kill, and always wait (no zombie)."""
    if popen.poll() is None:
        try:
            popen.terminate()
            popen.wait(grace)
        except subprocess.TimeoutExpired:
            popen.kill()
    try:
        popen.wait(5)
    except subprocess.TimeoutExpired:  # pragma: no cover - a process that survives SIGKILL
        pass
    for stream in (popen.stdin, popen.stdout):
        try:
            stream.close()
        except (OSError, ValueError):
            pass


class EngineProcess:
    """One engine: `send` a line, `read_line(timeout)` the next one."""

    def __init__(self, argv: list[str], quit_command: str = "quit"):
        self.argv = list(argv)
        self.quit_command = quit_command
        try:
            self.popen = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                bufsize=1,
                start_new_session=True,
            )
        except OSError as exc:
            raise EngineFailure(f"cannot start {self.argv[0]}: {exc.strerror}") from None
        self._lines: queue.Queue = queue.Queue()
        self._pump_thread = threading.Thread(
            target=self._pump, args=(self.popen.stdout, self._lines), name="engine-output", daemon=True
        )
        self._pump_thread.start()
        self._finalizer = weakref.finalize(self, _kill, self.popen, 1.0)
        _LIVE.add(self)

    @staticmethod
    def _pump(stream, lines: queue.Queue) -> None:
        try:
            for line in stream:
                lines.put(line.rstrip("\r\n"))
        except (OSError, ValueError):
            pass
        lines.put(None)  # end of output: the process has exited or closed stdout

    @property
    def alive(self) -> bool:
        return self.popen.poll() is None

    def send(self, line: str) -> None:
        try:
            self.popen.stdin.write(line + "\n")
            self.popen.stdin.flush()
        except (OSError, ValueError):
            raise EngineFailure(self._death()) from None

    def read_line(self, timeout: float) -> str:
        """The next output line; EngineFailure when the engine exits or `timeout` passes."""
        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            # Short slices, so that a Ctrl-C the kernel handed to another thread (this
            # engine's reader, torch's) still reaches this, the main thread, at once: its
            # handler only flags the signal, and a wait on a lock is not woken by it.
            try:
                line = self._lines.get(timeout=min(WAIT_SLICE_S, max(0.0, deadline - time.monotonic())))
                break
            except queue.Empty:
                if time.monotonic() >= deadline:
                    raise EngineFailure(f"no answer within {timeout:.1f} s") from None
        if line is None:
            self._lines.put(None)
            raise EngineFailure(self._death())
        return line

    def _death(self) -> str:
        try:
            code = self.popen.wait(1.0)
        except subprocess.TimeoutExpired:
            return "closed its output"
        return f"exited with status {code}" if code >= 0 else f"killed by signal {-code}"

    def close(self, grace: float = 1.0) -> None:
        """Ask the engine to quit, then make sure it is gone and reaped."""
        if self.popen.poll() is None:
            try:
                self.popen.stdin.write(self.quit_command + "\n")
                self.popen.stdin.flush()
                self.popen.wait(grace)
            except (OSError, ValueError, subprocess.TimeoutExpired):
                pass
        self._finalizer()  # terminate/kill/wait, once
        _LIVE.discard(self)


def deadline_after(seconds: float) -> float:
    return time.monotonic() + seconds


def seconds_until(deadline: float) -> float:
    return deadline - time.monotonic()
