"""Players loaded from run directories and checkpoints, for arena, play and evaluation."""

from __future__ import annotations

from pathlib import Path

from ..algos import make_algorithm
from ..algos.player import SearchPlayer
from ..config import build_config, read_toml
from ..errors import UsageError
from ..eval.players import Player
from ..games import game_spec_string, load_game
from ..plugins import own_runtime
from ..validation import spec_count
from .checkpoint import read_learner, resolve_checkpoint


def split_simulations(spec: str) -> tuple[str, str]:
    """`PATH@SIMS` as (PATH, SIMS), SIMS "" when not given; the last `@` divides, and a path
    that exists as written (`runs/exp@v2`) has none."""
    path, at, sims = spec.rpartition("@")
    return (spec, "") if not at or Path(spec).exists() else (path, sims)


def load_search_player(spec: str, game=None, seed: int = 0, device: str = "cpu") -> Player | None:
    """`PATH` or `PATH@SIMS`: the checkpoint's network with its evaluation search
    settings (SIMS overrides the simulations; a Student of Games run plays SoG(SIMS, 1)
    with its CVPN at the leaves). None if PATH does not exist."""
    path, sims = split_simulations(spec)
    if not Path(path).exists():
        return None
    if sims:
        spec_count(spec, sims, "simulations after @")
    ckpt = resolve_checkpoint(path)
    cfg = build_config(base=read_toml(ckpt / "config.toml"))
    own_game = load_game(cfg.game)
    if game is not None and game_spec_string(game) != game_spec_string(own_game):
        raise UsageError(f"player {path} was trained on '{game_spec_string(own_game)}', not '{game_spec_string(game)}'")
    runtime = own_runtime(cfg.algo)  # Student of Games: SoG(SIMS, 1) with the run's CVPN at the leaves
    if runtime is not None:
        return runtime.run_player(ckpt, cfg, own_game, int(sims) if sims else None, seed, path)
    algo, net = checkpoint_network(ckpt, cfg, own_game)
    simulations = int(sims) if sims else cfg.eval.simulations
    return SearchPlayer(
        algo,
        algo.make_evaluator(net, device),
        cfg.search.params(simulations),
        name=f"{path}@{simulations}",
        seed=seed,
        sample_moves=cfg.eval.sample_moves,
    )


def checkpoint_network(ckpt: Path, cfg, game):
    """(algorithm, network with the checkpoint's weights) of a checkpoint directory."""
    algo = make_algorithm(cfg, game)
    net = algo.build_network()
    try:
        net.load_state_dict(read_learner(ckpt)["net"])
    except (KeyError, RuntimeError) as exc:
        raise UsageError(f"checkpoint {ckpt} does not fit its config's network ({type(exc).__name__})") from None
    return algo, net


def checkpoint_game(spec: str) -> str | None:
    """The game a run directory or checkpoint was trained on, if `spec` is one (or is a
    `sog:S,C,net=RUN` player)."""
    path = spec.partition(",net=")[2] if spec.startswith("sog:") else split_simulations(spec)[0]
    if not path or not Path(path).exists():
        return None
    ckpt = resolve_checkpoint(path)
    return read_toml(ckpt / "config.toml").get("game")
