"""The Markdown report of `learner_speed.py`: the main table, the profiles, the loss and
update A/B's."""

from __future__ import annotations

import torch


def render_before(rows) -> list[str]:
    """The update A/B against an earlier revision's Learner (`--update-ab-before`)."""
    return [
        "",
        f"This session's learner against git revision {rows[0]['before']}'s, in the same rounds "
        "(default and `train.fused_step`; medians of CPU ms):",
        "",
        "| arm | batch | before / floor | new / floor | new vs before | before, fused / floor "
        "| fused / floor | fused vs before, fused |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
        *(
            f"| {r['arm']} | {r['batch']} | {r['before_ms'] / r['floor_ms']:.2f} | {r['new_ms'] / r['floor_ms']:.2f} "
            f"| {r['before_ms'] / r['new_ms']:.2f}x | {r['before_fused_ms'] / r['floor_ms']:.2f} "
            f"| {r['fused_ms'] / r['floor_ms']:.2f} | {r['before_fused_ms'] / r['fused_ms']:.2f}x |"
            for r in rows
        ),
    ]


def render_update_ab(rows) -> list[str]:
    if not rows:
        return []
    head = [
        "",
        "The whole update (minibatch given), beside the floor, interleaved on the same minibatches "
        "(medians of CPU ms): old, the code before the small-network work; apart, the Learner with "
        "its parameters apart (`flat=False`); new, the Learner (one buffer, `polyzero/train/flat.py`); "
        "fused, the Learner with `train.fused_step` (the same update to float rounding):",
        "",
        "| arm | batch | old ms | apart ms | new ms | fused ms | floor ms | old / floor | apart / floor "
        "| new / floor | fused / floor | new vs apart | new vs old |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    nan = float("nan")
    before = render_before(rows) if "before_ms" in rows[0] else []
    return (
        before
        + head
        + [
            f"| {r['arm']} | {r['batch']} | {r['old_ms']:.2f} | {r.get('apart_ms', nan):.2f} | "
            f"{r['new_ms']:.2f} | {r.get('fused_ms', nan):.2f} | {r['floor_ms']:.2f} | "
            f"{r['old_ms'] / r['floor_ms']:.2f} | "
            f"{r.get('apart_ms', nan) / r['floor_ms']:.2f} | {r['new_ms'] / r['floor_ms']:.2f} | "
            f"{r.get('fused_ms', nan) / r['floor_ms']:.2f} | "
            f"{r.get('apart_ms', nan) / r['new_ms']:.2f}x | {r['old_ms'] / r['new_ms']:.2f}x |"
            for r in rows
        ]
    )


def render_sog_step_ab(r) -> list[str]:
    """SoG's whole step against an earlier revision's (`--sog-step-ab`)."""
    if not r:
        return []
    same = ", ".join(f"{k}: {'yes' if v else 'NO'}" for k, v in r["identical"].items())
    return [
        "",
        "Student of Games' whole step (sample, update, loss terms read back), before: the window's rows "
        f"gathered per example, the CVPN loss before 2026-11-29 and git revision {r['revision']}'s Learner; "
        f"against now, interleaved on the same draws, {r['rounds']} rounds (medians of CPU ms); the same "
        f"loss terms every round, before and now: {same}:",
        "",
        "| step | batch | before ms | now ms | floor ms | before / floor | now / floor | now vs before |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
        *(
            f"| {label} | {r['batch']} | {r[b]:.2f} | {r[n]:.2f} | {r['floor']:.2f} | {r[b] / r['floor']:.2f} "
            f"| {r[n] / r['floor']:.2f} | {r[b] / r[n]:.2f}x |"
            for label, b, n in (("default", "before", "now"), ("train.fused_step", "before_fused", "fused"))
        ),
    ]


def render(result) -> str:
    lines = [
        "# Learner training steps per second beside the floor and AlphaZero",
        "",
        f"- command: `{result['command']}`",
        f"- machine: {result['machine'].get('Model name', '?')}, {result['machine'].get('CPU(s)')} CPUs, "
        f"GPU {result['gpu']}; torch {torch.__version__}; CPU learner with {result['cpu_threads']} torch threads",
        f"- load average start/end: {result['loadavg_start']} / {result['loadavg_end']} (a machine shared "
        "with other jobs where it is above the CPU count: read the CPU-time columns and the A/B's)",
        "- each step: sample a minibatch, one update, loss terms read back; the floor: the same network "
        "passes alone (h once, g and f K times; one f for AlphaZero and the CVPN), forward and backward, "
        "on one batch, timed in the same rounds; medians of "
        f"{result['steps']} rounds after {result['warmup']} warm-up rounds, of wall-clock time and (last three "
        "columns) of the process's CPU time, which a shared machine's load does not stretch; "
        "a machine shared with other sessions",
        "",
        "| arm | game | batch | device | steps / s | floor steps / s | learner / floor "
        "| vs AlphaZero at the same trunk | CPU ms: learner / floor | learner / floor in CPU time "
        "| vs AlphaZero at the same trunk, CPU time |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    rows = result["rows"]
    for r in rows:
        base = next((x for x in rows if x["arm"] == r["baseline"] and x["device"] == r["device"]), None)
        vs = f"{r['steps_per_s'] / base['steps_per_s']:.2f}x" if base else "-"
        cpu = (
            (f"{r['cpu_step_ms']:.2f} / {r['cpu_floor_ms']:.2f}", f"{r['cpu_learner_over_floor']:.2f}")
            if "cpu_step_ms" in r and r["device"] == "cpu"
            else ("-", "-")
        )
        # steps per CPU second against the baseline's: the ratio a shared machine's load does not move
        cpu_vs = f"{base['cpu_step_ms'] / r['cpu_step_ms']:.2f}x" if base and cpu[0] != "-" else "-"
        lines.append(
            f"| {r['arm']} | {r['game']} | {r['batch_size']} | {r['device']} | {r['steps_per_s']:.2f} | "
            f"{r['floor_steps_per_s']:.2f} | {r['learner_over_floor']:.2f} | {vs} | {cpu[0]} | {cpu[1]} | {cpu_vs} |"
        )
    for p in result.get("profiles", []):
        lines += [
            "",
            f"Where the learner's time goes: {p['arm']}, batch {p['batch']}, torch.profiler over "
            f"{p['updates']} updates (share of self CPU time):",
            "",
            "| group | share |",
            "|---|---:|",
        ]
        lines += [f"| {g} | {v:.1%} |" for g, v in p["group_shares"].items()]
        lines += [
            f"| (within the above) {label}, its operators included | {v:.1%} |"
            for label, v in p.get("steps_whole", {}).items()
        ]
        lines += ["", "| operator | share | calls / update | the floor's calls / pass |", "|---|---:|---:|---:|"]
        lines += [
            f"| {r['op']} | {r['share']:.1%} | {r.get('calls_per_update', r['calls'] / p['updates']):.1f} | "
            f"{r['floor_calls_per_pass']:.1f} |"
            if "floor_calls_per_pass" in r
            else f"| {r['op']} | {r['share']:.1%} | {r['calls'] / p['updates']:.1f} | - |"
            for r in p["top_ops"][:12]
        ]
    if result.get("loss_ab"):
        lines += [
            "",
            "The loss alone (forward and backward, fixed batch, presets' networks), the code before "
            "the learner work against the current, interleaved:",
            "",
            "| case | batch | old ms | new ms | speed-up |",
            "|---|---:|---:|---:|---:|",
        ]
        lines += [
            f"| {r['case']} | {r['batch']} | {r['old_ms']:.1f} | {r['new_ms']:.1f} | {r['speedup']:.2f}x |"
            for r in result["loss_ab"]
        ]
    lines += render_update_ab(result.get("update_ab"))
    lines += render_sog_step_ab(result.get("sog_step_ab"))
    return "\n".join(lines) + "\n"
