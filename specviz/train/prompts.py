"""The prompts the target answers to teach drafting heads what it says (answers.py): of the kinds the page offers
(code, questions, stories, JSON, rewrites), made on this machine from offline material, in a fixed order, so two
machines with the same Python and packages ask the same questions.

    training_prompts(200)   # [Prompt("code", "Write a Python function …"), Prompt("question", …), …]

- code: a standard-library function with a docstring, asked for by its signature and its docstring's first line;
- question: an installed package, asked what it is for (its metadata's one-line summary says what it is);
- story: the opening of a short story, on one of SUBJECTS;
- json: a JSON object of one of THINGS with its fields;
- rewrite: a short standard-library function (4 to 14 lines), to be given type hints and a docstring.
The page's own example prompts and the benchmark's are never among them (settings/prompts.py): a drafter measured
on what it was trained on would measure nothing.
"""

from __future__ import annotations

import ast
import importlib.metadata
import sysconfig
from dataclasses import dataclass
from itertools import zip_longest
from pathlib import Path

from specviz.settings.prompts import BENCH_PROMPTS, COMPARE_PROMPTS, EXAMPLE_PROMPTS

SUBJECTS = ("a lighthouse keeper's last winter", "a robot learning to paint", "two rival bakers in a small town",
            "a map that redraws itself", "a girl who can hear plants", "the last train of the night",
            "a detective who is afraid of the dark", "a city built on the back of a whale", "a forgotten library",
            "an astronaut's first day back on Earth", "a dragon who collects clocks", "a chess match in a storm",
            "a beekeeper and a stranger", "a village where it never stops snowing", "a violin that plays by itself",
            "a lost dog finding its way home", "a programmer who wakes up in 1985", "a garden on a space station",
            "the youngest member of a mountain rescue team", "a letter delivered fifty years late",
            "a shop that sells memories", "a fisherman and a talking fish", "twins separated at a fair",
            "the first snow on Mars", "a cook in a travelling circus", "an old bridge that remembers everyone")
STORY_OPENINGS = ("Write the opening of a short story about {}.", "Tell a short story about {}.",
                  "Write the first paragraph of a novel about {}.")
THINGS = (("a book", "title, author, year and tags"), ("a user", "id, name, email and roles"),
          ("a city", "name, country, population and landmarks"), ("a recipe", "name, servings, ingredients and steps"),
          ("a car", "make, model, year and features"), ("a movie", "title, director, year and cast"),
          ("a product", "id, name, price and categories"), ("a song", "title, artist, album and duration"),
          ("a planet", "name, mass, moons and distance from the sun"), ("an employee", "id, name, team and skills"),
          ("a flight", "number, origin, destination and departure"), ("a course", "code, title, credits and topics"),
          ("a weather report", "city, date, temperature and conditions"), ("a bank account", "number, owner, "
          "balance and currency"), ("a restaurant", "name, cuisine, rating and address"),
          ("a museum exhibit", "title, artist, year and room"))
MAX_REWRITE_LINES = 14


@dataclass(frozen=True)
class Prompt:
    kind: str  # code, question, story, json or rewrite
    text: str


def training_prompts(count: int) -> list[Prompt]:
    """`count` prompts (or as many as this machine's material gives), the kinds taking turns."""
    code, rewrite = _functions()
    kinds = {"code": code, "question": _questions(), "story": _stories(), "json": _json(), "rewrite": rewrite}
    banned = {*EXAMPLE_PROMPTS.values(), *COMPARE_PROMPTS.values(), *(p for ps in BENCH_PROMPTS.values() for p in ps)}
    out = []
    for row in zip_longest(*kinds.values()):
        for kind, text in zip(kinds, row):
            if text is not None and text not in banned and len(out) < count:
                out.append(Prompt(kind, text))
    return out


def _functions() -> tuple[list[str], list[str]]:
    """(code prompts, rewrite prompts) from the standard library's top-level functions, modules in sorted order."""
    root = Path(sysconfig.get_paths()["stdlib"])
    code, rewrite = [], []
    for path in sorted(p for p in root.glob("*.py") if not p.stem.startswith("_")):
        try:
            source = path.read_text(encoding="utf-8")
            tree = ast.parse(source)
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
            continue
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef) or node.name.startswith("_") or node.decorator_list:
                continue
            doc = (ast.get_docstring(node) or "").strip().splitlines()
            if doc and len(doc[0]) > 20:
                code.append(f"Write a Python function `{node.name}({ast.unparse(node.args)})` that does what the "
                            f"standard library's `{path.stem}.{node.name}` does: {doc[0]}")
            lines = ast.get_source_segment(source, node) or ""
            if 4 <= lines.count("\n") + 1 <= MAX_REWRITE_LINES:
                rewrite.append("Rewrite this function with type hints and a docstring, keeping the body the same:"
                               f"\n\n{lines}\n")
    return code, rewrite


def _questions() -> list[str]:
    seen, out = set(), []
    dists = sorted(importlib.metadata.distributions(), key=lambda d: (d.metadata.get("Name") or "").lower())
    for dist in dists:
        name, summary = dist.metadata.get("Name") or "", (dist.metadata.get("Summary") or "").strip()
        if name.lower() in seen or len(summary) < 15:
            continue
        seen.add(name.lower())
        out.append(f"What is the Python package {name} for ({summary.rstrip('.')}), and how would I use it? "
                   "Answer in a short paragraph.")
    return out


def _stories() -> list[str]:
    return [opening.format(subject) for subject in SUBJECTS for opening in STORY_OPENINGS]


def _json() -> list[str]:
    return [f"Give a JSON object describing {thing}, with the fields {fields}. Reply with the JSON only."
            for thing, fields in THINGS] + \
           [f"Write a JSON array of three examples of {thing}, each with the fields {fields}. Reply with the JSON "
            f"only." for thing, fields in THINGS]
