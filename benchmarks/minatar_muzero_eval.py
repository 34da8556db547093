"""`minatar_muzero.py eval`: each checkpoint's mean return over `--episodes` episodes at
the run's evaluation search (no noise, the search's own action), random play in the
same run, both under the evaluation's episode cap (`--eval-cap`,
minatar_muzero_games.py); every result cached in WORK/eval, so the phase resumes.
With `--follow SECONDS` it evaluates checkpoints as they appear, until every arm's
training has ended (the arm wrote ARM.seconds), then once more for the last ones.
`--eval-every K` only those of every K-th learning step and the last (when the
evaluation cannot keep up); `--newest-first` takes them in the opposite order: a second process on another core
works through a backlog from its end (the two meet, at most one checkpoint evaluated twice).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from common import write_json_atomic
from minatar_muzero_games import eval_game


def add_options(p) -> None:
    """The eval phase's options on `minatar_muzero.py`'s parser."""
    p.add_argument(
        "--eval-cap",
        type=int,
        default=None,
        help="episode cap of the evaluation, in the game's unit (Atari frames, MinAtar agent steps; 0: the game's "
        "own); default the game's (Atari 18,000 frames, MinAtar its own)",
    )
    p.add_argument(
        "--follow",
        type=float,
        default=0,
        metavar="SECONDS",
        help="eval: look for new checkpoints every SECONDS until every arm's training has ended (ARM.seconds)",
    )
    p.add_argument(
        "--eval-every",
        type=int,
        default=0,
        metavar="K",
        help="eval: checkpoints of every K-th learning step and the last",
    )
    p.add_argument(
        "--newest-first", action="store_true", help="eval: the newest checkpoints first (a second eval process)"
    )


def _log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def run_ended(work: Path, arm: str) -> bool:
    """The arm's training has ended: it wrote ARM.seconds (the train phase, or a run
    started in its layout)."""
    return (work / f"{arm}.seconds").exists()


def evaluate(args, work: Path, to_evaluate) -> None:
    """Random play and `to_evaluate(arm)`'s checkpoints, each once; with --follow, again
    every --follow seconds until every arm's training has ended."""
    import torch

    torch.set_num_threads(1)  # one core, as each training run (the preset's `threads`)
    while True:
        ended = all(run_ended(work, arm) for arm in args.arms)  # read first: its last checkpoint is then on disk
        _evaluate_once(args, work, to_evaluate)
        if not args.follow or ended:
            return
        time.sleep(args.follow)


def episodes(game, player, n: int, seed: int) -> dict:
    """`n` episodes of `player` on a fresh `game` (episode k resets the environment with
    seed k: every checkpoint plays the same starts, whatever was evaluated before): mean
    return with its normal 95% interval, each episode's return and length (agent steps),
    how many reached the game's episode cap (`capped`), seconds."""
    from polyzero.eval import play_single_agent

    lengths: dict[int, int] = {}
    t0 = time.time()
    res = play_single_agent(
        game, player, n, seed=seed, on_game_end=lambda i, state, r, why: lengths.__setitem__(i, len(state.history()))
    )
    res["lengths"] = [lengths[i] for i in range(n)]
    res["mean_length"] = sum(res["lengths"]) / n
    # the environment's cap counts Atari's random no-op start steps too (Appendix I: 108,000
    # frames an episode, its starts included), so an episode it truncated is up to noop_max short
    reached = game.max_steps - int(game.get_parameters().get("noop_max", 0))
    res["capped"] = sum(length >= reached for length in res["lengths"])
    res["seconds"] = round(time.time() - t0, 1)
    return res


def thinned(ckpts: list[Path], every: int, ended: bool = True) -> list[Path]:
    """The checkpoints whose learning step is a multiple of `every` (0: all), and the
    last one once the run has `ended` (a run stopped by the clock ends between multiples;
    while it trains, the newest is only the newest so far: --follow would evaluate each)."""
    if not every:
        return ckpts
    return [c for c in ckpts if int(c.name.split("_")[-1]) % every == 0 or (ended and c == ckpts[-1])]


def _evaluate_once(args, work: Path, to_evaluate) -> None:
    from polyzero.eval.players import RandomPlayer
    from polyzero.games import load_game
    from polyzero.train.agents import load_search_player

    out = work / "eval"
    out.mkdir(exist_ok=True)
    game = load_game(args.game)  # the checkpoints' own game (checked), played under the evaluation's cap
    random_file = out / "random.json"
    if not random_file.exists():
        res = episodes(eval_game(args.game, args.eval_cap), RandomPlayer(args.seed), args.episodes, args.seed)
        write_json_atomic(random_file, res)  # whole or absent: `eval` may run per arm in parallel
        _log(f"random: {res['mean_return']:.2f} ({res['mean_length']:.0f} steps an episode)")
    for arm in args.arms:
        ended = run_ended(work, arm)  # before the listing: the last checkpoint is then on disk
        ckpts = thinned(to_evaluate(arm), getattr(args, "eval_every", 0), ended)
        for ckpt in reversed(ckpts) if getattr(args, "newest_first", False) else ckpts:
            path = out / f"{arm}-{ckpt.name}.json"
            if path.exists():
                continue
            state = json.loads((ckpt / "state.json").read_text())
            player = load_search_player(str(ckpt), game, seed=args.seed)
            res = episodes(eval_game(args.game, args.eval_cap), player, args.episodes, args.seed + 1)
            res.update(
                step=state["step"], positions=state["actor"]["stats"]["positions"], train_time=state["train_time"]
            )
            write_json_atomic(path, res)
            _log(
                f"{arm} {ckpt.name}: {res['mean_return']:.2f} [{res['ci_low']:.2f}, {res['ci_high']:.2f}], "
                f"{res['mean_length']:.0f} steps an episode, {res['capped']} capped, {res['seconds']:.0f} s"
            )
