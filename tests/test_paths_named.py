"""Every path a file names exists (issue 52, item 2): moves leave comments and docs pointing at rooms that are gone.

Read: specviz/ (.py), assets/ (.js, .css, .html), tools/ and harness/ (every file), tests/ (.py, less this file,
whose examples name missing paths on purpose), docs/ (.md) and README.md. What counts as a path named:

- a path from the repository's root, `specviz/…`, `assets/…`, `tools/…`, `docs/…`, `tests/…`, `harness/…`,
  ending in a file's extension (`.py`, `.js`, `.json`, `.png`, `.gz`, …) or in `/` (a folder);
- a module in one of specviz's folders, written short: `engine/chain.py` (read as specviz/engine/chain.py);
- a module and a name in it, `engine/chain.ChainRun` or `specviz.engine.chain.ChainRun`: the module must exist and
  define the name at its top level (or, for `specviz.engine.Engine`, the package's `__init__` must);
- a file's bare name, `reveal.py`, `quiz.js`: a file of that name must exist somewhere in the repository (which
  folder is meant is for the reader; a name found nowhere is stale wherever it was meant);
- a relative link in docs/ and the README, `[…](engine.md#the-cpus-kernels)`: the file must exist and, for a
  Markdown file, have a heading with that anchor (GitHub's: lower case, punctuation dropped, spaces to hyphens).

Not counted:
- history: a path the word "was" or "were" precedes within 60 characters, with no `)`, `;`, `—` or `→` between
  (`medusa.py (was heads.py)`, "was `specviz.engine.pairs` until issue 52", `(was view/reveal.py, view/quiz.py
  and …)`); and the old side of a move: a path followed within 80 characters of its line by `→` or "split into",
  with no `;`, `)`, `—` or sentence end between (`view/words.py → view/one_line.py`);
- patterns, not paths: a path with `<…>`, `…` or `*` in it (`specviz/<name>.py`, `?example=…`);
- the few names in EXCEPTIONS, each with its reason.
"""

import ast
import functools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "specviz"
FOLDERS = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file())
READ = {"specviz": {".py"}, "assets": {".js", ".css", ".html"}, "tools": None, "harness": None, "tests": {".py"},
        "docs": {".md"}}

# Named on purpose though no such file is in the repository.
EXCEPTIONS = {
    "tests/artifacts/": "gitignored: the browser tests write their screenshots there",
    "docs/images/lecture-WIDTHxHEIGHT.png": "a --out default's pattern (tools/screenshot_lecture.py)",
    "docs/images/presenter-WIDTHxHEIGHT.png": "a --out default's pattern (tools/screenshot_presenter.py)",
    "assets/examples/NAME.json": "a flag's help naming any example (tools/screenshot_readme.py)",
    "specviz.folder.module": "the layering test's message: the form an import should take",
    "chart.html": "the benchmark's output, written into the folder its --out names",
    "plotly.js": "the browser library plotly's figures are drawn by, not a file of specviz",
    "wrappers.py": "a file of the `spaces` package that tests/app/test_zerogpu.py reads",
}

EXTENSIONS = r"(?:py|js|css|html|md|json|png|gz|txt|sh|bin|csv|ini|toml|svg)"
BEFORE = r"(?<![\w./<>*…-])"  # a path starts here, not inside a longer one
FULL = re.compile(BEFORE + r"((?:specviz|assets|tools|docs|tests|harness)/[\w./<>*…-]*?(?:\." + EXTENSIONS + r"\b|/))"
                  r"(?![\w-])")
SHORT = re.compile(BEFORE + r"((?:" + "|".join(FOLDERS) + r")/\w+\.py)\b")
MEMBER = re.compile(BEFORE + r"(specviz(?:\.\w+)+|(?:" + "|".join(FOLDERS) + r")/\w+(?:\.\w+)+)")
BARE = re.compile(BEFORE + r"(\w+\.(?:py|js|css|html))\b")
LINK = re.compile(r"\]\(([^)\s]*)\)")
WAS = re.compile(r"\b(?:was|were)\b[^)—→;]{0,60}$")
MOVED = re.compile(r"^[^;)—→\n]{0,80}?(?:→|split into)")


def read_files() -> list[Path]:
    files = [ROOT / "README.md"]
    for top, suffixes in READ.items():
        files += [p for p in sorted((ROOT / top).rglob("*")) if p.is_file() and "__pycache__" not in p.parts
                  and (suffixes is None or p.suffix in suffixes) and p != Path(__file__).resolve()]
    return files


@functools.cache
def names_in_repository() -> frozenset[str]:
    return frozenset(p.name for top in READ for p in (ROOT / top).rglob("*")) | {p.name for p in ROOT.iterdir()}


@functools.cache
def defined(module: Path) -> frozenset[str]:
    """The names a module binds at its top level: defs, classes, assignments, imports."""
    names = set()
    for node in ast.parse(module.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return frozenset(names)


def member_exists(parts: list[str]) -> bool:
    """['engine', 'chain', 'run_chain']: a folder, then a module, then a name it defines (names past it unchecked)."""
    here = PACKAGE
    for i, part in enumerate(parts):
        if (here / part / "__init__.py").is_file():
            here = here / part
        elif (here / f"{part}.py").is_file():
            return i + 1 == len(parts) or parts[i + 1] in defined(here / f"{part}.py")
        else:
            return part in defined(here / "__init__.py")
    return True


@functools.cache
def anchors(page: Path) -> frozenset[str]:
    """The anchors GitHub gives a Markdown file's headings (a repeated heading's get -1, -2, …)."""
    found, seen, fenced = set(), {}, False
    for line in page.read_text(encoding="utf-8").splitlines():
        fenced ^= line.startswith("```")
        heading = re.match(r"#{1,6} (.*)", line)
        if heading and not fenced:
            text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.group(1))
            slug = re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")
            found.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
            seen[slug] = seen.get(slug, 0) + 1
    return frozenset(found)


