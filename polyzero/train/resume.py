"""What `--resume` may change: each config key a resumed run is given (`--set`,
`--device`, `--seed`) is either applied or refused with one line; never silently
ignored. docs/configuration.md lists the rules ("Changing a run on resume").

Applied keys are read afresh when the resumed trainer is built (searches, self-play,
evaluation, Ray, the step budget and checkpoint cadence) or written into the
restored state (the optimizer's learning rate and momentum, `apply_optimizer_settings`).
Refused keys are fixed by what the checkpoint holds: the game, the algorithm and the
network's architecture, the random streams (`seed`), the replay buffer, the optimizer's
kind and the number of games in flight.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import UsageError

#: Keys a resume applies.
APPLIED = frozenset(
    {
        "device",
        "threads",
        "net.inference",
        "net.cache",
        "net.winograd",
        "search.num_simulations",
        "search.c_puct",
        "search.c1",
        "search.c2",
        "search.dirichlet_alpha",
        "search.dirichlet_fraction",
        "search.gumbel_scale",
        "search.eval_gumbel_scale",
        "search.leaf_batch",
        "selfplay.temperature",
        "selfplay.sample_moves",
        "selfplay.max_moves",
        "selfplay.inference_max_batch",
        "selfplay.inference_buckets",
        "selfplay.inference_wait_ms",
        "selfplay.inference_dtype",
        "train.steps",
        "train.positions_per_step",
        "train.minibatches_per_step",
        "train.batch_size",
        "train.learning_rate",
        "train.lr_schedule",
        "train.lr_steps",
        "train.l2",
        "train.momentum",
        "train.checkpoint_every",
        "train.keep_checkpoints",
        "train.keep_replay_every",
        "train.compile",
        "sog.simulations",
        "sog.solve_simulations",
        "sog.episodes_per_step",
        "sog.solves_per_step",
        "sog.solve_together",
        "sog.lr_halve_every",
        "sog.eval_simulations",
        "sog.eval_seeds",
    }
)
#: Whole sections a resume applies.
APPLIED_SECTIONS = ("eval", "ray")

#: Why a refused key cannot change, by key or section (the first that matches).
REFUSED_WHY = {
    "game": "the run's game is fixed",
    "algo": "the run's algorithm is fixed",
    "seed": "the run's random streams continue from the checkpoint's state, not from a seed",
    "net": "the network's architecture is in the checkpoint's weights",
    "selfplay.concurrent_games": "the games in flight are in the checkpoint",
    "selfplay.actors": "each actor's games in flight are in the checkpoint",
    "selfplay.shared_inference": "each actor's games in flight are in the checkpoint",
    "train.replay_size": "the replay buffer is in the checkpoint",
    "train.optimizer": "the optimizer's state is in the checkpoint",
    "train.fused_step": "the optimizer's state is in the checkpoint",
    "train": "the replay buffer and learner are restored as the checkpoint holds them",
    "search": "the run's targets are defined by its search",
    "muzero": "the model, its targets and its reanalyser are in the checkpoint",
    "ndmz": "the model is in the checkpoint",
    "start": "the Go-Exploit archive is in the checkpoint",
    "katago": "the self-play targets and archive are in the checkpoint",
    "sog": "the query buffer and targets are in the checkpoint",
}


def is_applied(key: str) -> bool:
    return key in APPLIED or key.split(".")[0] in APPLIED_SECTIONS


def refusal(key: str) -> str:
    why = REFUSED_WHY.get(key) or REFUSED_WHY.get(key.split(".")[0], "it is fixed for a run")
    return (
        f"{key} cannot change on resume ({why}); start a new run to change it "
        f"(docs/configuration.md lists what --resume applies)"
    )


def _flat(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def changed_keys(before: dict, after: dict) -> list[str]:
    a, b = _flat(before), _flat(after)
    return sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))


def resume_config(run_dir: Path, overrides: list[str]):
    """The config a resumed run continues with, and its checkpoint: the checkpoint's
    config with `overrides` on top, every changed key applied or refused (UsageError)."""
    from ..config import build_config, read_toml
    from . import checkpoint as ckpt

    latest = ckpt.latest_checkpoint(run_dir)
    if latest is None:
        raise UsageError(
            f"{run_dir} holds no checkpoint to resume from (a run that never wrote one "
            f"starts anew with polyzero train GAME --run-dir {run_dir})"
        )
    base = read_toml(latest / "config.toml")
    before = build_config(config_file=None, overrides=[], base=base)
    cfg = build_config(config_file=None, overrides=list(overrides), base=base)
    for key in changed_keys(before.to_dict(), cfg.to_dict()):
        if not is_applied(key):
            raise UsageError(refusal(key))
    return cfg, latest


def prepare_resume(run_dir: Path, overrides: list[str], lock: bool = True):
    """What every driver's resume does first: take the run directory's lock (`lock`;
    a Ray learner's supervisor holds it for the learner), put back or clean what an
    interrupted checkpoint write left (`checkpoint.recover`, said on stderr), and the
    config and checkpoint the run continues from (`resume_config`). The caller unlocks."""
    import sys

    from . import checkpoint as ckpt, rundir

    run_dir = Path(run_dir)
    if lock and run_dir.is_dir():
        rundir.lock(run_dir)
    try:
        for note in ckpt.recover(run_dir):
            print(f"{run_dir}: {note}", file=sys.stderr)
        return resume_config(run_dir, list(overrides))
    except BaseException:
        if lock:
            rundir.unlock(run_dir)
        raise


def apply_optimizer_settings(optimizer, train_cfg) -> None:
    """The config's learning rate (a constant schedule: a cosine one sets it at every
    update) and momentum into a restored optimizer, whose state_dict brought the old ones."""
    for group in optimizer.param_groups:
        if train_cfg.lr_schedule == "constant":
            group["lr"] = train_cfg.learning_rate
        if "momentum" in group and train_cfg.optimizer == "sgd":
            group["momentum"] = train_cfg.momentum
