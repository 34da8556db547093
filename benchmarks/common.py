"""What benchmark scripts share: the speed probe and writing results."""

from __future__ import annotations

import json
import time
from pathlib import Path


def probe_ms(n: int = 50_000) -> float:
    """The anchor harness's speed probe: a fixed pure-Python loop (~2.7 ms on a quiet
    2-core machine), recorded beside timings so runs can be compared."""
    t0 = time.perf_counter()
    s = 0
    for i in range(n):
        s += i * i
    return (time.perf_counter() - t0) * 1e3


def write_results(out: str | Path, results: dict, markdown: str) -> Path:
    """`results` as JSON at `out` and `markdown` beside it (same name, .md)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    out.with_suffix(".md").write_text(markdown)
    print(f"wrote {out} and {out.with_suffix('.md')}")
    return out
