"""Small Sphinx helpers of the qmatch_sklearn documentation.

* ``% include-results: NAME.md`` (optionally followed by `` shift=N`` to
  demote its headings by N levels) on a line of its own, in a Markdown page,
  is replaced by ``benchmarks/results/NAME.md`` at read time, so the pages
  always show the committed results. Relative links in that file are kept when
  they point at another results file that has a page under ``benchmarks/``,
  and turned into plain text with the path otherwise (a CSV, a script);
  images are re-rooted. A file that does not exist (yet) is replaced by the
  page's fallback text given after ``% fallback:`` lines, or by nothing.
  Figures in ``benchmarks/results`` that no results file shows are appended:
  ``NAME*.png`` / ``.svg`` to the page of ``NAME.md``, the rest to the
  benchmarks index.
* API pages: inherited scikit-learn boilerplate (``set_*_request``,
  ``get_metadata_routing``) is left out, and the links of inherited
  scikit-learn docstrings into scikit-learn's own documentation become text.
* :class:`ExampleOrder`, the order of the gallery (sphinx-gallery imports it
  by name, which keeps the configuration picklable).
"""

import os
import posixpath
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
FIGURE_SUFFIXES = (".png", ".svg", ".jpg", ".jpeg", ".gif")

#: Gallery order: the quick start first, then by topic. Unlisted examples follow, by name.
EXAMPLE_ORDER = [
    "quickstart.py",
    "few_shot_curve.py",
    "adult_mixed_types.py",
    "pretraining_curves.py",
    "embeddings_2d.py",
    "fine_tuning_semi_supervised.py",
    "grid_search.py",
]


class ExampleOrder:
    """sphinx-gallery ``within_subsection_order``: the order of :data:`EXAMPLE_ORDER`."""

    def __init__(self, src_dir):
        self.src_dir = src_dir

    def __call__(self, filename):
        name = Path(filename).name
        rank = EXAMPLE_ORDER.index(name) if name in EXAMPLE_ORDER else len(EXAMPLE_ORDER)
        return (rank, name)

    def __repr__(self):
        return "<ExampleOrder>"


_MARKER = re.compile(
    r"^% include-results: (?P<name>\S+)(?: shift=(?P<shift>\d))?\s*$", re.MULTILINE
)
_FALLBACK = re.compile(r"^% fallback: ?(?P<text>.*)$", re.MULTILINE)
# [text](target) and ![alt](target); targets without spaces, optional "title".
_LINK = re.compile(
    r"(?P<bang>!?)\[(?P<text>[^\]]*)\]\((?P<target>[^)\s]+)(?P<title>\s+\"[^\"]*\")?\)"
)


def _figures():
    if not RESULTS.is_dir():
        return []
    return sorted(p for p in RESULTS.iterdir() if p.suffix.lower() in FIGURE_SUFFIXES)


def _referenced_figures():
    """Names of figures that some results Markdown file already shows."""
    names = set()
    if RESULTS.is_dir():
        for md in RESULTS.glob("*.md"):
            for match in _LINK.finditer(md.read_text(encoding="utf-8")):
                if match["bang"]:
                    names.add(Path(match["target"]).name)
    return names


def _unshown_figures(stem, page_dir):
    """Figures no results file shows that belong on the page of ``stem``.md.

    ``NAME*.png`` belongs to the page of ``NAME.md`` when that page exists
    beside this one; every other such figure goes to the README's page.
    """
    pages = sorted((p.stem for p in page_dir.glob("*.md") if p.stem != "index"), key=len,
                   reverse=True)
    referenced = _referenced_figures()
    chosen = []
    for figure in _figures():
        if figure.name in referenced:
            continue
        owner = next((page for page in pages if figure.stem.startswith(page)), "README")
        if owner == stem:
            chosen.append(figure)
    return chosen


def _rewrite_links(text, results_from_page, page_dir):
    """Make the relative links of a results file valid from the page that includes it."""

    def replace(match):
        target = match["target"]
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            return match[0]  # URL or anchor
        path = target.partition("#")[0]
        if match["bang"]:
            return f"![{match['text']}]({results_from_page}/{path}{match['title'] or ''})"
        if path.endswith(".md") and "/" not in path and (page_dir / path).exists():
            return match[0]  # another results file with its own page, same name
        shown = posixpath.normpath(f"benchmarks/results/{path}")
        return f"{match['text']} (`{shown}`)" if match["text"] != path else f"`{shown}`"

    return _LINK.sub(replace, text)


def _shift_headings(text, shift):
    """Demote Markdown ATX headings by ``shift`` levels, leaving code fences alone."""
    lines, fence = [], None
    for line in text.splitlines():
        stripped = line.lstrip()
        if stripped.startswith(("```", "~~~")):
            marker = stripped[:3]
            fence = None if fence == marker else (fence or marker)
        elif fence is None and re.match(r"#{1,6} ", line):
            line = "#" * shift + line
        lines.append(line)
    return "\n".join(lines) + "\n"


def _figure_block(figures, results_from_page):
    lines = ["```{rubric} More figures in benchmarks/results", "```", ""]
    for figure in figures:
        lines += [f"```{{figure}} {results_from_page}/{figure.name}", f":alt: {figure.stem}", "",
                  f"`benchmarks/results/{figure.name}`", "```", ""]
    return "\n".join(lines)


def _include_results(app, docname, source):
    if "% include-results:" not in source[0]:
        return
    page_dir = (Path(app.srcdir) / docname).parent
    results_from_page = Path(os.path.relpath(RESULTS, page_dir)).as_posix()
    text = source[0]
    fallback = "\n".join(m["text"] for m in _FALLBACK.finditer(text))
    text = _FALLBACK.sub("", text)

    def replace(match):
        name = match["name"]
        path = RESULTS / name
        if path.exists():
            app.env.note_dependency(str(path))
            body = _rewrite_links(path.read_text(encoding="utf-8"), results_from_page, page_dir)
            if match["shift"]:
                body = _shift_headings(body, int(match["shift"]))
        else:
            body = fallback
        figures = _unshown_figures(Path(name).stem, page_dir)
        if figures:
            body += "\n\n" + _figure_block(figures, results_from_page)
        return body

    source[0] = _MARKER.sub(replace, text)


# Members that every scikit-learn estimator inherits and that say nothing about ours.
_SKIPPED_MEMBERS = re.compile(r"^(set_\w+_request|get_metadata_routing)$")
# Roles in inherited scikit-learn docstrings that point into scikit-learn's own docs.
_SKLEARN_ROLE = re.compile(r":(?:ref|term):`(?:(?P<text>[^`<]*?)\s*<[^`>]*>|(?P<plain>[^`]*))`")


def _skip_member(app, what, name, obj, skip, options):
    if _SKIPPED_MEMBERS.match(name):
        return True
    return None


def _unlink_sklearn_roles(app, what, name, obj, options, lines):
    """Inherited scikit-learn methods (``get_params``, ``set_output``, ``score``)
    cross-reference scikit-learn's user guide and glossary, which this site does
    not have (and the build cannot reach): keep their text, drop the link."""
    module = getattr(obj, "__module__", "") or ""
    if not module.startswith("sklearn"):
        return
    for i, line in enumerate(lines):
        lines[i] = _SKLEARN_ROLE.sub(lambda m: (m["text"] or m["plain"] or "").strip(), line)


def setup(app):
    app.connect("source-read", _include_results)
    app.connect("autodoc-skip-member", _skip_member)
    app.connect("autodoc-process-docstring", _unlink_sklearn_roles)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
