"""Continual re-solving with GT-CFR (Student of Games paper, "Modified continual
re-solving"; its soundness: "Performance guarantees for continual re-solving",
Theorem 2) and the search player built on it.

A player's searches at its own decisions along one game form a chain:

- **no previous search** (the player's first decision, including a first
  decision reached after only opponent moves, e.g. Kuhn's second player): an
  initial solve rooted at the game's root public state with both ranges 1 and no
  gadget, the tree a single branch from the root to the current public state
  (every node on it with all its children, off-branch ones leaves) plus the
  current state's children; the opponent's earlier decisions are solved jointly.
- **a previous search**: its tree's public state closest to the current one
  (the deepest public state of that tree on the way to it) becomes the root,
  with the player's range from that search, and a follow/terminate gadget over
  the opponent's information states whose terminate values are the opponent's
  counterfactual values there in that search; the opponent's range is
  alpha pi_F + (1 - alpha) r_prev (alpha = 0.5). A single branch leads from
  that root to the current public state. When the current public state was in
  the previous tree the root is the current state itself; when it was not (a
  public chance event such as Leduc's board card below a leaf of the previous
  tree, or a public state the previous search never expanded) the root is its
  deepest ancestor that was.

The root taken from a previous tree has the worlds that the game declares
interchangeable merged (`public_states.merged_copy`, their chance reach summed):
a search tree keeps one world per history, and on Scotland Yard's London board
the copies of each station of Mr X multiply with every move of his (4,200 worlds
for at most 199 stations after a double move). The copies carry the same ranges,
so the sum keeps every reach-weighted sum, and the search, the same
(`tests/test_sog_memory.py`).

In both cases expansion simulations start at the current public state (the
tree grows only below it) and the action probabilities come from the re-solved
average policy at the current public state.

A search depends only on the public state, the previous search of the same
player and the seed (its random generator is seeded from the seed and the
public state), so a player's policy is a fixed function of (seed, public
state): `ResolvingSearcher.search_at` caches searches by public state, which is
also how `polyzero exploitability` composes them breadth-first.
"""

from __future__ import annotations

import math
import zlib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyspiel

from polyzero.games.public_states import PublicTree, merged_copy, public_observation_function, state_after

from .gtcfr import GTCFR, Gadget, SoGSettings, Summary
from .players import sample_action
from .search_tree import Expansions, SearchTree
from .values import ExactValueFunction, ValueFunction


@dataclass
class SearchResult:
    key: tuple[str, ...]  # the public state searched
    player: int
    policy: dict[str, dict[int, float]]  # average policy at the public state's information states
    summary: Summary
    root_key: tuple[str, ...]  # where the re-solve was rooted
    gadget: bool  # whether it was a gadget re-solve (False: an initial solve)
    tree_size: int
    value_calls: int


# Worlds the searches cached by a player may hold: a late London public state holds
# hundreds, at several kilobytes each (its state and Mr X's information-state string).
MAX_CACHED_WORLDS = 100_000


