"""The head and the end of a timing benchmark's results page, for scripts whose results
start from `common.timing_meta` (the Student of Games A/B benchmarks)."""

from __future__ import annotations

import os

from common import write_results


def machine_load_line(meta: dict) -> str:
    """The page's machine line: `timing_meta`'s machine and torch, the load average at the
    start and at the end (`finish_timing`)."""
    start, end = ([round(x, 2) for x in meta[k]] for k in ("loadavg_start", "loadavg_end"))
    return f"- machine: {meta['machine']}; torch {meta['torch']}; load average at the start {start}, at the end {end}"


def finish_timing(out, meta: dict, render) -> None:
    """The load average at the end into `meta`, then its results (JSON, and `render`'s
    Markdown, also printed) at `out`."""
    meta["loadavg_end"] = os.getloadavg()
    text = render(meta)
    write_results(out, meta, text)
    print(text)
