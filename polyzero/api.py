"""polyzero from Python: load an agent, train and resume runs, play matches.

    import polyzero
    run = polyzero.train("tic_tac_toe", overrides={"train.steps": 20})
    agent = run.agent()                       # or polyzero.load_agent("runs/ttt", "tic_tac_toe")
    state = agent.game.new_initial_state()
    print(agent.analyse(state)["pv_text"])    # what the search thinks
    state.apply_action(agent.act(state))
    print(polyzero.arena(agent, "random", games=20))

Everything here is what the command line does, callable (docs/api.md); bad input
raises `polyzero.errors.UsageError` with the same one-line message.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from .errors import UsageError

__all__ = ["Agent", "Run", "load_agent", "reference_player", "arena", "train", "open_run", "list_presets"]


def _game(game):
    from .games import load_game

    return load_game(game) if isinstance(game, str) else game


class Agent:
    """One player of one game: `act(state)` picks a move, `analyse(state)` shows the search
    (learned agents only). `player` is the batched player the arena takes."""

    def __init__(self, player, game):
        self.player = player
        self.game = game
        self.name = player.name

    def act(self, state) -> int:
        """The move this agent plays in `state` (a decision point of the game)."""
        self._check_decision_point(state, "act")
        return int(self.player.act([state])[0])

    def _check_decision_point(self, state, what: str) -> None:
        """`state` is a state of this agent's game where a player is to move."""
        get_game = getattr(state, "get_game", None)
        if get_game is None or not hasattr(state, "is_terminal"):
            raise UsageError(f"{what} needs a state of {self.game}, not a {type(state).__name__}")
        if str(get_game()) != str(self.game):
            raise UsageError(f"{what} needs a state of {self.game}, not of {get_game()}")
        if state.is_terminal():
            raise UsageError(f"{what} needs a decision point of {self.game}: this state is terminal")
        if state.is_chance_node() or state.is_simultaneous_node():
            raise UsageError(f"{what} needs a decision point of {self.game}: here chance or both seats move")

    def analyse(self, state, pv_length: int = 8) -> dict:
        """The search's view of `state`: `value` (for the player to move, after search),
        `network_value` (before), `moves` sorted by visits, each {action, text, visits,
        q, prior}, and the principal variation `pv` (actions) with `pv_text`."""
        if not hasattr(self.player, "analyse"):
            raise UsageError(f"player '{self.name}' has no search to analyse (a learned agent has)")
        self._check_decision_point(state, "analyse")
        info = self.player.analyse([state], pv_length)[0]
        mover = state.current_player()
        for move in info["moves"]:
            move["text"] = state.action_to_string(mover, move["action"])
        info["moves"].sort(key=lambda m: -m["visits"])
        info["pv_text"] = pv_text(state, info["pv"])
        return info

    def reset(self, seed: int) -> None:
        self.player.reset(seed)

    def __repr__(self) -> str:
        return f"Agent({self.name!r}, game={self.game})"


def pv_text(state, actions: list[int]) -> list[str]:
    """The principal variation as move text, stepping a copy of `state` (stops at a
    move the real game refuses: a learned model may plan one)."""
    state, out = state.clone(), []
    for a in actions:
        if state.is_terminal() or state.is_chance_node() or a not in state.legal_actions():
            break
        out.append(state.action_to_string(state.current_player(), a))
        state.apply_action(a)
    return out


def load_agent(path_or_spec: str, game=None, simulations: int | None = None, seed: int = 0) -> Agent:
    """A run directory, checkpoint or player spec (`random`, `mcts:SIMS`, `PATH@SIMS`, ...)
    as an Agent. `game` (a name like "connect_four" or a pyspiel game) defaults to the
    run's own; `simulations` sets a learned agent's search budget."""
    from .eval import make_player
    from .train.agents import checkpoint_game, split_simulations

    spec = str(path_or_spec)  # a Run is its directory
    if simulations is not None:
        spec = f"{split_simulations(spec)[0]}@{simulations}"
    if game is None:
        game = checkpoint_game(spec)
        if game is None:
            raise UsageError(f"'{spec}' is not a run directory or checkpoint: name its game")
    game = _game(game)
    return Agent(make_player(spec, game, seed=seed), game)


def reference_player(spec: str, game, seed: int = 0) -> Agent:
    """`random`, `mcts:SIMS`, `mcts-solver:SIMS`, `optimal`, `cfr:ITERS`, ... as an Agent."""
    from .eval import reference_player as make
    from .games.capabilities import check_player_view

    if not isinstance(spec, str):
        raise UsageError(f"a reference player is a spec string such as 'mcts:100', not {spec!r}")
    game = _game(game)
    player = make(spec, game, seed)
    if player is None:
        raise UsageError(f"unknown reference player '{spec}'")
    check_player_view(game, player)
    return Agent(player, game)


def arena(a, b, game=None, games: int = 100, seed: int = 0, progress: bool = False):
    """A two-player match of `games` games, seats alternated, scored from A's view: a
    `MatchResult` (score, ci_low, ci_high, wins, draws, losses). A and B are Agents or
    specs; `game` defaults to an Agent's."""
    from .eval import play_match

    if isinstance(games, bool) or not isinstance(games, int) or not 1 <= games <= 10_000_000:
        raise UsageError(f"games must be a whole number in 1..10,000,000, not {games!r}")
    game = _game(game) if game is not None else next((p.game for p in (a, b) if isinstance(p, Agent)), None)
    if game is None:
        raise UsageError("arena needs a game when neither player is an Agent")
    players = [p if isinstance(p, Agent) else load_agent(p, game, seed=seed + k) for k, p in enumerate((a, b))]
    return play_match(game, players[0].player, players[1].player, games, seed=seed, progress=progress)


