"""Trace files on the server: the folder the download buttons serve from (traces, lecture packs), and reading an
uploaded file.

An upload is read no further than the size limit and checked by `record.load.load_trace`; a trace that names the
loaded target must also carry that target's tokenizer's ids and texts (`check_tokenizer`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import tempfile
import threading
import time
from contextlib import suppress
from pathlib import Path

from specviz.engine import Engine, RunSettings
from specviz.app.inputs import LIMITS
from specviz.settings.bounds import short_repr, widths_text
from specviz.record.lecture_pack import pack_json
from specviz.record.quiz_data import QuizState, load_lecture, quiz_to_dict
from specviz.record.trace import MAX_TRACE_BYTES, Trace
from specviz.record.load import token_texts

_DOWNLOADS = tempfile.TemporaryDirectory(prefix="specviz-traces-")  # removed when the process exits
_DOWNLOADS_LOCK = threading.Lock()  # sessions write and prune the folder at once
# Gradio copies each file a handler returns into its own cache (cleared of files older than an hour, hourly:
# Blocks(delete_cache=...)), so a file here is needed only until its handler returns: keep the newest few.
KEEP_DOWNLOADS = 32
KEEP_DOWNLOADS_S = 3600


def trace_file(trace: Trace) -> str:
    """Write trace as JSON for the download button (see `_download_file`)."""
    return _download_file(trace.to_json(indent=1), "specviz-trace.json")


def pack_file(trace: Trace, state: QuizState) -> str:
    """Write a lecture pack (the trace and the quiz state) for download."""
    return _download_file(pack_json(trace, quiz_to_dict(state)), "specviz-lecture-pack.json")


def _download_file(text: str, name: str) -> str:
    """Write text as `name` in a folder named by its content. Prunes the folder to the newest KEEP_DOWNLOADS
    files, none older than KEEP_DOWNLOADS_S, so it stays bounded however many runs."""
    root = Path(_DOWNLOADS.name)
    with _DOWNLOADS_LOCK:
        _prune_downloads(root)
        folder = root / hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
        folder.mkdir(exist_ok=True)
        path = folder / name
        path.write_text(text, encoding="utf-8")
    return str(path)


def _prune_downloads(root: Path) -> None:
    """Make room for one more file: drop all but the newest KEEP_DOWNLOADS - 1, and any past KEEP_DOWNLOADS_S."""
    files = sorted(((f.stat().st_mtime, f) for f in root.glob("*/specviz-*.json")), reverse=True)
    for i, (mtime, old) in enumerate(files):
        if i >= KEEP_DOWNLOADS - 1 or time.time() - mtime > KEEP_DOWNLOADS_S:
            with suppress(OSError):  # a file that cannot go stays: a prune must never fail the run it follows
                old.unlink()
                old.parent.rmdir()  # folders too: one per distinct trace would pile up


# The settings box's controls, by the names Generate reads them by (RunSettings' fields beside the prompt)
CONTROLS = ("prompt", "k", "temperature", "top_p", "top_k", "seed", "max_new_tokens", "drafter", "adaptive",
            "stop_rule", "draft_layers", "tree_widths", "tree_budget", "tree_depth")


def controls_of(trace: Trace) -> dict:
    """The settings box as `trace` was recorded (its prompt and settings, by CONTROLS' names), so that opening an
    example or a trace shows what made it, and Generate remakes it; a value the page's control cannot hold
    (inputs.LIMITS: a CLI run of 1,000 tokens) is left out, and so are all where the settings make no run."""
    try:
        settings = dataclasses.asdict(trace_settings(trace))
    except ValueError:
        return {"prompt": trace.prompt}
    settings["tree_widths"] = widths_text(trace_settings(trace).widths)
    within = {name: value for name, value in settings.items()
              if name in CONTROLS and (name not in LIMITS or LIMITS[name].bound.allows(value))}
    return {"prompt": trace.prompt, **within}


def trace_settings(trace: Trace) -> RunSettings:
    """The RunSettings a trace was recorded with (RunSettings.recorded: extra keys and settings that did nothing
    there are ignored)."""
    return RunSettings.recorded(trace.settings)


def read_lecture(path: str) -> tuple[Trace, QuizState | None]:
    """An uploaded trace file or lecture pack, read no further than the size limit -> (trace, the pack's quiz state
    or None); ValueError for anything unreadable."""
    trace, state = load_lecture(_read(path))
    return _checked(trace), state


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(MAX_TRACE_BYTES + 1)
    except OSError as e:
        raise ValueError(f"could not read the uploaded file: {e.strerror}") from None


def _checked(trace: Trace) -> Trace:
    try:
        trace_settings(trace)  # Baseline reruns them; the page quotes them
    except ValueError as e:
        raise ValueError(f"malformed trace: settings: {e}") from None
    return trace


def check_tokenizer(trace: Trace, engine: Engine) -> None:
    """Refuse a trace that names the loaded target but whose tokens are not its tokenizer's: an id past its
    vocabulary, or an id recorded with a text the tokenizer does not decode it to."""
    for token_id, text in token_texts(trace).items():
        if token_id >= engine.vocab:
            raise ValueError(f"token id {token_id} is out of range for the vocabulary of {engine.target_name} "
                             f"({engine.vocab:,} ids): the trace was recorded with another tokenizer")
        if text is not None and engine.text(token_id) != text:
            raise ValueError(f"token id {token_id} is {short_repr(text)} in the trace but "
                             f"{short_repr(engine.text(token_id))} in the tokenizer of {engine.target_name}: the "
                             f"trace was recorded with another tokenizer")
