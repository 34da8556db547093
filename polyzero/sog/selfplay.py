"""Student of Games' data: sound self-play, query collection and query solving
(paper: "Data generation via sound self-play", "Training process" and Fig. 8,
"Query collection", "Computing training targets", "Recursive queries").

- **Sound self-play** (`SoundSelfPlay.play`): both players act by continual
  re-solving with GT-CFR and the current CVPN at every decision, sampling their
  action from the re-solved policy. Every main-line search gives a policy target:
  the output policies of all information states of the acting player at the
  searched public state. Its value target is the game's outcome (TD(1)) for the
  information states actually held, with probability `p_td`; otherwise the
  main-line belief state goes to the query buffer and a solver gives its values.
- **Query collection**: every public belief state a search sends to the network
  enters the query buffer with probability `q_search`.
- **Query solving** (`solve_query`): GT-CFR(s_solve, c_solve) from the queried
  belief state with the current network at its own leaves; the value targets
  are the final counterfactual values of every information state at the
  query's public state (normalised as the CVPN predicts them). The solver's own
  network queries re-enter the buffer with probability `q_recursive`.
- **Replay** (`SlidingWindow`): the newest examples, each used in at most
  `max_updates` minibatches.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyspiel

from polyzero.games.chance import sample_chance
from polyzero.games.public_states import public_observation_function
from polyzero.games.symmetry import augment
from polyzero.replay.draws import StateOf, window_draws
from polyzero.replay.gather import SymmetricGather

from .cvpn import BeliefEncoding, Example, NetworkValueFunction
from .gtcfr import GTCFR, SoGSettings, is_perfect_information
from .lockstep import answer_together
from .players import sample_action
from .query_store import Collector, QueryBuffer, StoredQuery
from .resolve import ResolvingSearcher, info_state_string
from .search_tree import Expansions, SearchTree
from .values import Query

__all__ = [
    "Collector",
    "QueryBuffer",
    "SlidingWindow",
    "SoundSelfPlay",
    "kept_expansions",
    "play_game",
    "solve_indexed",
    "solve_indexed_together",
    "solve_queries",
]

# The searches a self-play game keeps: a player's next search re-solves from its last
# one only, which the searcher always keeps; more only cost memory (whole search trees).
LINE_SEARCHES = 2

# -- targets -----------------------------------------------------------------------


def value_targets(encoding: BeliefEncoding, query: Query, cfv: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Counterfactual values -> the CVPN's normalised value targets [2, S] and their
    mask (information states the query's beliefs do not reach get no target)."""
    node = query.public_state
    value = np.zeros((2, encoding.max_slots), np.float32)
    mask = np.zeros((2, encoding.max_slots), np.float32)
    for p in range(2):  # a slot holding several information states gets their aggregate
        mass = encoding.to_slots(node, p, encoding.reach_mass(node, query.ranges, p))
        total = encoding.to_slots(node, p, cfv[p])
        reached = np.flatnonzero(mass > 1e-12)
        value[p, reached] = total[reached] / mass[reached]
        mask[p, reached] = 1.0
    return value, mask


def make_example(
    encoding: BeliefEncoding, query: Query, value=None, value_mask=None, policy=None, policy_mask=None
) -> Example:
    node = query.public_state
    s, a = encoding.max_slots, encoding.num_actions
    return Example(
        x=encoding.input(node, query.ranges),
        value=np.zeros((2, s), np.float32) if value is None else value,
        value_mask=np.zeros((2, s), np.float32) if value_mask is None else value_mask,
        policy=np.zeros((s, a), np.float32) if policy is None else policy,
        policy_mask=np.zeros(s, np.float32) if policy_mask is None else policy_mask,
        legal=encoding.legal_mask(node),
        player=max(node.player, 0) if node.kind == "decision" else 0,
    )


def solve_query(
    game: pyspiel.Game,
    query: Query,
    value_fn,
    settings: SoGSettings,
    rng: np.random.Generator,
    observe=None,
    shared: Expansions | None = None,
) -> list[np.ndarray]:
    """GT-CFR(settings.simulations, settings.expansions_per_update) rooted at the
    query's belief state; the counterfactual values of every information state
    there under the final average policies ("Computing training targets"). `shared`:
    public states and expansions common to several solves (the same numbers)."""
    search = _solver(game, query, value_fn, settings, rng, shared.observe if shared else observe, shared)
    search.run()
    return _solved_values(search)


