"""Several GT-CFR searches advanced together, their leaf queries answered in one
value-function call per round (Student of Games paper, "Search via GT-CFR",
Algorithm 2; the solvers of "Computing training targets").

Each search runs as its step generator (`GTCFR.run_steps`): it does its own
expansion phase and walk down, then yields its leaves' public belief states and
waits. A round collects every live search's queries and asks the value function
once (a CVPN: one forward pass of all their rows instead of one per search); each
search then finishes its iteration with its own answers. A leaf's values depend
only on its public state and the ranges the search's own walk down gave it, and the
searches share no state (each has its own tree, regrets and random generator), so
every search computes what it would alone, provided the value function answers each
query on its own (a network does; `ExactValueFunction`'s warm start and policy sums
carry state from one query to the next, so interleaved searches would see another
history: use it one search at a time). What can differ is the last bits of the
network's outputs: a matrix product over more rows may sum in another order
(docs/journal/2026-11-30-sog-batched-leaves.md measures how much).

Where the value function has a `listener` (the query collection of
`polyzero.sog.query_store.Collector`), each search's queries reach that search's own
listener, in the order they would alone: the listener is set to the search's own
while the search runs (a prior it asks for in its expansion phase), and called with
its share of a round's batch before that batch is evaluated.
"""

from __future__ import annotations

from collections.abc import Callable, Generator

from .values import Evaluation, Query, ValueFunction

Steps = Generator[list[Query], list[Evaluation], None]


def answer_together(runs: list[Steps], value_fn: ValueFunction, listeners: list[Callable | None] | None = None) -> None:
    """Run every step generator to its end; each round, all the queries they yield go
    to `value_fn.evaluate` in one call (search order), each its own answers back."""
    listeners = listeners if listeners is not None else [None] * len(runs)
    if len(listeners) != len(runs):
        raise ValueError(f"{len(listeners)} listeners for {len(runs)} searches")
    pending: dict[int, list[Query]] = {}

    def advance(j: int, answers: list[Evaluation] | None) -> None:
        previous = value_fn.listener
        value_fn.listener = listeners[j]
        try:
            pending[j] = next(runs[j]) if answers is None else runs[j].send(answers)
        except StopIteration:
            pending.pop(j, None)
        finally:
            value_fn.listener = previous

    for j in range(len(runs)):
        advance(j, None)
    while pending:
        order = sorted(pending)
        batch: list[Query] = []
        for j in order:
            listener = listeners[j]
            if listener is not None:
                listener(pending[j])
            batch.extend(pending[j])
        previous = value_fn.listener
        value_fn.listener = None
        try:
            answers = value_fn.evaluate(batch)
        finally:
            value_fn.listener = previous
        start = 0
        for j in order:
            n = len(pending[j])
            advance(j, answers[start : start + n])
            start += n