def list_presets() -> list[dict]:
    """The shipped presets: [{'name', 'algo', 'game', 'about'}]."""
    from .presets import list_presets as names, preset_summary

    return [preset_summary(n) for n in names()]


def _override_strings(overrides: dict | None) -> list[str]:
    """`{"train.steps": 20}` as the command line's `--set train.steps=20`."""
    from .config import _toml_value

    if overrides is not None and not isinstance(overrides, dict):
        raise UsageError(f"overrides must be a dict of 'section.key': value, not a {type(overrides).__name__}")
    out = []
    for key, value in (overrides or {}).items():
        items = value if isinstance(value, list) else [value]
        if not isinstance(key, str) or not all(isinstance(v, (bool, int, float, str)) for v in items):
            raise UsageError(
                f"overrides[{key!r}] must be a str key with a bool, int, float, str or list value, "
                f"not {type(value).__name__}"
            )
        out.append(f"{key}={_toml_value(value)}")
    return out


def _trainer_class(algo: str):
    from .train.driver import trainer_classes

    return trainer_classes(algo)[0]


def train(
    game: str | None = None,
    algo: str | None = None,
    preset: str | None = None,
    config: str | None = None,
    overrides: dict | None = None,
    run_dir=None,
    progress: bool = False,
) -> Run:
    """Train by self-play in this process and return the finished Run. `preset` names a
    shipped preset (`list_presets()`), `config` a TOML file; `overrides` maps config keys to
    values, e.g. {"train.steps": 50, "search.num_simulations": 32}."""
    from .config import build_config

    if preset is not None and config is not None:
        raise UsageError("give a preset or a config file, not both")
    if preset is not None:
        from .presets import preset_file, preset_summary

        config = str(preset_file(preset))
        info = preset_summary(preset)
        algo, game = algo or info["algo"], game or info["game"]
    if game is None:
        raise UsageError("train needs a game (or a preset that names one)")
    cfg = build_config(game, algo, config, _override_strings(overrides))
    from .games import load_game
    from .validation import check_fits_machine, check_output_dir

    check_fits_machine(cfg, load_game(cfg.game))
    run_dir = check_output_dir(
        Path(run_dir)
        if run_dir is not None
        else Path("runs") / f"{game.split('(')[0]}-{cfg.algo}-{time.strftime('%Y%m%d-%H%M%S')}",
        "run_dir",
    )
    trainer = _trainer_class(cfg.algo).create(cfg, run_dir, progress=progress)
    run = Run(trainer.run_dir)
    run.summary = trainer.run()
    run.report = list(trainer.final_report(run.summary))
    return run


def open_run(run_dir) -> Run:
    """An existing run directory as a Run."""
    run = Run(Path(run_dir))
    if not (run.run_dir / "config.toml").is_file():
        raise UsageError(f"{run_dir} is not a run directory (no config.toml)")
    return run


@dataclass
class Run:
    """A run directory: resume it, load its agent, evaluate, plot, read its metrics."""

    run_dir: Path
    summary: dict = field(default_factory=dict)
    report: list[str] = field(default_factory=list)

    @property
    def config(self):
        from .config import build_config, read_toml

        return build_config(base=read_toml(self.run_dir / "config.toml"))

    def resume(self, steps: int | None = None, overrides: dict | None = None, progress: bool = False) -> Run:
        """Continue from the last checkpoint (to `steps` learning steps in all, if given)."""
        extra = dict(overrides or {})
        if steps is not None:
            extra["train.steps"] = int(steps)
        trainer = _trainer_class(self.config.algo).resume(self.run_dir, _override_strings(extra), progress=progress)
        self.summary = trainer.run()
        self.report = list(trainer.final_report(self.summary))
        return self

    def agent(self, simulations: int | None = None, seed: int = 0) -> Agent:
        """The latest checkpoint's agent with the run's evaluation search."""
        return load_agent(str(self.run_dir), simulations=simulations, seed=seed)

    def evaluate(
        self, opponent: str = "mcts-solver:1x", games: int = 50, simulations: int | None = None, seed: int = 0
    ):
        """The latest agent against `opponent` (`Nx`: N times the agent's simulations)."""
        agent = self.agent(simulations, seed)
        kind, _, sims = opponent.partition(":")
        if sims.endswith("x") and sims[:-1].isdigit():
            opponent = f"{kind}:{int(sims[:-1]) * (simulations or self.config.eval.simulations)}"
        return arena(agent, opponent, games=games, seed=seed)

    def __fspath__(self) -> str:  # a Run goes wherever a run directory's path does
        return str(self.run_dir)

    __str__ = __fspath__

    def metrics(self) -> list[dict]:
        """The records of metrics.jsonl (training and evaluation), in order."""
        from .eval.plot import read_metrics

        return read_metrics(self.run_dir)

    def plot(self, out=None) -> list[Path]:
        """Learning-curve PNGs into `out` (default RUN_DIR/plots)."""
        from .eval.plot import plot_run

        return plot_run(self.run_dir, out)
