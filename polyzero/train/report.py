"""What a finished `polyzero train` prints: the totals and the final evaluation.

Lines, yielded as they are ready, rather than prints: a trainer running as a Ray
actor (the supervised learner, `polyzero.train.supervisor`) hands them back to
the command.
"""

from __future__ import annotations

from ..plugins import own_runtime


def final_report(trainer, summary: dict):
    cfg = trainer.cfg
    stats = trainer.selfplay_stats
    yield (f"trained {summary['step']} learning steps in {summary['time'] / 60:.1f} min "
           f"({stats['games']} self-play games, {stats['positions']} positions)")
    if cfg.eval.final_games:
        runtime = own_runtime(cfg.algo)  # an algorithm with its own runtime reports its own evaluation
        yield from _evaluation(trainer) if runtime is None else runtime.final_evaluation(trainer)
    yield f"run directory: {trainer.run_dir}  (polyzero plot {trainer.run_dir})"


def _evaluation(trainer):
    cfg, game = trainer.cfg, trainer.game
    if game.num_players() == 1:
        res = trainer.evaluate(cfg.eval.final_games, seed=cfg.seed)
        yield (f"final evaluation: agent at {cfg.eval.simulations} simulations, {cfg.eval.final_games} "
               f"episodes: mean return {res['eval/return/mean']:.1f}  95% CI [{res['eval/return/ci_low']:.1f}, "
               f"{res['eval/return/ci_high']:.1f}]")
        return
    from ..eval import make_player, play_match

    yield (f"final evaluation: agent at {cfg.eval.simulations} simulations, "
           f"{cfg.eval.final_games} games per opponent, seats alternated")
    agent = trainer.agent_player(seed=cfg.seed)
    for spec in cfg.eval.opponent_specs():
        res = play_match(game, agent, make_player(spec, game, seed=cfg.seed), cfg.eval.final_games, seed=cfg.seed)
        yield (f"  vs {spec:20s} score {res.score:.3f}  95% CI [{res.ci_low:.3f}, {res.ci_high:.3f}]  "
               f"(W {res.wins} D {res.draws} L {res.losses})")
