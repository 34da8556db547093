"""Numba's on-disk cache kept in step with the sources the kernels call across modules.

Numba keys a cached kernel (``cache=True``) on the content of its own source file only.
A kernel that calls a function of another
module keeps the old callee's compiled code after that module changes: a stale
``search.fused`` once searched with an old network layer of ``kernels.mlp``. So before any
kernel module is imported (the package imports this module first), :func:`refresh`
hashes every source whose kernels are cached together and, in each directory where
numba keeps their caches (beside the sources, ``NUMBA_CACHE_DIR``, the user's cache),
removes their index files when the hash differs from the one recorded there: numba then
compiles every kernel afresh. (Touching the sources would not do: numba stamps a source
by its content.) A directory it cannot write is left as it is.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from numba.core import caching, config

_KERNELS = Path(__file__).resolve().parent
# Every module with cached kernels: this package and the fused search, whose kernels call
# one another, and the learner's and the replays' (train/flat_kernels.py, replay/draws.py,
# replay/gather.py, each self-contained: listed so that no cached kernel of the package is
# left out of the record).
SOURCES = (
    *sorted(_KERNELS.glob("*.py")),
    _KERNELS.parent / "fused.py",
    _KERNELS.parents[1] / "train" / "flat_kernels.py",
    _KERNELS.parents[1] / "replay" / "draws.py",
    _KERNELS.parents[1] / "replay" / "gather.py",
)
RECORD = "polyzero_kernel_sources.sha256"


def sources_digest(sources=SOURCES) -> str:
    digest = hashlib.sha256()
    for path in sources:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def cache_dirs(source: Path) -> list[Path]:
    """Where numba may keep `source`'s cached kernels (numba's own locators)."""
    dirs = [source.parent / "__pycache__"]
    locators: list[type[caching.UserWideCacheLocator | caching.UserProvidedCacheLocator]] = [
        caching.UserWideCacheLocator
    ]
    if getattr(config, "CACHE_DIR", None):  # NUMBA_CACHE_DIR
        locators.append(caching.UserProvidedCacheLocator)
    for locator in locators:
        dirs.append(Path(locator(refresh, str(source)).get_cache_path()))
    return list(dict.fromkeys(dirs))


def _made_for_numba(directory: Path) -> bool:
    """Make `directory` when numba would write there (beside the sources, or under
    NUMBA_CACHE_DIR), so that it holds the record before numba caches a kernel in it: a
    directory numba made after this process's refresh held no record, and the next
    process to import removed the index of every kernel cached there meanwhile, which
    numba then compiled again. The user-wide cache is left alone (numba uses it only
    where the sources' directory cannot be written)."""
    cache_dir = getattr(config, "CACHE_DIR", None)
    if directory.name != "__pycache__" and not (cache_dir and directory.is_relative_to(cache_dir)):
        return False
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return True


def refresh(sources=SOURCES) -> list[Path]:
    """Remove `sources`' numba index files in every cache directory whose record differs
    from their joint digest; the directories refreshed."""
    digest, refreshed = sources_digest(sources), []
    stems_by_dir: dict[Path, set[str]] = {}
    for source in sources:
        for directory in cache_dirs(Path(source)):
            stems_by_dir.setdefault(directory, set()).add(Path(source).stem)
    for directory, stems in stems_by_dir.items():
        record = directory / RECORD
        if not directory.is_dir() and not _made_for_numba(directory):
            continue
        try:
            if record.read_text() == digest:
                continue
        except OSError:
            pass  # no record yet: refresh
        try:
            for index in directory.glob("*.nbi"):
                if index.name.split(".", 1)[0] in stems:
                    index.unlink(missing_ok=True)
            tmp = directory / f"{RECORD}.{os.getpid()}.tmp"
            tmp.write_text(digest)
            os.replace(tmp, record)  # concurrent importers each write the same digest
        except OSError:
            continue  # a directory this process cannot write: nothing to keep in step
        refreshed.append(directory)
    return refreshed


refresh()  # on import: the package imports this module before any kernel module
