"""What the diagnostic studies (benchmarks/studies/*.py) share: paths, the command line, power-law
fits and result files.

The studies reuse the paper-reproduction problems and protocol (:mod:`benchmarks.paper`), so a
study's Teddy, SAXS or 1-D data are exactly the reproduction's.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

import pymc_sle as sle
from benchmarks._paths import RESULTS as ALL_RESULTS
from benchmarks.paper import one_d
from benchmarks.paper.models import ModelSpec
from benchmarks.paper.problem import Context, Problem, Trial
from benchmarks.paper.runner import selected

PAPER = Path(__file__).resolve().parents[1] / "paper"
RESULTS = ALL_RESULTS / "studies"


def parser(description: str, *, draws: int | None = None) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--quick", action="store_true", help="tiny sizes: a smoke run for CI")
    p.add_argument("--out", type=Path, default=RESULTS, help="result directory")
    p.add_argument("--cache", type=Path, default=PAPER / "cache", help="distance cache")
    p.add_argument(
        "--jobs", type=int, default=2, help="worker processes for the studies that fit models"
    )
    if draws is not None:
        p.add_argument("--draws", type=int, default=draws, help="random draws per setting")
    return p


def power_law(x, y) -> float:
    """Exponent ``alpha`` of the least-squares fit ``log y = alpha log x + c``."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if x.size < 2 or np.any(x <= 0) or np.any(y <= 0):
        raise ValueError(f"a power law needs >= 2 positive points, got x={x}, y={y}")
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def one_d_spec(name: str) -> ModelSpec:
    """The 1-D reproduction's model ``name`` ("SLE", "Matern", "Raw-distance embedding")."""
    return selected(one_d.specs(), [name])[0]


def one_d_context(data, seed: int) -> Context:
    """The protocol context of a `pymc_sle.datasets.one_dimensional` data set: its training
    points are the trial, its test points the test set."""
    D = data.distances.values
    problem = Problem(
        "one_d",
        np.concatenate([data.y_train, data.y_test]),
        data.test,
        data.train,
        lambda points, cols, kind: D[np.ix_(points, cols)],
    )
    trial = Trial(data.train.size, 0, seed, data.train)
    return problem.context(trial, {"euclidean"}, {"euclidean"})


def embedding_distances(D: np.ndarray, radius: float) -> np.ndarray:
    """Pairwise SLE embedding distances ||phi(x) - phi(x')|| (a = 1, beta = 1) over the rows of
    the square matrix ``D``, every point a landmark: the upper triangle, row by row."""
    distances = sle.embedding_distances(D, radius=radius)
    return distances[np.triu_indices_from(distances, 1)]


#: The small-radius wall on the radius's sampled quantile scale ``u``: below it the grid's
#: marginal holds about 0.1 % of the mass and the log density falls off a cliff.
WALL_U = -3.0


def divergence_starts(idata, value_name: str) -> np.ndarray:
    """The sampled coordinate ``value_name`` at the last good state of each divergent
    trajectory. The draw a divergent transition records is a state from earlier in the
    trajectory, not this one. Read from nutpie's ``store_divergences=True`` records, or from
    PyMC's ``keep_warning_stat=True`` ones (``SamplerWarning.divergence_point_source``; it keeps
    the first 100 per chain)."""
    stats = idata.sample_stats
    if "divergence_start" in stats:  # nutpie
        column = list(stats["unconstrained_parameter"].values).index(value_name)
        diverging = stats["diverging"].values.astype(bool)
        return stats["divergence_start"].values[diverging][:, column].astype(float)
    found = []
    if "warning" not in stats:  # pooled basins keep no records
        return np.array(found)
    for record in np.ravel(stats["warning"].values):
        while isinstance(record, np.ndarray):  # one object array per sampler
            record = record.ravel()[0] if record.size else None
        point = getattr(record, "divergence_point_source", None)
        if point is not None and value_name in point:
            found.append(float(point[value_name]))
    return np.array(found)


def radius_divergence_starts(idata, model, priors) -> np.ndarray | None:
    """Where the recorded divergent trajectories left from on the radius's sampled quantile
    scale ``u`` (``sle_priors``'s map; with a radius cap, the sampled value, which equals ``u``
    well below the cap). ``None`` when the radius is not sampled on that scale
    (several basins: centred log scales), the sampler kept no records, or the chains sampled
    basins apart (pooled; their coordinate is ``u`` confined to each basin's interval)."""
    radius = priors["radius"]
    if not hasattr(model.rvs_to_transforms.get(radius), "to_unit"):
        return None
    stats = idata.sample_stats
    if "divergence_start" not in stats and "warning" not in stats:
        return None
    name = model.rvs_to_values[radius].name
    if "divergence_start" in stats and name not in stats["unconstrained_parameter"].values:
        return None
    return divergence_starts(idata, name)


def write_json(path: Path, payload: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, default=float) + "\n")


def write_markdown(path: Path, title: str, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join([f"# {title}", "", *lines, ""]))


def pyplot():
    """matplotlib's pyplot on the non-interactive backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, path: Path, *, dpi: int = 110, rect=(0.0, 0.0, 1.0, 1.0)) -> None:
    """Lay out ``fig`` tightly within ``rect``, write it to ``path`` and close it."""
    fig.tight_layout(rect=rect)
    fig.savefig(path, dpi=dpi)
    pyplot().close(fig)


def markdown_rows(header: list[str], rows: list[list]) -> list[str]:
    """A markdown table; floats get 4 significant digits."""

    def cell(v):
        return f"{v:.4g}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
