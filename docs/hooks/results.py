"""MkDocs hook: publish ``benchmarks/results/`` under ``results/`` in the site.

The benchmark scripts write their tables and figures next to their data; the documentation shows
and links them from there instead of keeping copies under ``docs/``. Links from a results page
into ``docs/`` (written for readers of the repository) are rewritten to the site's pages.
"""

from pathlib import Path

from mkdocs.structure.files import File

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
PUBLISHED = {".md", ".png", ".csv", ".json"}


def on_files(files, config):
    for path in sorted(RESULTS.rglob("*")):
        if path.is_file() and path.suffix in PUBLISHED:
            uri = "results/" + path.relative_to(RESULTS).as_posix()
            files.append(File.generated(config, uri, abs_src_path=str(path)))
    return files


def on_page_markdown(markdown, page, config, files):
    uri = page.file.src_uri
    if uri.startswith("results/"):
        depth = uri.count("/")  # results/x.md -> 1: "../../docs/" in the repo is "../" here
        markdown = markdown.replace("](" + "../" * (depth + 1) + "docs/", "](" + "../" * depth)
    return markdown
