"""Validation at the door: checks that run before any work starts, each failing with one
line that names the value, the path or the limit (docs/input_validation.md).

- numbers: finite, seeds in numpy's range, counts below a bound;
- sizes that take memory (replay, self-play trees, batches, archives, query buffers)
  against a limit derived from this machine's memory;
- keys of another algorithm's config section;
- paths: run directories and outputs that are files or devices, text files that are
  not UTF-8.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from .errors import UsageError

# Counts in a config (steps, sizes, simulations): far above any real run, far below
# where numpy shapes or int32 indices overflow.
INT_LIMIT = 2**31 - 1
# numpy's seeds: np.random.default_rng takes any non-negative int, RandomState and
# OpenSpiel's bots (C++ int) take [0, 2**31 - 1]; seeds derived from a run's (seed + 1000
# x step, seed + 1) need room below that.
SEED_LIMIT = 2**30 - 1
# A run may plan for this share of the machine's memory; the rest is the OS, the
# network, the interpreter and the pyspiel states the estimate leaves out.
MEMORY_SHARE = 0.8


def check_finite(key: str, value: float) -> float:
    if not math.isfinite(value):
        raise UsageError(f"{key} must be a finite number, not {value}")
    return value


def check_int_range(key: str, value: int) -> int:
    if abs(value) > INT_LIMIT:
        raise UsageError(f"{key} = {value} is out of range (at most {INT_LIMIT:,} in absolute value)")
    return value


def check_seed(key: str, value: int) -> int:
    if not 0 <= value <= SEED_LIMIT:
        raise UsageError(
            f"{key} must be a whole number in 0..{SEED_LIMIT} (the seed range numpy and OpenSpiel "
            f"share, with room for derived seeds), not {value}"
        )
    return value


def seed_arg(text: str) -> int:
    """argparse `type` for every command's --seed: a bad one is a usage error, exit 2."""
    import argparse

    try:
        return check_seed("--seed", int(text))
    except (ValueError, UsageError) as exc:
        raise argparse.ArgumentTypeError(
            str(exc) if isinstance(exc, UsageError) else f"must be a whole number in 0..{SEED_LIMIT}, not {text!r}"
        ) from None


def count_arg(text: str) -> int:
    """argparse `type` for counts (--games, --seeds): whole, at least 1, below INT_LIMIT."""
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, not {text!r}") from None
    if not 1 <= value <= 10**7:
        raise argparse.ArgumentTypeError(f"must be in 1..10000000, not {value}")
    return value


# The largest simulation or iteration count a player spec takes: OpenSpiel's bots take a
# C++ int, and at 10 million a single move already runs for hours.
MAX_SPEC_COUNT = 10_000_000


def spec_count(spec: str, text: str, what: str) -> int:
    """The N of a player spec (`mcts:N`, `cfr:N`, `PATH@N`): a whole number in 1..MAX_SPEC_COUNT."""
    if not (text.isdigit() and 0 < int(text) <= MAX_SPEC_COUNT):
        raise UsageError(f"bad player '{spec}': needs a whole number of {what} in 1..{MAX_SPEC_COUNT:,}, not {text!r}")
    return int(text)


# ---------------------------------------------------------------- config value checks
def positive(key, value, allow_zero=False):
    if value < 0 or (value == 0 and not allow_zero):
        raise UsageError(f"{key} must be {'non-negative' if allow_zero else 'positive'}, not {value}")


def fraction(key, value):
    if not 0.0 <= value <= 1.0:
        raise UsageError(f"{key} must lie in [0, 1], not {value}")


def choice(key, value, choices):
    if value not in choices:
        raise UsageError(f"{key} must be one of {', '.join(sorted(choices))}, not {value!r}")


INFERENCE_DTYPES = ("float32", "bfloat16", "float16")


def check_inference_service(
    max_batch: int, buckets, wait_ms: float, dtype: str, key: str = "selfplay.inference_"
) -> None:
    """The shared inference service's settings (polyzero.nets.inference_service), one
    line naming the key for each impossible one."""
    if max_batch < 0:
        raise UsageError(f"{key}max_batch must be non-negative (0: no cap), not {max_batch}")
    if any(b < 1 for b in buckets) or list(buckets) != sorted(set(buckets)):
        raise UsageError(f"{key}buckets must be positive and strictly ascending, not {list(buckets)}")
    if max_batch and buckets and buckets[-1] > max_batch:
        raise UsageError(f"{key}buckets' largest, {buckets[-1]}, exceeds {key}max_batch {max_batch}")
    if not 0 <= wait_ms <= 1000:
        raise UsageError(f"{key}wait_ms must lie in [0, 1000], not {wait_ms}")
    choice(f"{key}dtype", dtype, INFERENCE_DTYPES)


