"""The text drafting heads are trained on: text every machine has offline, read from this Python installation.

Two kinds, interleaved document by document: the standard library's own source (code, what the packaged Coder target
mostly writes) and the prose descriptions of the installed packages (their README text, shipped in each package's
metadata: plain English about software, the rest of what students ask). Nothing is downloaded, and the choice is
deterministic (files and packages in sorted order), so two machines with the same Python and packages train on the
same text.

Each document is tokenised alone and cut into windows of `length` tokens; every `holdout`-th window is held out,
never trained on, and measures the heads' agreement with the target afterwards.
"""

from __future__ import annotations

import importlib.metadata
import sysconfig
from dataclasses import dataclass
from pathlib import Path

CODE_CHARS, PROSE_CHARS = 6000, 6000  # the most taken from one file or one description: many sources, not a few
MIN_PROSE_CHARS = 400  # shorter descriptions are a line or two, not prose


@dataclass(frozen=True)
class Windows:
    """The token windows a training reads, and what they are, in words."""

    train: list[list[int]]
    heldout: list[list[int]]
    code_files: int
    prose_packages: int
    code_tokens: int
    prose_tokens: int
    course_files: int = 0
    course_tokens: int = 0

    def describe(self, length: int, holdout: int) -> str:
        course = (f"{self.course_files} files of the course's own text ({self.course_tokens:,} tokens), "
                  if self.course_files else "")
        return (f"windows of {length} tokens of offline text from this machine, chosen from {course}the source of "
                f"{self.code_files} Python standard library modules ({self.code_tokens:,} tokens) and the descriptions "
                f"of {self.prose_packages} installed packages ({self.prose_tokens:,} tokens), taking turns; every "
                f"{holdout}th window held out and read first, the others read in order until the time bound")


def code_documents(limit: int | None = None) -> list[str]:
    """The standard library's modules, in sorted order, each cut to CODE_CHARS (tests, idlelib and demos left out)."""
    root = Path(sysconfig.get_paths()["stdlib"])
    skip = {"test", "tests", "idlelib", "site-packages", "lib2to3", "turtledemo", "__pycache__"}
    docs = []
    for path in sorted(root.rglob("*.py")):
        if skip.intersection(path.relative_to(root).parts):
            continue
        try:
            text = path.read_text(encoding="utf-8")[:CODE_CHARS]
        except (OSError, UnicodeDecodeError):
            continue
        if text.strip():
            docs.append(text)
        if limit is not None and len(docs) >= limit:
            break
    return docs


TEXT_SUFFIXES = (".txt", ".md", ".rst", ".py", ".tex", ".html", ".json", ".csv", ".ipynb", ".js", ".c", ".java")
MAX_FOLDER_BYTES = 20_000_000  # a course's text a 15-minute training could never read: refused before the target loads


def folder_documents(folder: Path) -> list[str]:
    """A course's own files (check_text_folder passed them), in sorted order, each cut to CODE_CHARS."""
    return [path.read_text(encoding="utf-8")[:CODE_CHARS] for path in _text_files(Path(folder))]


def _text_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES
                  and not any(part.startswith(".") for part in p.relative_to(folder).parts))


def check_text_folder(folder) -> Path:
    """The folder of a course's own text, or ValueError in a sentence, before any model loads: missing, not a folder,
    no text files in it (binary files are refused by name), or more text than a training could read."""
    path = Path(str(folder)).expanduser()
    if not path.exists():
        raise ValueError(f"--text {folder}: no such folder")
    if not path.is_dir():
        raise ValueError(f"--text {folder}: not a folder (give the folder that holds the course's text files)")
    files, total = _text_files(path), 0
    for file in files:
        data = file.read_bytes()
        total += len(data)
        if b"\x00" in data[:4096]:
            raise ValueError(f"--text {folder}: {file.relative_to(path)} is not text (a binary file); leave it out")
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"--text {folder}: {file.relative_to(path)} is not UTF-8 text; convert it or leave "
                             f"it out") from None
    if not files:
        raise ValueError(f"--text {folder}: no text files in it (it reads {', '.join(TEXT_SUFFIXES)})")
    if total > MAX_FOLDER_BYTES:
        raise ValueError(f"--text {folder}: {total / 1e6:.0f} MB of text, more than a training reads in its time "
                         f"bound (at most {MAX_FOLDER_BYTES / 1e6:.0f} MB; each file's first {CODE_CHARS:,} "
                         f"characters are read): give a smaller folder")
    return path


def prose_documents(limit: int | None = None) -> list[str]:
    """The long descriptions of the installed packages, by package name, each cut to PROSE_CHARS."""
    seen, docs = set(), []
    dists = sorted(importlib.metadata.distributions(), key=lambda d: (d.metadata.get("Name") or "").lower())
    for dist in dists:
        name = (dist.metadata.get("Name") or "").lower()
        text = dist.metadata.get_payload() or dist.metadata.get("Description") or ""
        if name in seen or len(text) < MIN_PROSE_CHARS:
            continue
        seen.add(name)
        docs.append(text[:PROSE_CHARS])
        if limit is not None and len(docs) >= limit:
            break
    return docs


def windows(tokenizer, tokens: int, length: int = 128, holdout: int = 10, folder: Path | None = None) -> Windows:
    """About `tokens` tokens as windows of `length`: a course's own files first (`folder`), then code and prose taking
    turns; every `holdout`-th window held out."""
    course, code, prose = folder_documents(folder) if folder else [], code_documents(), prose_documents()
    train, heldout = [], []
    counts, used = {"course": 0, "code": 0, "prose": 0}, {"course": 0, "code": 0, "prose": 0}
    n = 0
    for i in range(max(len(course), len(code), len(prose))):
        for kind, docs in (("course", course), ("code", code), ("prose", prose)):
            if i >= len(docs) or n * length >= tokens:
                continue
            ids = list(tokenizer(docs[i], add_special_tokens=False)["input_ids"])
            cut = [ids[j:j + length] for j in range(0, len(ids) - length + 1, length)]
            if not cut:
                continue
            used[kind] += 1
            for window in cut:
                if n * length >= tokens:
                    break
                (heldout if n % holdout == holdout - 1 else train).append(window)
                counts[kind] += length
                n += 1
    return Windows(train, heldout, used["code"], used["prose"], counts["code"], counts["prose"], used["course"],
                   counts["course"])
