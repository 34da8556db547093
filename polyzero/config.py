"""Typed run configuration: dataclasses loaded from TOML with `key=value` overrides.

Precedence: the defaults below < the shipped preset for (algo, game), if any
< `--config FILE` < `--set key=value`. Every unknown key, wrong type or
impossible value is rejected before any work starts, naming the key.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import tomllib
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path

from .errors import UsageError
from .nets import INFERENCE_PATHS
from .plugins import RUNTIMES, algorithm_names, unknown_algorithm
from .presets import load_preset
from .search.params import (
    CHANCE_BACKUPS,
    GUMBEL_POLICY_LOSSES,
    GUMBEL_Q_NORMALISATIONS,
    Q_NORMALISATIONS,
    SEARCH_KINDS,
    SELECTION_RULES,
    UNVISITED_Q,
    SearchParams,
)
from .validation import (
    COMMON_RUNTIME_SECTIONS,
    check_finite,
    check_inference_service,
    check_int_range,
    check_keys_read,
    check_sections_of_algo,
    check_seed,
    choice as _choice,
    fraction as _fraction,
    positive as _positive,
)

# net.winograd's output tiles m of F(m x m, 3 x 3) (0: the direct convolution), or
# "auto": self-play's evaluators choose (polyzero.nets.winograd.chosen_tile)
WINOGRAD_TILES = (0, 2, 3, 4, 6)


@dataclass
class NetConfig:
    kind: str = "resnet"  # "resnet" for games with planes, "mlp" for any
    channels: int = 64
    blocks: int = 3
    width: int = 128
    layers: int = 2
    value_hidden: int = 64
    # Residual blocks (resnet): "basic" (AlphaZero's) or "bottleneck" (Gumbel paper,
    # Appendix F.1: 1x1 down to bottleneck_channels, 3x3, 3x3, 1x1 up), where every
    # broadcast_every-th block is a global broadcasting block (0: none).
    block: str = "basic"
    bottleneck_channels: int = 0  # 0: channels // 2 (the paper's 256 -> 128)
    broadcast_every: int = 8  # bottleneck towers only
    # The input: "mover" shows a two-player game's shared observation from the side of
    # the player to move (polyzero.games.encoders), "raw" is OpenSpiel's tensor as is.
    perspective: str = "mover"
    # Student of Games, kind "resnet": a board game's CVPN runs AlphaZero's convolutional
    # tower (blocks x channels) over the board planes; false: dense residual blocks of width.
    board_tower: bool = True
    # How self-play, evaluation and search call the network (polyzero.nets.compiled):
    # "auto" is ONNX Runtime on the CPU when installed (the fastest exact path measured,
    # docs/benchmarks.md), else eager; or "eager", "script", "inductor", "onnx".
    inference: str = "auto"
    # Rows of network outputs AlphaZero's evaluator keeps by input, read back when a
    # search meets the same position again (exact; polyzero.nets.eval_cache); 0: none.
    cache: int = 65536
    # AlphaZero's residual towers of basic blocks under ONNX Runtime: the 3x3 convolutions
    # as Winograd's F(m x m, 3 x 3) with this m (polyzero.nets.winograd; equal to the
    # direct convolution up to float32 rounding); 0: the direct convolution everywhere.
    # "auto": self-play's evaluators use the tile that pays at their batches (measured,
    # polyzero.nets.winograd.chosen_tile), evaluation, play and engines the direct one.
    winograd: int | str = "auto"

    def validate(self):
        _choice("net.kind", self.kind, ("resnet", "mlp"))
        _choice("net.inference", self.inference, INFERENCE_PATHS)
        _choice("net.perspective", self.perspective, ("mover", "raw"))
        _choice("net.block", self.block, ("basic", "bottleneck"))
        for k in ("channels", "blocks", "width", "layers", "value_hidden"):
            _positive(f"net.{k}", getattr(self, k), allow_zero=k == "blocks")
        _positive("net.bottleneck_channels", self.bottleneck_channels, allow_zero=True)
        _positive("net.broadcast_every", self.broadcast_every, allow_zero=True)
        _positive("net.cache", self.cache, allow_zero=True)
        if self.winograd != "auto" and self.winograd not in WINOGRAD_TILES:
            raise UsageError(
                f"net.winograd must be auto or one of {', '.join(map(str, WINOGRAD_TILES))}, not {self.winograd!r}"
            )


@dataclass
class SearchConfig:
    """Defaults: Go-Exploit Table 6 (Connect Four) for AlphaZero; MuZero Appendix B for c1, c2."""

    num_simulations: int = 100  # Go-Exploit Table 4
    kind: str = "puct"  # how the root is searched (see polyzero.search.params.SEARCH_KINDS)
    selection: str = "alphazero"
    c_puct: float = 1.0
    c1: float = 1.25
    c2: float = 19652.0
    q_normalisation: str = "bounds"
    value_min: float = -1.0
    value_max: float = 1.0
    unvisited_q: str = "zero"
    dirichlet_alpha: float = 1.0
    dirichlet_fraction: float = 0.25
    # Gumbel search (kind "gumbel" or "full_gumbel"; docs/gumbel.md): the Gumbel paper's
    # defaults. Gumbel roots ignore the Dirichlet keys (Appendix F: no Dirichlet noise).
    max_considered_actions: int = 16  # m = min(n, this, #legal) sampled by Gumbel-Top-k
    c_visit: float = 50.0  # sigma(q) = (c_visit + max_b N(b)) * c_scale * q (Eq. 8)
    c_scale: float = 1.0  # 0.1 for single-agent games (the paper's Atari runs)
    gumbel_scale: float = 1.0  # Gumbel noise in self-play
    eval_gumbel_scale: float = 0.0  # Gumbel noise in evaluation (0: deterministic, Appendix F)
    # Q normalisation before sigma: "bounds" (value_min/value_max: board games),
    # "minmax" (per node over visited Q and v_mix: unbounded values, Section 7), or
    # "completed_minmax" (mctx's qtransform_completed_by_mix_value).
    gumbel_q_normalisation: str = "bounds"
    policy_loss: str = "kl"  # "kl": pi' target (Eq. 12); "simple": one-hot A_{n+1} (Eq. 9)
    chance_backup: str = "sample"  # chance nodes: "sample" (sampled returns) or "expectation"
    leaf_batch: int = 1  # leaves of one tree per network call, with virtual loss (1: sequential)

    def validate(self):
        _positive("search.num_simulations", self.num_simulations)
        _choice("search.kind", self.kind, SEARCH_KINDS)
        _choice("search.selection", self.selection, SELECTION_RULES)
        _choice("search.q_normalisation", self.q_normalisation, Q_NORMALISATIONS)
        _choice("search.unvisited_q", self.unvisited_q, UNVISITED_Q)
        _positive("search.c_puct", self.c_puct)
        _positive("search.c1", self.c1)
        _positive("search.c2", self.c2)
        _positive("search.dirichlet_alpha", self.dirichlet_alpha)
        _fraction("search.dirichlet_fraction", self.dirichlet_fraction)
        _positive("search.max_considered_actions", self.max_considered_actions)
        _positive("search.c_visit", self.c_visit, allow_zero=True)
        _positive("search.c_scale", self.c_scale, allow_zero=True)
        _positive("search.gumbel_scale", self.gumbel_scale, allow_zero=True)
        _positive("search.eval_gumbel_scale", self.eval_gumbel_scale, allow_zero=True)
        _choice("search.gumbel_q_normalisation", self.gumbel_q_normalisation, GUMBEL_Q_NORMALISATIONS)
        _choice("search.policy_loss", self.policy_loss, GUMBEL_POLICY_LOSSES)
        _choice("search.chance_backup", self.chance_backup, CHANCE_BACKUPS)
        if not self.value_max > self.value_min:
            raise UsageError("search.value_max must be greater than search.value_min")
        self.params()  # SearchParams validates the rest (search.leaf_batch and its kind)

    def params(self, num_simulations: int | None = None, discount: float = 1.0) -> SearchParams:
        fields = dataclasses.asdict(self)
        if num_simulations is not None:
            fields["num_simulations"] = num_simulations
        return SearchParams(discount=discount, **fields)


@dataclass
class SelfPlayConfig:
    concurrent_games: int = 64  # the search batch B of one actor
    temperature: float = 1.0  # tau (Go-Exploit Table 6)
    sample_moves: int = 10  # k: moves sampled from pi before playing the most visited
    max_moves: int = 0  # cap on a game's length; 0 = the game's own maximum
    # `actors` threads of concurrent_games games each (in-process, or in each Ray worker),
    # whose searches call one inference service (polyzero.nets.inference_service; under
    # Ray, on the server) that batches their requests, when shared_inference is on
    # (docs/cluster.md, "One GPU box").
    actors: int = 1
    shared_inference: bool = False
    inference_max_batch: int = 0  # most rows per forward; 0: all waiting requests
    inference_buckets: list[int] = field(default_factory=list)  # pad batches up to these sizes
    inference_wait_ms: float = 5.0  # how long a batch waits for the other actors in a search
    inference_dtype: str = "float32"  # bfloat16 / float16 under autocast, CUDA only

    def validate(self):
        _positive("selfplay.concurrent_games", self.concurrent_games)
        _positive("selfplay.temperature", self.temperature, allow_zero=True)
        _positive("selfplay.sample_moves", self.sample_moves, allow_zero=True)
        _positive("selfplay.max_moves", self.max_moves, allow_zero=True)
        _positive("selfplay.actors", self.actors)
        if self.actors > 1 and not self.shared_inference:
            raise UsageError(
                f"selfplay.actors = {self.actors} runs actor threads that share one network: "
                "set selfplay.shared_inference = true too"
            )
        check_inference_service(
            self.inference_max_batch, self.inference_buckets, self.inference_wait_ms, self.inference_dtype
        )
        defaults = SelfPlayConfig()
        changed = [k for k in SERVICE_KEYS if getattr(self, k) != getattr(defaults, k)]
        if changed and not self.shared_inference:
            raise UsageError(f"selfplay.{changed[0]} applies with selfplay.shared_inference = true only")


SERVICE_KEYS = ("inference_max_batch", "inference_buckets", "inference_wait_ms", "inference_dtype")


@dataclass
class TrainConfig:
    steps: int = 100  # learning steps
    positions_per_step: int = 512  # b_step (Go-Exploit Table 4: 2^12, scaled down)
    minibatches_per_step: int = 4  # b_batch (Table 4: 8 of 2^9, scaled down)
    batch_size: int = 256
    replay_size: int = 50_000  # |B| (Table 4: 2^17, scaled down)
    learning_rate: float = 1e-3  # lr (Table 6)
    # "cosine": lr * (1 + cos(pi * u / U)) / 2 over the U = steps * minibatches_per_step
    # updates of the run (Loshchilov & Hutter 2017); "constant" keeps lr throughout.
    lr_schedule: str = "constant"
    # The cosine's length in learning steps (U = lr_steps * minibatches_per_step); 0: train.steps.
    # Set it where train.steps is not the run's end (a benchmark training in chunks by the clock).
    lr_steps: int = 0
    l2: float = 1e-5  # c (Table 6)
    optimizer: str = "adam"
    momentum: float = 0.9  # for sgd
    checkpoint_every: int = 10
    keep_checkpoints: int = 3
    keep_replay_every: int = 0  # K > 0: checkpoints at multiples of K stay whole, to resume from
    # Each sampled example under a random board symmetry of its game (polyzero.games.symmetry;
    # AlphaGo Zero did this, AlphaZero did not): connect_four, tic_tac_toe and go know theirs.
    symmetries: bool = False
    # The learner's loss (forward and backward) through torch.compile (inductor): the same
    # loss to float rounding, compiled at the first update (minutes on a 2-core CPU), then
    # faster where batch norm and elementwise work dominate (docs/benchmarks.md).
    compile: bool = False
    # The optimizer's step as one fused kernel over the learner's parameter buffer; with
    # Adam the L2 term's gradient is added inside that kernel (its weight_decay) and the
    # L2 value is one dot product: the same update to float rounding, cheaper
    # (docs/benchmarks.md).
    # Off by default: a float-level change takes a run elsewhere from the same seed, and
    # the single-seed learning tests were set on the default's runs (Student of Games'
    # Kuhn test, seed 0: 29.97 mbb/h with it where its threshold is 20).
    fused_step: bool = False

    def validate(self):
        for k in (
            "steps",
            "positions_per_step",
            "minibatches_per_step",
            "batch_size",
            "replay_size",
            "checkpoint_every",
            "keep_checkpoints",
        ):
            _positive(f"train.{k}", getattr(self, k))
        _positive("train.keep_replay_every", self.keep_replay_every, allow_zero=True)
        _positive("train.lr_steps", self.lr_steps, allow_zero=True)
        _positive("train.learning_rate", self.learning_rate)
        if self.learning_rate > 10:
            raise UsageError(f"train.learning_rate must be at most 10, not {self.learning_rate}")
        _positive("train.l2", self.l2, allow_zero=True)
        _choice("train.optimizer", self.optimizer, ("adam", "sgd"))
        _choice("train.lr_schedule", self.lr_schedule, ("constant", "cosine"))
        _fraction("train.momentum", self.momentum)
        if self.replay_size < self.batch_size:
            raise UsageError("train.replay_size must be at least train.batch_size")


@dataclass
class EvalConfig:
    every: int = 10  # learning steps between evaluations; 0 turns periodic evaluation off
    games: int = 20
    simulations: int = 100  # the agent's search in evaluation (Go-Exploit Table 4)
    opponents: list[str] = field(default_factory=lambda: ["random", "mcts-solver:1x"])
    final_games: int = 50  # games per opponent in the evaluation that ends a run
    sample_moves: int = 0  # opening moves the agent samples from its visits (0: always the most visited)
    # The ladder's costly levels, e.g. ["mcts-solver:100x", "mcts-solver:1000x"], join the opponents
    # at every high_every-th evaluation (Go-Exploit, Section 4: the 100x and 1000x levels every 10th round).
    high_opponents: list[str] = field(default_factory=list)
    high_every: int = 10

    def validate(self):
        _positive("eval.every", self.every, allow_zero=True)
        _positive("eval.games", self.games)
        _positive("eval.simulations", self.simulations)
        _positive("eval.final_games", self.final_games, allow_zero=True)
        _positive("eval.sample_moves", self.sample_moves, allow_zero=True)
        _positive("eval.high_every", self.high_every)
        for key, specs in (("eval.opponents", self.opponents), ("eval.high_opponents", self.high_opponents)):
            if not isinstance(specs, list) or not all(isinstance(spec, str) and spec for spec in specs):
                raise UsageError(f"{key} must be a list of player names")

    def opponent_specs(self, step: int | None = None) -> list[str]:
        """The opponents; with `step`, those of the periodic evaluation at that learning
        step (high_opponents too at every high_every-th evaluation). `mcts-solver:Mx` is
        the ladder level M times the agent's evaluation simulations."""
        names = list(self.opponents)
        if step is not None and self.every and (step // self.every) % self.high_every == 0:
            names += self.high_opponents
        out = []
        for spec in names:
            kind, _, sims = spec.partition(":")
            if sims.endswith("x") and sims[:-1].isdigit():
                spec = f"{kind}:{int(sims[:-1]) * self.simulations}"
            out.append(spec)
        return out


@dataclass
class RayConfig:
    """Settings of the Ray driver (`polyzero train --workers N`)."""

    weights_every: int = 1  # learning steps between weight broadcasts to the workers
    worker_cpus: float = 1.0  # Ray resources each self-play worker asks for
    worker_gpus: float = 0.0  # e.g. 0.25: four workers share a GPU for their inference
    reanalysers: int = 1  # Ray actors running MuZero Reanalyze (when muzero.reanalyse_fraction > 0)
    solvers: int = 1  # Ray actors solving Student of Games' queries (--algo sog)
    evaluators: int = 1  # Ray actors for the periodic evaluation (eval.every); a free one scores the newest weights
    learner_gpus: float = 1.0  # the learner actor's share of a GPU when the device is CUDA
    # selfplay.shared_inference under Ray: the inference server's share of a GPU when the
    # device is CUDA (one GPU box: learner_gpus = 0.5 beside it)
    inference_gpus: float = 0.5
    # selfplay.shared_inference under Ray: servers sharing the workers (worker i calls
    # server i mod N) and ray.inference_gpus evenly; more than one when one server's
    # Python, not the GPU, is the limit (docs/cluster.md "One GPU box")
    inference_servers: int = 1
    learner_restart_window: float = 600.0  # seconds: a second learner death within it stops the run

    def validate(self):
        _positive("ray.weights_every", self.weights_every)
        _positive("ray.reanalysers", self.reanalysers)
        _positive("ray.solvers", self.solvers)
        _positive("ray.evaluators", self.evaluators)
        _positive("ray.worker_cpus", self.worker_cpus, allow_zero=True)
        _positive("ray.worker_gpus", self.worker_gpus, allow_zero=True)
        _positive("ray.learner_gpus", self.learner_gpus)
        _positive("ray.inference_gpus", self.inference_gpus)
        _positive("ray.inference_servers", self.inference_servers)
        _positive("ray.learner_restart_window", self.learner_restart_window, allow_zero=True)


@dataclass(frozen=True)
class ConfigSection:
    """A plug-in's own config section: `[name]`, read by `algos` only (another
    algorithm's run refuses its non-default keys). Plug-ins name theirs in
    `polyzero.plugins.CONFIG_SECTIONS`; `register_section` adds one at run time."""

    name: str
    cls: type
    algos: tuple[str, ...]
    # The keys a resolved config of one of `algos` does not read ("section.key" -> why),
    # refused when given (`unread_keys`); None: it reads every key it accepts.
    unread: typing.Callable[[typing.Any], dict[str, str]] | None = None


_SECTIONS: dict[str, ConfigSection] = {}
_DISCOVERED = False


def register_section(section: ConfigSection) -> None:
    _SECTIONS[section.name] = section


def plugin_sections() -> dict[str, ConfigSection]:
    """The registered sections, importing those `polyzero.plugins` names on first use (their
    modules import this one, so not at import time)."""
    global _DISCOVERED
    if not _DISCOVERED:
        import importlib

        from .plugins import CONFIG_SECTIONS

        _DISCOVERED = True
        for target in CONFIG_SECTIONS:
            module, _, name = target.partition(":")
            register_section(getattr(importlib.import_module(module), name))
    return _SECTIONS


@dataclass
class RunConfig:
    """The run's settings: the core sections below, and each registered plug-in section
    (`muzero`, `start`, `katago`, `ndmz`, `sog`) as an attribute of the same name."""

    game: str = "connect_four"
    algo: str = "alphazero"
    seed: int = 0
    device: str = "auto"
    # torch intra-op threads, and the threads the search's tree kernels split a
    # batch of 64 or more trees over; 0 leaves both at their defaults (all cores).
    # One is the safe default: self-play batches are small, and on a busy machine
    # spinning intra-op threads can slow inference down tenfold.
    threads: int = 1
    net: NetConfig = field(default_factory=NetConfig)
    search: SearchConfig = field(default_factory=SearchConfig)
    selfplay: SelfPlayConfig = field(default_factory=SelfPlayConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    ray: RayConfig = field(default_factory=RayConfig)

    def __post_init__(self):
        for name, section in plugin_sections().items():
            setattr(self, name, section.cls())

    def section_names(self) -> list[str]:
        return [f.name for f in dataclasses.fields(self)] + list(plugin_sections())

    def validate(self):
        if self.algo not in algorithm_names():
            raise UsageError(unknown_algorithm(self.algo))
        check_seed("seed", self.seed)
        _choice("device", self.device, ("auto", "cpu", "cuda"))
        _positive("threads", self.threads, allow_zero=True)
        for name in self.section_names():
            if dataclasses.is_dataclass(section := getattr(self, name)):
                section.validate()
        for key in ("inference_gpus", "inference_servers"):
            if getattr(self.ray, key) != getattr(RayConfig, key) and not self.selfplay.shared_inference:
                raise UsageError(f"ray.{key} applies with selfplay.shared_inference = true only")
        return self

    def to_dict(self) -> dict:
        return {
            **dataclasses.asdict(self),
            **{name: dataclasses.asdict(getattr(self, name)) for name in plugin_sections()},
        }


# ---------------------------------------------------------------- loading
def _check_type(key: str, value, annotation):
    origin = typing.get_origin(annotation)
    if origin is types.UnionType:  # e.g. int | str: the first type the value is
        kinds = typing.get_args(annotation)
        for kind in kinds:
            try:
                return _check_type(key, value, kind)
            except UsageError:
                continue
        names = " or ".join(k.__name__ for k in kinds)
        raise UsageError(f"{key} must be of type {names}, not {type(value).__name__} ({value!r})")
    if origin is list:
        (item,) = typing.get_args(annotation)
        if not isinstance(value, list):
            raise UsageError(f"{key} must be a list, not {type(value).__name__}")
        for v in value:
            _check_type(key, v, item)
        return value
    ok = {
        int: isinstance(value, int) and not isinstance(value, bool),
        float: isinstance(value, (int, float)) and not isinstance(value, bool),
        str: isinstance(value, str),
        bool: isinstance(value, bool),
    }[annotation]
    if not ok:
        raise UsageError(f"{key} must be of type {annotation.__name__}, not {type(value).__name__} ({value!r})")
    if annotation is float:
        return check_finite(key, float(value))
    if key == "seed":
        return check_seed(key, value)
    return check_int_range(key, value) if annotation is int else value


def _merge(obj, data: dict, prefix: str = ""):
    """Write `data` (nested dicts) into the dataclass `obj`, checking keys and types."""
    hints = typing.get_type_hints(type(obj))
    names = obj.section_names() if isinstance(obj, RunConfig) else [f.name for f in dataclasses.fields(obj)]
    for key, value in data.items():
        full = prefix + key
        if key not in names:
            close = difflib.get_close_matches(key, names, n=3)
            hint = (
                f"; did you mean {', '.join(prefix + c for c in close)}?"
                if close
                else f"; valid keys: {', '.join(prefix + n for n in names)}"
            )
            raise UsageError(f"unknown config key '{full}'{hint}")
        current = getattr(obj, key)
        if dataclasses.is_dataclass(current):
            if not isinstance(value, dict):
                raise UsageError(f"config key '{full}' is a section, not a value")
            _merge(current, value, full + ".")
        else:
            setattr(obj, key, _check_type(full, value, hints[key]))


def parse_override(text: str) -> dict:
    """'search.num_simulations=64' -> {'search': {'num_simulations': 64}} (TOML values;
    a bare word is taken as a string)."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise UsageError(f"--set expects key=value, not {text!r}")
    try:
        value = tomllib.loads(f"v = {raw.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw.strip()
    out: dict = {}
    node = out
    parts = key.split(".")
    for p in parts[:-1]:
        node = node.setdefault(p, {})
    node[parts[-1]] = value
    return out


def read_toml(path: str | Path) -> dict:
    from .validation import read_text

    try:
        return tomllib.loads(read_text(path, "config file"))
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"config file {path} is not valid TOML: {exc}") from None


# Settings added after runs had been saved, whose defaults changed what a run does:
# a saved config without them ran with these values.
_SAVED_BEFORE = {
    ("net", "perspective"): "raw",
    ("muzero", "priority_value"): "network",
    ("muzero", "action_planes"): "cell",
    ("net", "board_tower"): False,
    ("net", "winograd"): 0,
}


def _as_saved(base: dict) -> dict:
    base = {k: dict(v) if isinstance(v, dict) else v for k, v in base.items()}
    for (table, key), value in _SAVED_BEFORE.items():
        base.setdefault(table, {}).setdefault(key, value)
    return base


def build_config(
    game: str | None = None,
    algo: str | None = None,
    config_file: str | None = None,
    overrides: list[str] = (),
    base: dict | None = None,
) -> RunConfig:
    """Resolve a run's configuration (see the module docstring for precedence)."""
    cfg = RunConfig()
    layers: list[dict] = []
    if base is not None:
        layers.append(_as_saved(base))
    file_data = read_toml(config_file) if config_file else {}
    sets = [parse_override(o) for o in overrides]
    game = _one_value("game", game, file_data, sets, base)
    algo = _one_value("algo", algo, file_data, sets, base)
    algo = algo or file_data.get("algo") or (base or {}).get("algo") or cfg.algo
    game = game or file_data.get("game") or (base or {}).get("game") or cfg.game
    if not isinstance(game, str) or not isinstance(algo, str):
        raise UsageError("game and algo must be strings")
    preset = load_preset(algo, game) if base is None else None  # a saved run's config already holds it
    for layer in [*layers, preset or {}]:
        _merge(cfg, layer)
    given = copy.deepcopy(cfg)  # before the user's layers: what an unread key may hold unrefused
    for layer in [file_data, *sets, {"game": game, "algo": algo}]:
        _merge(cfg, layer)
    cfg.validate()
    common = tuple(name for name in algorithm_names() if name not in RUNTIMES)  # those searching by self-play
    owners = {
        **dict.fromkeys(COMMON_RUNTIME_SECTIONS, common),
        **{name: section.algos for name, section in plugin_sections().items()},
    }
    sources = [(f"config file {config_file}", file_data)] + [(f"--set {o}", d) for o, d in zip(overrides, sets)]
    unread = unread_keys(cfg)
    for source, layer in sources:
        check_sections_of_algo(layer, algo, RunConfig(), source, owners)
        check_keys_read(layer, given, source, unread)
    return cfg


def unread_keys(cfg: RunConfig) -> dict[str, str]:
    """The keys `cfg` accepts but its run would not read ("section.key" -> why): the pUCT
    constants another selection rule takes, then each plug-in section's own (later wins)."""
    s = cfg.search
    if s.kind == "full_gumbel":
        pucts = ("selection", "c_puct", "c1", "c2")
        why = "below a full_gumbel root Eq. 14 of the Gumbel paper selects, with no pUCT rule"
    elif s.selection == "muzero":
        pucts, why = ("c_puct",), "search.selection = 'muzero' takes search.c1 and search.c2"
    else:
        pucts, why = ("c1", "c2"), "search.selection = 'alphazero' takes search.c_puct"
    unread = {f"search.{key}": why for key in pucts}
    for section in plugin_sections().values():
        if section.unread is not None and cfg.algo in section.algos:
            unread.update(section.unread(cfg))
    return unread


def _one_value(key: str, given, file_data: dict, sets: list[dict], base: dict | None):
    """`game` or `algo` from --set, applied where nothing else names another one: a --set
    that disagrees with the command line, or tries to change a saved run's, is refused."""
    values = [d[key] for d in sets if key in d]
    if not values:
        return given
    value = values[-1]
    if given is not None and value != given:
        raise UsageError(f"--set {key}={value} disagrees with the {key} given as {given!r}; give it once")
    if base is not None and value != base.get(key):
        raise UsageError(
            f"--set {key}={value}: a resumed run keeps its {key} ({base.get(key)!r}); start a new run for another"
        )
    return value


def to_toml(data: dict, prefix: str = "") -> str:
    """A minimal TOML writer for the resolved config (scalars, lists of strings, tables)."""
    lines, tables = [], []
    for k, v in data.items():
        if isinstance(v, dict):
            tables.append((k, v))
        else:
            lines.append(f"{k} = {_toml_value(v)}")
    out = "\n".join(lines)
    for k, v in tables:
        out += f"\n\n[{prefix}{k}]\n" + to_toml(v, prefix + k + ".")
    return out.strip() + "\n"


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):  # numpy's float64 is a float whose repr is not TOML
        return repr(int(v)) if isinstance(v, int) else repr(float(v))
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(type(v))
