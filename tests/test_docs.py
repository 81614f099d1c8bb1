"""Every Python code block of the README and the user guide runs, as written.

So that a snippet can never again drift from the code, this module extracts the
code blocks of ``README.md``, ``docs/index.rst`` and ``docs/user_guide/*.rst``
and runs each one as a test (test id: ``file:line`` of the block).

What runs
    In Markdown, fences opened with ``python``, ``py`` or ``pycon``. In
    reStructuredText, ``.. code-block::`` (or ``.. code::``, ``.. sourcecode::``)
    directives whose language is ``python``, ``py`` or ``pycon``, and literal
    blocks (after ``::``) or doctest paragraphs whose first line starts with
    the ``>>>`` prompt. Blocks in another language (``bash``, output listings,
    the project layout) are not Python and are not run. ``pycon`` and ``>>>``
    blocks run as doctests (their printed output is compared, with ELLIPSIS
    and NORMALIZE_WHITESPACE); other blocks are executed as a script.

One page, one namespace
    The blocks of a page run in order in one namespace, so a block may use
    names defined by an earlier block of the *same* page (a page typically
    starts with a block that loads a small data set); nothing is shared
    between pages. When a block's test runs in a process that has not run the
    page's earlier blocks (pytest-xdist spreads tests over workers, ``-k``
    selects one), those blocks are run first as its setup. When a block fails,
    the page's later blocks fail too, naming it.

Files
    Each page runs in its own temporary working directory, so files that
    snippets write (``joblib.dump(pipe, "model.joblib")``) never land in the
    repository.

Blocks that cannot run in CI
    Mark them right above the block, visibly in the source: in
    reStructuredText with the comment ``.. skip-ci: <reason>``, in Markdown
    with ``<!-- skip-ci: <reason> -->``. The block's test is then reported as
    skipped with that reason (never silently), and the page's later blocks
    must not depend on it. Use it only for what CI cannot do (a GPU, a
    download), not for slowness.

Keep snippets fast
    They run on the small data they define themselves (scikit-learn's bundled
    data sets) with a small ``max_epochs`` where a network trains, written as a
    user would write them; this module should take a few seconds per page.
"""

import doctest
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from threadpoolctl import threadpool_limits

import qmatch_sklearn  # noqa: F401  (the checkout's copy, imported before any chdir)

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "docs" / "index.rst",
         *sorted((ROOT / "docs" / "user_guide").glob("*.rst"))]

PYTHON_LANGUAGES = {"python", "py", "python3", "pycon"}
DOCTEST_FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


@dataclass
class Block:
    page: Path
    line: int  # 1-based line of the fence or directive
    first_code_line: int  # 1-based line of the block's first line of code
    source: str
    doctest: bool
    skip: str | None = None  # the reason of a skip-ci marker

    @property
    def id(self):
        page = self.page.relative_to(ROOT) if self.page.is_relative_to(ROOT) else self.page
        return f"{page}:{self.line}"


def _indent(line):
    return len(line) - len(line.lstrip())


def _marker_above(lines, index, pattern):
    """The skip-ci reason on the last non-blank line before ``lines[index]``, if any."""
    for previous in reversed(lines[:index]):
        if previous.strip():
            match = pattern.match(previous)
            return match.group(1) if match else None
    return None


_FENCE = re.compile(r"^\s*```\s*([\w+-]*)")
_MD_SKIP = re.compile(r"^\s*<!--\s*skip-ci:\s*(.+?)\s*-->\s*$")


def markdown_blocks(page):
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks, index = [], 0
    while index < len(lines):
        match = _FENCE.match(lines[index])
        if not match:
            index += 1
            continue
        language, start = match.group(1).lower(), index
        end = start + 1
        while end < len(lines) and not lines[end].strip().startswith("```"):
            end += 1
        if language in PYTHON_LANGUAGES:
            blocks.append(Block(
                page, start + 1, start + 2, "\n".join(lines[start + 1 : end]) + "\n",
                doctest=language == "pycon", skip=_marker_above(lines, start, _MD_SKIP),
            ))
        index = end + 1
    return blocks


