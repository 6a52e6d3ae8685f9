"""Paper-layout markdown tables and the metrics-vs-size figure from a per-trial CSV."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from benchmarks.paper.results_csv import read_rows

__all__ = ["aggregate", "draw_counts", "draws_per_cell", "markdown_table", "summarise"]

METRICS = ("rmse", "crps", "picp")
NOMINAL = 0.95


def aggregate(rows: list[dict]) -> dict:
    """{(model, inference, size): {metric: (mean, se, n_ok), "failed": k}}"""
    groups: dict = {}
    for row in rows:
        key = (row["model"], row["inference"], int(row["size"]))
        groups.setdefault(key, []).append(row)
    out = {}
    for key, group in groups.items():
        ok = [r for r in group if r["status"] == "ok"]
        stats = {"n": len(group), "failed": len(group) - len(ok)}
        for metric in METRICS:
            values = np.array([float(r[metric]) for r in ok])
            values = values[np.isfinite(values)]
            if values.size:
                se = values.std(ddof=1) / np.sqrt(values.size) if values.size > 1 else np.nan
                stats[metric] = (float(values.mean()), float(se), int(values.size))
        out[key] = stats
    return out


def _best(metric: str, entries: dict) -> set:
    scored = {m: s[metric][0] for m, s in entries.items() if metric in s}
    if not scored:
        return set()
    score = (lambda v: abs(v - NOMINAL)) if metric == "picp" else (lambda v: v)
    best = min(score(v) for v in scored.values())
    return {m for m, v in scored.items() if score(v) == best}


def markdown_table(rows: list[dict], inference: str, sizes, models: list[str]) -> str:
    """The paper's layout: metric blocks, one row per model, one column per training size."""
    stats = aggregate(rows)
    header = "| Metric | Model | " + " | ".join(str(s) for s in sizes) + " |"
    lines = [header, "|---|---|" + "---|" * len(sizes)]
    arrows = {"rmse": "RMSE (↓)", "crps": "CRPS (↓)", "picp": "PICP 95 % (→ 0.95)"}
    full = {s: max(stats.get((m, inference, s), {"n": 0})["n"] for m in models) for s in sizes}
    for metric in METRICS:
        best = {
            s: _best(metric, {m: stats.get((m, inference, s), {}) for m in models}) for s in sizes
        }
        for i, model in enumerate(models):
            cells = []
            for size in sizes:
                entry = stats.get((model, inference, size))
                if entry is None or metric not in entry:
                    failed = entry["failed"] if entry else 0
                    cells.append(f"failed ({failed})" if failed else "-")
                    continue
                mean, se, n = entry[metric]
                text = f"{mean:.3f} ± {se:.3f}" if np.isfinite(se) else f"{mean:.3f}"
                if model in best[size]:
                    text = f"**{text}**"
                if n < full[size]:  # failed fits, or fewer draws than the column's other models
                    text += f" (n={n})"
                cells.append(text)
            label = arrows[metric] if i == 0 else ""
            lines.append(f"| {label} | {model} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def draws_per_cell(rows, model, inference, size) -> int:
    """How many draws of ``model`` at ``size`` ran with ``inference`` (failed fits included)."""
    return len(
        {
            int(r["draw"])
            for r in rows
            if r["model"] == model and r["inference"] == inference and int(r["size"]) == size
        }
    )


def draw_counts(rows, models, inference, sizes) -> str:
    """A table heading's draw count: ``"30"`` when every (model, size) cell has 30 draws, else
    per size, e.g. ``"200: 5, 300: 5, 400: 0-2"`` (a range when the models differ)."""
    per_size = {s: sorted({draws_per_cell(rows, m, inference, s) for m in models}) for s in sizes}
    if len({c for counts in per_size.values() for c in counts}) == 1:
        return str(per_size[sizes[0]][0])
    return ", ".join(
        f"{s}: {c[0]}" if len(c) == 1 else f"{s}: {c[0]}-{c[-1]}" for s, c in per_size.items()
    )


_METRIC_TITLES = {"rmse": "RMSE", "crps": "CRPS", "picp": "95 % interval coverage (PICP)"}


def figure(rows: list[dict], models: list[str], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    stats = aggregate(rows)
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.8))
    for metric, ax in zip(METRICS, axes, strict=True):
        for model in models:
            sizes = sorted(s for (m, inf, s) in stats if m == model and inf == "map")
            points = [(s, *stats[(model, "map", s)][metric][:2]) for s in sizes
                      if metric in stats[(model, "map", s)]]  # fmt: skip
            if points:
                s, mean, se = map(np.array, zip(*points, strict=True))
                ax.errorbar(
                    s, mean, yerr=np.nan_to_num(se), marker="o", ms=3, capsize=2, label=model
                )
        if metric == "picp":
            nominal = ax.axhline(NOMINAL, color="k", lw=0.8, ls="--", label=f"nominal {NOMINAL:g}")
            ax.legend(handles=[nominal], fontsize=7, loc="lower right")
        ax.set_xlabel("training size")
        ax.set_title(_METRIC_TITLES[metric] + " (MAP)")
        if metric != "picp":
            ax.set_yscale("log")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 3), fontsize=8,
               frameon=False)  # fmt: skip
    fig.suptitle(f"{title}\nmean ± standard error over the training draws")
    rows_of_labels = -(-len(labels) // 3)
    fig.tight_layout(rect=(0, 0.05 + 0.045 * rows_of_labels, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)


def summarise(
    csv_path: Path, *, title: str, table_sizes, models: list[str], note: str = ""
) -> Path:
    """Write ``<name>.md`` (paper-layout tables for MAP and NUTS) and ``<name>.png``."""
    rows = read_rows(csv_path)
    name = csv_path.stem.removesuffix("_trials")
    parts = [f"# {title}", "", note, ""] if note else [f"# {title}", ""]
    for inference, label in (
        ("map", "MAP (bounded maximum likelihood)"),
        ("nuts", "NUTS posterior predictive"),
    ):
        present = [
            m for m in models if any(r["model"] == m and r["inference"] == inference for r in rows)
        ]
        if not present:
            continue
        n = draw_counts(rows, present, inference, table_sizes)
        parts += [f"## {label} — draws per size: {n}", "",
                  markdown_table(rows, inference, table_sizes, present), ""]  # fmt: skip
        seconds = [float(r["seconds"]) for r in rows if r["inference"] == inference]
        parts += [f"Fits: {len(seconds)}, median {np.median(seconds):.1f} s each.", ""]
    failures = [r for r in rows if r["status"] != "ok"]
    if failures:
        parts += ["## Failed fits", ""]
        counts: dict = {}
        for r in failures:
            counts.setdefault((r["model"], r["inference"], r["status"][:120]), 0)
            counts[(r["model"], r["inference"], r["status"][:120])] += 1
        parts += [f"- {m} ({i}), {k} x: {s}" for (m, i, s), k in sorted(counts.items())] + [""]
    eig = [(r["model"], int(r["size"]), float(r["min_eigenvalue"])) for r in rows
           if r.get("min_eigenvalue") not in (None, "")]  # fmt: skip
    if eig:
        parts += ["## PSD check at the fitted hyperparameters", "",
                  "Smallest eigenvalue of the kernel's Gram over training and test points; "
                  "negative predictive variances counted over the test set.", ""]  # fmt: skip
        for model in sorted({m for m, _, _ in eig}):
            values = np.array([v for m, _, v in eig if m == model])
            negative_var = sum(
                int(r["nonpositive_variances"] or 0) for r in rows if r["model"] == model
            )
            parts.append(
                f"- {model}: {int((values < 0).sum())} of {values.size} fitted Gram matrices "
                f"indefinite; smallest eigenvalue {values.min():.3g}; {negative_var} negative "
                "predictive variances in all"
            )
        parts.append("")
    md = csv_path.with_name(f"{name}.md")
    md.write_text("\n".join(parts))
    figure(rows, models, csv_path.with_name(f"{name}.png"), title)
    return md
