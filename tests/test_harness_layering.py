"""The top-level folders, read from the source with `ast` like test_layering.py: tests/ and tools/ share what both
need through harness/ and never import each other; harness/ imports neither of them; specviz/ imports none of the
three (running a tool, as tests/measure/test_gpu_check.py runs the GPU check's script, is no import)."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Each top-level folder, and the top-level folders of this repository it must never import.
MAY_NOT_IMPORT = {
    "tests": {"tools"},
    "tools": {"tests"},
    "harness": {"tests", "tools"},
    "specviz": {"tests", "tools", "harness"},
}


def top_level_imports(path: Path, folder: str) -> set[str]:
    """The top-level packages a file imports anywhere (inside functions too); a relative import is its own folder's."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.add(folder if node.level else (node.module or "").split(".")[0])
    return found


IMPORTS = {path.relative_to(ROOT).as_posix(): top_level_imports(path, folder)
           for folder in MAY_NOT_IMPORT for path in sorted((ROOT / folder).rglob("*.py"))}


def test_the_imports_were_read():
    assert "harness" in IMPORTS["tests/conftest.py"] and "harness" in IMPORTS["tools/load_test.py"]
    assert "specviz" in IMPORTS["harness/endpoints.py"]
    assert {path.split("/")[0] for path in IMPORTS} == set(MAY_NOT_IMPORT)


def test_harness_says_what_lives_there():
    doc = ast.get_docstring(ast.parse((ROOT / "harness" / "__init__.py").read_text(encoding="utf-8"))) or ""
    assert "tests/" in doc and "tools/" in doc and "never each other" in doc


@pytest.mark.parametrize("folder", sorted(MAY_NOT_IMPORT))
def test_tests_and_tools_never_import_each_other(folder):
    wrong = {path: sorted(found & MAY_NOT_IMPORT[folder]) for path, found in IMPORTS.items()
             if path.startswith(f"{folder}/") and found & MAY_NOT_IMPORT[folder]}
    assert not wrong, f"{wrong}: share it through harness/ instead"