def solve_queries(
    game: pyspiel.Game,
    queries: list[Query],
    value_fn,
    settings: SoGSettings,
    rngs: list[np.random.Generator],
    listeners: list | None = None,
    observe=None,
    shared: Expansions | None = None,
) -> list[list[np.ndarray]]:
    """`solve_query` for each query, the searches advanced together so that each CFR
    iteration's leaf queries of all of them go to the value function in one call
    (`polyzero.sog.lockstep`); search j's queries reach `listeners[j]`. `shared`: the
    public states and expansions the searches share (by default, their own)."""
    if shared is None:  # the searches' common public states
        shared = Expansions(observe or public_observation_function(game))
    searches = [_solver(game, q, value_fn, settings, rng, shared.observe, shared) for q, rng in zip(queries, rngs)]
    answer_together([s.run_steps() for s in searches], value_fn, listeners)
    out = []
    for j, search in enumerate(searches):
        previous, value_fn.listener = value_fn.listener, listeners[j] if listeners else None
        try:
            out.append(_solved_values(search))
        finally:
            value_fn.listener = previous
    return out


def kept_expansions(game: pyspiel.Game) -> Expansions | None:
    """The index of expanded public states a trainer keeps for its whole run, shared by
    every step's games and solves (the same numbers; docs/journal/2026-11-30-sog-leduc-step-2.md),
    bounded by `Expansions.max_worlds`. None in perfect-information games: their searches
    add the top k children (partial expansions, never shared), so a kept index would only
    hold memory; each step's solves and each game then share their own, as before."""
    return None if is_perfect_information(game) else Expansions(public_observation_function(game))


def _solver(game, query: Query, value_fn, settings: SoGSettings, rng, observe, shared=None) -> GTCFR:
    tree = SearchTree(game, query.public_state, observe or public_observation_function(game), shared)
    tree.expand(0)
    return GTCFR(tree, value_fn, settings, rng, root_ranges=[np.asarray(r, float) for r in query.ranges])


def _solved_values(search: GTCFR) -> list[np.ndarray]:
    search.cfr.evaluate_average()
    return [search.cfr.counterfactual_values(0, p) for p in range(search.num_players)]


# -- replay ----------------------------------------------------------------------------

# A window whose dense policy and legal arrays ([capacity, S, A], 5 bytes an entry) fit
# in this many bytes keeps them beside the rows (Connect Four's 65,536 x 1 x 7: 2.3 MB;
# Scotland Yard's London board, 199 x 798 an example, only in a window of <= 84).
DENSE_ROWS_BYTES = 64 * 2**20


