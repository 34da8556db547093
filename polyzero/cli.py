"""polyzero's command line: train, arena, play, plot, solve.

User mistakes print one line `polyzero: error: ...` and exit with status 2.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from .errors import RunStopped, UsageError

EPILOG = """examples:
  polyzero train connect_four --algo alphazero --set train.steps=20
  polyzero train tic_tac_toe --run-dir runs/ttt --seed 1
  polyzero train kuhn_poker --algo sog
  polyzero train --resume runs/ttt
  polyzero arena runs/ttt mcts-solver:100 --games 100
  polyzero play tic_tac_toe --agent runs/ttt --human-seat 0
  polyzero plot runs/ttt
  polyzero solve nannon
"""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="polyzero", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG,
        description="The Zero family of self-play learning and planning on OpenSpiel games.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    t = sub.add_parser("train", help="train an agent by self-play",
                       description="Train an agent by self-play. A run directory receives the resolved "
                                   "config, metrics.jsonl, TensorBoard logs and atomic checkpoints.")
    t.add_argument("game", nargs="?", help="OpenSpiel game, e.g. connect_four or 'go(board_size=9)'")
    t.add_argument("--algo", default=None, help="alphazero (default), muzero, ndmz or sog (Student of Games)")
    t.add_argument("--search", default=None, metavar="KIND",
                   help="how the root is searched: puct (default), gumbel (Gumbel root, pUCT below), "
                        "full_gumbel (Gumbel root and deterministic non-root selection); "
                        "the same as --set search.kind=KIND")
    t.add_argument("--config", metavar="FILE.toml", help="config file, applied over the shipped preset")
    t.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override one config value, e.g. --set search.num_simulations=64 (repeatable)")
    t.add_argument("--run-dir", type=Path, help="where the run is written (default: runs/GAME-ALGO-TIME)")
    t.add_argument("--resume", type=Path, metavar="DIR", help="continue the run in DIR from its last checkpoint")
    t.add_argument("--device", choices=["auto", "cpu", "cuda"], help="where the networks run (default: auto)")
    t.add_argument("--seed", type=int, help="random seed (default: 0)")
    t.add_argument("--workers", type=int, default=0, metavar="N",
                   help="run self-play on N Ray actors (a local Ray instance on 127.0.0.1 unless "
                        "--ray-address is given); 0 (default) runs everything in this process")
    t.add_argument("--ray-address", metavar="ADDR", help="join an existing Ray cluster (e.g. 10.0.0.5:6379)")
    t.add_argument("--no-progress", action="store_true", help="no live progress bar")

    a = sub.add_parser("arena", help="play two players against each other",
                       description="Play N games between two players, seats alternated, and print the "
                                   "score (W + D/2)/N of PLAYER_A with its Wilson 95% interval. A player is "
                                   "random, mcts:SIMS, mcts-solver:SIMS, or a run directory / checkpoint "
                                   "(optionally PATH@SIMS to set its search simulations).")
    a.add_argument("player_a")
    a.add_argument("player_b")
    a.add_argument("--game", help="the game (default: the game a run-directory player was trained on)")
    a.add_argument("--games", type=int, default=100, help="number of games (default: 100)")
    a.add_argument("--seed", type=int, default=0)
    a.add_argument("--no-progress", action="store_true")

    pl = sub.add_parser("play", help="play against a player in the terminal")
    pl.add_argument("game")
    pl.add_argument("--agent", required=True, help="the opponent: a run directory, checkpoint or reference player")
    pl.add_argument("--human-seat", type=int, choices=[0, 1], default=0)
    pl.add_argument("--seed", type=int, default=0)

    sv = sub.add_parser("solve", help="solve a game exactly (Nannon) and cache the solution",
                        description="Solve a Nannon game exactly by value iteration, cache the optimal "
                                    "values and policy (under $POLYZERO_CACHE or ~/.cache/polyzero), and "
                                    "print the opening values. The 'optimal' player reads this cache.")
    sv.add_argument("game", help="a nannon game, e.g. nannon or 'nannon(points=12,checkers=5)'")
    sv.add_argument("--force", action="store_true", help="recompute even when a cached solution exists")
    sv.add_argument("--no-progress", action="store_true")

    ld = sub.add_parser("ladder", help="a run's checkpoints against the MCTS-Solver ladder, with AUC",
                        description="Play each checkpoint of RUN_DIR against MCTS-Solver at multiples of the "
                                    "agent's evaluation simulations (Go-Exploit Section 4), seats alternated, "
                                    "draws 1/2; print win rates, the windowed learning curve and its area (AUC) "
                                    "per level. Results are cached in RUN_DIR/ladder.json (a rerun plays only "
                                    "what is new); the plot goes to RUN_DIR/plots/ladder.png. Keep enough "
                                    "checkpoints for a curve: train with --set train.keep_checkpoints=1000.")
    ld.add_argument("run_dir", type=Path)
    ld.add_argument("--games", type=int, default=20, help="games per checkpoint and level (default: 20)")
    ld.add_argument("--levels", default="1,10,100,1000",
                    help="multiples of the agent's evaluation simulations (default: 1,10,100,1000)")
    ld.add_argument("--high-every", type=int, default=10, metavar="K",
                    help="levels of 100x and more only at every K-th checkpoint and the last (default: 10)")
    ld.add_argument("--window", type=int, default=50, help="learning steps the win rate is averaged over (default: 50)")
    ld.add_argument("--seed", type=int, default=0)
    ld.add_argument("--from-metrics", action="store_true",
                    help="play nothing: use the evaluations against mcts-solver levels recorded in "
                         "RUN_DIR/metrics.jsonl during training")
    ld.add_argument("--no-progress", action="store_true")

    tn = sub.add_parser("tournament", help="round-robin of runs' checkpoints and reference players, Elo ratings",
                        description="Round-robin between checkpoints of the given runs and reference players, "
                                    "every pair --games games with seats alternated; Elo ratings from a "
                                    "logistic model with a prior of virtual draws (as BayesElo), anchored at "
                                    "--anchor = 0, with 95% intervals; writes tournament.json, ratings.txt "
                                    "and ratings.png to --out.")
    tn.add_argument("run_dirs", nargs="+", type=Path)
    tn.add_argument("--references", default="mcts-solver:1x",
                    help="comma-separated reference players; Mx = M times the first run's evaluation "
                         "simulations (default: mcts-solver:1x)")
    tn.add_argument("--anchor", help="the player rated 0 (default: the first reference)")
    tn.add_argument("--checkpoints", default="last", help="last (default), all, or learning steps like 300,600")
    tn.add_argument("--games", type=int, default=20, help="games per pair (default: 20)")
    tn.add_argument("--prior", type=float, default=2.0, help="virtual draws between players who met (default: 2)")
    tn.add_argument("--out", type=Path, default=Path("tournament"), help="output directory (default: tournament)")
    tn.add_argument("--seed", type=int, default=0)
    tn.add_argument("--no-progress", action="store_true")

    ex = sub.add_parser("exploitability", help="exploitability of a (search) player's policy",
                        description="The exploitability of a player's policy (Student of Games): for each "
                                    "seed, searches run breadth-first over the game's public states, each "
                                    "conditioned on the searches before it, are composed into one policy "
                                    "and handed to OpenSpiel's exact best response. Prints min / mean / max "
                                    "over seeds, in mbb/h for poker and reward units otherwise. PLAYER is "
                                    "sog:S,C (GT-CFR re-solving, exact leaf values), cfr:ITERS or ismcts:SIMS.")
    ex.add_argument("player")
    ex.add_argument("--game", required=True, help="a small two-player game, e.g. kuhn_poker or leduc_poker")
    ex.add_argument("--seeds", type=int, default=10, help="policies built, one per seed (default: 10)")
    ex.add_argument("--no-progress", action="store_true")

    pt = sub.add_parser("plot", help="learning-curve PNGs for one or more runs")
    pt.add_argument("run_dirs", nargs="+", type=Path)
    pt.add_argument("--out", type=Path, help="output directory (default: RUN_DIR/plots)")
    return p


def _register_loaders():
    from .eval import register_player_loader
    from .train.agents import load_search_player

    register_player_loader(load_search_player)


def cmd_train(args) -> int:
    from .config import build_config
    from .train.driver import Interrupted, Trainer

    if args.workers < 0:
        raise UsageError("--workers must be 0 (in-process) or a positive number of Ray actors")
    if args.ray_address and not args.workers:
        raise UsageError("--ray-address needs --workers N")
    driver = {}
    if args.workers:  # the learner runs as a supervised Ray actor, self-play on N more
        from .train.supervisor import SupervisedRun

        Trainer = SupervisedRun  # noqa: N806 - the same interface, another driver
        driver = {"workers": args.workers, "ray_address": args.ray_address}
    elif _run_algo(args) == "sog":  # the same interface, Student of Games' data flow
        from .sog.trainer import SoGTrainer

        Trainer = SoGTrainer  # noqa: N806
    if args.resume:
        if args.game or args.config or args.algo or args.search:
            raise UsageError("--resume continues a run with its own game, algorithm and config; "
                             "only --set, --device and --seed may be given with it")
        overrides = list(args.overrides)
        if args.device:
            overrides.append(f'device="{args.device}"')
        trainer = Trainer.resume(args.resume, overrides, progress=not args.no_progress, **driver)
    else:
        if not args.game:
            raise UsageError("train needs a GAME (or --resume DIR)")
        overrides = list(args.overrides)
        if args.search:
            overrides.append(f'search.kind="{args.search}"')
        if args.device:
            overrides.append(f'device="{args.device}"')
        if args.seed is not None:
            overrides.append(f"seed={args.seed}")
        cfg = build_config(args.game, args.algo, args.config, overrides)
        run_dir = args.run_dir or Path("runs") / f"{args.game.split('(')[0]}-{cfg.algo}-{time.strftime('%Y%m%d-%H%M%S')}"
        trainer = Trainer.create(cfg, run_dir, progress=not args.no_progress, **driver)
    cfg = trainer.cfg
    where = f"{args.workers} Ray workers" if args.workers else "in-process"
    print(f"training {cfg.algo} on {cfg.game} for {cfg.train.steps} learning steps in {trainer.run_dir} "
          f"({where}, device {trainer.device}, seed {cfg.seed})", file=sys.stderr)
    try:
        summary = trainer.run()
    except Interrupted as exc:
        print(str(exc), file=sys.stderr)
        return 130
    for line in trainer.final_report(summary):
        print(line, flush=True)
    return 0


def _run_algo(args) -> str:
    """The algorithm a train command will run (a resumed run's own)."""
    if args.resume:
        from .config import read_toml
        from .train.checkpoint import latest_checkpoint

        latest = latest_checkpoint(args.resume)
        return read_toml(latest / "config.toml").get("algo", "alphazero") if latest else "alphazero"
    if args.algo:
        return args.algo
    if args.config:
        from .config import read_toml

        return read_toml(args.config).get("algo", "alphazero")
    return "alphazero"


def cmd_arena(args) -> int:
    from .eval import make_player, play_match
    from .games import load_game
    from .train.agents import checkpoint_game

    if args.games < 1:
        raise UsageError("--games must be at least 1")
    game_spec = args.game or checkpoint_game(args.player_a) or checkpoint_game(args.player_b)
    if game_spec is None:
        raise UsageError("arena needs --game GAME when neither player is a run directory")
    game = load_game(game_spec)
    if game.num_players() != 2:
        raise UsageError(f"arena plays two-player games; '{game_spec}' has {game.num_players()} players")
    a = make_player(args.player_a, game, seed=args.seed)
    b = make_player(args.player_b, game, seed=args.seed + 1)
    res = play_match(game, a, b, args.games, seed=args.seed, progress=not args.no_progress)
    print(f"{args.player_a} vs {args.player_b} on {game_spec}, {args.games} games, seats alternated")
    print(f"score {res.score:.3f}  95% CI [{res.ci_low:.3f}, {res.ci_high:.3f}]  "
          f"(W {res.wins} D {res.draws} L {res.losses})")
    return 0


def cmd_play(args) -> int:
    from .eval import make_player
    from .eval.play import play_in_terminal
    from .games import load_game

    game = load_game(args.game)
    if game.num_players() != 2:
        raise UsageError(f"play needs a two-player game; '{args.game}' has {game.num_players()} players")
    agent = make_player(args.agent, game, seed=args.seed)
    play_in_terminal(game, agent, args.human_seat, seed=args.seed)
    return 0


def cmd_plot(args) -> int:
    from .eval.plot import plot_run, plot_runs

    if len(args.run_dirs) == 1:
        paths = plot_run(args.run_dirs[0], args.out)
    else:
        paths = plot_runs(args.run_dirs, args.out or Path("plots"))
    for p in paths:
        print(p)
    return 0


def cmd_solve(args) -> int:
    from .games import game_spec_string, load_game

    game = load_game(args.game)
    if game.get_type().short_name != "nannon":
        raise UsageError(f"solve knows only nannon games (exact value iteration); got '{args.game}'")
    from .eval.nannon_solver import NannonParams, solve

    params = NannonParams.from_game(game)
    sol = solve(params, progress=not args.no_progress, force=args.force)
    info, values = sol.info, sol.opening_values()
    how = "loaded from the cache" if info.get("cached") else f"solved in {info['seconds']:.1f} s"
    print(f"{game_spec_string(game)}: {sol.positions.size:,} positions, {how} "
          f"({info['sweeps']} sweeps, Bellman residual {info['residual']:.1e})")

    def show(points: float) -> str:  # a win probability only where points are +-1
        return f"{points:+.6f}" + ("" if params.double else f" (wins {(1 + points) / 2:.4%})")

    print(f"first mover, before its roll:     {show(values['first_mover'])}")
    print(f"winner of the difference roll-off: {show(values['rolloff_winner'])}")
    print(f"player 0 under opening={params.opening}: {show(values['player0'])}")
    print(f"cached at {info['path']}")
    return 0


def cmd_ladder(args) -> int:
    from .goexploit.harness import format_ladder, ladder_from_metrics, run_ladder

    if args.from_metrics:
        summary = ladder_from_metrics(args.run_dir, window=args.window)
        print(format_ladder(summary))
        print(f"plot: {summary['plot']}")
        return 0
    if args.games < 1:
        raise UsageError("--games must be at least 1")
    try:
        levels = tuple(int(x) for x in args.levels.split(","))
    except ValueError:
        raise UsageError(f"--levels must be comma-separated whole numbers, not {args.levels!r}") from None
    if not levels or min(levels) < 1:
        raise UsageError("--levels must be positive multiples")
    summary = run_ladder(args.run_dir, games=args.games, levels=levels, high_every=args.high_every,
                         window=args.window, seed=args.seed, progress=not args.no_progress)
    print(format_ladder(summary))
    print(f"plot: {summary['plot']}; results: {args.run_dir / 'ladder.json'}")
    return 0


def cmd_tournament(args) -> int:
    from .goexploit.harness import run_tournament

    if args.games < 1:
        raise UsageError("--games must be at least 1")
    refs = tuple(r.strip() for r in args.references.split(",") if r.strip())
    summary = run_tournament(args.run_dirs, references=refs, anchor=args.anchor, games=args.games,
                             checkpoints=args.checkpoints, out_dir=args.out, seed=args.seed,
                             prior_draws=args.prior, progress=not args.no_progress)
    print(summary["table"])
    print(f"plot: {summary['plot']}; results: {summary['dir']}/tournament.json")
    return 0


def cmd_exploitability(args) -> int:
    from .eval import make_player
    from .games import load_game
    from .sog.exploitability import player_exploitability

    if args.seeds < 1:
        raise UsageError("--seeds must be at least 1")
    game = load_game(args.game)
    if game.num_players() != 2:
        raise UsageError(f"exploitability needs a two-player game; '{args.game}' has {game.num_players()} players")
    make_player(args.player, game, seed=0)  # a bad spec fails before any work

    def announce(count: int) -> None:
        what = ("searches (one per decision public state)" if args.player.startswith("sog")
                else "policy queries (one per information state)")
        print(f"{args.player} on {args.game}: {count} {what} per seed, {args.seeds} seeds", flush=True)

    report = player_exploitability(game, lambda seed: make_player(args.player, game, seed=seed),
                                   seeds=args.seeds, progress=not args.no_progress, log=announce)
    print(f"exploitability ({report.unit}) over {args.seeds} seeds: min {report.min:.4g}  "
          f"mean {report.mean:.4g}  max {report.max:.4g}  ({report.seconds:.1f} s)")
    return 0


COMMANDS = {"train": cmd_train, "arena": cmd_arena, "play": cmd_play, "plot": cmd_plot,
            "solve": cmd_solve, "ladder": cmd_ladder, "tournament": cmd_tournament,
            "exploitability": cmd_exploitability}


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        _register_loaders()
        return COMMANDS[args.command](args)
    except UsageError as exc:
        print(f"polyzero: error: {exc}", file=sys.stderr)
        return 2
    except RunStopped as exc:
        print(f"polyzero: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("polyzero: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
