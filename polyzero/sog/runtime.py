"""Student of Games' own runtime, as `polyzero.plugins.RUNTIMES` names it for
`--algo sog`: the training runtime (`polyzero.train`) reaches these through that
name, so it imports nothing of `polyzero.sog` (docs/architecture.md, "Layers")."""

from __future__ import annotations


def trainer_classes() -> tuple[type, type]:
    """(in-process trainer, Ray trainer)."""
    from .ray_trainer import RaySoGTrainer
    from .trainer import SoGTrainer

    return SoGTrainer, RaySoGTrainer


def extra_actors(cfg) -> dict[str, int]:
    """Its Ray actors beside the self-play workers: the query solvers."""
    return {"ray.solvers": cfg.ray.solvers}


def run_player(ckpt, cfg, game, simulations: int | None, seed: int, path: str):
    """A SoG run directory as a player: SoG(SIMS, 1) with the run's CVPN at the leaves."""
    from .trainer import load_cvpn, sog_agent

    return sog_agent(game, cfg, load_cvpn(ckpt)[0], simulations, seed, suffix=f" net={path}")


def final_evaluation_lines(trainer, res: dict):
    """The final evaluation's lines of `polyzero train`'s report (`train.report`), from
    the trainer's `evaluate` results."""
    cfg = trainer.cfg
    sims = cfg.sog.eval_simulations
    if "eval/exploitability/mean" in res:
        from .exploitability import unit_scale

        unit = unit_scale(trainer.game)[1]
        yield (
            f"final evaluation: exploitability of SoG({sims},1) with the trained network over "
            f"{cfg.sog.eval_seeds} seeds: min {res['eval/exploitability/min']:.1f}  mean "
            f"{res['eval/exploitability/mean']:.1f}  max {res['eval/exploitability/max']:.1f} {unit}"
        )
        return
    yield (
        f"final evaluation: SoG({sims},1) with the trained network, {cfg.eval.final_games} games per "
        "opponent, seats alternated"
    )
    for key in sorted(k for k in res if k.endswith("/score")):
        name = key[len("eval/") : -len("/score")]
        yield (
            f"  vs {name:20s} score {res[key]:.3f}  95% CI [{res[f'eval/{name}/ci_low']:.3f}, "
            f"{res[f'eval/{name}/ci_high']:.3f}]"
        )