class SlidingWindow:
    """The newest `capacity` examples; each is used in at most `max_updates` minibatches,
    under a random board symmetry when `symmetries` (`BeliefEncoding.input_symmetries`)
    are given.

    Policy targets and legal moves are kept as the rows of the slots that have a policy
    target (the only rows the loss reads): dense [S, A] per example would be 0.8 MB on
    Scotland Yard's London board (199 slots x 798 actions), 26 GB for 32,768 examples,
    where an example holds one row (a detective's move) to a few dozen (Mr X's). Where
    the dense arrays are small (`DENSE_ROWS_BYTES`) they are kept as well, written when
    an example enters, and a minibatch takes its rows with one index each (Connect
    Four's CVPN: a minibatch 0.13 against 0.20 ms at batch 32, 0.21 against 0.43 at 128),
    the same arrays (tests/test_sog_training.py). The rows stay what a checkpoint holds."""

    def __init__(self, encoding: BeliefEncoding, capacity: int, max_updates: int = 5, symmetries=()):
        s, a = encoding.max_slots, encoding.num_actions
        self.capacity = capacity
        self.max_updates = max_updates
        self.symmetries = list(symmetries)
        self.slots_actions = (s, a)
        self.data = {
            "x": np.zeros((capacity, encoding.input_size), np.float32),
            "value": np.zeros((capacity, 2, s), np.float32),
            "value_mask": np.zeros((capacity, 2, s), np.float32),
            "policy_mask": np.zeros((capacity, s), np.float32),
            "player": np.zeros(capacity, np.int64),
        }
        # Per example: (slots with a policy target, their policy rows, their legal rows).
        self.rows: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = [_no_rows(a)] * capacity
        self.dense = None
        if capacity * s * a * 5 <= DENSE_ROWS_BYTES:
            self.dense = {"policy": np.zeros((capacity, s, a), np.float32), "legal": np.zeros((capacity, s, a), bool)}
        self._gather = SymmetricGather(self.symmetries, obs_keys=("x",), policy_keys=("policy", "legal"))
        self._state_of = StateOf()
        self.uses = np.full(capacity, max_updates, np.int64)  # empty slots count as used up
        self.next = 0
        self.added = 0
        self._alive = None  # cache of alive(): dropped when an example enters or is used up

    def __len__(self) -> int:
        return len(self.alive())

    def alive(self) -> np.ndarray:
        """The slots of the usable examples, in slot order (kept between minibatches:
        finding them reads the whole window, which costs more than a minibatch)."""
        if self._alive is None:
            self._alive = np.flatnonzero(self.uses < self.max_updates)
        return self._alive

    def add(self, example: Example) -> None:
        i = self.next
        for name in self.data:
            self.data[name][i] = getattr(example, name)
        kept = np.flatnonzero(np.asarray(example.policy_mask) > 0)
        self.rows[i] = (kept, np.asarray(example.policy, np.float32)[kept], np.asarray(example.legal, bool)[kept])
        self._write_dense(i)
        self.uses[i] = 0
        self.next = (i + 1) % self.capacity
        self.added += 1
        self._alive = None

    def sample(self, batch_size: int, rng: np.random.Generator) -> dict[str, np.ndarray] | None:
        """A minibatch of distinct usable examples (None when fewer than batch_size)."""
        alive = self.alive()
        if len(alive) < batch_size:
            return None
        state = self._state_of(rng) if self.dense is not None else None
        if state is not None:  # NumPy's draws and gathers in two compiled calls (replay/draws.py, gather.py)
            index, pick, used_up = window_draws(
                state, alive, batch_size, self.uses, self.max_updates, self._gather.picks
            )
            if used_up:
                self._alive = None
            return self._gather.gather({**self.data, **self.dense}, index, pick)
        index = np.sort(rng.choice(alive, batch_size, replace=False))
        self.uses[index] += 1
        if (self.uses[index] >= self.max_updates).any():
            self._alive = None
        batch = {name: array[index] for name, array in self.data.items()}
        if self.dense is not None:  # a generator other than PCG64
            batch["policy"], batch["legal"] = self.dense["policy"][index], self.dense["legal"][index]
        else:
            batch["policy"], batch["legal"] = self._gather_rows(index)
        if self.symmetries:  # each example under a random symmetry or as stored
            augment(batch, rng, self.symmetries, obs_keys=("x",), policy_keys=("policy", "legal"))
        return batch

    def _gather_rows(self, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The dense policy and legal arrays [B, S, A] of the examples at `index`, from
        their rows: every example's rows in one assignment (each example's slots are
        distinct, so the same writes as one per example, a third of the cost on 32)."""
        policy_out = np.zeros((len(index), *self.slots_actions), np.float32)
        legal_out = np.zeros((len(index), *self.slots_actions), bool)
        picked = [self.rows[i] for i in index]
        slots, policy, legal = (np.concatenate(part) for part in zip(*picked))
        owner = np.repeat(np.arange(len(index)), [len(rows[0]) for rows in picked])
        policy_out[owner, slots] = policy
        legal_out[owner, slots] = legal
        return policy_out, legal_out

    def _write_dense(self, i: int) -> None:
        """Slot i's dense arrays from its rows (0 and False off the rows)."""
        if self.dense is not None:
            kept, policy, legal = self.rows[i]
            for name, rows in (("policy", policy), ("legal", legal)):
                self.dense[name][i] = 0
                self.dense[name][i, kept] = rows

    def to_arrays(self) -> dict[str, np.ndarray]:
        slots, policy, legal = (np.concatenate(parts) for parts in zip(*self.rows))
        counts = np.array([len(r[0]) for r in self.rows], np.int64)
        rows = {"row_count": counts, "row_slot": slots, "row_policy": policy, "row_legal": legal}
        return {**self.data, **rows, "uses": self.uses, "meta": np.array([self.next, self.added])}

    def load_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        for name in self.data:
            if arrays[name].shape != self.data[name].shape:
                raise ValueError(
                    f"replay field {name} has shape {arrays[name].shape}, expected {self.data[name].shape}"
                )
            self.data[name] = arrays[name].copy()
        if "row_count" in arrays:
            ends = np.cumsum(arrays["row_count"])
            parts = [np.split(arrays[f"row_{k}"], ends[:-1]) for k in ("slot", "policy", "legal")]
            self.rows = list(zip(*parts))
        else:  # saved dense ([capacity, S, A]) before 2026-11-29
            self.rows = []
            for i in range(self.capacity):
                kept = np.flatnonzero(self.data["policy_mask"][i] > 0)
                self.rows.append((kept, arrays["policy"][i][kept], arrays["legal"][i][kept]))
        if self.dense is not None:
            self.dense["policy"], self.dense["legal"] = self._gather_rows(np.arange(self.capacity))
        self.uses = arrays["uses"].copy()
        self.next, self.added = (int(v) for v in arrays["meta"])
        self._alive = None


