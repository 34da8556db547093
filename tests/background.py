"""Long jobs a test session needs and that need nothing of the tests before them (mypy on
the package, the session's trainings), run in processes of their own from the session's
start, on the cores the suite's mostly single-threaded process leaves idle. Each job is
the same command the test would otherwise run itself; a test asks for a job's result and
waits for it.

How the jobs share the cores (C of them, those this process may run on):
- The queue starts the jobs in the order given (conftest gives the longest first), at the
  lowest priority (they take no CPU time a test wants), as many at once as the tests leave
  cores: C - 1, at least one (one at a time on 2 cores).
- A test waiting on a job leaves its core too: while it waits, one more job may run, so
  the next queued job starts on that core rather than the core idling. (Without this, at
  the suite's end one core trained the last job while the other waited on it.)
- The job a test waits on runs at the test's priority; a job asked for before its turn
  starts at once.
- A job that fails hands its exit status and output to the test that asks for it; a job
  that cannot start, the reason.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _lowest_priority() -> None:
    """A job takes only the CPU time nothing else wants: the tests running meanwhile (and
    their Ray workers, which Ray starts at niceness 15) go first."""
    os.nice(19)


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class Job:
    """One command (`python ARGV...` at the repository's root, this checkout first on the
    path), its output in files of a scratch folder (no pipe to fill while nobody reads).
    A thread of its own reaps it when it ends (its exit status, CPU seconds and end time)."""

    def __init__(self, argv: tuple[str, ...]):
        self.argv = argv
        self.scratch = Path(tempfile.mkdtemp(prefix="polyzero-test-job-"))
        self.proc: subprocess.Popen | None = None
        self.error: str | None = None  # why it could not start
        self.started: float | None = None  # time.monotonic()
        self.ended: float | None = None
        self.cpu = 0.0  # user + system seconds, the job's and its children's
        self.waited = 0.0  # seconds tests spent waiting on it
        self.done = threading.Event()
        self._lock = threading.Lock()  # held while the process is reaped: its pid is ours outside it

    @property
    def running(self) -> bool:
        return self.proc is not None and not self.done.is_set()

    def start(self, on_end=lambda: None) -> None:
        """Start the job; `on_end()` is called (from another thread) once it has ended."""
        env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        argv = [sys.executable, *(a.replace("{scratch}", str(self.scratch)) for a in self.argv)]
        try:
            with open(self.scratch / "stdout", "w") as out, open(self.scratch / "stderr", "w") as err:
                self.proc = subprocess.Popen(
                    argv, cwd=ROOT, env=env, stdout=out, stderr=err, preexec_fn=_lowest_priority
                )
        except (OSError, ValueError) as e:  # no process to be had; an argument Popen refuses
            self.error = f"the job {' '.join(argv)} could not start: {e}"
            self.done.set()
            on_end()
            return
        self.started = time.monotonic()
        threading.Thread(target=self._reap, args=(on_end,), daemon=True).start()

    def _reap(self, on_end) -> None:
        assert self.proc is not None
        pid = self.proc.pid
        try:
            os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # ended, not yet reaped: the pid is still ours
            with self._lock:
                _, status, usage = os.wait4(pid, 0)  # the only reaper: nothing else waits on or polls proc
                self.proc.returncode = os.waitstatus_to_exitcode(status)
                self.cpu = usage.ru_utime + usage.ru_stime
        except ChildProcessError:  # something else in this process reaped it (os.wait())
            with self._lock:
                self.proc.returncode = -1
                self.error = f"the exit status of {' '.join(self.proc.args)} was lost: another reaped it"
        finally:
            self.ended = time.monotonic()
            self.done.set()
            on_end()

    def _signal(self, action) -> None:
        """`action(pid)` while the process has not been reaped (so the pid is not another's)."""
        with self._lock:
            if self.proc is not None and self.proc.returncode is None:
                action(self.proc.pid)

    def result(self, timeout: float) -> subprocess.CompletedProcess:
        """The ended job's exit status and output (killed, and TimeoutExpired, after `timeout` s)."""
        assert self.proc is not None or self.error is not None, "the job was not started"
        self._signal(_to_our_priority)  # a test waits on it now: it is the work to do
        if not self.done.wait(timeout):
            self._signal(lambda pid: os.kill(pid, signal.SIGKILL))
            self.done.wait()
            raise subprocess.TimeoutExpired(self.argv, timeout)
        if self.error is not None:
            raise RuntimeError(self.error)
        assert self.proc is not None
        out, err = ((self.scratch / name).read_text() for name in ("stdout", "stderr"))
        return subprocess.CompletedProcess(self.proc.args, self.proc.returncode, out, err)

    def stop(self) -> None:
        self._signal(lambda pid: os.kill(pid, signal.SIGKILL))
        if self.proc is not None:
            self.done.wait()
        shutil.rmtree(self.scratch, ignore_errors=True)


def _to_our_priority(pid: int) -> None:
    """Back to this process's priority (raising a priority needs the right to, which root
    has; without it the job keeps the lowest)."""
    try:
        os.setpriority(os.PRIO_PROCESS, pid, os.getpriority(os.PRIO_PROCESS, 0))
    except OSError:
        pass


class Background:
    """The session's jobs by name, started by a thread of their own in the order given, as
    many at once as `slots()` allows (the module's docstring)."""

    def __init__(self, cores: int | None = None) -> None:
        self.cores = cores or _cores()
        self.jobs: dict[str, Job] = {}
        self.queue: list[str] = []  # names not yet started, in their order
        self.cond = threading.Condition()  # guards the above; notified when a job ends or a test waits
        self.awaited: list[Job] = []  # the jobs tests wait on now
        self.stopping = False
        self.thread: threading.Thread | None = None
        self.t0 = time.monotonic()  # the session's start (conftest makes one at its import)

    def slots(self) -> int:
        """How many jobs may run now: one per core the tests leave (all but the one the
        suite's process takes, at least one), and its core too while a test waits on a
        job still running (not once that job has ended: the test goes on)."""
        return max(1, self.cores - 1) + any(job.running for job in self.awaited)

    def start(self, jobs: dict[str, tuple[str, ...]]) -> None:
        with self.cond:
            for name, argv in jobs.items():
                if name not in self.jobs:
                    self.jobs[name] = Job(argv)
                    self.queue.append(name)
        self.thread = threading.Thread(target=self._schedule, daemon=True)
        self.thread.start()

    def _wake(self) -> None:
        with self.cond:
            self.cond.notify_all()

    def _schedule(self) -> None:
        with self.cond:
            while self.queue and not self.stopping:
                if sum(job.running for job in self.jobs.values()) < self.slots():
                    self.jobs[self.queue.pop(0)].start(on_end=self._wake)
                else:
                    self.cond.wait()

    def result(self, name: str, argv: tuple[str, ...], timeout: float) -> subprocess.CompletedProcess:
        """Job `name`'s result (the one of `argv`, started now when the session has none)."""
        with self.cond:
            job = self.jobs.get(name)
            if job is None:  # not setdefault: a Job made and dropped would leave its scratch folder
                job = self.jobs[name] = Job(argv)
            if name in self.queue:  # asked for before its turn
                self.queue.remove(name)
            if job.proc is None and job.error is None:
                assert not self.stopping, "the session is stopping"
                job.start(on_end=self._wake)
            self.awaited.append(job)
            self.cond.notify_all()  # this process's core may take the next job meanwhile
        began = time.monotonic()
        try:
            return job.result(timeout)
        finally:
            job.waited += time.monotonic() - began
            with self.cond:
                self.awaited.remove(job)

    def stop(self) -> None:
        with self.cond:
            self.stopping = True
            self.cond.notify_all()
        for job in self.jobs.values():
            job.stop()
        if self.thread is not None:
            self.thread.join()

    def report(self) -> list[str]:
        """A line per job: when it ran (seconds since the session's start), its CPU seconds,
        and how long tests waited on it."""
        lines = []
        for name, job in self.jobs.items():
            if job.started is None:
                lines.append(f"{name}: {job.error or 'not started'}")
                continue
            end = f"{job.ended - self.t0:.0f}" if job.ended is not None else "(stopped)"
            lines.append(
                f"{name}: ran {job.started - self.t0:.0f}-{end} s, {job.cpu:.0f} CPU s, exit {job.proc.returncode}; "
                f"tests waited {job.waited:.0f} s"
            )
        return lines
