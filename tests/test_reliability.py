"""Nothing lost, ever (issue 54): a fault at each stage of a checkpoint write, a signal at
each point of a self-play tick, two processes on one directory, a stale lock, a full
disk and a read-only run directory, and what --resume may change. Each run resumes
with the counters, replay and weights its checkpoint holds, and finishes where an
uninterrupted run does."""

import gc
import json
import os
import signal
import subprocess
import sys

import pytest
import torch

from polyzero.cli import main
from polyzero.config import build_config
from polyzero.errors import UsageError
from polyzero.train import checkpoint as ckpt
from polyzero.train.driver import Interrupted, Trainer
from polyzero.train.selfplay import SelfPlayActor

TINY = [
    "train.steps=2",
    "train.checkpoint_every=1",
    "train.positions_per_step=12",
    "train.minibatches_per_step=1",
    "train.batch_size=8",
    "train.replay_size=64",
    "search.num_simulations=2",
    "selfplay.concurrent_games=3",
    "net.kind=mlp",
    "net.width=8",
    "net.layers=1",
    "net.value_hidden=4",
    "eval.every=0",
    "eval.final_games=0",
    "threads=1",
    "seed=5",
]


class SimulatedKill(BaseException):
    """Stands for SIGKILL in-process: nothing after the instant it is raised at runs
    (save_checkpoint's clean-up is for OSError only)."""


def _create(run, steps=2, extra=()):
    return Trainer.create(
        build_config("tic_tac_toe", "alphazero", overrides=TINY + [f"train.steps={steps}", *extra]), run, progress=False
    )


def _release():
    """Collect dropped trainers, so their run-directory locks go (another process may then
    take them)."""
    gc.collect()


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """Uninterrupted runs: {steps: (checkpoint weights, state.json, replay bytes)}."""
    out, run = {}, tmp_path_factory.mktemp("ref") / "run"
    _create(run, 2).run()  # and on to 3 (an exact resume: tests/test_train.py)
    for steps in (2, 3):
        if steps == 3:
            Trainer.resume(run, ["train.steps=3"], progress=False).run()
        latest = ckpt.latest_checkpoint(run)
        out[steps] = (ckpt.read_learner(latest)["net"], ckpt.read_state(latest), (latest / "replay.npz").read_bytes())
    gc.collect()
    return out


def _assert_finished_like(run, want):
    weights, state, replay = want
    latest = ckpt.latest_checkpoint(run)
    got = ckpt.read_learner(latest)["net"]
    assert all(torch.equal(got[k], weights[k]) for k in weights)
    have = ckpt.read_state(latest)
    for key in ("step", "pending", "sample_rng"):
        assert have[key] == state[key], key
    assert have["actor"]["stats"] == state["actor"]["stats"]
    assert (latest / "replay.npz").read_bytes() == replay


def _fault_at(monkeypatch, stage, nth=1):
    calls = {"n": 0}

    def hook(at):
        if at == stage:
            calls["n"] += 1
            if calls["n"] == nth:
                raise SimulatedKill(stage)

    monkeypatch.setattr(ckpt, "_fault_hook", hook)


# ------------------------------------------------------------------ checkpoint writes
# A new step's write sets nothing aside; rewriting the latest step prunes nothing.
WRITES = [(stage, False) for stage in ckpt.STAGES if stage != "aside"] + [
    (stage, True) for stage in ckpt.STAGES if stage != "pruning"
]


@pytest.mark.parametrize(
    "stage, same_step", WRITES, ids=[f"{s}-{'same' if same else 'new'}-step" for s, same in WRITES]
)
def test_a_kill_at_each_stage_of_a_checkpoint_write_leaves_a_resumable_run(
    tmp_path, monkeypatch, reference, stage, same_step
):
    run = tmp_path / "run"
    trainer = _create(run, 2, ["train.keep_checkpoints=1"])
    trainer.run()
    before = ckpt.read_learner(ckpt.latest_checkpoint(run))["net"]
    _fault_at(monkeypatch, stage)
    if same_step:  # an interrupt right after a checkpoint writes the same step again (issue 54, item 1)
        with pytest.raises(SimulatedKill):
            trainer.save()
    else:
        with pytest.raises(SimulatedKill):
            Trainer.resume(run, ["train.steps=3"], progress=False).run()
    monkeypatch.setattr(ckpt, "_fault_hook", lambda at: None)
    latest = ckpt.latest_checkpoint(run)  # readers (arena) see a checkpoint at every instant
    assert latest is not None and (latest / "learner.pt").is_file()
    finished = Trainer.resume(run, ["train.steps=3"], progress=False)
    if same_step or stage in ("file", "written", "renamed", "pointer_written"):
        assert finished.step == 2 and all(torch.equal(finished.learner.weights()[k], before[k]) for k in before)
    else:
        assert finished.step == 3
    leftovers = [p.name for p in (run / "checkpoints").iterdir() if p.name.startswith(".")]
    assert leftovers == []
    finished.run()
    _assert_finished_like(run, reference[3])


