"""The one row schema of polyzero's replays: a column name means the same in every
storage that holds it.

Stored rows (one per position, or per step in NDMZ's replay):

=============  ===========================================================================
``obs``        the encoded observation for the player to move (NDMZ: zeros at steps
               without one)
``action``     the action taken from this position (NDMZ: a choice action, chance
               outcome C + o, or end)
``reward``     the reward received after the action (single-agent games), or on
               entering the step (NDMZ)
``policy``     the search policy at the position, over the actions (NDMZ: over the full
               action set, a no-op target at chance and terminal steps)
``outcome``    z: what the player to move went on to receive from here to the game's end
               (AlphaZero's value target, MuZero's board-game value target, NDMZ's z)
``root_value`` the search value nu_t for the player to move (bootstrap, priority)
``legal``      the legal actions at the position (Reanalyze's root masks)
=============  ===========================================================================

Columns of one storage only keep their own names: ``identity`` and ``chance_policy``
(NDMZ), ``fresh_policy``/``fresh``/``priority``/``final_obs``/``has_final`` (MuZero's
sequences), and the ring's bookkeeping (``sampleable``, ``position``, ``seg_end``,
``done``).

Sampled unroll batches (MuZero's and NDMZ's) share their names as well: ``obs``,
``actions`` [B, K], ``target_policy``, ``target_value``, ``target_reward`` [B, K + 1],
``weight`` and ``index``.
"""

from __future__ import annotations

OBS, ACTION, REWARD, POLICY, OUTCOME, ROOT_VALUE, LEGAL = (
    "obs",
    "action",
    "reward",
    "policy",
    "outcome",
    "root_value",
    "legal",
)

# Names replay.npz files written before the schema was shared use: a checkpoint of that
# time loads under the new name. {storage class name: {new: old}}
RENAMED = {
    "ReplayBuffer": {OUTCOME: "value"},
    "NDMZReplay": {POLICY: "choice_target", OUTCOME: "value", "chance_policy": "chance_target"},
}


def stored_name(files, storage: str, column: str) -> str | None:
    """The name `column` has in a saved replay (`files`: its array names), or None."""
    if column in files:
        return column
    old = RENAMED.get(storage, {}).get(column)
    return old if old in files else None
