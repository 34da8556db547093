"""Reading a saved replay's arrays straight into the replay's own storage.

`np.load(...)[name]` reads an array whole into a new one; a replay would then copy it
into its ring, so a resume held the observations twice (an Atari replay's are nearly all
of it). `read_into` reads the array's bytes into the destination a chunk at a time.
"""

from __future__ import annotations

import numpy as np

CHUNK = 4 * 2**20  # bytes a read asks for at a time (zipfile holds up to two such at once)
_HEADERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}


def read_into(npz, name: str, out: np.ndarray) -> bool:
    """Array `name` of the open npz `npz` (an `np.load` result) into `out`, when it was
    saved with out's shape and dtype in C order; False (nothing read) otherwise, for the
    caller to load it the ordinary way (a cast, or its error about the shape)."""
    if not out.flags.c_contiguous or out.dtype.hasobject:
        return False
    with npz.zip.open(f"{name}.npy") as fh:
        header = _HEADERS.get(np.lib.format.read_magic(fh))
        if header is None:
            return False
        shape, fortran_order, dtype = header(fh)
        if shape != out.shape or fortran_order or dtype != out.dtype:
            return False
        flat = out.reshape(-1).view(np.uint8).data  # a memoryview of out's bytes
        done = 0
        while done < len(flat):
            got = fh.readinto(flat[done : done + CHUNK])
            if not got:
                raise ValueError(f"array {name!r} of the replay file is truncated")
            done += got
    return True
