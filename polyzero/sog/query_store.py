"""Public belief states waiting for a solver, kept small (Student of Games paper,
"Query collection").

A query's public state holds one world per history consistent with it, each a game
state: late in a long game on Scotland Yard's London board a public state of a
search tree holds hundreds of worlds, several kilobytes each, and a self-play game
sends the network thousands of them. Held as states, the queries of one game (the
collector's) and the buffer's 1,000 grew a self-play process past 6 GB
(docs/journal/2026-11-29-sog-london.md). A `StoredQuery` keeps each world's action
history (int16, 2 bytes an action) and chance reach instead, and the ranges; `query()`
replays the histories when a solver takes it (the worlds in the same order, so the
ranges still index the same information states). The collector keeps at most as many
as the buffer holds: the buffer keeps the newest `capacity` only.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass

import numpy as np
import pyspiel

from polyzero.games.public_states import public_state_at, public_state_of_worlds, state_after

from .values import Query


@dataclass
class StoredQuery:
    """A public belief state as its worlds' histories, their chance reach and the ranges."""

    key: tuple[str, ...]
    histories: list[np.ndarray]
    chance_reach: np.ndarray
    ranges: list[np.ndarray]

    @classmethod
    def of(cls, query: Query) -> StoredQuery:
        node = query.public_state
        histories = [_compact(w.state.history()) for w in node.worlds]
        reach = np.array([w.chance_reach for w in node.worlds])
        return cls(node.key, histories, reach, [np.asarray(r, float).copy() for r in query.ranges])

    def query(self, game: pyspiel.Game) -> Query:
        """The query with its public state rebuilt (replays every world's history)."""
        return Query(public_state_of_worlds(game, self.key, self.histories, self.chance_reach), self.ranges)

    @property
    def num_worlds(self) -> int:
        return len(self.histories)

    @property
    def nbytes(self) -> int:
        """The bytes of its arrays (the key's strings are shared with the game's other nodes)."""
        arrays = [*self.histories, self.chance_reach, *self.ranges]
        return sum(a.nbytes for a in arrays)


def _compact(history: list[int]) -> np.ndarray:
    """A history as int16 where its actions fit (every game here but the largest)."""
    return np.asarray(history, np.int16 if max(history, default=0) < 2**15 else np.int64)


def stored(query: Query | StoredQuery) -> StoredQuery:
    return query if isinstance(query, StoredQuery) else StoredQuery.of(query)


class QueryBuffer:
    """Public belief states waiting for a solver, oldest first; the oldest are
    dropped beyond `capacity`. Kept as `StoredQuery`s; `pop` rebuilds one."""

    def __init__(self, game: pyspiel.Game, capacity: int):
        self.game = game
        self.items: deque[StoredQuery] = deque(maxlen=capacity)
        self.added = 0

    def __len__(self) -> int:
        return len(self.items)

    def add(self, query: Query | StoredQuery) -> None:
        self.items.append(stored(query))
        self.added += 1

    def pop(self) -> Query | None:
        return self.items.popleft().query(self.game) if self.items else None

    def to_arrays(self) -> dict[str, np.ndarray]:
        records = [
            {
                "key": list(q.key),
                "histories": [h.tolist() for h in q.histories],
                "chance": q.chance_reach.tolist(),
                "ranges": [r.tolist() for r in q.ranges],
            }
            for q in self.items
        ]
        return {"queries": np.frombuffer(json.dumps(records).encode(), np.uint8), "added": np.array(self.added)}

    def load_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        self.items.clear()
        for record in json.loads(arrays["queries"].tobytes().decode()):
            if "histories" in record:
                self.items.append(
                    StoredQuery(
                        tuple(record["key"]),
                        [_compact(h) for h in record["histories"]],
                        np.asarray(record["chance"], float),
                        [np.asarray(r, float) for r in record["ranges"]],
                    )
                )
                continue
            # Saved before 2026-11-29: one world's history and the ranges by information-state name.
            node = public_state_at(self.game, state_after(self.game, record["history"]))
            ranges = [np.array([record["ranges"][p].get(name, 0.0) for name in node.info_states[p]]) for p in range(2)]
            self.items.append(StoredQuery.of(Query(node, ranges)))
        self.added = int(arrays["added"])


class Collector:
    """The network's listener: each queried belief state is kept with probability q,
    the newest `capacity` of them (None: all) as `StoredQuery`s; `count` counts them all."""

    def __init__(self, probability: float, rng: np.random.Generator, capacity: int | None = None):
        self.probability = probability
        self.rng = rng
        self.seen = 0
        self.count = 0
        self.kept: deque[StoredQuery] = deque(maxlen=capacity)

    def __call__(self, queries: list[Query]) -> None:
        for q in queries:
            self.seen += 1
            if self.rng.random() < self.probability:
                self.count += 1
                self.kept.append(StoredQuery.of(q))
