"""Checkpoints stream the replay into replay.npz (`write_npz`) instead of building its
bytes in memory first: the file holds what `to_bytes` gives, resumes as it did, and a
checkpoint's Python-traced memory stays far below the replay's size."""

import gc
import io
import tracemalloc

import numpy as np
import pytest

from conftest import SMALL_RUN
from polyzero.config import build_config
from polyzero.replay import ReplayBuffer, SequenceReplay
from polyzero.train import checkpoint as ckpt
from polyzero.train.driver import Trainer

TINY = [
    *SMALL_RUN,
    *("train.steps=2", "train.checkpoint_every=1", "train.positions_per_step=12", "selfplay.concurrent_games=3"),
    *("search.num_simulations=2", "net.kind=mlp", "net.width=8", "net.layers=1"),
]


def _uniform(filled=True, capacity=16, n=11):
    replay = ReplayBuffer(
        capacity, {"obs": ((3, 2), np.uint8), "policy": ((4,), np.float32), "outcome": ((), np.float32)}
    )
    if not filled:
        return replay
    rng = np.random.default_rng(0)
    replay.add(
        {
            "obs": rng.integers(0, 255, (n, 3, 2), dtype=np.uint8),
            "policy": rng.random((n, 4), np.float32),
            "outcome": rng.random(n, np.float32),
        }
    )
    return replay


def _sequence(filled=True):
    """A prioritized ring (its priorities are the extra state `write_npz` adds), wrapped."""
    replay = SequenceReplay(
        8, (1,), 3, unroll_steps=1, td_steps=2, discount=0.9, board_game=False, prioritized=True, alpha=1.0, beta=1.0
    )
    for start in (0, 5) if filled else ():
        n = 5
        replay.add(
            {
                "obs": np.arange(start, start + n, dtype=np.float32)[:, None],
                "action": np.arange(n) % 3,
                "reward": np.linspace(0, 1, n, dtype=np.float32),
                "root_value": np.linspace(1, 0, n, dtype=np.float32),
                "policy": np.eye(3, dtype=np.float32)[np.arange(n) % 3],
                "legal": np.ones((n, 3), bool),
                "outcome": np.zeros(n, np.float32),
                "sampleable": np.ones(n, bool),
                "done": np.array([start > 0]),
            }
        )
    return replay


def _arrays(file) -> dict[str, np.ndarray]:
    with np.load(file, allow_pickle=False) as f:
        return {k: f[k] for k in f.files}


@pytest.mark.parametrize("make", [_uniform, _sequence], ids=["uniform", "segment-ring"])
def test_a_streamed_replay_npz_holds_what_to_bytes_gives_and_loads_back(tmp_path, make):
    replay = make()
    path = ckpt.save_checkpoint(tmp_path, 3, {"replay.npz": replay.write_npz, "state.json": b"{}"}, keep=1)
    streamed, in_memory = _arrays(path / "replay.npz"), _arrays(io.BytesIO(replay.to_bytes()))
    assert streamed.keys() == in_memory.keys() and len(streamed) >= 4
    for k, v in in_memory.items():
        assert streamed[k].dtype == v.dtype and np.array_equal(streamed[k], v), k
    again = make(filled=False)
    again.load_npz(path / "replay.npz")  # from the file, as a resume reads it
    for k, v in replay.data.items():
        assert np.array_equal(again.data[k], v), k
    assert again.total_added == replay.total_added and len(again) == len(replay)


def _traced_peak(do) -> int:
    """The peak of Python-traced memory (NumPy's arrays included) while `do()` runs."""
    tracemalloc.start()
    try:
        result = do()
        peak = tracemalloc.get_traced_memory()[1]
        del result
    finally:
        tracemalloc.stop()
    return peak


