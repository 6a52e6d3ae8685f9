"""The NUTS benchmark's summary: its fits aggregated per benchmark, model and sampler, and the
targets (issue 14) checked on them, each with the figure measured, the baseline's, and the
reason for a miss read off the measurements."""

from __future__ import annotations

import json
from collections.abc import Callable

import numpy as np

from benchmarks._paths import RESULTS
from benchmarks.nuts_data import BENCHMARKS
from benchmarks.studies.common import WALL_U
from pymc_sle.evaluation import NutsSettings

#: Targets of issue 14.
R_HAT_MAX, ESS_MIN, PICP_RANGE = 1.01, 400.0, (0.92, 0.97)
TEDDY_400_WALL_S, FVGP_SPEEDUP = 600.0, 10.0


def _fvgp_min_ess_per_s() -> float | None:
    path = RESULTS / "nuts_teddy.json"
    if not path.exists():
        return None
    return float(json.loads(path.read_text())["samplers"]["fvgp"]["min_ess_per_second"])


def aggregate(rows: list[dict]) -> list[dict]:
    """One entry per (benchmark, model, sampler) of ``rows`` (fits of the current default):
    worst diagnostics and mean scores over splits, in the order of ``BENCHMARKS``, SLE first."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["benchmark"], r["model"], r["sampler"]), []).append(r)
    order = list(BENCHMARKS)
    out = []
    for (bench, model, sampler), rs in sorted(
        groups.items(), key=lambda kv: (order.index(kv[0][0]), kv[0][1] != "SLE", kv[0][2])
    ):
        out.append({
            "benchmark": bench, "model": model, "spec": rs[0]["spec"], "sampler": sampler,
            "mass_matrix": rs[0]["mass_matrix"], "splits": len(rs),
            "r_hat_max": max(r["r_hat_max"] for r in rs),
            "ess_bulk_min": min(r["ess_bulk_min"] for r in rs),
            "ess_tail_min": min(r["ess_tail_min"] for r in rs),
            "divergences": int(sum(r["divergences"] for r in rs)),
            "wall_s": float(np.median([r["wall_s"] for r in rs])),
            "min_ess_per_s": float(np.median([r["min_ess_per_s"] for r in rs])),
            **{k: float(np.mean([r[k] for r in rs])) for k in ("rmse", "crps", "picp", "nlpd")},
            "picp_range": (min(r["picp"] for r in rs), max(r["picp"] for r in rs)),
            "picp_splits": [r["picp"] for r in rs],
            "r_hat_worst": _worst_of(max(rs, key=lambda r: r["r_hat_max"]), "r_hat_var"),
            "ess_bulk_worst": _worst_of(min(rs, key=lambda r: r["ess_bulk_min"]),
                                        "ess_bulk_var"),
            "warned": sum(r["basins"] > 1 for r in rs),
            **_divergence_origins(rs),
            "steps_per_draw_range": _range(r["steps_per_draw"] for r in rs),
            "steps_per_draw": _median(r["steps_per_draw"] for r in rs),
            "grad_ms": _median(r["grad_ms"] for r in rs),
            "sampling_s": float(np.median([r["sampling_s"] for r in rs])),
        })  # fmt: skip
    return out


def _worst_of(row: dict, column: str) -> tuple[int, str]:
    """The split of a group's worst fit and the variable ``column`` names there."""
    return int(row["split"]), row[column]


def _finite(values) -> list[float]:
    return [v for v in map(float, values) if np.isfinite(v)]


def _range(values) -> tuple[float, float] | None:
    finite = _finite(values)
    return (min(finite), max(finite)) if finite else None


def _median(values) -> float | None:
    finite = _finite(values)
    return float(np.median(finite)) if finite else None


def _divergence_origins(rows: list[dict]) -> dict:
    """Over a group's fits: divergent trajectories whose start was recorded, how many of those
    left from the small-radius wall, and divergences without a record (several basins, or
    PyMC's first 100 per chain only)."""
    recorded = [r for r in rows if np.isfinite(r["divergences_recorded"])]
    return {
        "divergences_recorded": int(sum(r["divergences_recorded"] for r in recorded)),
        "wall_divergences": int(sum(r["wall_divergences"] for r in recorded)),
        "divergence_u": sorted(
            float(u) for r in recorded for u in filter(None, r["divergence_u"].split(";"))
        ),
        "divergences_unrecorded": int(
            sum(r["divergences"] for r in rows)
            - sum(min(r["divergences_recorded"], r["divergences"]) for r in recorded)
        ),
    }


def _splits(n: int) -> str:
    return f"{n} split" if n == 1 else f"{n} splits"


def _worst_variable_reason(key: str) -> Callable[[dict, dict | None], str]:
    """The reason for an r-hat or ESS miss: the split and the variable of the worst fit."""

    def reason(s: dict, baseline: dict | None) -> str:
        split, variable = s[key]
        return f"split {split}, on `{variable}`"

    return reason


def _divergence_reason(s: dict, baseline: dict | None) -> str:
    """Where the divergent trajectories left from, as far as the samplers recorded it."""
    parts = []
    if s["divergences_recorded"]:
        parts.append(f"{s['wall_divergences']} of the {s['divergences_recorded']} recorded "
                     f"left from the small-radius wall (u < {WALL_U:g})")  # fmt: skip
        others = [u for u in s["divergence_u"] if u >= WALL_U]  # sorted
        if len(others) == 1:
            parts[-1] += f", the other from u = {others[0]:.2f}"
        elif others:
            parts[-1] += f", the others from u in [{others[0]:.2f}, {others[-1]:.2f}]"
    if s["divergences_unrecorded"]:
        parts.append(f"{s['divergences_unrecorded']} not recorded (several basins)")
    return "; ".join(parts)