class ResolvingSearcher:
    """Continual re-solving searches for one seed; results cached by (player, public state).

    The cache holds whole search trees, whose public states hold every world (on
    Scotland Yard's London board, hundreds, each a game state): it keeps at most
    `cache_size` searches and `max_worlds` worlds in their trees (None: no bound on
    worlds), dropping the least recently used but never a player's latest search. A
    dropped search is searched again when needed (a search is a function of its public
    state, its seed and the previous search), so the bounds change costs, never
    results; `search_at` restarts from the latest search cached. `expansions`: public
    states and expansions shared with other searches (`search_tree.Expansions`: the
    same numbers; by default the searcher's own)."""

    def __init__(
        self,
        game: pyspiel.Game,
        value_fn: ValueFunction,
        settings: SoGSettings,
        seed: int = 0,
        cache_size: int = 100_000,
        max_worlds: int | None = MAX_CACHED_WORLDS,
        expansions: Expansions | None = None,
    ):
        self.game = game
        self.value_fn = value_fn
        self.settings = settings
        self.seed = seed
        # the searches' common public states, made once (given: shared with other searchers)
        self.expansions = expansions if expansions is not None else Expansions(public_observation_function(game))
        self.observe = self.expansions.observe
        self._root = PublicTree(game, max_depth=0).nodes[0]
        self.cache: OrderedDict = OrderedDict()
        self.cache_size = cache_size
        self.max_worlds = max_worlds
        self.cached_worlds = 0
        self._worlds: dict = {}  # cache key -> worlds in its search's tree
        self._latest: dict = {}  # player -> the cache key of its latest search
        self.searches = 0

    def _rng(self, key: tuple[str, ...]) -> np.random.Generator:
        return np.random.default_rng([self.seed, zlib.crc32("\x1f".join(key).encode())])

    def chain(self, state: pyspiel.State) -> list[tuple[tuple[str, ...], int]]:
        """(public key, history length) at each of the acting player's decisions along
        the state's history, the state itself last."""
        player = state.current_player()
        current = self.game.new_initial_state()
        key: list[str] = []
        out = []
        history = state.history()
        for n, action in enumerate(history):
            if not current.is_chance_node() and current.current_player() == player:
                out.append((tuple(key), n))
            child = current.child(action)
            key.append(self.observe(current, action, child))
            current = child
        out.append((tuple(key), len(history)))
        return out

    def search_at(self, state: pyspiel.State) -> SearchResult:
        """The search for the acting player at the state's public state, after the
        searches at its earlier decisions (from the latest one cached)."""
        player = state.current_player()
        chain = self.chain(state)
        start, previous = 0, None
        for i in range(len(chain) - 1, -1, -1):
            previous = self.cache.get((player, chain[i][0]))
            if previous is not None:
                self.cache.move_to_end((player, chain[i][0]))
                start = i + 1
                break
        history = state.history()
        for key, length in chain[start:]:
            previous = self.resolve(
                state if length == len(history) else state_after(self.game, history[:length]), key, previous
            )
            self._keep((player, key), previous)
        return previous

    def _keep(self, cache_key, result: SearchResult) -> None:
        """Cache a search; drop the least recently used beyond the bounds, except each
        player's latest search (the start of that player's next one)."""
        self.cache[cache_key] = result
        self._latest[cache_key[0]] = cache_key
        self._worlds[cache_key] = sum(len(n.worlds) for n in result.summary.tree.nodes)
        self.cached_worlds += self._worlds[cache_key]
        latest = set(self._latest.values())
        while len(self.cache) > self.cache_size or self._over_worlds():
            dropped = next((k for k in self.cache if k not in latest), None)
            if dropped is None:
                break
            del self.cache[dropped]
            self.cached_worlds -= self._worlds.pop(dropped)

    def _over_worlds(self) -> bool:
        return self.max_worlds is not None and self.cached_worlds > self.max_worlds

    def resolve(self, state: pyspiel.State, key: tuple[str, ...], previous: SearchResult | None) -> SearchResult:
        """One search at `state`'s public state (`key`), re-solving from `previous` (the
        same player's last search) or an initial solve when there is none."""
        player = state.current_player()
        root_index = previous.summary.closest(key) if previous is not None else None
        if root_index is None:
            root, ranges, gadget = self._root, None, None
        else:
            prev = previous.summary
            old = prev.tree.nodes[root_index]
            root = merged_copy(self.game, old)
            opponent = 1 - player
            ranges = [_by_name(old, root, p, prev.ranges[root_index][p]) for p in range(2)]
            ranges[opponent] = np.ones_like(ranges[opponent])  # replaced by the gadget's range
            gadget = Gadget(
                opponent,
                _by_name(old, root, opponent, prev.cfv[root_index][opponent]),
                _by_name(old, root, opponent, prev.ranges[root_index][opponent]),
                self.settings.alpha,
            )
        tree = SearchTree(self.game, root, self.observe, self.expansions)
        index = tree.expand_path(key)
        if not tree.nodes[index].transitions:
            tree.expand(index)  # the initial tree: the current public state and all its children
        search = GTCFR(
            tree, self.value_fn, self.settings, self._rng(key), search_root=index, root_ranges=ranges, gadget=gadget
        )
        search.run()
        self.searches += 1
        policy = search.average_policy()
        node = tree.nodes[index]
        mine = {info: policy[info] for info in node.info_states[player]}
        return SearchResult(
            key, player, mine, search.summary(), root.key, gadget is not None, len(tree.nodes), search.value_calls
        )


def _by_name(old, new, player: int, values: np.ndarray) -> np.ndarray:
    """Per information state of `player` at `old`, reordered as `new` lists them (a
    merged copy lists the same information states, maybe in another order)."""
    if new is old:
        return np.array(values, float)
    index = {name: i for i, name in enumerate(old.info_states[player])}
    return np.array([values[index[name]] for name in new.info_states[player]], float)


