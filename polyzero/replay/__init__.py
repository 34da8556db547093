"""polyzero.replay: the replay storages algorithms choose (`Algorithm.make_replay`),
below the algorithm layer so that algorithms import no training runtime.

* `ReplayBuffer` (uniform.py): uniform positions (AlphaZero);
* `SegmentRing` (segment_ring.py): games stored in trajectory order, the storage the
  two below share;
* `SequenceReplay` (sequence.py): MuZero's unroll targets, priorities, Reanalyze;
* `NDMZReplay` (ndmz.py): NDMZ's choice, chance and terminal steps.

Every storage names its columns by one schema (schema.py). A storage writes its
checkpoint file into an open file (`write_npz`) and reads it back straight into its
arrays (`load_npz`, npz.py): neither holds a second copy of the replay in memory.
"""

from .ndmz import NDMZReplay
from .segment_ring import SegmentRing
from .sequence import SequenceReplay
from .uniform import ReplayBuffer

__all__ = ["NDMZReplay", "ReplayBuffer", "SegmentRing", "SequenceReplay"]
