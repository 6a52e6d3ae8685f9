"""How sphinx-gallery runs the example scripts when it builds the gallery (see ``conf.py``).

The scripts are command-line programs. Run from the gallery, they get their default arguments
except where a figure would land: sphinx-gallery runs a script in ``examples/``, and the gallery
shows the figures it captures from matplotlib, so files the script saves go to a temporary folder
instead of the source tree.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

#: The scripts that save files, each to the folder its ``--out`` option names.
SAVE_FILES = {
    "amplitude_identifiability.py",
    "large_mesh.py",
    "mesh_classification.py",
    "mesh_gp.py",
    "nonstationary.py",
}


#: The scripts the gallery shows in their ``--quick`` run for now: ``mesh_classification.py``'s
#: full run (two MAP fits on the whole bunny) outlasted the session that wrote it on a shared
#: machine; regenerate its page without ``--quick`` on an idle one.
QUICK_IN_GALLERY = {"mesh_classification.py"}


def example_argv(gallery_conf, script_vars) -> list[str]:
    """The command-line arguments of one example script run by sphinx-gallery."""
    name = Path(script_vars["src_file"]).name
    quick = ["--quick"] if name in QUICK_IN_GALLERY else []
    if name not in SAVE_FILES:
        return quick
    return [*quick, "--out", tempfile.mkdtemp(prefix=f"gallery-{Path(name).stem}-")]
