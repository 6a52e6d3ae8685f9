"""Sphinx configuration of the pymc_sle documentation (the PyMC / ArviZ stack: pydata theme,
numpydoc, MyST Markdown pages, autosummary API pages, a sphinx-gallery of ``examples/``).

Build:  sphinx-build -W -n -b html docs docs/_build/html

Without network access the intersphinx inventories of PyMC, NumPy and the others cannot be
fetched: the build notices (one connection attempt, 3 s at most; ``PYMC_SLE_DOCS_OFFLINE=1``
skips it, ``=0`` insists on fetching) and leaves references into those projects as plain text
instead of failing, while every reference inside pymc_sle must still resolve.
"""

from __future__ import annotations

import inspect
import logging
import os
import re
import shutil
import socket
import sys
import warnings
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms import SphinxTransform

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))

import pymc_sle  # noqa: E402

project = "pymc_sle"
author = "the pymc_sle developers"
copyright = "2026, the pymc_sle developers"
release = version = pymc_sle.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
    "sphinx_copybutton",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "auto_examples/*.ipynb", "**/*.py.md5"]
templates_path = ["_templates"]
nitpicky = True

# -- Markdown pages ------------------------------------------------------------------------------
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

# -- API pages -----------------------------------------------------------------------------------
autosummary_generate = True
autodoc_typehints = "none"  # numpydoc's Parameters sections say it, once
autodoc_member_order = "bysource"
autodoc_inherit_docstrings = False  # PyMC / PyTensor base-class docstrings are theirs to render
numpydoc_show_class_members = False  # the class template lists members itself
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# -- Cross-references into the ecosystem ---------------------------------------------------------


def _offline() -> bool:
    """``PYMC_SLE_DOCS_OFFLINE`` if set, else whether docs.python.org cannot be reached."""
    setting = os.environ.get("PYMC_SLE_DOCS_OFFLINE", "")
    if setting:
        return setting != "0"
    try:
        socket.create_connection(("docs.python.org", 443), timeout=3).close()
    except OSError:
        return True
    return False


OFFLINE = _offline()
EXTERNAL = ["python", "numpy", "scipy", "pymc", "pytensor", "arviz", "ot", "matplotlib", "dask"]
intersphinx_mapping = {
    "python": ("https://docs.python.org/3", None),
    "numpy": ("https://numpy.org/doc/stable", None),
    "scipy": ("https://docs.scipy.org/doc/scipy", None),
    "pymc": ("https://www.pymc.io/projects/docs/en/stable", None),
    "pytensor": ("https://pytensor.readthedocs.io/en/latest", None),
    "arviz": ("https://python.arviz.org/en/stable", None),
    "ot": ("https://pythonot.github.io", None),
    "matplotlib": ("https://matplotlib.org/stable", None),
    "dask": ("https://distributed.dask.org/en/stable", None),
}
if OFFLINE:
    intersphinx_mapping = {}
    nitpick_ignore_regex = [
        (r"py:.*", rf"({'|'.join(EXTERNAL)}|jax|joblib|trimesh|tqdm)(\..*)?"),
        (r"py:.*", r"(ndarray|callable|TensorVariable|Variable|DataArray|InferenceData)"),
    ]

# -- Gallery ---------------------------------------------------------------------------------------
# Every example samples with NUTS for minutes, so the gallery is not re-run on every build: its
# pages (code, printed output, figures, running time) are generated once per change of a script
# and committed under auto_examples/, where sphinx-gallery reuses them while the script's checksum
# matches (tests/test_docs.py fails when one does not). Regenerate after editing an example:
#     PYMC_SLE_GALLERY_RUN='mesh_gp' sphinx-build -b html docs docs/_build/html
# (a regular expression on the file path; '.' re-runs every example that changed). The test suite
# runs every example in --quick mode on its own (tests/examples/test_examples.py).
sys.path.insert(0, str(DOCS))
# PyTensor's notice that it found no BLAS to link depends on the machine that ran the examples,
# not on the examples (getting started explains it): the pages do not show it.
warnings.filterwarnings("ignore", message="PyTensor could not link to a BLAS installation")
logging.getLogger("pytensor.tensor.blas").setLevel(logging.ERROR)
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": os.environ.get("PYMC_SLE_GALLERY_RUN", r"^$"),
    "reset_argv": "_gallery.example_argv",
    "notebook_extensions": set(),  # command-line scripts: argparse would fail in a notebook
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "show_signature": False,
}

# -- HTML ------------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = "pymc_sle"
html_static_path = ["_static"]
html_css_files = ["custom.css"]
html_js_files = ["figures.js"]
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_sidebars = {"**": ["sidebar-nav-bs"]}


# -- Benchmark results ---------------------------------------------------------------------------
# The benchmark scripts write their tables and figures to benchmarks/results/; the site publishes
# them under results/ (copied at build time, not kept twice in the repository). Links from a
# results page into docs/ (written for readers of the repository) become links to the pages.
RESULTS = ROOT / "benchmarks" / "results"
PUBLISHED = {".md", ".png"}  # pages and the figures they show


_LINK = re.compile(r"\[([^\]]+)\]\(([^)]+)\)")


def _links_out_of_headings(markdown: str) -> str:
    """A heading's links move to a line of their own under it (Sphinx's page contents cannot
    hold links)."""
    lines = []
    for line in markdown.split("\n"):
        links = _LINK.findall(line) if line.startswith("#") else []
        if links:
            lines.append(_LINK.sub(r"\1", line).rstrip(" -,"))
            lines.extend(["", ", ".join(f"[{text}]({url})" for text, url in links)])
        else:
            lines.append(line)
    return "\n".join(lines)