def test_checkpointing_and_resuming_a_replay_hold_no_second_copy_of_it(tmp_path):
    """A 64 MiB replay: writing its checkpoint, and loading it back, peak at a few
    chunks of the file (np.savez writes 16 MiB at a time, `read_into` reads 4) of traced
    memory, where building the file's bytes first, or reading them whole, needs all 64 MiB
    and more (the controls: the copy this test would see)."""
    capacity, shape = 256, (4, 256, 256)  # 256 KiB a position, as Atari's stacked frames

    def empty():
        return ReplayBuffer(capacity, {"obs": (shape, np.uint8), "outcome": ((), np.float32)})

    replay = empty()
    obs = np.broadcast_to(np.arange(capacity, dtype=np.uint8)[:, None, None, None], (capacity, *shape))
    replay.add({"obs": obs, "outcome": np.ones(capacity, np.float32)})
    size = replay.data["obs"].nbytes
    assert size == 64 * 2**20
    files = {"replay.npz": replay.write_npz, "state.json": b"{}"}
    streamed = _traced_peak(lambda: ckpt.save_checkpoint(tmp_path, 1, files, keep=1))
    in_memory = _traced_peak(replay.to_bytes)
    path = tmp_path / "checkpoints" / "step_000001" / "replay.npz"
    fresh, old_way = empty(), empty()  # allocated before tracing: the load fills them
    loaded = _traced_peak(lambda: fresh.load_npz(path))
    read_whole = _traced_peak(lambda: old_way.load_bytes(path.read_bytes()))
    assert in_memory >= size and read_whole >= size
    assert streamed < size * 0.4, f"peak {streamed / 2**20:.1f} MiB writing a {size / 2**20:.0f} MiB replay"
    assert loaded < size * 0.4, f"peak {loaded / 2**20:.1f} MiB loading a {size / 2**20:.0f} MiB replay"
    for again in (fresh, old_way):
        assert len(again) == capacity and np.array_equal(again.data["obs"], replay.data["obs"])


def test_an_array_saved_with_another_dtype_or_shape_loads_the_ordinary_way(tmp_path):
    """`read_into` reads only an array saved as the storage holds it; another dtype is
    cast as before, another shape refused as before."""
    replay = _sequence()
    with np.load(io.BytesIO(replay.to_bytes())) as f:
        arrays = {k: f[k] for k in f.files}
    arrays["reward"] = arrays["reward"].astype(np.float64)  # cast on load
    np.savez(tmp_path / "cast.npz", **arrays)
    again = _sequence(filled=False)
    again.load_npz(tmp_path / "cast.npz")
    assert again.data["reward"].dtype == np.float32 and np.array_equal(again.data["reward"], replay.data["reward"])
    arrays["obs"] = arrays["obs"][:, :, None]
    np.savez(tmp_path / "shape.npz", **arrays)
    with pytest.raises(ValueError, match="'obs' has shape"):
        _sequence(filled=False).load_npz(tmp_path / "shape.npz")


class _WriterFailed(Exception):
    pass


def _failing_writer(fh):
    fh.write(b"half a file")
    raise _WriterFailed


def test_a_writer_that_fails_leaves_the_previous_checkpoint_and_nothing_half_written(tmp_path):
    ckpt.save_checkpoint(tmp_path, 1, {"replay.npz": b"one", "state.json": b"{}"}, keep=2)
    with pytest.raises(_WriterFailed):
        ckpt.save_checkpoint(tmp_path, 2, {"state.json": b"{}", "replay.npz": _failing_writer}, keep=2)
    root = tmp_path / "checkpoints"
    assert sorted(p.name for p in root.iterdir()) == ["latest", "step_000001"]
    assert ckpt.latest_checkpoint(tmp_path) == root / "step_000001"
    assert (root / "step_000001" / "replay.npz").read_bytes() == b"one"
    target = tmp_path / "final.json"
    target.write_bytes(b"old")
    with pytest.raises(_WriterFailed):
        ckpt.atomic_write(target, _failing_writer)
    assert target.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == ["checkpoints", "final.json"]


@pytest.mark.parametrize("algo", ["alphazero", "muzero"])
def test_the_trainer_streams_its_replay_and_resumes_from_it(tmp_path, monkeypatch, algo):
    """The trainer's checkpoint never asks the replay for its bytes; the run resumes from
    the streamed file with the replay it had."""

    def refuse(self):
        raise AssertionError("a checkpoint built the replay's bytes in memory")

    for cls in (ReplayBuffer, SequenceReplay):
        monkeypatch.setattr(cls, "to_bytes", refuse)
    run = tmp_path / "run"
    trainer = Trainer.create(build_config("tic_tac_toe", algo, overrides=TINY), run, progress=False)
    trainer.run()
    n = len(trainer.replay)
    saved = {k: v[:n].copy() for k, v in trainer.replay.data.items()}
    latest = ckpt.latest_checkpoint(run)
    assert n > 0 and latest is not None and latest.name == "step_000002"
    del trainer
    gc.collect()  # the dropped trainer's run-directory lock goes
    resumed = Trainer.resume(run, [], progress=False)
    assert resumed.step == 2 and len(resumed.replay) == n
    for k, v in saved.items():
        assert np.array_equal(resumed.replay.data[k][:n], v), k