def test_the_hook_stages_are_all_reached(tmp_path, monkeypatch):
    seen = []
    monkeypatch.setattr(ckpt, "_fault_hook", seen.append)
    trainer = _create(tmp_path / "run", 2, ["train.keep_checkpoints=1"])
    trainer.run()
    trainer.save()  # the same step again: the old one goes aside first
    assert set(seen) == set(ckpt.STAGES)
    assert seen.count("aside") == 1


def test_a_real_sigkill_while_the_latest_checkpoint_is_aside_resumes(tmp_path, reference):
    """The issue's reproduction: SIGTERM, and SIGKILL at the instant the step directory is
    renamed aside for the interrupt checkpoint of the same step."""
    run = tmp_path / "run"
    _create(run, 2).run()
    _release()
    script = (
        "import sys; from polyzero.train.driver import Trainer\n"
        "t = Trainer.resume(sys.argv[1], ['train.steps=3'], progress=False); t.interrupt_requested = True\n"
        "t.run()"
    )
    env = {**os.environ, ckpt.FAULT_ENV: "aside:kill"}
    proc = subprocess.run(
        [sys.executable, "-c", script, str(run)], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert not (run / "checkpoints" / "step_000002").exists() and (run / "checkpoints" / ".old-step_000002").is_dir()
    assert ckpt.latest_checkpoint(run).name == ".old-step_000002"  # arena still finds it
    assert main(["train", "--resume", str(run), "--set", "train.steps=3", "--no-progress"]) == 0
    _assert_finished_like(run, reference[3])


# ------------------------------------------------------------------ a state from the start
def test_a_run_is_resumable_from_the_moment_it_is_accepted(tmp_path, monkeypatch, reference):
    run = tmp_path / "run"
    _create(run, 2)
    assert ckpt.latest_checkpoint(run).name == "step_000000"
    Trainer.resume(run, progress=False).run()
    _assert_finished_like(run, reference[2])
    # Killed while the step-0 checkpoint was written: no run was accepted, a fresh start works.
    _fault_at(monkeypatch, "written")
    with pytest.raises(SimulatedKill):
        _create(tmp_path / "early", 2)
    monkeypatch.setattr(ckpt, "_fault_hook", lambda at: None)
    with pytest.raises(UsageError, match="holds no checkpoint to resume from .* starts anew"):
        Trainer.resume(tmp_path / "early", progress=False)
    _create(tmp_path / "early", 2).run()
    _assert_finished_like(tmp_path / "early", reference[2])


# ------------------------------------------------------------------ signals
POINTS = {  # where in a self-play tick the signal lands: (method, at its n-th call)
    "search": ("search_moves", 4),  # inside the batched search
    "game-finished": ("finish_game", 2),  # a game finished, its slot not refilled yet (issue 54, item 2)
    "refill": ("_new_slot", 2),  # a new game taking the slot
    "chance": ("_sample_chance", 4),  # after a move is applied
}


@pytest.mark.parametrize("point", POINTS)
def test_a_signal_at_each_point_of_a_tick_checkpoints_a_consistent_state(tmp_path, monkeypatch, reference, point):
    name, nth = POINTS[point]
    original = getattr(SelfPlayActor, name)
    calls = {"n": 0}

    def deliver(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == nth:
            os.kill(os.getpid(), signal.SIGTERM)
        return original(self, *args, **kwargs)

    run = tmp_path / "run"
    trainer = _create(run, 2)
    monkeypatch.setattr(SelfPlayActor, name, deliver)
    with pytest.raises(Interrupted, match="interrupted at learning step [01]; checkpoint written to .*--resume"):
        trainer.run()
    assert calls["n"] >= nth
    monkeypatch.setattr(SelfPlayActor, name, original)
    latest = ckpt.latest_checkpoint(run)
    state = ckpt.read_state(latest)
    game = trainer.game
    for slot in state["actor"]["slots"]:  # every saved game is still in play
        s = game.new_initial_state()
        for a in slot["history"]:
            s.apply_action(a)
        assert not s.is_terminal()
    resumed = Trainer.resume(run, progress=False)
    assert resumed.step == state["step"] and resumed.pending == state["pending"]
    assert resumed.replay.to_bytes() == (latest / "replay.npz").read_bytes()
    resumed.run()
    _assert_finished_like(run, reference[2])


SOG = [
    "train.batch_size=16",
    "train.minibatches_per_step=2",
    "train.replay_size=512",
    "train.checkpoint_every=1",
    "eval.every=0",
    "net.width=16",
    "net.layers=1",
    "sog.simulations=4",
    "sog.solve_simulations=4",
    "sog.episodes_per_step=2",
    "sog.solves_per_step=2",
]


def test_student_of_games_checkpoints_an_interrupt_between_learning_steps(tmp_path, monkeypatch):
    from polyzero.sog.trainer import SoGTrainer

    def sog(name, steps):
        return SoGTrainer.create(
            build_config("kuhn_poker", "sog", None, SOG + [f"train.steps={steps}"]), tmp_path / name, progress=False
        )

    straight = sog("straight", 2)
    straight.run()
    original, calls = SoGTrainer._add_game, {"n": 0}

    def deliver(self, episode):  # the signal lands between a step's two self-play games
        calls["n"] += 1
        if calls["n"] == 1:
            os.kill(os.getpid(), signal.SIGTERM)
        return original(self, episode)

    monkeypatch.setattr(SoGTrainer, "_add_game", deliver)
    with pytest.raises(Interrupted, match="interrupted at learning step 1; checkpoint written"):
        sog("split", 2).run()
    monkeypatch.setattr(SoGTrainer, "_add_game", original)
    resumed = SoGTrainer.resume(tmp_path / "split", progress=False)
    assert resumed.step == 1 and resumed.counts["games"] == 2  # the step finished: its games, no half
    resumed.run()
    assert resumed.counts == straight.counts
    assert all(torch.equal(v, resumed.learner.weights()[k]) for k, v in straight.learner.weights().items())


# ------------------------------------------------------------------ the lock
def test_a_second_process_is_refused_and_a_dead_ones_lock_is_taken_over(tmp_path, capsys):
    run = tmp_path / "run"
    _create(run, 1)
    _release()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from polyzero.train import rundir\n"
            "rundir.lock(sys.argv[1]); print('locked', flush=True); time.sleep(60)",
            str(run),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        assert main(["train", "--resume", str(run), "--no-progress"]) == 2
        err = capsys.readouterr().err
        assert f"in use by another training process (PID {holder.pid})" in err and len(err.splitlines()) == 1
        assert main(["train", "tic_tac_toe", "--run-dir", str(run), "--no-progress"]) == 2
        assert f"PID {holder.pid}" in capsys.readouterr().err
    finally:
        holder.kill()
        holder.wait()
    assert (run / ".lock").read_text().strip() == str(holder.pid)  # the dead process's lock file stays
    assert main(["train", "--resume", str(run), "--no-progress"] + sum((["--set", o] for o in TINY[1:]), [])) == 0
    assert ckpt.latest_checkpoint(run).name == "step_000001"


# ------------------------------------------------------------------ OS errors
@pytest.mark.parametrize("error", ["enospc", "erofs"])
def test_a_full_disk_or_read_only_directory_is_one_line_and_loses_nothing(
    tmp_path, monkeypatch, capsys, reference, error
):
    run = tmp_path / "run"
    cmd = ["train", "tic_tac_toe", "--run-dir", str(run), "--no-progress"] + sum((["--set", o] for o in TINY), [])
    files = 5  # an AlphaZero checkpoint's files: the 8th is inside the step-1 checkpoint
    monkeypatch.setenv(ckpt.FAULT_ENV, f"file:{error}:{files + 3}")
    monkeypatch.setattr(ckpt._fault_hook, "seen", 0, raising=False)
    assert main(cmd) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "Traceback" not in err[1], err  # the "training ..." line, then the error
    remedy = "the disk is full" if error == "enospc" else "the filesystem is read-only"
    assert err[1].startswith("polyzero: cannot write ") and remedy in err[1]
    assert f"polyzero train --resume {run} continues" in err[1]
    assert ckpt.latest_checkpoint(run).name == "step_000000"
    assert not list((run / "checkpoints").glob(".tmp-*"))  # the half-written one is gone
    monkeypatch.delenv(ckpt.FAULT_ENV)
    assert main(["train", "--resume", str(run), "--no-progress"]) == 0
    _assert_finished_like(run, reference[2])


def test_a_run_directory_without_write_permission_is_one_line(tmp_path, monkeypatch, capsys):
    parent = tmp_path / "ro"
    parent.mkdir()
    if os.geteuid() == 0:  # root writes through permissions: the error it would get, injected
        monkeypatch.setenv(ckpt.FAULT_ENV, "file:eacces")
        monkeypatch.setattr(ckpt._fault_hook, "seen", 0, raising=False)
    else:
        parent.chmod(0o555)
    try:
        assert (
            main(
                ["train", "tic_tac_toe", "--run-dir", str(parent / "run"), "--no-progress"]
                + sum((["--set", o] for o in TINY), [])
            )
            == 1
        )
    finally:
        parent.chmod(0o755)
    err = capsys.readouterr().err
    assert "polyzero: cannot write " in err and "permission denied: give this user write access" in err
    assert "Traceback" not in err and not list(parent.glob("run/checkpoints/.tmp-*"))


# ------------------------------------------------------------------ --resume overrides
def test_resume_applies_or_refuses_every_change(tmp_path, capsys):
    run = tmp_path / "run"
    _create(run, 1)
    resumed = Trainer.resume(run, ["train.learning_rate=0.5", "train.steps=2", "eval.games=3"], progress=False)
    assert [g["lr"] for g in resumed.learner.optimizer.param_groups] == [0.5]
    assert resumed.cfg.train.steps == 2 and resumed.cfg.eval.games == 3
    resumed.run()
    saved = ckpt.read_learner(ckpt.latest_checkpoint(run))["optimizer"]["param_groups"]
    assert [g["lr"] for g in saved] == [0.5]
    for key in ("net.width=16", "selfplay.concurrent_games=4", "train.replay_size=128", "search.kind=gumbel"):
        with pytest.raises(UsageError, match=f"^{key.split('=')[0]} cannot change on resume"):
            Trainer.resume(run, [key], progress=False)
    capsys.readouterr()
    assert main(["train", "--resume", str(run), "--seed", "6", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("polyzero: error: seed cannot change on resume") and len(err.splitlines()) == 1
    assert main(["train", "--resume", str(run), "--seed", "5", "--no-progress"]) == 0  # the run's own seed


def test_fault_counters_are_kept_in_checkpoints(tmp_path):
    from polyzero.train.ray_driver import RayTrainer

    run = tmp_path / "run"
    trainer = _create(run, 1)
    trainer.failures = 2
    trainer.save()
    assert Trainer.resume(run, progress=False).failures == 2

    class Learner:  # what RayTrainer._fault needs
        failures, _down = 2, set()

    learner, worker = Learner(), object()
    # One death: the in-flight task fails, the retried one fails, the restarted worker's
    # first batch comes from fresh weights: one fault.
    counted = [RayTrainer._fault(learner, worker) for _ in range(3)]
    assert counted == [True, False, False] and learner.failures == 3
    learner._down.discard(worker)  # it delivered: its next death is a new fault
    assert RayTrainer._fault(learner, worker) and learner.failures == 4


def test_recover_puts_back_or_cleans_every_leftover(tmp_path):
    root = tmp_path / "checkpoints"
    for name in ("step_000002", ".old-step_000004", ".tmp-step_000006", "step_000008"):
        (root / name).mkdir(parents=True)
        for f in ("state.json", "learner.pt"):
            (root / name / f).write_text("{}")
    (root / "latest").write_text("step_000004")
    (root / ".latest.tmp").write_text("step_000006")
    notes = ckpt.recover(tmp_path)
    assert sorted(p.name for p in root.iterdir()) == ["latest", "step_000002", "step_000004"]
    assert ckpt.latest_checkpoint(tmp_path).name == "step_000004" and len(notes) == 3
    (root / "latest").unlink()
    ckpt.recover(tmp_path)
    assert (root / "latest").read_text() == "step_000004"
    assert json.loads((root / "step_000004" / "state.json").read_text()) == {}
