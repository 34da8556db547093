"""What a finished `polyzero train` prints and keeps: the totals and the final evaluation.

Lines, yielded as they are ready, rather than prints: a trainer running as a Ray
actor (the supervised learner, `polyzero.train.supervisor`) hands them back to
the command. The final evaluation is also kept: a "final_eval" record in
`metrics.jsonl` and `RUN_DIR/final_eval.json` (written atomically), so what the
command printed can be read back later.
"""

from __future__ import annotations

import json
import time

from ..plugins import own_runtime
from .checkpoint import atomic_write
from .metrics import MetricsLog

FINAL_EVAL = "final_eval.json"


def final_report(trainer, summary: dict):
    cfg = trainer.cfg
    stats = trainer.selfplay_stats
    yield (
        f"trained {summary['step']} learning steps in {summary['time'] / 60:.1f} min "
        f"({stats['games']} self-play games, {stats['positions']} positions)"
    )
    if cfg.eval.final_games:
        started = time.perf_counter()
        res = trainer.evaluate(cfg.eval.final_games, seed=cfg.seed, progress=getattr(trainer, "show_progress", False))
        _keep(trainer, summary, res, time.perf_counter() - started)
        runtime = own_runtime(cfg.algo)  # an algorithm with its own runtime words its own evaluation
        yield from _lines(trainer, res) if runtime is None else runtime.final_evaluation_lines(trainer, res)
        yield f"final evaluation kept in {trainer.run_dir / FINAL_EVAL} and metrics.jsonl"
    yield f"run directory: {trainer.run_dir}  (polyzero plot {trainer.run_dir})"


def _keep(trainer, summary: dict, res: dict, seconds: float) -> None:
    """The final evaluation as a metrics record and as `final_eval.json`."""
    cfg = trainer.cfg
    values = {k: float(v) if isinstance(v, float) else v for k, v in res.items()}
    MetricsLog(trainer.run_dir, tensorboard=False).log("final_eval", summary["step"], summary["time"], values)
    record = {
        "step": summary["step"],
        "games": cfg.eval.final_games,
        "simulations": cfg.eval.simulations,
        "seed": cfg.seed,
        "seconds": round(seconds, 1),
        "results": values,
    }
    atomic_write(trainer.run_dir / FINAL_EVAL, (json.dumps(record, indent=1) + "\n").encode())


def _lines(trainer, res: dict):
    cfg = trainer.cfg
    if trainer.game.num_players() == 1:
        yield (
            f"final evaluation: agent at {cfg.eval.simulations} simulations, {cfg.eval.final_games} "
            f"episodes: mean return {res['eval/return/mean']:.1f}  95% CI [{res['eval/return/ci_low']:.1f}, "
            f"{res['eval/return/ci_high']:.1f}]"
        )
        return
    yield (
        f"final evaluation: agent at {cfg.eval.simulations} simulations, "
        f"{cfg.eval.final_games} games per opponent, seats alternated"
    )
    for spec in cfg.eval.opponent_specs():
        r = {k: res[f"eval/{spec}/{k}"] for k in ("score", "ci_low", "ci_high", "wins", "draws", "losses")}
        yield (
            f"  vs {spec:20s} score {r['score']:.3f}  95% CI [{r['ci_low']:.3f}, {r['ci_high']:.3f}]  "
            f"(W {r['wins']} D {r['draws']} L {r['losses']})"
        )