# ---------------------------------------------------------------- memory
def machine_memory_bytes() -> int:
    """Physical memory, or the cgroup's limit where that is smaller (containers)."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for limit_file in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(limit_file).read_text().strip()
        except (OSError, UnicodeDecodeError):
            continue
        if text.isdigit() and 0 < int(text) < total:
            total = int(text)
    return total


def _gib(n: float) -> str:
    return f"{n / 2**30:,.1f} GiB"


def _position_bytes(game) -> int:
    """One replay position: its input planes, policy and a few scalars (float32)."""
    gt = game.get_type()
    if gt.provides_observation_tensor:
        size = game.observation_tensor_size()
    elif gt.provides_information_state_tensor:
        size = game.information_state_tensor_size()
    else:
        size = 1
    return 4 * (size + game.num_distinct_actions()) + 32


def memory_demands(cfg, game) -> list[tuple[str, int]]:
    """(what, bytes) of each memory-sized setting of a run on `game`: lower bounds of what
    the arrays behind it take (the tree, replay and archive are preallocated arrays)."""
    pos = _position_bytes(game)
    actions = game.num_distinct_actions()
    node = 8 * actions + 64  # children (int32) and prior (float32) per action, per-node scalars
    out = [
        (f"train.replay_size = {cfg.train.replay_size:,} positions", cfg.train.replay_size * pos),
        (f"train.batch_size = {cfg.train.batch_size:,} positions", cfg.train.batch_size * pos),
        (f"train.positions_per_step = {cfg.train.positions_per_step:,}", cfg.train.positions_per_step * pos),
    ]
    if cfg.algo == "sog":
        out.append((f"sog.query_buffer = {cfg.sog.query_buffer:,} queries", cfg.sog.query_buffer * pos))
    else:
        actors = cfg.selfplay.actors  # actor threads of concurrent_games trees each
        trees = actors * cfg.selfplay.concurrent_games * (cfg.search.num_simulations + 1) * node
        out.append(
            (
                f"{'' if actors == 1 else f'selfplay.actors = {actors:,} x '}"
                f"selfplay.concurrent_games = {cfg.selfplay.concurrent_games:,} search trees of "
                f"search.num_simulations = {cfg.search.num_simulations:,}",
                trees,
            )
        )
        if cfg.start.archive != "none":
            out.append((f"start.archive_size = {cfg.start.archive_size:,} states", cfg.start.archive_size * pos))
    return out


def check_fits_machine(cfg, game) -> None:
    """Refuse a run whose memory-sized settings could not fit in this machine's memory."""
    budget = MEMORY_SHARE * machine_memory_bytes()
    demands = memory_demands(cfg, game)
    for what, size in demands:
        if size > budget:
            raise UsageError(
                f"{what} needs at least {_gib(size)} on {game}, more than the {_gib(budget)} "
                f"a run may take of this machine's memory ({MEMORY_SHARE:.0%})"
            )
    total = sum(size for _, size in demands)
    if total > budget:
        raise UsageError(
            f"the run's buffers together need at least {_gib(total)} on {game} "
            f"({'; '.join(w for w, _ in demands)}), more than the {_gib(budget)} it may take"
        )


# ---------------------------------------------------------------- config sections
# Core sections read only by the algorithms of the common runtime (not by those with a runtime
# of their own, polyzero.plugins.RUNTIMES; plug-in sections say their own, see
# polyzero.config.ConfigSection); a value set in another algorithm's run would be silently
# ignored, so it is refused (a section's default values are accepted: a copy of a saved
# config.toml holds every section).
COMMON_RUNTIME_SECTIONS = ("search", "selfplay")


def check_sections_of_algo(layer: dict, algo: str, defaults, source: str, owners: dict) -> None:
    """Refuse a key of `layer` (one TOML file or --set) in a section `algo` does not read
    (`owners`: section -> the algorithms that read it), unless it holds the section's default."""
    for section, algos in owners.items():
        values = layer.get(section)
        if not isinstance(values, dict) or algo in algos:
            continue
        for key, value in values.items():
            default = getattr(getattr(defaults, section), key, None)
            if value != default:
                raise UsageError(
                    f"{source} sets {section}.{key}, which algo {algo} does not read "
                    f"([{section}] is for {', '.join(algos)})"
                )


def check_keys_read(layer: dict, given, source: str, unread: dict[str, str]) -> None:
    """Refuse a key of `layer` that the resolved run does not read (`unread`: "section.key"
    -> why, from `polyzero.config.unread_keys`), unless it holds the value `given` (the
    config before the user's layers: defaults, preset or saved run) has for it, as a copy
    of a saved config.toml does."""
    for name, why in unread.items():
        section, _, key = name.partition(".")
        values = layer.get(section)
        if isinstance(values, dict) and key in values and values[key] != getattr(getattr(given, section), key):
            raise UsageError(f"{source} sets {name}, which this run does not read: {why}")


# ---------------------------------------------------------------- paths
def check_output_dir(path, what: str) -> Path:
    """A directory the command writes into: it may not exist yet, but must not be a file
    or a device (nor lie under one)."""
    path = Path(path)
    for p in (path, *path.parents):
        if p.exists():
            if not p.is_dir():
                kind = "a device or other special file" if not p.is_file() else "a file"
                raise UsageError(f"{what} {path} cannot be a directory: {p} is {kind}")
            break
    return path


def check_output_file(path, what: str) -> Path:
    """A file the command writes: not a directory or a device, in a directory."""
    path = Path(path)
    if path.exists() and not path.is_file():
        raise UsageError(
            f"{what} {path} is {'a directory' if path.is_dir() else 'a device or other special file'}, not a file"
        )
    check_output_dir(path.parent, f"{what} {path}: its folder")
    return path


def path_arg(check, what: str):
    """An argparse `type` running `check(path, what)`: a bad path is a usage error, exit 2."""
    import argparse

    def convert(text: str) -> Path:
        try:
            return check(text, what)
        except UsageError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = what  # argparse names the type in its message
    return convert


def read_text(path, what: str = "file") -> str:
    """A text file's contents; a missing, unreadable or non-UTF-8 file is one line naming it."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{what} not found: {path}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"{what} {path} is not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset {exc.start})"
        ) from None
    except OSError as exc:
        raise UsageError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