def _no_rows(num_actions: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An example slot's rows before an example fills it (shared: never written into)."""
    return np.zeros(0, np.int64), np.zeros((0, num_actions), np.float32), np.zeros((0, num_actions), bool)


# -- sound self-play -----------------------------------------------------------------


@dataclass
class EpisodeResult:
    examples: list[Example]  # main-line policy examples (with TD(1) values where drawn)
    to_solve: list[StoredQuery]  # main-line belief states whose values a solver gives
    decisions: int
    returns: list[float]
    collected: list[StoredQuery] = field(default_factory=list)  # the searches' queries kept (q_search), newest
    queries_seen: int = 0
    queries_kept: int = 0  # all those kept, `collected` holding the newest of them


@dataclass
class SolveResult:
    example: Example  # the query's value targets
    collected: list[StoredQuery]  # the solver's own queries kept (q_recursive), newest
    queries_seen: int
    queries_kept: int = 0


def play_game(
    actor: SoundSelfPlay, seed: int, index: int, q_search: float, capacity: int | None = None
) -> EpisodeResult:
    """Game number `index` of a run: its randomness depends on (seed, index) only, so any
    driver (in-process or a Ray actor) plays the same game with the same weights. Of the
    queries kept, the newest `capacity` (the query buffer's size) are returned."""
    collector = Collector(q_search, np.random.default_rng([seed, 3, index]), capacity)
    actor.value_fn.listener = collector
    try:
        result = actor.play(seed=seed * 1_000_003 + index, rng=np.random.default_rng([seed, 2, index]))
    finally:
        actor.value_fn.listener = None
    result.collected, result.queries_seen, result.queries_kept = list(collector.kept), collector.seen, collector.count
    return result


def solve_indexed(
    game: pyspiel.Game,
    encoding: BeliefEncoding,
    query: Query,
    value_fn: NetworkValueFunction,
    settings: SoGSettings,
    seed: int,
    index: int,
    q_recursive: float,
    capacity: int | None = None,
) -> SolveResult:
    """Solve number `index` of a run (randomness from (seed, index)): the value example
    and the recursive queries kept."""
    return solve_indexed_together(game, encoding, [query], value_fn, settings, seed, [index], q_recursive, capacity)[0]


def solve_indexed_together(
    game: pyspiel.Game,
    encoding: BeliefEncoding,
    queries: list[Query],
    value_fn: NetworkValueFunction,
    settings: SoGSettings,
    seed: int,
    indices: Sequence[int],
    q_recursive: float,
    capacity: int | None = None,
    shared: Expansions | None = None,
) -> list[SolveResult]:
    """Solves number `indices[k]` of a run (query k), each with `solve_indexed`'s
    randomness; with more than one query the searches run together (`solve_queries`:
    one network call per round for all their leaves). `shared`: public states and
    expansions kept from earlier solves (`search_tree.Expansions`; the same numbers)."""
    if len(indices) != len(queries):
        raise ValueError(f"{len(indices)} solve indices for {len(queries)} queries")
    collectors = [Collector(q_recursive, np.random.default_rng([seed, 4, i]), capacity) for i in indices]
    rngs = [np.random.default_rng([seed, 5, i]) for i in indices]
    if len(queries) == 1:
        value_fn.listener = collectors[0]
        try:
            solved = [solve_query(game, queries[0], value_fn, settings, rngs[0], shared=shared)]
        finally:
            value_fn.listener = None
    else:
        solved = solve_queries(game, queries, value_fn, settings, rngs, collectors, shared=shared)
    out = []
    for query, cfv, collector in zip(queries, solved, collectors):
        value, mask = value_targets(encoding, query, cfv)
        example = make_example(encoding, query, value, mask)
        out.append(SolveResult(example, list(collector.kept), collector.seen, collector.count))
    return out


class SoundSelfPlay:
    """One actor: plays whole games by continual re-solving on both sides."""

    def __init__(
        self,
        game: pyspiel.Game,
        encoding: BeliefEncoding,
        value_fn: NetworkValueFunction,
        settings: SoGSettings,
        p_td: float,
        expansions: Expansions | None = None,
    ):
        self.game = game
        self.encoding = encoding
        self.value_fn = value_fn
        self.settings = settings
        self.p_td = p_td
        self.expansions = expansions  # shared by its games' searches (None: each game its own)

    def play(self, seed: int, rng: np.random.Generator) -> EpisodeResult:
        """One game. Each decision's example (its policy target) is built when the decision
        is made and its belief state kept as a `StoredQuery`, so the game holds no search
        tree or public state past its decision (a long London game held gigabytes)."""
        searcher = ResolvingSearcher(
            self.game, self.value_fn, self.settings, seed, cache_size=LINE_SEARCHES, expansions=self.expansions
        )
        state = self.game.new_initial_state()
        line = []  # (example without values, stored query, the slot held by each player)
        while not state.is_terminal():
            if state.is_chance_node():
                sample_chance(state, rng)
                continue
            player = state.current_player()
            result = searcher.search_at(state)
            summary = result.summary
            index = summary.tree.index_of[result.key]
            query = Query(summary.tree.nodes[index], [r.copy() for r in summary.ranges[index]])
            line.append(self._decision(query, state, result.policy))
            state.apply_action(sample_action(rng, result.policy[info_state_string(state, player)]))
        returns = state.returns()
        examples, to_solve = [], []
        for example, query, held in line:
            if rng.random() < self.p_td:  # TD(1): the outcome for the information states held
                for q in range(2):
                    example.value[q, held[q]] = returns[q]
                    example.value_mask[q, held[q]] = 1.0
            else:
                to_solve.append(query)
            examples.append(example)
        return EpisodeResult(examples, to_solve, len(line), list(returns))

    def _decision(self, query: Query, state: pyspiel.State, policy: dict) -> tuple[Example, StoredQuery, list[int]]:
        """A decision's example (the policy target, no value yet), its stored belief state,
        and the slot of the information state each player holds."""
        node, player = query.public_state, state.current_player()
        s, a = self.encoding.max_slots, self.encoding.num_actions
        target = np.zeros((s, a), np.float32)
        mask = np.zeros(s, np.float32)
        slots = self.encoding.slot_index(node, player)
        weights = query.ranges[player] + 1e-12  # a shared slot: the policies' own-reach average
        for i, name in enumerate(node.info_states[player]):
            for action, prob in policy[name].items():
                target[slots[i], action] += weights[i] * prob
            mask[slots[i]] = 1.0
        target /= np.maximum(target.sum(axis=1, keepdims=True), 1e-30)
        held = [
            int(self.encoding.slot_index(node, p)[node.info_states[p].index(info_state_string(state, p))])
            for p in range(2)
        ]
        return make_example(self.encoding, query, None, None, target, mask), StoredQuery.of(query), held
