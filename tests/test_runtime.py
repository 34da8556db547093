"""The one training loop (`polyzero.train.loop`) and its data sources
(`polyzero.train.sources`): train/ names no algorithm or plug-in; a checkpoint keeps
the layout runs written before the loop was one wrote, so they still resume; a data
source of one's own rides the loop's steps, metrics and checkpoints."""

import ast
import json
from pathlib import Path

import pytest

from polyzero.config import build_config
from polyzero.train.checkpoint import latest_checkpoint, read_state
from polyzero.train.driver import Trainer
from polyzero.train.metrics import read_metrics

TRAIN = Path(__file__).resolve().parent.parent / "polyzero" / "train"
TINY = [
    "train.steps=2",
    "train.checkpoint_every=1",
    "train.positions_per_step=8",
    "train.minibatches_per_step=1",
    "train.batch_size=8",
    "train.replay_size=256",
    "search.num_simulations=2",
    "selfplay.concurrent_games=2",
    "net.kind=mlp",
    "net.width=8",
    "net.layers=1",
    "net.value_hidden=8",
    "eval.every=0",
    "eval.final_games=0",
    "threads=1",
    "seed=5",
]
SOG = [
    "train.steps=2",
    "train.checkpoint_every=1",
    "train.batch_size=8",
    "train.minibatches_per_step=1",
    "train.replay_size=256",
    "eval.every=0",
    "eval.final_games=0",
    "net.width=8",
    "net.layers=1",
    "sog.simulations=2",
    "sog.solve_simulations=2",
    "sog.episodes_per_step=1",
    "sog.solves_per_step=1",
    "threads=1",
    "seed=5",
]


PLUG_IN_SECTIONS = ("start", "katago", "muzero")  # Go-Exploit's, KataGo's, MuZero's config sections


def test_train_names_no_algorithm_or_plug_in():
    """No `cfg.algo == "..."` branch, no import of a plug-in's package and no read of its
    settings (`cfg.start`, `cfg.katago`, `cfg.muzero`) in train/: what differs is asked of the algorithm
    or plug-in (docs/architecture.md, "Training")."""
    found = []
    for path in sorted(TRAIN.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare) and any(
                isinstance(side, ast.Attribute) and side.attr == "algo" for side in [node.left, *node.comparators]
            ):
                found.append(f"{path.name}:{node.lineno} compares .algo")
            if (
                isinstance(node, ast.ImportFrom)
                and node.module
                and node.level == 2
                and node.module.split(".")[0] in ("goexploit", "sog", "engines")
            ):
                found.append(f"{path.name}:{node.lineno} imports {node.module}")
            # A plug-in's settings are its own: its Ray part reads them (`sources.RayPart`).
            if (
                isinstance(node, ast.Attribute)
                and node.attr in PLUG_IN_SECTIONS
                and "cfg" in (getattr(node.value, "attr", None), getattr(node.value, "id", None))
            ):
                found.append(f"{path.name}:{node.lineno} reads cfg.{node.attr}")
    assert not found


# The files and state.json keys of a checkpoint, as runs before the one loop wrote them.
LAYOUT = {
    "alphazero": ("tic_tac_toe", "alphazero", TINY, {"replay.npz", "actor.npz"}, {"pending", "actor"}),
    "muzero-reanalyse": (
        "tic_tac_toe",
        "muzero",
        TINY + ["muzero.hidden_size=8", "muzero.reanalyse_fraction=0.5"],
        {"replay.npz", "actor.npz", "reanalyser.pt"},
        {"pending", "actor"},
    ),
    "go-exploit": (
        "tic_tac_toe",
        "alphazero",
        TINY + ['start.archive="search"', "start.archive_size=50"],
        {"replay.npz", "actor.npz", "goexploit.npz"},
        {"pending", "actor"},
    ),
    "sog": ("kuhn_poker", "sog", SOG, {"replay.npz", "queries.npz"}, {"counts"}),
}
COMMON_FILES = {"config.toml", "learner.pt", "state.json"}
COMMON_KEYS = {"step", "elapsed", "train_time", "sample_rng", "last_eval", "game", "faults"}


@pytest.mark.parametrize("case", sorted(LAYOUT))
def test_checkpoint_layout_is_the_one_earlier_runs_wrote(case, tmp_path):
    from polyzero.api import _trainer_class

    game, algo, overrides, files, keys = LAYOUT[case]
    cls = _trainer_class(algo)
    cls.create(build_config(game, algo, overrides=overrides), tmp_path / "run", progress=False)  # step 0
    point = latest_checkpoint(tmp_path / "run")
    assert {f.name for f in point.iterdir()} == COMMON_FILES | files
    assert set(read_state(point)) == COMMON_KEYS | keys
    resumed = cls.resume(tmp_path / "run", progress=False, lock=False)
    assert resumed.step == 0 and len(resumed.replay) == 0


class StepCounter:
    """A data source of one's own: it adds no data, counts the steps it was published
    weights for, and keeps the count in the checkpoint."""

    FILE = "counter.json"

    def __init__(self):
        self.published, self.restored = [], None

    def collect(self, loop):
        pass

    def publish(self, loop):
        self.published.append(loop.step)

    def end_step(self, loop, updates):
        return {"counter/steps": len(self.published), "counter/updates": updates}

    def state(self):
        return {"counter": len(self.published)}, {self.FILE: json.dumps(self.published).encode()}

    def load(self, path, state):
        self.published = json.loads((path / self.FILE).read_text())
        assert state["counter"] == len(self.published)

    def resumed(self, loop):
        self.restored = loop.step
        return "the counter continues"


class CountingTrainer(Trainer):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.counter = StepCounter()
        self.sources.append(self.counter)


def test_a_data_source_of_ones_own_rides_the_loop_and_its_checkpoints(tmp_path, capsys):
    trainer = CountingTrainer.create(
        build_config("tic_tac_toe", "alphazero", overrides=TINY), tmp_path / "run", progress=False
    )
    trainer.run()
    assert trainer.counter.published == [1, 2]
    records = [r for r in read_metrics(tmp_path / "run") if r["kind"] == "train"]
    assert [(r["counter/steps"], r["counter/updates"]) for r in records] == [(1, 1), (2, 1)]
    assert read_state(latest_checkpoint(tmp_path / "run"))["counter"] == 2
    resumed = CountingTrainer.resume(tmp_path / "run", ["train.steps=3"], progress=False, lock=False)
    assert resumed.counter.restored == 2 and resumed.counter.published == [1, 2]
    assert "the counter continues" in capsys.readouterr().err
    resumed.run()
    assert resumed.counter.published == [1, 2, 3]
