"""Each folder's front door names its rooms (issue 61, item 6): the docstring of every folder's `__init__.py` lists
every module the folder holds, one line each (`- chain.py: a chain of drafts, verified in one pass`), and names no
module that is gone. Read from the disk, so a new module without its line fails here, not in a reader's head."""

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "specviz"
FOLDERS = sorted(p for p in PACKAGE.iterdir() if (p / "__init__.py").is_file())
LINE = re.compile(r"^- `?(\w+\.py)`?: \S", re.MULTILINE)  # one module's line: its file name, a colon, what it holds


def modules_named(folder: Path) -> list[str]:
    doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text())) or ""
    return LINE.findall(doc)


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_the_front_door_names_every_module_once(folder):
    held = sorted(p.name for p in folder.glob("*.py") if p.name != "__init__.py")
    named = modules_named(folder)
    assert sorted(set(named)) == sorted(named), f"{folder.name}/__init__.py names a module twice"
    missing, gone = sorted(set(held) - set(named)), sorted(set(named) - set(held))
    assert not missing, f"{folder.name}/__init__.py does not name {missing}: add one line each: '- <module>: what it holds'"
    assert not gone, f"{folder.name}/__init__.py names {gone}, which the folder no longer holds"


def test_a_line_that_names_no_module_is_caught():
    """The negative control: a docstring with a module's line missing is read as missing it."""
    doc = '"""The engine.\n\n- chain.py: a chain of drafts\n- tree.py — no colon, not a line\n"""'
    assert LINE.findall(ast.get_docstring(ast.parse(doc))) == ["chain.py"]
