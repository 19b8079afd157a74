"""The shape of the house, read from the source with `ast` (so it cannot go stale): data flows one way, gradio
lives only in the app layer, no import circle, short functions, short modules, and the README's module map
names every module."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "specviz"
# The app layer: the only modules that may import gradio, and that nothing below them may import.
APP = {"serving", "inputs", "trace_io", "views", "actions", "ui", "lab_ui", "costs_ui"}
MAX_FUNCTION_LINES, MAX_MODULE_LINES = 60, 450


def modules() -> dict[str, ast.Module]:
    return {path.stem: ast.parse(path.read_text(encoding="utf-8")) for path in sorted(PACKAGE.glob("*.py"))}


def imports(tree: ast.Module) -> tuple[set[str], set[str]]:
    """(specviz modules, other top-level packages) imported anywhere in the module, inside functions too."""
    ours, others = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top, _, rest = alias.name.partition(".")
                (ours.add(rest.split(".")[0]) if top == "specviz" and rest else others.add(top))
        elif isinstance(node, ast.ImportFrom):
            name = node.module or ""
            if node.level or name.split(".")[0] == "specviz":
                sub = name.removeprefix("specviz").lstrip(".")
                ours.update([sub.split(".")[0]] if sub else [a.name for a in node.names])
            else:
                others.add(name.split(".")[0])
    return ours, others


GRAPH = {name: imports(tree) for name, tree in modules().items()}


def test_the_graph_was_read():
    assert {"engine", "trace", "ui", "options"} <= set(GRAPH)
    assert "trace" in GRAPH["engine"][0] and "gradio" in GRAPH["ui"][1]
    assert APP <= set(GRAPH)


@pytest.mark.parametrize("name", sorted(GRAPH))
def test_gradio_only_in_the_app_layer(name):
    if name not in APP:
        assert "gradio" not in GRAPH[name][1] and "spaces" not in GRAPH[name][1], f"{name} imports gradio"


@pytest.mark.parametrize("name", sorted(set(GRAPH) - APP))
def test_nothing_below_imports_the_app_layer(name):
    assert not GRAPH[name][0] & APP, f"{name} imports {GRAPH[name][0] & APP}"


def test_no_import_circle():
    state: dict[str, str] = {}

    def visit(name: str, path: list[str]):
        state[name] = "open"
        for dep in sorted(GRAPH[name][0] & set(GRAPH)):
            if state.get(dep) == "open":
                pytest.fail("import circle: " + " -> ".join(path[path.index(dep):] + [name, dep]))
            if dep not in state:
                visit(dep, path + [name])
        state[name] = "done"

    for name in sorted(GRAPH):
        if name not in state:
            visit(name, [])


def test_the_shared_modules_import_nothing_above_them():
    assert GRAPH["options"][0] == set() and GRAPH["errors"][0] == set()
    assert GRAPH["style"][0] <= {"trace", "options"}


@pytest.mark.parametrize("name", sorted(GRAPH))
def test_functions_and_modules_stay_short(name):
    path = PACKAGE / f"{name}.py"
    assert len(path.read_text(encoding="utf-8").splitlines()) <= MAX_MODULE_LINES
    for node in ast.walk(modules()[name]):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1
            assert length <= MAX_FUNCTION_LINES, f"{name}.{node.name} is {length} lines"


def test_the_readme_module_map_names_every_module():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Module map", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"\b(\w+)\.py\b", section))
    missing = {name for name in GRAPH if not name.startswith("_")} - named
    assert not missing, f"the README's module map lacks {sorted(missing)}"


def test_the_page_offers_a_subset_of_what_a_run_accepts():
    from specviz.inputs import LIMITS
    from specviz.options import RUN_BOUNDS

    for field, limit in LIMITS.items():
        assert limit.bound.within(RUN_BOUNDS[field]), field