def historical(text: str, start: int, end: int) -> bool:
    """A path named as it was: "was" shortly before it, or the old side of a move (`a → b`, `a split into b`)."""
    return bool(WAS.search(text[max(0, start - 80):start]) or MOVED.match(text[end:end + 120].replace(". ", ";")))


def stale_paths(text: str, page: Path | None = None) -> list[str]:
    """The paths `text` names that do not exist; `page` (a Markdown file) for its relative links.

    >>> stale_paths("see engine/kernels.py and specviz/models/kernels.py (was `view/room.py`)")
    ['engine/kernels.py']
    """
    return [name for name, _ in stale_at(text, page)]


def stale_at(text: str, page: Path | None = None) -> list[tuple[str, int]]:
    """stale_paths, each with where it starts in `text`."""
    found = []

    def check(match: re.Match, exists) -> None:
        name = match.group(1)
        if (name in EXCEPTIONS or any(name.startswith(e) for e in EXCEPTIONS if e.endswith("/"))
                or re.search(r"[<>…*]", name) or historical(text, match.start(1), match.end(1)) or exists(name)):
            return
        found.append((name, match.start(1)))

    for m in FULL.finditer(text):
        check(m, lambda name: (ROOT / name).exists())
    for m in SHORT.finditer(text):
        check(m, lambda name: (PACKAGE / name).exists())
    for m in MEMBER.finditer(text):
        if m.group(1).rsplit(".", 1)[-1] not in {"py", "js", "css", "json", "html", "md"}:
            check(m, lambda name: member_exists(re.split(r"[./]", name.removeprefix("specviz."))))
    for m in BARE.finditer(text):
        check(m, lambda name: name in names_in_repository())
    if page is not None:
        for m in LINK.finditer(text):
            if not re.match(r"[a-z]+:", m.group(1)):
                check(m, lambda name: link_exists(page, name))
    return found


def link_exists(page: Path, link: str) -> bool:
    file, _, anchor = link.partition("#")
    target = (page.parent / file).resolve() if file else page
    return target.exists() and not (anchor and target.suffix == ".md" and anchor not in anchors(target))


def test_every_path_a_file_names_exists():
    stale = []
    for path in read_files():
        text = path.read_text(encoding="utf-8")
        for name, start in stale_at(text, path if path.suffix == ".md" else None):
            line = text.count("\n", 0, start) + 1
            stale.append(f"{path.relative_to(ROOT)}:{line}: {name}")
    assert not stale, "paths named that do not exist:\n" + "\n".join(stale)


def test_the_finder_reads_files_of_every_kind():
    kinds = {(p.relative_to(ROOT).parts[0] if len(p.relative_to(ROOT).parts) > 1 else "", p.suffix)
             for p in read_files()}
    assert {("specviz", ".py"), ("assets", ".js"), ("assets", ".css"), ("assets", ".html"), ("tools", ".py"),
            ("tools", ".sh"), ("harness", ".py"), ("tests", ".py"), ("docs", ".md"), ("", ".md")} <= kinds


def test_a_stale_path_of_each_form_is_found():
    assert stale_paths("// rendered by the server (view/room.py)") == ["view/room.py"]
    assert stale_paths("# see engine/kernels.py; specviz/engine/pairs.py; assets/gone.css") == [
        "specviz/engine/pairs.py", "assets/gone.css", "engine/kernels.py"]
    assert stale_paths("the steps are quiz.py's") == ["quiz.py"]
    assert stale_paths("filled in by lecture/rooms.quiz_facts, or specviz.engine.pairs.load_pair") == [
        "lecture/rooms.quiz_facts", "specviz.engine.pairs.load_pair"]
    assert stale_paths("[the code](gone.md), [a heading](code.md#no-such-heading)", ROOT / "docs" / "x.md") == [
        "gone.md", "code.md#no-such-heading"]


def test_what_exists_history_and_patterns_are_not_stale():
    assert stale_paths("engine/chain.py, specviz/models/kernels.py, tests/fixtures/golden/, record/trace.Trace, "
                       "specviz.engine.Engine, specviz.models.timer.time_calls, stage.py, assets/room.js") == []
    assert stale_paths("`medusa.py` (was `heads.py`); was `specviz.engine.pairs` until issue 52; "
                       "(was `view/reveal.py`, `view/quiz.py` and `view/room.py`'s facts)") == []
    assert stale_paths("`view/words.py` → `view/one_line.py`; `engine/heads.py` split into `engine/medusa.py`") == []
    assert stale_paths("`specviz/<name>.py`, `specviz/<folder>/…`, tests/artifacts/room.png, plotly.js") == []
    assert stale_paths("[the code](code.md#the-rule), [up](../README.md#the-code)", ROOT / "docs" / "x.md") == []
    # history ends at a bracket or a semicolon: a path after it is read again
    assert stale_paths("(was `heads.py`) and view/gone.py; was fine; engine/gone.py") == ["view/gone.py",
                                                                                         "engine/gone.py"]
