"""The shape of the house, read from the source with `ast` (so it cannot go stale): each folder of specviz/ imports
only the folders below it, gradio lives only in app/, the view and the record never reach torch, the math imports
only torch and numpy, no import circle, short functions and modules. No module list is kept by hand: the folders
are read from the disk, and a new folder must say here what it may import."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "specviz"
MAX_FUNCTION_LINES, MAX_MODULE_LINES = 60, 400

# Each folder, and the folders of specviz it may import (besides itself). The data path reads one way:
# settings, drafters -> record -> algorithm -> engine -> view -> lab, measure, lecture -> app, with cli/ beside app
# and train/ (offline training, minutes long) above the engine, beside the rest, imported by cli/ alone. models/
# (loading a pair: its kernels, the packaged pair, the quantized draft, the timer) stands just above algorithm/, one
# floor below the engine, and reads settings, record and algorithm's formulas (a kernel path is priced by the cost of
# a round, theory.py); the folders that load a pair or time with it import it.
# "" is the package's own __init__ and __main__, which import the command line's entry.
MAY_IMPORT = {
    "settings": set(),
    "drafters": {"settings"},
    "record": {"settings", "drafters"},
    "algorithm": {"settings", "record"},
    "models": {"settings", "record", "algorithm"},
    "engine": {"settings", "drafters", "record", "algorithm", "models"},
    "train": {"settings", "drafters", "record", "algorithm", "models", "engine"},
    "view": {"settings", "drafters", "record", "algorithm"},
    "lab": {"settings", "drafters", "record", "algorithm", "engine", "view", "measure"},
    "measure": {"settings", "drafters", "record", "algorithm", "models", "engine", "view"},
    "lecture": {"settings", "drafters", "record", "algorithm", "engine"},
    "app": {"settings", "drafters", "record", "algorithm", "models", "engine", "view", "lab", "measure", "lecture"},
    "cli": {"settings", "drafters", "record", "algorithm", "models", "engine", "train", "view", "lab", "measure",
            "lecture"},
    "": {"cli"},
}
# Single modules a folder may import beside those folders. cli/ says what went wrong in the page's words, with
# app/errors.py: that module lives with the hosted page, whose ZeroGPU errors it reads, and imports no gradio.
MAY_ALSO_IMPORT = {"cli": {"app.errors"}}
# Third-party packages a folder may import (the standard library is always allowed).
THIRD_PARTY = {
    "settings": set(), "drafters": set(), "record": set(),
    "algorithm": {"torch", "numpy"},
    "models": {"torch", "transformers", "safetensors", "gguf", "numpy", "onnxruntime", "onnx"},  # gguf: the
    #          packaged files' blocks; onnxruntime, onnx: the gguf-ort path's MatMulNBits sessions
    "view": {"plotly"},
}
STDLIB = set(__import__("sys").stdlib_module_names) | {"__future__"}


def module_name(path: Path) -> str:
    """specviz/engine/chain.py -> 'engine.chain'; a package's __init__ -> its folder."""
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts) or "__init__"


def folder_of(name: str) -> str:
    head = name.split(".")[0]
    return head if (PACKAGE / head).is_dir() else ""


SOURCES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
TREES = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in SOURCES.items()}


def imports(name: str, tree: ast.Module) -> tuple[set[str], set[str]]:
    """(specviz modules, other top-level packages) imported anywhere in the module, inside functions too."""
    ours, others = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                (ours.add(alias.name.removeprefix("specviz.")) if alias.name.startswith("specviz.")
                 else others.add(alias.name.split(".")[0]))
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{name}: relative import (write from specviz.folder.module import ...)"
            module = node.module or ""
            if module == "specviz" or module.startswith("specviz."):
                sub = module.removeprefix("specviz").lstrip(".")
                ours.update(f"{sub}.{a.name}" if sub and f"{sub}.{a.name}" in SOURCES else sub or a.name
                            for a in node.names)
            else:
                others.add(module.split(".")[0])
    return {m for m in ours if m in SOURCES}, others


GRAPH = {name: imports(name, tree) for name, tree in TREES.items()}


def closure(name: str) -> set[str]:
    """Every specviz module that importing `name` imports, itself included."""
    seen, todo = set(), [name]
    while todo:
        current = todo.pop()
        if current not in seen:
            seen.add(current)
            todo.extend(GRAPH[current][0])
            todo.extend(parent for parent in _parents(current) if parent in SOURCES)
    return seen