def _picp_reason(s: dict, baseline: dict | None) -> str:
    """Which side of the band the splits miss on, and the NLPD against the baseline's: an
    interval miss with a worse NLPD is a worse predictive distribution, not a sampler issue."""
    low, high = PICP_RANGE
    n = len(s["picp_splits"])
    parts = [
        f"{count} of {n} splits {side} {bound:g} ({what})"
        for count, side, bound, what in (
            (sum(p < low for p in s["picp_splits"]), "below", low, "intervals too narrow"),
            (sum(p > high for p in s["picp_splits"]), "above", high, "intervals too wide"),
        )
        if count
    ]
    if baseline is not None:
        parts.append(f"NLPD {s['nlpd']:.3f} against the baseline's {baseline['nlpd']:.3f}")
    return "; ".join(parts)


#: The targets every benchmark's SLE fits are checked against: name, the measured figure of a
#: summary entry, whether it is met, and the reason given when it is missed (from the entry and
#: the baseline's entry, if run).
_TARGETS = (
    ("r-hat <= 1.01", lambda s: f"{s['r_hat_max']:.3f}", lambda s: s["r_hat_max"] <= R_HAT_MAX,
     _worst_variable_reason("r_hat_worst")),
    ("min bulk ESS >= 400", lambda s: f"{s['ess_bulk_min']:.0f}",
     lambda s: s["ess_bulk_min"] >= ESS_MIN, _worst_variable_reason("ess_bulk_worst")),
    ("0 divergences", lambda s: f"{s['divergences']}", lambda s: s["divergences"] == 0,
     _divergence_reason),
    ("PICP in [0.92, 0.97]", lambda s: "{:.3f}-{:.3f}".format(*s["picp_range"]),
     lambda s: PICP_RANGE[0] <= s["picp_range"][0] and s["picp_range"][1] <= PICP_RANGE[1],
     _picp_reason),
)  # fmt: skip


def _speed_reason(s: dict, settings: NutsSettings, needed: float | None = None) -> str:
    """What the sampling time is made of: leapfrog steps per draw times the time of one
    gradient, over the iterations and cores; with ``needed``, the speed-up the target asks."""
    if s["grad_ms"] is None or s["steps_per_draw"] is None:
        return "gradient time not recorded"
    iterations = settings.chains * (settings.tune + settings.draws)
    seconds = iterations * s["steps_per_draw"] * s["grad_ms"] / 1000.0 / settings.cores
    lo, hi = s["steps_per_draw_range"]
    reason = (
        f"{lo:.1f}-{hi:.1f} leapfrog steps per draw x {s['grad_ms']:.1f} ms per gradient: "
        f"about {seconds:.0f} s of gradients ({iterations} iterations, tuning at the draws' "
        f"steps, on {settings.cores} cores) of a median {s['sampling_s']:.0f} s of sampling"
    )
    if needed is not None:
        reason += f"; the target needs {needed:.2f}x the effective draws per second"
    return reason


def targets(summary: list[dict], n_splits: int, settings: NutsSettings) -> list[dict]:
    """Each target of issue 14, per benchmark and sampler of the SLE model: met or not, with the
    measured figure, the same figure of the benchmark's baseline under NUTS (``baseline``:
    ``"-"`` if it was not run), which tells a miss of the data from a miss of SLE, and for a
    miss the reason the measurements give (``reason``; ``"-"`` when met). ``settings`` are the
    fits' (the speed reasons count their iterations)."""
    out = []
    fvgp = _fvgp_min_ess_per_s()
    baselines = {s["benchmark"]: s for s in summary if s["model"] != "SLE"}
    for s in summary:
        if s["model"] != "SLE":
            continue
        where = f"{s['benchmark']} / {s['sampler']}"
        complete = s["splits"] >= n_splits
        baseline = baselines.get(s["benchmark"])
        checks = [
            (target, value(s), met(s),
             "-" if baseline is None
             else f"{value(baseline)} ({baseline['spec']}, {_splits(baseline['splits'])})",
             reason(s, baseline))
            for target, value, met, reason in _TARGETS
        ]  # fmt: skip
        if s["benchmark"] == "teddy_400":
            checks.append(("wall <= 10 min", f"{s['wall_s'] / 60:.1f} min",
                           s["wall_s"] <= TEDDY_400_WALL_S, "-",
                           _speed_reason(s, settings)))  # fmt: skip
            if fvgp is not None:
                goal = FVGP_SPEEDUP * fvgp
                checks.append((f"min-ESS/s >= 10x fvgp ({goal:.2f})", f"{s['min_ess_per_s']:.2f}",
                               s["min_ess_per_s"] >= goal, "-",
                               _speed_reason(s, settings, goal / s["min_ess_per_s"])))  # fmt: skip
        for target, value, met, of_baseline, reason in checks:
            status = "met" if met else "missed"
            if not complete:
                status += f" ({s['splits']} of {n_splits} splits)"
            out.append({"where": where, "target": target, "value": value, "status": status,
                        "baseline": of_baseline, "reason": "-" if met else reason})  # fmt: skip
    run = {s["benchmark"] for s in summary if s["model"] == "SLE"}
    for name in BENCHMARKS:
        if name not in run:
            out.append({"where": name, "target": "every target", "value": "-",
                        "status": "not run with the current default", "baseline": "-",
                        "reason": "-"})  # fmt: skip
    return out