_DIRECTIVE = re.compile(r"^\s*\.\. (?:code-block|code|sourcecode)::\s*(\S*)\s*$")
_LITERAL = re.compile(r"::\s*$")
_RST_SKIP = re.compile(r"^\s*\.\. skip-ci:\s*(.+?)\s*$")


def _indented_body(lines, start, indent):
    """(first, end) of the lines after ``start`` indented deeper than ``indent``,
    skipping the directive's options; ``end`` is exclusive, trailing blanks dropped."""
    index = start + 1
    while index < len(lines) and (
        not lines[index].strip() or re.match(r"^\s+:[\w-]+:", lines[index])
    ):
        index += 1
    first = end = index
    while index < len(lines) and (not lines[index].strip() or _indent(lines[index]) > indent):
        index += 1
        if lines[index - 1].strip():
            end = index
    return first, end


def rst_blocks(page):
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks, index = [], 0
    while index < len(lines):
        line = lines[index]
        directive = _DIRECTIVE.match(line)
        is_literal = not directive and _LITERAL.search(line) and not line.lstrip().startswith("..")
        is_doctest = line.lstrip().startswith(">>>") and (
            index == 0 or not lines[index - 1].strip()
        )
        if not (directive or is_literal or is_doctest):
            index += 1
            continue
        if is_doctest:  # a doctest paragraph: runs to the next blank line
            first, end = index, index
            while end < len(lines) and lines[end].strip():
                end += 1
            language = "pycon"
        else:
            first, end = _indented_body(lines, index, _indent(line))
            language = directive.group(1).lower() if directive else (
                "pycon" if first < len(lines) and lines[first].lstrip().startswith(">>>")
                else "text"
            )
        if language in PYTHON_LANGUAGES and end > first:
            blocks.append(Block(
                page, index + 1, first + 1,
                textwrap.dedent("\n".join(lines[first:end])) + "\n",
                doctest=language == "pycon", skip=_marker_above(lines, index, _RST_SKIP),
            ))
        index = max(end, index + 1)
    return blocks


def page_blocks(page):
    return markdown_blocks(page) if page.suffix == ".md" else rst_blocks(page)


BLOCKS = {page: page_blocks(page) for page in PAGES}
ALL_BLOCKS = [block for blocks in BLOCKS.values() for block in blocks]


def run_block(block, namespace):
    # One BLAS thread, as conftest.py gives torch one thread: on the shared 2-core
    # machine a LogisticRegression on 1,797 digits embeddings took 19 s with
    # OpenBLAS's 2 threads against 0.25 s with one.
    with threadpool_limits(limits=1):
        _run_block(block, namespace)


def _run_block(block, namespace):
    if block.doctest:
        test = doctest.DocTestParser().get_doctest(
            block.source, namespace, block.id, str(block.page), block.first_code_line - 1
        )
        report = []
        runner = doctest.DocTestRunner(optionflags=DOCTEST_FLAGS)
        runner.run(test, out=report.append, clear_globs=False)
        namespace.update(test.globs)
        if runner.failures:
            raise AssertionError("".join(report))
    else:
        # Padding keeps the line numbers of tracebacks those of the page.
        padded = "\n" * (block.first_code_line - 1) + block.source
        exec(compile(padded, str(block.page), "exec"), namespace)


@dataclass
class PageRun:
    """What one process has run of a page: its namespace and working directory."""

    directory: Path
    namespace: dict = field(default_factory=lambda: {"__name__": "__main__"})
    done: int = 0  # blocks of the page run so far
    failed: str | None = None  # id of the block that failed


_RUNS = {}


