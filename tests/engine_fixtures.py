"""Shared helpers of the engine tests: tiny untrained agents, an untrained checkpoint on
disk, and the rule for tests that need a real engine binary (fail in CI, skip elsewhere
with the package to install)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

SCRIPTED = str(Path(__file__).with_name("scripted_engine.py"))
TINY_NET = ["net.channels=8", "net.blocks=1", "net.value_hidden=8", "net.width=16", "net.layers=1"]


def scripted(protocol: str, mode: str = "ok", after: int = 1, pidfile=None) -> str:
    """The command line of the scripted engine, for a gtp:'...' or uci:'...' spec."""
    parts = [sys.executable, SCRIPTED, protocol, mode, str(after)] + ([str(pidfile)] if pidfile else [])
    return " ".join(parts)


def need_binary(name: str) -> str:
    """The path of a Debian engine; in CI (POLYZERO_CI=1) its absence fails the test."""
    from polyzero.engines.players import missing_engine_hint
    from polyzero.engines.process import find_binary

    path = find_binary(name)
    if path is None:
        if os.environ.get("POLYZERO_CI"):
            pytest.fail(f"CI must provide {name}: {missing_engine_hint(name)} (.ci/run installs it)")
        pytest.skip(missing_engine_hint(name))
    return path


def tiny_search_player(game_spec: str, simulations: int = 16, seed: int = 0):
    """An untrained AlphaZero network of a few hundred weights behind polyzero's search."""
    from polyzero.algos import make_algorithm
    from polyzero.algos.player import SearchPlayer
    from polyzero.config import build_config
    from polyzero.games import load_game

    cfg = build_config(game_spec, "alphazero", overrides=TINY_NET)
    algo = make_algorithm(cfg, load_game(cfg.game))
    net = algo.build_network()
    return SearchPlayer(algo, algo.make_evaluator(net, "cpu"), cfg.search.params(simulations), "tiny", seed=seed)


def untrained_checkpoint(directory: Path, game_spec: str, simulations: int = 16) -> Path:
    """A checkpoint directory (config.toml + learner.pt) holding an untrained tiny network."""
    import torch

    from polyzero.algos import make_algorithm
    from polyzero.config import build_config, to_toml
    from polyzero.games import load_game

    cfg = build_config(game_spec, "alphazero", overrides=TINY_NET + [f"eval.simulations={simulations}"])
    net = make_algorithm(cfg, load_game(cfg.game)).build_network()
    # Step 1, not 0: a ladder's points are the checkpoints after training began (step 0
    # is the untrained network a run writes to be resumable from its start).
    ckpt = Path(directory) / "checkpoints" / "step_000001"
    ckpt.mkdir(parents=True, exist_ok=True)
    (ckpt / "config.toml").write_text(to_toml(cfg.to_dict()))
    torch.save({"net": net.state_dict()}, ckpt / "learner.pt")
    return ckpt
