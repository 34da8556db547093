"""Long jobs a test session needs and that need nothing of the tests before them (mypy on
the package, the session's tic-tac-toe trainings), run one at a time in processes of their
own from the session's start, on the core the suite's mostly single-threaded process
leaves idle (at the lowest priority: they take no CPU time a test wants). A test asks for
a job's result and waits for it, the job back at the test's priority; a job not yet
started when asked for starts then. Each job is the same command the test would
otherwise run itself."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _lowest_priority() -> None:
    """A job takes only the CPU time nothing else wants: the tests running meanwhile (and
    their Ray workers, which Ray starts at niceness 15) go first."""
    os.nice(19)


def _to_our_priority(pid: int) -> None:
    """Back to this process's priority (raising a priority needs the right to, which root
    has; without it the job keeps the lowest)."""
    try:
        os.setpriority(os.PRIO_PROCESS, pid, os.getpriority(os.PRIO_PROCESS, 0))
    except OSError:
        pass


class Job:
    """One command (`python ARGV...` at the repository's root, this checkout first on the
    path), its output in files of a scratch folder (no pipe to fill while nobody reads)."""

    def __init__(self, argv: tuple[str, ...]):
        self.argv = argv
        self.scratch = Path(tempfile.mkdtemp(prefix="polyzero-test-job-"))
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        with open(self.scratch / "stdout", "w") as out, open(self.scratch / "stderr", "w") as err:
            argv = [sys.executable, *(a.replace("{scratch}", str(self.scratch)) for a in self.argv)]
            self.proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=out, stderr=err, preexec_fn=_lowest_priority)

    def result(self, timeout: float) -> subprocess.CompletedProcess:
        assert self.proc is not None
        _to_our_priority(self.proc.pid)  # a test waits on it now: it is the work to do
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise
        out, err = ((self.scratch / name).read_text() for name in ("stdout", "stderr"))
        return subprocess.CompletedProcess(self.proc.args, self.proc.returncode, out, err)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.scratch, ignore_errors=True)


class Background:
    """The session's jobs by name, started in the given order by a thread of their own,
    the next once the one before has ended."""

    def __init__(self) -> None:
        self.jobs: dict[str, Job] = {}
        self.lock = threading.Lock()
        self.stopping = False
        self.thread: threading.Thread | None = None

    def start(self, jobs: dict[str, tuple[str, ...]]) -> None:
        self.jobs.update({name: Job(argv) for name, argv in jobs.items() if name not in self.jobs})
        self.thread = threading.Thread(target=self._run_in_order, args=(list(jobs),), daemon=True)
        self.thread.start()

    def _take(self, name: str) -> Job | None:
        """The job, started now if it was not yet; None once the session is stopping."""
        with self.lock:
            job = self.jobs[name]
            if job.proc is None and not self.stopping:
                job.start()
            return job if job.proc is not None else None

    def _run_in_order(self, names: list[str]) -> None:
        for name in names:
            job = self._take(name)
            if job is None:
                return
            job.proc.wait()

    def result(self, name: str, argv: tuple[str, ...], timeout: float) -> subprocess.CompletedProcess:
        """Job `name`'s result (the one of `argv`, started now when the session has none)."""
        with self.lock:
            self.jobs.setdefault(name, Job(argv))
        job = self._take(name)
        assert job is not None, "the session is stopping"
        return job.result(timeout)

    def stop(self) -> None:
        with self.lock:
            self.stopping = True
        for job in self.jobs.values():
            job.stop()
        if self.thread is not None:
            self.thread.join()
