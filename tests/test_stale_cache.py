"""kernels.stale_cache: numba's cache recompiles a kernel whose callee's module changed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from polyzero.search.kernels import stale_cache

CALLER = "import numba\nfrom callee import g\n\n@numba.njit(cache=True)\ndef f():\n    return g()\n"
CALLEE = "import numba\n\n@numba.njit\ndef g():\n    return {}\n"


def _run(tmp: Path, refresh: bool) -> int:
    """A fresh process's f(), after stale_cache.refresh over both modules if asked."""
    code = "import caller; print(caller.f())"
    if refresh:
        code = (
            "from pathlib import Path; from polyzero.search.kernels import stale_cache; "
            f"stale_cache.refresh([Path('caller.py'), Path('callee.py')]); {code}"
        )
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp, env=env, capture_output=True, text=True, check=True)
    return int(out.stdout.split()[-1])


def test_a_changed_callee_reaches_the_cached_caller_only_after_a_refresh(tmp_path):
    (tmp_path / "caller.py").write_text(CALLER)
    (tmp_path / "callee.py").write_text(CALLEE.format(1))
    assert _run(tmp_path, refresh=True) == 1  # compiled and cached
    (tmp_path / "callee.py").write_text(CALLEE.format(2))
    assert _run(tmp_path, refresh=False) == 1  # numba alone: the cached caller keeps the old callee
    assert _run(tmp_path, refresh=True) == 2  # the digest changed: the index removed, recompiled
    assert _run(tmp_path, refresh=True) == 2  # and cached again under the new stamps


def test_refresh_removes_the_sources_indexes_only_when_the_digest_changes(tmp_path, monkeypatch):
    monkeypatch.setattr(stale_cache.config, "CACHE_DIR", "")  # numba caches beside the sources
    sources = [tmp_path / "a.py", tmp_path / "b.py"]
    for path in sources:
        path.write_text("x = 1\n")
    cache = tmp_path / "__pycache__"
    cache.mkdir()
    ours, other = cache / "a.f-1.py311.nbi", cache / "other.g-1.py311.nbi"
    for index in (ours, other):
        index.write_bytes(b"")
    assert stale_cache.refresh(sources) == [cache] and not ours.exists() and other.exists()
    assert (cache / stale_cache.RECORD).read_text() == stale_cache.sources_digest(sources)
    ours.write_bytes(b"")
    assert stale_cache.refresh(sources) == [] and ours.exists()  # same sources: the cache stands
    sources[1].write_text("x = 2\n")
    assert stale_cache.refresh(sources) == [cache] and not ours.exists()


def test_the_package_sources_include_every_module_with_cached_kernels():
    root = Path(stale_cache.__file__).parents[2]
    cached = {p.resolve() for p in root.rglob("*.py") if "cache=True" in p.read_text()}
    assert cached <= {p.resolve() for p in stale_cache.SOURCES}, cached - set(stale_cache.SOURCES)


def test_a_cache_directory_numba_makes_after_the_refresh_keeps_its_kernels(tmp_path):
    sources = [tmp_path / "a.py"]
    sources[0].write_text("x = 1\n")
    cache = tmp_path / "__pycache__"  # not there yet: a fresh clone before its first compile
    stale_cache.refresh(sources)  # the first process imports polyzero
    assert (cache / stale_cache.RECORD).read_text() == stale_cache.sources_digest(sources)
    index = cache / "a.f-1.py311.nbi"
    index.write_bytes(b"")  # numba caches a kernel there
    assert stale_cache.refresh(sources) == [] and index.exists()  # the next process keeps it
