"""Distance builders: only the rows x columns a model needs, in parallel, resumable.

Every builder returns a :class:`~pymc_sle.DistanceMatrix`. Names are imported on first use, so
``import pymc_sle.distances`` is cheap and a builder loads only what it needs.
"""

from typing import TYPE_CHECKING

from pymc_sle._lazy import lazy_attributes

#: The public names: the module and attribute each is imported from on first use.
_PUBLIC = {
    **dict.fromkeys(("Mesh", "geodesic", "load_mesh"), "pymc_sle.distances._geodesic"),
    **dict.fromkeys(("GEODESIC_METHODS", "SLICED_METHODS"), "pymc_sle.distances._methods"),
    **dict.fromkeys(("MetricError", "pairwise"), "pymc_sle.distances._pairwise"),
    **dict.fromkeys(("random_projections", "sliced_wasserstein"), "pymc_sle.distances._sliced"),
    "StoreWarning": "pymc_sle.distances._store",
    "edit_distance": "pymc_sle.distances._strings",
    "wasserstein": "pymc_sle.distances._transport",
}

if TYPE_CHECKING:  # the same names, for type checkers and editors
    from pymc_sle.distances._geodesic import Mesh, geodesic, load_mesh
    from pymc_sle.distances._methods import GEODESIC_METHODS, SLICED_METHODS
    from pymc_sle.distances._pairwise import MetricError, pairwise
    from pymc_sle.distances._sliced import random_projections, sliced_wasserstein
    from pymc_sle.distances._store import StoreWarning
    from pymc_sle.distances._strings import edit_distance
    from pymc_sle.distances._transport import wasserstein

__getattr__, __dir__, __all__ = lazy_attributes(
    __name__, {name: (module, name) for name, module in _PUBLIC.items()}
)
