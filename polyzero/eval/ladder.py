"""The MCTS-Solver ladder: the one definition of reference opponents for a given agent."""

from __future__ import annotations

__all__ = ["LADDER_MULTIPLIERS", "ladder_specs"]

# Opponent strength as multiples of the agent's evaluation simulations (Go-Exploit style).
LADDER_MULTIPLIERS = (1, 10, 100, 1000)


def ladder_specs(agent_simulations: int, multipliers=LADDER_MULTIPLIERS) -> list[str]:
    """`mcts-solver:{m * agent_simulations}` for each multiplier, weakest first."""
    return [f"mcts-solver:{m * agent_simulations}" for m in multipliers]
