"""How sphinx-gallery runs the example scripts when it builds the gallery (see ``conf.py``).

The scripts are command-line programs. Run from the gallery, they get their default arguments
except where a figure would land: sphinx-gallery runs a script in ``examples/``, and the gallery
shows the figures it captures from matplotlib, so files the script saves go to a temporary folder
instead of the source tree.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

#: The scripts that save files, and the option that says where.
SAVES_TO = {
    "amplitude_identifiability.py": "--out",
    "mesh_gp.py": "--out",
    "nonstationary.py": "--out",
}


def example_argv(gallery_conf, script_vars) -> list[str]:
    """The command-line arguments of one example script run by sphinx-gallery."""
    name = Path(script_vars["src_file"]).name
    if name not in SAVES_TO:
        return []
    return [SAVES_TO[name], tempfile.mkdtemp(prefix=f"gallery-{Path(name).stem}-")]