def _parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def test_the_graph_was_read():
    assert {"engine.engine", "record.trace", "app.page", "settings.bounds"} <= set(GRAPH)
    assert "record.trace" in GRAPH["engine.engine"][0] and "gradio" in GRAPH["app.page"][1]


def test_every_folder_says_what_lives_there_and_has_its_rules():
    folders = sorted(p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert set(folders) == set(MAY_IMPORT) - {""}, "a new folder needs its rules in MAY_IMPORT"
    for folder in folders:
        doc = ast.get_docstring(TREES[folder]) or ""
        assert len(doc.split()) >= 15, f"specviz/{folder}/__init__.py must say in a paragraph what lives there"


@pytest.mark.parametrize("name", sorted(GRAPH))
def test_a_module_imports_only_the_folders_below_its_own(name):
    folder = folder_of(name)
    reached = {folder_of(m) for m in GRAPH[name][0] - MAY_ALSO_IMPORT.get(folder, set())} - {folder}
    if name in ("__init__", "__main__"):
        return
    assert reached <= MAY_IMPORT[folder], f"{name} imports {sorted(reached - MAY_IMPORT[folder])}"


@pytest.mark.parametrize("name", sorted(set().union(*MAY_ALSO_IMPORT.values())))
def test_a_module_imported_beside_the_rules_brings_nothing_more(name):
    """Importing it reaches no other module of its folder, none of a folder cli/ may not import, and only the
    standard library: the CLI still never loads gradio."""
    for reached in closure(name):
        assert reached in (name, *_parents(name)) or folder_of(reached) in MAY_IMPORT["cli"], f"{name} reaches {reached}"
        assert not GRAPH[reached][1] - STDLIB, f"{name} reaches {sorted(GRAPH[reached][1] - STDLIB)}"


@pytest.mark.parametrize("name", sorted(GRAPH))
def test_third_party_imports_by_folder(name):
    others = GRAPH[name][1] - STDLIB
    folder = folder_of(name)
    if folder != "app":
        assert not others & {"gradio", "spaces", "gradio_client"}, f"{name} imports gradio: only app/ may"
    if folder in THIRD_PARTY:
        assert others <= THIRD_PARTY[folder], f"{name} imports {sorted(others - THIRD_PARTY[folder])}"


@pytest.mark.parametrize("folder", ["view", "record", "drafters", "settings"])
def test_the_view_and_the_record_never_reach_torch_the_models_or_the_engine(folder):
    for name in [n for n in GRAPH if folder_of(n) == folder]:
        for reached in closure(name):
            assert folder_of(reached) not in ("models", "engine", "app"), f"{name} reaches {reached}"
            assert "torch" not in GRAPH[reached][1], f"{name} reaches torch through {reached}"


def test_no_import_circle():
    state: dict[str, str] = {}

    def visit(name: str, path: list[str]):
        state[name] = "open"
        for dep in sorted(GRAPH[name][0]):
            if state.get(dep) == "open":
                pytest.fail("import circle: " + " -> ".join(path[path.index(dep):] + [name, dep]))
            if dep not in state:
                visit(dep, path + [name])
        state[name] = "done"

    for name in sorted(GRAPH):
        if name not in state:
            visit(name, [])


@pytest.mark.parametrize("name", sorted(GRAPH))
def test_functions_and_modules_stay_short(name):
    assert len(SOURCES[name].read_text(encoding="utf-8").splitlines()) <= MAX_MODULE_LINES
    for node in ast.walk(TREES[name]):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1
            assert length <= MAX_FUNCTION_LINES, f"{name}.{node.name} is {length} lines"


def test_the_readme_map_names_every_folder():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    named = set(re.findall(r"specviz/(\w+)/", readme))
    folders = set(MAY_IMPORT) - {""}
    assert folders <= named, f"the README's map lacks {sorted(folders - named)}"


def test_the_page_offers_a_subset_of_what_a_run_accepts():
    from specviz.app.inputs import LIMITS
    from specviz.settings.bounds import RUN_BOUNDS

    for field, limit in LIMITS.items():
        assert limit.bound.within(RUN_BOUNDS[field]), field