def _publish_results(app) -> None:
    """Copy the results into ``docs/results/``; their README becomes the section's index page,
    with every results page in its table of contents."""
    target = DOCS / "results"
    shutil.rmtree(target, ignore_errors=True)
    pages = []
    for path in sorted(RESULTS.rglob("*")):
        if not path.is_file() or path.suffix not in PUBLISHED:
            continue
        relative = path.relative_to(RESULTS)
        out = target / ("index.md" if relative.as_posix() == "README.md" else relative)
        out.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".md":
            depth = len(relative.parts)  # results/x.md: "../../docs/" in the repo is "../" here
            text = path.read_text(encoding="utf-8")
            text = text.replace("](" + "../" * (depth + 1) + "docs/", "](" + "../" * depth)
            out.write_text(_links_out_of_headings(text), encoding="utf-8")
            if out.name != "index.md":
                pages.append(relative.with_suffix("").as_posix())
        else:
            shutil.copy2(path, out)
    index = target / "index.md"
    title, body = index.read_text(encoding="utf-8").split("\n", 1)
    toctree = "\n".join(["```{toctree}", ":hidden:", "", *pages, "```"])
    index.write_text(f"{title}\n\n{toctree}\n{body}", encoding="utf-8")


# -- Links from code-formatted names and paths -----------------------------------------------------
# Narrative pages name the API as code (``sle.sle_priors``, ``SLE``) and files of the
# repository by their paths (``benchmarks/results/distances.md``, ``examples/mesh_gp.py``). Where
# the site has the page, the code becomes a link to it: API names that resolve to an object with
# an API page, and paths of pages the site publishes.
_API_ENTRY = re.compile(r"^   ([A-Za-z_][\w.]*)$", flags=re.MULTILINE)
_NAME = re.compile(r"^(?:(?:pymc_sle|sle)\.)?([A-Za-z_][\w.]*?)(?:\(\))?$")
_PATHS = (  # repository path prefix -> site folder
    ("docs/", ""),
    ("benchmarks/results/", "results/"),
    ("examples/", "auto_examples/"),
)


def _api_targets() -> tuple[dict[str, str], dict[int, str]]:
    """Where API pages are: a unique short name of a function or class (``sle_priors``, ``SLE``)
    -> its page, and ``id`` of every object with a page -> its page."""
    entries = _API_ENTRY.findall((DOCS / "api.rst").read_text(encoding="utf-8"))
    by_object, short = {}, {}
    for entry in entries:
        value = pymc_sle
        for part in entry.split("."):
            value = getattr(value, part)
        by_object[id(value)] = f"pymc_sle.{entry}"
        if inspect.isclass(value) or inspect.isfunction(value):
            short.setdefault(entry.rsplit(".", 1)[-1], set()).add(f"pymc_sle.{entry}")
    unique = {name: next(iter(full)) for name, full in short.items() if len(full) == 1}
    return unique, by_object


def _resolve(text: str, targets: tuple[dict[str, str], dict[int, str]]) -> str | None:
    """The API page of ``text``: a dotted name below ``pymc_sle`` (``sle.`` or ``pymc_sle.``
    optional), or the unique short name of a function or class."""
    match = _NAME.match(text)
    if not match:
        return None
    short, by_object = targets
    name = match.group(1)
    if "." not in name:
        return short.get(name)
    parent = value = pymc_sle
    for part in name.split("."):
        parent, value = value, getattr(value, part, None)
        if value is None:
            return None
    if id(value) in by_object:
        return by_object[id(value)]
    documented = inspect.isclass(parent) and part in vars(parent) and not part.startswith("_")
    if documented and id(parent) in by_object:  # a member the class page lists (:members:)
        return f"{by_object[id(parent)]}.{part}"
    return None


_TARGETS: dict | None = None


class CodeLinks(SphinxTransform):
    """Inline code naming an API object or a published page becomes a link to its page."""

    default_priority = 500

    def apply(self, **kwargs) -> None:
        api_page = self.env.docname.startswith(("generated/", "api"))  # names: their own roles
        global _TARGETS
        if _TARGETS is None:
            _TARGETS = _api_targets()
        for literal in list(self.document.findall(nodes.literal)):
            if isinstance(literal.parent, (nodes.reference, addnodes.pending_xref)):
                continue
            if any(isinstance(a, (nodes.title, nodes.literal_block)) for a in _ancestors(literal)):
                continue
            text = literal.astext()
            target = _page_of_path(text, self.env.found_docs)
            domain, kind = ("std", "doc")
            if target is None and not api_page:
                target, (domain, kind) = _resolve(text, _TARGETS), ("py", "obj")
            if target is None:
                continue
            xref = addnodes.pending_xref(
                "",
                refdomain=domain,
                reftype=kind,
                reftarget=target,
                refexplicit=True,
                refwarn=True,
                refdoc=self.env.docname,
            )
            literal.replace_self(xref)
            xref += literal


def _ancestors(node):
    while node.parent is not None:
        node = node.parent
        yield node


def _page_of_path(text: str, found_docs) -> str | None:
    for prefix, folder in _PATHS:
        if text.startswith(prefix):
            stem = text.removeprefix(prefix).rsplit(".", 1)[0]
            docname = folder + ("index" if stem == "README" and folder == "results/" else stem)
            if docname in found_docs:
                return "/" + docname
    return None


def setup(app):
    app.connect("builder-inited", _publish_results)
    app.add_transform(CodeLinks)
