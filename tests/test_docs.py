"""The documentation site builds with Sphinx, warnings as errors and every cross-reference
resolved (``-W -n``): every page, every included part of an example script, the gallery, the
published benchmark results, and one API page per public object from the docstrings."""

import html
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from filelock import FileLock
from sphinx_gallery.utils import get_md5sum

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
GALLERY = ROOT / "docs" / "auto_examples"

#: A reST role or directive shown as text: a docstring or page the parsers did not understand.
RAW_REST = re.compile(
    r":(math|func|class|meth|mod|attr|data|obj|ref|doc):`|\.\. (math|note|image)::"
)


def _text(page: Path) -> str:
    """The visible prose of a page: no scripts, no code blocks (which may quote reST)."""
    markup = page.read_text(encoding="utf-8")
    markup = re.sub(r"<(script|pre)\b.*?</\1>", "", markup, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site, built once per test session. Sphinx writes into the source tree too (the
    gallery's pages and timings, the API stubs), so two xdist workers each building their own
    copy at the same time could read each other's half-written files: the workers share one
    build, made by whichever takes the lock first."""
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # the session's directory, common to the workers
    out, built = shared / "site", shared / "site.built"
    with FileLock(str(shared / "site.lock")):
        if not built.exists():
            result = subprocess.run(
                [sys.executable, "-m", "sphinx", "-W", "-n", "--keep-going", "-q", "-b", "html",
                 "docs", str(out)],
                cwd=ROOT, capture_output=True, text=True, timeout=900,
                env={**os.environ, "PYMC_SLE_DOCS_OFFLINE": "1"},
            )  # fmt: skip
            assert result.returncode == 0, result.stderr[-5000:]
            built.touch()
    return out


def test_every_page_is_there(site):
    for page in ("index.html", "how-to/mesh.html", "how-to/new-data.html", "api.html",
                 "generated/pymc_sle.SLE.html", "generated/pymc_sle.distances.geodesic.html",
                 "generated/pymc_sle.distances.pairwise.html", "auto_examples/index.html",
                 "auto_examples/mesh_gp.html", "benchmarks/studies.html", "results/index.html",
                 "results/nuts_convergence.html", "_images/why_sle.png"):  # fmt: skip
        assert (site / page).exists(), page


def test_no_page_shows_raw_rest(site):
    shown = []
    for page in site.rglob("*.html"):
        if page.relative_to(site).parts[0] in ("_sources", "_static", "_modules"):
            continue
        match = RAW_REST.search(_text(page))
        if match:
            shown.append(f"{page.relative_to(site)}: {match.group(0)}")
    assert not shown, shown


def test_api_pages_render_the_docstrings(site):
    sle = (site / "generated/pymc_sle.SLE.html").read_text(encoding="utf-8")
    assert "radius_max" in sle and "feature mode" in sle
    assert '<span class="math notranslate nohighlight">' in sle  # math for MathJax, not text
    pairwise = _text(site / "generated/pymc_sle.distances.pairwise.html")
    assert "n_jobs" in pairwise and "chunk_size" in pairwise  # own rows, not one grouped row


def test_how_tos_show_focused_snippets_and_link_the_gallery(site):
    mesh = _text(site / "how-to/mesh.html")
    code = html.unescape(re.sub(r"<[^>]+>", "", (site / "how-to/mesh.html").read_text()))
    assert "geodesic(mesh.vertices, mesh.faces, cols=train)" in code  # the example, in part
    assert "argparse" not in code  # not the whole script
    assert "examples gallery" in mesh


def test_results_pages_are_in_the_navigation_and_render_lists(site):
    index = (site / "results/index.html").read_text(encoding="utf-8")
    assert "nuts_convergence.html" in index
    assert index.count("<li>") >= 5  # the README's bullet lists are lists, not one paragraph


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda path: path.name)
def test_the_committed_gallery_page_comes_from_this_script(script):
    """The gallery's pages are generated once per change of a script and committed (see
    docs/conf.py); a page whose checksum no longer matches its script shows another script's
    output, and a build would silently replace it by the bare code."""
    checksum = get_md5sum(script, mode="t")  # what sphinx-gallery compares
    recorded = GALLERY / f"{script.name}.md5"
    assert recorded.exists() and recorded.read_text() == checksum, (
        f"the gallery page of {script.name} is out of date: regenerate it with "
        f"PYMC_SLE_GALLERY_RUN='{script.stem}' sphinx-build -b html docs docs/_build/html "
        f"and commit docs/auto_examples/"
    )


def test_gallery_pages_show_output_figures_and_running_time(site):
    for script in EXAMPLES:
        page = (site / "auto_examples" / f"{script.stem}.html").read_text(encoding="utf-8")
        assert "sphx-glr-script-out" in page, script.name  # what the script printed
        assert "Total running time of the script" in page, script.name
        assert "could not link to a BLAS" not in page, script.name
    for script in EXAMPLES:  # a figure of its own: the gallery's thumbnail is not a placeholder
        name = script.stem
        assert f"sphx_glr_{name}_001.png" in (site / f"auto_examples/{name}.html").read_text()
    index = (site / "auto_examples/index.html").read_text(encoding="utf-8")
    assert "no_image" not in index and " -- " not in _text(site / "auto_examples/index.html")
    times = _text(site / "auto_examples/sg_execution_times.html")
    assert all(script.name in times for script in EXAMPLES)


def _pages(site: Path):
    for page in site.rglob("*.html"):
        if page.relative_to(site).parts[0] not in ("_sources", "_static", "_modules"):
            yield page


def test_no_page_shows_formatter_comments_temporary_paths_or_internal_names(site):
    shown = []
    for page in _pages(site):
        markup = page.read_text(encoding="utf-8")
        scripts_out = re.sub(r"<script\b.*?</script>", "", markup, flags=re.S)
        visible = html.unescape(re.sub(r"<[^>]+>", "", scripts_out))
        for pattern in (r"fmt: skip", r"/tmp/\S+", r"gallery-\w+-\w{8}"):
            shown += [f"{page.relative_to(site)}: {m}" for m in re.findall(pattern, visible)]
        for heading in re.findall(r"<h[1-3][^>]*>(.*?)</h[1-3]>", markup, flags=re.S):
            text = html.unescape(re.sub(r"<[^>]+>", "", heading))
            if re.search(r"\.(md|png|csv|json)\b|\bissue \d+", text):
                shown.append(f"{page.relative_to(site)}: heading {text!r}")
    assert not shown, shown[:20]


def test_api_pages_are_titled_by_the_object_s_short_name(site):
    long = []
    for page in (site / "generated").glob("*.html"):
        title = re.search(r"<h1>(.*?)<a class=\"headerlink\"", page.read_text(), flags=re.S)
        name = page.stem.rsplit(".", 1)[-1]
        if title and html.unescape(title.group(1)).strip() not in (name, page.stem):
            long.append((page.name, title.group(1)))
    assert not long, long[:10]


HOW_TOS = sorted(p.stem for p in (ROOT / "docs" / "how-to").glob("*.md") if p.stem != "index")
NARRATIVE = ["index", "getting-started", "concepts", "performance", "distances"]
NARRATIVE += [f"how-to/{stem}" for stem in HOW_TOS]
#: Repository folders the site publishes, and where.
PUBLISHED_PATHS = (
    ("docs/", ""),
    ("benchmarks/results/", "results/"),
    ("examples/", "auto_examples/"),
)
#: Inline code, whose text may name a repository path that the site publishes as a page.
PATH_CODE = re.compile(
    r'<code class="docutils literal notranslate">((?:<span class="pre">[^<]*</span>)+)</code>'
)


@pytest.mark.parametrize("name", NARRATIVE)
def test_narrative_pages_link_into_the_api_and_to_the_pages_of_the_paths_they_name(site, name):
    markup = (site / f"{name}.html").read_text(encoding="utf-8")
    article = markup.split('<article class="bd-article">', 1)[1].split("</article>", 1)[0]
    assert 'href="' + "../" * name.count("/") + "generated/" in article, name
    outside_links = re.sub(r"<a\b.*?</a>", "", article, flags=re.S)
    unlinked = []
    for match in PATH_CODE.finditer(outside_links):
        text = html.unescape(re.sub(r"<[^>]+>", "", match.group(1)))
        for prefix, folder in PUBLISHED_PATHS:
            stem = text.removeprefix(prefix).rsplit(".", 1)[0]
            if text.startswith(prefix) and (site / f"{folder}{stem}.html").exists():
                unlinked.append(text)
    assert not unlinked, unlinked
