"""The Markdown reports of benchmarks/selfplay_throughput.py (its two modes)."""

from __future__ import annotations


def render(result) -> str:
    m = result["meta"]
    lines = [
        "# Self-play throughput against concurrent games, actors and device",
        "",
        f"- command: `{m['command']}`",
        f"- machine: {m['machine'].get('Model name', '?')}, {m['machine'].get('CPU(s)')} CPUs, GPU {m['gpu']}; "
        f"torch {m['torch']}; {m['threads']} torch thread(s) per actor",
        f"- load average start/end: {m['loadavg_start']} / {m['loadavg_end']}",
        "- the machine may be shared with other jobs (the load average says how busy it was)",
        f"- {m['seconds']} s of self-play per setting after {m['warmup_ticks']} warm-up moves; untrained "
        "networks unless a checkpoint is named; positions = positions searched (one per live game per move)"
        + (
            f"; the weights reloaded every {m['refresh_every']} moves (a learner's publication: the "
            "network-output cache cleared, ONNX Runtime's session rebuilt)"
            if m.get("refresh_every")
            else ""
        )
        + "; ceiling = the same network calls alone (on random inputs, so through the network-output cache "
        "(net.cache) none of them hits: the network without the cache); cache hits = the share of the rows "
        "self-play asked for that the cache answered",
        "- search `fused`: the recurrent function ran inside the fused search's kernel, out of the "
        "recording's sight; its calls are counted as (simulations per search) calls of one row per live "
        "game after each recorded initial call, and the ceiling replays those through the same program "
        "outside the search, one call at a time with a dispatch each (which the kernel avoids, so the "
        "fused search can come close to or pass its ceiling)",
        "",
        "| preset | concurrent games | actors | device | net.inference | search | positions / s | simulations / s "
        "| network-only ceiling positions / s | share of ceiling | rows per network call | cache hits | GPU busy |",
        "|---|---:|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["rows"]:
        gpu = f"{r['gpu_busy']:.2f}" if r["gpu_busy"] is not None else "-"
        hits = f"{r['cache_hit_share']:.2f}" if r.get("cache_hit_share") is not None else "-"
        lines.append(
            f"| {r['preset']} | {r['games']} | {r['actors']} | {r['device']} | {r['inference']} | "
            f"{'fused' if r.get('fused') else 'python'} | {r['positions_per_s']:,.0f} | "
            f"{r['simulations_per_s']:,.0f} | {r['network_ceiling_positions_per_s']:,.0f} | "
            f"{r['share_of_ceiling']:.2f} | {r['mean_rows_per_call']:.1f} | {hits} | {gpu} |"
        )
    return "\n".join(lines) + "\n"


def render_interleaved(result) -> str:
    m = result["meta"]
    paths = list(result["interleaved"][0]["positions_per_s"])
    # with refreshes the mean counts the slower moves after each at their share; else the median
    stat = "_mean" if m.get("refresh_every") else ""
    lines = [
        "# Self-play throughput, net.inference paths interleaved in one process",
        "",
        f"- command: `{m['command']}`",
        f"- machine: {m['machine'].get('Model name', '?')}, {m['machine'].get('CPU(s)')} CPUs; "
        f"torch {m['torch']}; "
        f"{m['threads']} torch thread(s)",
        f"- load average start/end: {m['loadavg_start']} / {m['loadavg_end']}",
        "- the machine may be shared with other jobs (the load average says how busy it was)",
        "- one actor per path, the same seed; each round one move (one search over every live game) "
        "of each path in turn; positions / s = games / "
        + (
            f"mean seconds per move, the weights reloaded every {m['refresh_every']} moves (a learner's "
            "publication: the network-output cache cleared, ONNX Runtime's session rebuilt; timed with the move)"
            if stat
            else "median seconds per move"
        ),
        "- fused paths (the recurrent function inside the fused search's kernel, seen on the second "
        "warm-up move): "
        + "; ".join(
            f"{r['preset']} {r['games']}: {', '.join(p for p, f in r.get('fused', {}).items() if f) or 'none'}"
            for r in result["interleaved"]
        ),
        "",
        "| preset | concurrent games | rounds | "
        + " | ".join(f"{p} positions / s" for p in paths)
        + " | "
        + " | ".join(f"{p} / {paths[0]}" for p in paths[1:])
        + " |",
        "|---|---:|---:|" + "---:|" * (2 * len(paths) - 1),
    ]
    for r in result["interleaved"]:
        lines.append(
            f"| {r['preset']} | {r['games']} | {r['rounds']} | "
            + " | ".join(f"{r['positions_per_s' + stat][p]:,.0f}" for p in paths)
            + " | "
            + " | ".join(f"**{r['speedup_vs_first' + stat][p]:.2f}x**" for p in paths[1:])
            + " |"
        )
    return "\n".join(lines) + "\n"
