"""`polyzero train`: train an agent by self-play (in-process or on Ray), or resume a run."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ..errors import UsageError
from ..plugins import algorithm_names
from ..validation import check_fits_machine, check_output_dir, seed_arg

EXAMPLES = """examples:
  polyzero train tic_tac_toe --run-dir runs/ttt            # the shipped tic-tac-toe preset, about a minute
  polyzero train connect_four --set train.steps=50 --set search.num_simulations=64
  polyzero train --preset muzero_connect_four              # a preset by name (polyzero presets lists them)
  polyzero train connect_four --config my.toml --seed 2
  polyzero train kuhn_poker --algo sog
  polyzero train connect_four --workers 4                  # self-play on 4 Ray actors
  polyzero train --resume runs/ttt --set train.steps=400   # continue, to 400 learning steps
Watch a run in TensorBoard: tensorboard --logdir RUN_DIR/tensorboard
"""


def register(sub) -> None:
    t = sub.add_parser(
        "train",
        help="train an agent by self-play",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=EXAMPLES,
        description="Train an agent by self-play. A run directory receives the resolved "
        "config, metrics.jsonl, TensorBoard logs and atomic checkpoints.",
    )
    t.add_argument("game", nargs="?", help="OpenSpiel game, e.g. connect_four or 'go(board_size=9)'")
    t.add_argument(
        "--algo",
        default=None,
        help=f"one of {', '.join(algorithm_names(discover=False))} (default alphazero; "
        "sog: Student of Games), or one a plug-in registers (docs/adding_an_algorithm.md)",
    )
    t.add_argument(
        "--search",
        default=None,
        metavar="KIND",
        help="how the root is searched: puct (default), gumbel (Gumbel root, pUCT below), "
        "full_gumbel (Gumbel root and deterministic non-root selection); "
        "the same as --set search.kind=KIND",
    )
    t.add_argument("--config", metavar="FILE.toml", help="config file, applied over the shipped preset")
    t.add_argument(
        "--preset",
        metavar="NAME",
        help="a shipped preset by name, e.g. muzero_connect_four (it names its game and "
        "algorithm); `polyzero presets` lists them",
    )
    t.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one config value, e.g. --set search.num_simulations=64 (repeatable)",
    )
    t.add_argument("--run-dir", type=Path, help="where the run is written (default: runs/GAME-ALGO-TIME)")
    t.add_argument("--resume", type=Path, metavar="DIR", help="continue the run in DIR from its last checkpoint")
    t.add_argument("--device", choices=["auto", "cpu", "cuda"], help="where the networks run (default: auto)")
    t.add_argument("--seed", type=seed_arg, help="random seed (default: 0)")
    t.add_argument(
        "--workers",
        type=int,
        default=0,
        metavar="N",
        help="run self-play on N Ray actors (a local Ray instance on 127.0.0.1 unless "
        "--ray-address is given); 0 (default) runs everything in this process",
    )
    t.add_argument("--ray-address", metavar="ADDR", help="join an existing Ray cluster (e.g. 10.0.0.5:6379)")
    t.add_argument(
        "--no-progress",
        action="store_true",
        help="no live progress line (it is off anyway when stderr is not a terminal)",
    )
    t.set_defaults(run=run)


def run(args) -> int:
    """`polyzero train`; an OS error on the run directory (a full disk, a read-only or
    forbidden directory) is one line naming the path and the remedy, exit code 1."""
    from ..train.rundir import os_error_message

    try:
        return _train(args)
    except OSError as exc:
        run_dir = args.resume or args.run_dir
        msg = os_error_message(exc, run_dir, args.workers)
        if msg is None:
            raise
        print(f"polyzero: {msg}", file=sys.stderr)
        return 1


def _train(args) -> int:
    from ..config import build_config
    from ..games import load_game
    from ..train.driver import Interrupted, trainer_classes

    if args.workers < 0:
        raise UsageError("--workers must be 0 (in-process) or a positive number of Ray actors")
    if args.ray_address and not args.workers:
        raise UsageError("--ray-address needs --workers N")
    if args.resume:
        check_output_dir(args.resume, "--resume")  # before anything reads the directory
    _apply_preset(args)
    driver = {}
    if args.workers:  # the learner runs as a supervised Ray actor, self-play on N more
        from ..train.supervisor import SupervisedRun

        Trainer = SupervisedRun  # noqa: N806 - the same interface, another driver
        driver = {"workers": args.workers, "ray_address": args.ray_address}
    else:  # the common trainer, or that of an algorithm with a runtime of its own (Student of Games)
        Trainer = trainer_classes(_run_algo(args))[0]  # noqa: N806
    if args.resume:
        if args.game or args.config or args.algo or args.search:
            raise UsageError(
                "--resume continues a run with its own game, algorithm and config; "
                "only --set, --device and --seed may be given with it"
            )
        overrides = list(args.overrides)
        if args.device:
            overrides.append(f'device="{args.device}"')
        if args.seed is not None:  # refused unless it is the run's own (polyzero.train.resume)
            overrides.append(f"seed={args.seed}")
        trainer = Trainer.resume(args.resume, overrides, progress=not args.no_progress, **driver)
        check_fits_machine(trainer.cfg, load_game(trainer.cfg.game))  # --set may have raised a size
    else:
        if not (args.game or _set_value(args, "game") or _config_value(args, "game")):
            raise UsageError("train needs a GAME (or --resume DIR)")
        overrides = list(args.overrides)
        if args.search:
            overrides.append(f'search.kind="{args.search}"')
        if args.device:
            overrides.append(f'device="{args.device}"')
        if args.seed is not None:
            overrides.append(f"seed={args.seed}")
        cfg = build_config(args.game, args.algo, args.config, overrides)
        check_fits_machine(cfg, load_game(cfg.game))
        run_dir = args.run_dir or Path("runs") / f"{cfg.game.split('(')[0]}-{cfg.algo}-{time.strftime('%Y%m%d-%H%M%S')}"
        check_output_dir(run_dir, "--run-dir")
        args.run_dir = run_dir  # for the message of an OS error on it
        trainer = Trainer.create(cfg, run_dir, progress=not args.no_progress, **driver)
    cfg = trainer.cfg
    where = f"{args.workers} Ray workers" if args.workers else "in-process"
    print(
        f"training {cfg.algo} on {cfg.game} for {cfg.train.steps} learning steps in {trainer.run_dir} "
        f"({where}, device {trainer.device}, seed {cfg.seed})",
        file=sys.stderr,
    )
    try:
        summary = trainer.run()
    except Interrupted as exc:
        print(str(exc), file=sys.stderr)
        return 130
    for line in trainer.final_report(summary):
        print(line, flush=True)
    return 0


def _apply_preset(args) -> None:
    """--preset NAME: its file as the config, its game and algorithm unless given."""
    if not args.preset:
        return
    if args.config:
        raise UsageError("give --preset NAME or --config FILE, not both")
    if args.resume:
        raise UsageError("--resume continues a run with its own config; --preset starts a new one")
    from ..presets import preset_file, preset_summary

    info = preset_summary(args.preset)
    args.config = str(preset_file(args.preset))
    args.game = args.game or info["game"]
    args.algo = args.algo or info["algo"]


def _set_value(args, key: str):
    """The value a `--set KEY=...` gives a top-level key, if any (the last one wins)."""
    from ..config import parse_override

    values = [d[key] for d in map(parse_override, args.overrides) if key in d]
    return values[-1] if values else None


def _run_algo(args) -> str:
    """The algorithm a train command will run (a resumed run's own)."""
    if args.resume:
        from ..config import read_toml
        from ..train.checkpoint import latest_checkpoint

        latest = latest_checkpoint(args.resume)
        return read_toml(latest / "config.toml").get("algo", "alphazero") if latest else "alphazero"
    if args.algo or _set_value(args, "algo"):
        return args.algo or _set_value(args, "algo")
    return _config_value(args, "algo") or "alphazero"


def _config_value(args, key: str):
    """The value the --config file gives a top-level key, if any."""
    if not args.config:
        return None
    from ..config import read_toml

    return read_toml(args.config).get(key)