def parse_sog_spec(spec: str) -> SoGSettings | None:
    """'sog:S,C' (S expansion simulations, C expansions per CFR iteration; C may be
    fractional, default 1) with optional ',k=v' settings (puct=, depth=, iters=,
    alpha=, solve=ITERS for the exact leaf solver, final=sample|argmax for the move);
    None when not a sog spec."""
    kind, sep, rest = spec.partition(":")
    if kind != "sog":
        return None
    settings = SoGSettings()
    from polyzero.errors import UsageError

    parts = [p for p in rest.split(",") if p] if sep else []
    positional = [p for p in parts if "=" not in p]
    try:
        if positional:
            settings.simulations = int(positional[0])
        if len(positional) > 1:
            settings.expansions_per_update = float(positional[1])
        if len(positional) > 2:
            raise ValueError
        for p in parts:
            if "=" not in p:
                continue
            k, v = p.split("=", 1)
            if k == "puct":
                settings.puct_c = float(v)
            elif k == "depth":
                settings.max_depth = int(v)
            elif k == "iters":
                settings.min_iterations = int(v)
            elif k == "alpha":
                settings.alpha = float(v)
            elif k == "k":
                settings.top_k = int(v)
            elif k == "solve":
                settings.solve_iterations = int(v)
            elif k == "final" and v in ("sample", "argmax"):
                settings.final = v
            else:
                raise ValueError
    except ValueError:
        raise UsageError(
            f"bad player '{spec}': expected sog:S,C with S expansion simulations and C "
            "expansions per CFR iteration, optionally ,puct=X ,depth=D ,k=K ,alpha=A ,solve=N "
            ",final=argmax, and last ,net=RUN for a trained CVPN"
        ) from None
    if settings.simulations < 0 or settings.expansions_per_update <= 0:
        raise UsageError(f"bad player '{spec}': S must be >= 0 and C > 0")
    from polyzero.validation import MAX_SPEC_COUNT

    numbers = (
        settings.simulations,
        settings.expansions_per_update,
        settings.puct_c,
        settings.alpha,
        settings.max_depth or 0,
        settings.min_iterations,
        settings.top_k,
        settings.solve_iterations,
    )
    if not all(math.isfinite(x) and abs(x) <= MAX_SPEC_COUNT for x in numbers if isinstance(x, (int, float))):
        raise UsageError(f"bad player '{spec}': its numbers must be finite and at most {MAX_SPEC_COUNT:,}")
    return settings


def info_state_string(state: pyspiel.State, player: int) -> str:
    """The information-state string `PublicTree` names information states by."""
    if state.get_game().get_type().provides_information_state_string:
        try:
            return state.information_state_string(player)
        except (pyspiel.SpielError, RuntimeError):
            pass
    return state.history_str()


class SoGPlayer:
    """GT-CFR with continual re-solving; leaf values from `value_fn` (default: the
    exact CFR+ solver, for small games). `act` samples from the re-solved average
    policy at the state's information state (`settings.final = "argmax"`: takes its
    most probable action)."""

    reads_hidden_state = False  # re-solves the public state from the information state

    def __init__(
        self,
        game: pyspiel.Game,
        settings: SoGSettings,
        value_fn: ValueFunction | None = None,
        seed: int = 0,
        name: str | None = None,
    ):
        self.game = game
        self.settings = settings
        self.value_fn = value_fn or ExactValueFunction(game, iterations=settings.solve_iterations, warm_start=False)
        self.name = name or f"sog:{settings.simulations},{settings.expansions_per_update:g}"
        self.reset(seed)

    def reset(self, seed: int) -> None:
        self.seed = seed
        self.searcher = ResolvingSearcher(self.game, self.value_fn, self.settings, seed)
        self._rng = np.random.default_rng(seed)

    def policy(self, state: pyspiel.State) -> dict[int, float]:
        result = self.searcher.search_at(state)
        return result.policy[info_state_string(state, state.current_player())]

    def act(self, states: Sequence[pyspiel.State]) -> list[int]:
        if self.settings.final == "argmax":
            return [max(probs, key=probs.get) for probs in map(self.policy, states)]
        return [sample_action(self._rng, self.policy(state)) for state in states]
