"""The ```python blocks of README.md and docs/*.md run, page by page, as a reader would.

The pages are discovered, not listed: README.md and every docs/*.md holding a ```python
fence is a case. A page's blocks run in order in one namespace (a later block uses the
names an earlier one made), in a fresh temporary working directory, so files a snippet
writes land there. A block with doctest prompts (``>>>``) runs under doctest (ELLIPSIS,
NORMALIZE_WHITESPACE) and must print what it shows; any other block is executed and must
not raise. A fence may be indented (a block inside a list item).

A block that cannot run in a test is fenced ```python no-run: readers still get Python
highlighting, and NO_RUN below says how many each page has, so a new one is a deliberate
change here. The blocks, and why:

- docs/design.md, the `unary`/`binary` table rows: an excerpt of
  funcgrad/core/prims/elementwise.py, not user code (run, it would register the
  primitives a second time). test_design_excerpt_matches_the_source checks it is still
  the source's text instead.
- docs/jit.md, the `device="cuda:0"` block: needs an NVIDIA GPU with CuPy, which the
  test machines lack (tests/ covers the GPU path where one is visible).

Snippets that show an error catch it and print the message, or are doctest blocks with a
Traceback. docs/distributed.md runs as a world of one process (no `mpiexec`), where every
collective returns its input. Shell commands (`make demo`, `pip install`, `mpiexec -n 2
...`) are ```sh/```bash fences, not Python. Pages whose examples need an optional
dependency (pyproject's extras) skip, naming it, when it is not installed.
"""

import doctest
import importlib.util
import logging
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

import funcgrad as fg

ROOT = Path(__file__).resolve().parent.parent
OPTIONFLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE

# how many ```python no-run blocks each page has (the reasons are in the docstring above)
NO_RUN: dict[str, int] = {"docs/design.md": 1, "docs/jit.md": 1}
MAX_NO_RUN_PER_PAGE = 2  # a page is for reading code that runs
# pages whose examples import an optional dependency
NEEDS: dict[str, tuple[str, ...]] = {
    "docs/data.md": ("sklearn",),
    "docs/export.md": ("onnx", "onnxruntime"),
    "docs/distributed.md": ("mpi4py",),
}

# an opening fence: indentation, three or more backticks, the info string
_FENCE = re.compile(r"^[ \t]*(?P<ticks>`{3,})(?P<info>[^`]*)$")


@dataclass
class Block:
    """One fenced code block of a page."""

    info: str  # the fence's info string: "python", "python no-run", "sh", ...
    line: int  # the 1-based line number of the block's first code line
    code: str  # dedented by the fence's indentation

    @property
    def runs(self) -> bool:
        return self.info == "python"

    @property
    def no_run(self) -> bool:
        return self.info.split()[:1] == ["python"] and "no-run" in self.info.split()[1:]


def code_blocks(text: str) -> list[Block]:
    """Every fenced block of a Markdown text, in order."""
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        i += 1
        if opening is None:
            continue
        start, ticks = i, opening["ticks"]
        while i < len(lines) and lines[i].strip() != ticks:
            i += 1
        body = "\n".join(lines[start:i]) + "\n"
        blocks.append(Block(opening["info"].strip(), start + 1, textwrap.dedent(body)))
        i += 1  # past the closing fence
    return blocks


def _page_name(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


PAGES = [_page_name(path) for path in [ROOT / "README.md", *sorted(ROOT.glob("docs/*.md"))]
         if any(block.runs or block.no_run for block in code_blocks(path.read_text()))]


def test_pages_are_found():
    assert "README.md" in PAGES
    assert "docs/tour.md" in PAGES
    assert "docs/jit.md" in PAGES


def test_tables_are_accurate():
    """NO_RUN and NEEDS name pages that exist and have Python blocks; NO_RUN stays small."""
    assert all(0 < n <= MAX_NO_RUN_PER_PAGE for n in NO_RUN.values()), NO_RUN
    for table in (NO_RUN, NEEDS):
        stale = sorted(set(table) - set(PAGES))
        assert not stale, f"pages without ```python blocks (or that don't exist): {stale}"


def test_fences_parse():
    blocks = code_blocks("text\n```python\nx = 1\n```\n  ```python no-run\n  y = 2\n  ```\n")
    assert [(b.info, b.line, b.code, b.runs, b.no_run) for b in blocks] == [
        ("python", 3, "x = 1\n", True, False), ("python no-run", 6, "y = 2\n", False, True)]


def test_design_excerpt_matches_the_source():
    """design.md's no-run excerpt is the primitive table's text, line for line."""
    excerpt = next(b for b in code_blocks((ROOT / "docs/design.md").read_text()) if b.no_run)
    source = (ROOT / "funcgrad/core/prims/elementwise.py").read_text()
    normalize = lambda s: " ".join(s.split())
    for statement in re.split(r"\n(?=\S)", excerpt.code.strip()):
        assert normalize(statement) in normalize(source), statement


@pytest.fixture
def restore_global_state():
    """Pages configure logging and switch fg.config flags; put them back afterwards."""
    logger, root = logging.getLogger("funcgrad.jit"), logging.getLogger()
    level, handlers = logger.level, list(root.handlers)
    config = {name: getattr(fg.config, name) for name in fg.config._DEFAULTS}
    yield
    logger.setLevel(level)
    root.handlers[:] = handlers  # logging.basicConfig() may have added one
    for name, value in config.items():
        fg.config.update(name, value)


@pytest.mark.parametrize("page", PAGES)
def test_page_examples(page, tmp_path, monkeypatch, restore_global_state):
    monkeypatch.chdir(tmp_path)  # snippets that write files (fg.save, to_onnx) write here
    missing = [name for name in NEEDS.get(page, ()) if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"{page}'s examples need {', '.join(missing)} (not installed)")
    path = ROOT / page
    blocks = code_blocks(path.read_text())
    unknown = [(b.line, b.info) for b in blocks
               if b.info.split()[:1] in (["python"], ["py"], ["pycon"], ["python3"])
               and not (b.runs or b.no_run)]
    assert not unknown, f"{page}: Python fences other than python / python no-run: {unknown}"
    skipped = sum(block.no_run for block in blocks)
    assert skipped == NO_RUN.get(page, 0), (
        f"{page} has {skipped} ```python no-run blocks, NO_RUN expects "
        f"{NO_RUN.get(page, 0)}: make the new one run, or add it and its reason")
    namespace = {"__name__": "__docs__"}
    for block in (block for block in blocks if block.runs):
        where = f"{page}, the block at line {block.line}"
        if re.search(r"^\s*>>>", block.code, re.MULTILINE):
            test = doctest.DocTestParser().get_doctest(
                block.code, namespace, where, str(path), block.line - 1)
            report = []
            runner = doctest.DocTestRunner(optionflags=OPTIONFLAGS)
            runner.run(test, out=report.append, clear_globs=False)
            assert runner.failures == 0, f"{where}:\n" + "".join(report)
        else:
            # padded so that a traceback names the page's own line numbers
            source = "\n" * (block.line - 1) + block.code
            exec(compile(source, str(path), "exec"), namespace)