@pytest.mark.parametrize("block", ALL_BLOCKS, ids=[block.id for block in ALL_BLOCKS])
def test_code_block_runs(block, tmp_path_factory, monkeypatch):
    blocks = BLOCKS[block.page]
    position = blocks.index(block)
    run = _RUNS.get(block.page)
    if run is None or run.done > position:
        run = _RUNS[block.page] = PageRun(tmp_path_factory.mktemp(block.page.stem))
    monkeypatch.chdir(run.directory)
    while run.done < position:  # earlier blocks of the page this process has not run
        earlier = blocks[run.done]
        run.done += 1
        if earlier.skip is None and run.failed is None:
            try:
                run_block(earlier, run.namespace)
            except BaseException:
                run.failed = earlier.id
    if block.skip is not None:
        run.done += 1
        pytest.skip(f"skip-ci: {block.skip}")
    if run.failed is not None:
        run.done += 1
        pytest.fail(f"not run: the earlier block {run.failed} of this page failed")
    run.done += 1
    try:
        run_block(block, run.namespace)
    except BaseException:
        run.failed = block.id
        raise


def test_pages_have_blocks():
    """The extractor finds the blocks (a change of syntax must not make this test vacuous)."""
    assert BLOCKS[ROOT / "README.md"], "no python block found in README.md"
    assert sum(len(BLOCKS[page]) for page in PAGES if "user_guide" in page.parts) >= 5


def test_the_quickstart_block_is_not_python():
    """CI takes its test command from the README's bash Quickstart block: it must stay bash."""
    quickstart = (ROOT / "README.md").read_text(encoding="utf-8").split("## Quickstart", 1)[1]
    assert quickstart.lstrip().split("```", 2)[1].startswith("bash")


def test_extractor_finds_every_kind_of_block(tmp_path):
    rst = tmp_path / "page.rst"
    rst.write_text(textwrap.dedent("""\
        Title
        =====

        .. code-block:: python
           :caption: options are skipped

           x = 1

              y = 2

        Text::

           not python

        Also::

           >>> x + 1
           2

        >>> x + 2
        3

        .. skip-ci: needs a GPU

        .. code-block:: python

           import cuda_only

        .. code-block:: bash

           echo no
        """))
    blocks = rst_blocks(rst)
    assert [(b.line, b.doctest, b.skip) for b in blocks] == [
        (4, False, None), (15, True, None), (20, True, None), (25, False, "needs a GPU")
    ]
    assert blocks[0].source == "x = 1\n\n   y = 2\n"
    assert blocks[0].first_code_line == 7
    assert blocks[1].source == ">>> x + 1\n2\n"

    md = tmp_path / "page.md"
    md.write_text("```python\na = 1\n```\n\n<!-- skip-ci: downloads -->\n```py\nb\n```\n"
                  "```bash\nls\n```\n```pycon\n>>> a\n1\n```\n")
    blocks = markdown_blocks(md)
    assert [(b.line, b.source, b.doctest, b.skip) for b in blocks] == [
        (1, "a = 1\n", False, None), (6, "b\n", False, "downloads"), (12, ">>> a\n1\n", True, None)
    ]


def test_doctest_blocks_compare_their_output(tmp_path):
    page = tmp_path / "page.rst"
    namespace = {}
    run_block(Block(page, 1, 1, ">>> x = 40 + 2\n>>> x\n42\n", doctest=True), namespace)
    assert namespace["x"] == 42  # later blocks of the page see it
    with pytest.raises(AssertionError, match="Expected"):
        run_block(Block(page, 5, 5, ">>> x\n41\n", doctest=True), namespace)


def test_data_page_selects_the_str_column():
    """data.rst's selectors keep a pandas 3 ``str`` column (``dtype_include="category"``
    silently dropped it), and the snippet's encoder sees the one-hot columns."""
    page = ROOT / "docs" / "user_guide" / "data.rst"
    namespace = {}
    run_block(next(b for b in BLOCKS[page] if "make_column_selector" in b.source), namespace)
    X, preprocessor = namespace["X"], namespace["preprocessor"]
    assert X["size"].dtype.kind not in "iufc"  # a text column, whatever pandas calls it
    selected = {name: list(columns) for name, _, columns in preprocessor.transformers_}
    assert selected["categorical"] == ["size"]
    assert len(selected["numeric"]) == 30
    assert namespace["Z"].shape == (len(X), 128)
