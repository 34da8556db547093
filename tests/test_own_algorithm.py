"""An algorithm of the user's own (docs/adding_an_algorithm.md): examples/qz_alphazero.py and
its preset, copied outside the package and named in POLYZERO_ALGORITHMS, train through
`polyzero train`, resume, and play in the arena -- those two files are all it needs."""

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from polyzero import plugins
from polyzero.algos import Trajectory, make_algorithm
from polyzero.cli import main
from polyzero.config import build_config
from polyzero.games import load_game, registry

ROOT = Path(__file__).resolve().parents[1]
FILES = ("qz_alphazero.py", "qz_alphazero.toml")  # the module and its preset: the whole algorithm
SMALL = [
    "train.steps=2",
    "train.positions_per_step=64",
    "train.minibatches_per_step=2",
    "train.batch_size=32",
    "train.replay_size=256",
    "search.num_simulations=8",
    "selfplay.concurrent_games=16",
    "eval.every=0",
    "eval.final_games=0",
    "threads=1",
]


@pytest.fixture
def own_algorithm(tmp_path, monkeypatch):
    """The example's two files in a directory of the user's, named in POLYZERO_ALGORITHMS;
    the registry is restored afterwards (other tests see the built-in algorithms only)."""
    mine = tmp_path / "mine"
    mine.mkdir()
    for name in FILES:
        shutil.copy(ROOT / "examples" / name, mine / name)
    monkeypatch.setattr(plugins, "ALGORITHMS", dict(plugins.ALGORITHMS))
    monkeypatch.setattr(registry, "_named_done", {})
    monkeypatch.setenv(plugins.ALGORITHMS_ENV, str(mine / FILES[0]))
    return mine


def _steps(run: Path) -> list[int]:
    return [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines()]


def test_the_example_algorithm_trains_resumes_and_plays(own_algorithm, tmp_path, capsys):
    run = tmp_path / "run"
    sets = [x for s in SMALL for x in ("--set", s)]
    assert (
        main(["train", "--config", str(own_algorithm / FILES[1]), "--run-dir", str(run), "--no-progress", *sets]) == 0
    )
    assert "training qz_alphazero on tic_tac_toe" in capsys.readouterr().err
    assert max(_steps(run)) == 2
    assert main(["train", "--resume", str(run), "--set", "train.steps=3", "--no-progress"]) == 0
    assert "resumed" in capsys.readouterr().err and max(_steps(run)) == 3
    assert main(["arena", f"{run}@8", "random", "--game", "tic_tac_toe", "--games", "2"]) == 0
    assert re.search(r"score \d\.\d{3}", capsys.readouterr().out)


def test_its_value_target_averages_the_outcome_and_the_root_value(own_algorithm):
    cfg = build_config(config_file=str(own_algorithm / FILES[1]))
    algo = make_algorithm(cfg, load_game(cfg.game))
    assert type(algo).__name__ == "QZAlphaZero" and cfg.algo in plugins.algorithm_names()
    traj = Trajectory(
        observations=[np.zeros(algo.encoder.shape)] * 2,
        policies=[np.ones(9) / 9] * 2,
        players=[0, 1],
        root_values=[0.2, -0.6],
        returns_before=[0.0, 0.0],
        returns=np.array([1.0, -1.0]),
    )
    np.testing.assert_allclose(algo.trajectory_examples(traj)["outcome"], [0.6, -0.8])


def test_an_unregistered_algorithm_names_the_remedy(monkeypatch, capsys, tmp_path):
    monkeypatch.delenv(plugins.ALGORITHMS_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    assert main(["train", "tic_tac_toe", "--algo", "qz_alphazero"]) == 2
    err = capsys.readouterr().err
    assert "unknown algorithm 'qz_alphazero'" in err and plugins.ALGORITHMS_ENV in err


def test_register_algorithm_at_run_time(monkeypatch):
    monkeypatch.setattr(plugins, "ALGORITHMS", dict(plugins.ALGORITHMS))
    plugins.register_algorithm("az_again", "polyzero.algos.alphazero:AlphaZero")
    assert plugins.algorithm_names() == ["alphazero", "az_again", "muzero", "ndmz", "sog"]
    assert build_config("tic_tac_toe", "az_again").algo == "az_again"
    assert plugins.algorithm_class("az_again").__name__ == "AlphaZero"


def test_the_tutorial_shows_the_example_as_it_is():
    """Every Python block of docs/adding_an_algorithm.md is a piece of the example module."""
    doc = (ROOT / "docs" / "adding_an_algorithm.md").read_text()
    module = (ROOT / "examples" / FILES[0]).read_text()
    blocks = re.findall(r"```python\n(.*?)```", doc, re.S)
    assert blocks
    for block in blocks:
        assert block.strip() in module, block


def test_an_installed_package_registers_by_entry_point(monkeypatch):
    """An entry point in the group polyzero.algorithms: its name is known without importing it."""
    import importlib.metadata as md

    ep = md.EntryPoint("az_installed", "polyzero.algos.alphazero:AlphaZero", plugins.ALGORITHMS_ENTRY_POINT_GROUP)
    monkeypatch.setattr(md, "entry_points", lambda group: [ep] if group == ep.group else [])
    monkeypatch.setattr(plugins, "ALGORITHMS", dict(plugins.ALGORITHMS))
    monkeypatch.setattr(plugins, "_ALGORITHMS_DISCOVERED", False)
    assert "az_installed" in plugins.algorithm_names()
    assert plugins.ALGORITHMS["az_installed"] == ep.value  # not imported yet
    assert plugins.algorithm_class("az_installed").__name__ == "AlphaZero"
