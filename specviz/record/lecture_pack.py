"""The lecture pack's file format: a trace and the quiz's state in one JSON file, so a lecture runs from one file on
a machine with no model.

    {"format": "specviz-lecture-pack", "format_version": 1, "trace": {…a trace…}, "quiz": {…}}

This module reads and writes the envelope and checks the trace strictly (load.py); what the quiz object holds and
how it must fit the trace is the quiz's own (record/quiz_data.py: quiz_from_dict, check_quiz).
"""

from __future__ import annotations

import json

from specviz.record.load import load_trace, read_json
from specviz.record.trace import Trace
from specviz.settings.bounds import short_repr

PACK_FORMAT = "specviz-lecture-pack"
PACK_VERSION = 1


def pack_json(trace: Trace, quiz: dict) -> str:
    """The pack file's text: `trace` and the quiz state as a JSON object (record/quiz_data.py: quiz_to_dict)."""
    trace_data = json.loads(trace.to_json())
    return json.dumps({"format": PACK_FORMAT, "format_version": PACK_VERSION, "trace": trace_data, "quiz": quiz},
                      ensure_ascii=False, indent=1)


def read_pack(raw: bytes | str) -> tuple[Trace, dict | None]:
    """A trace file or a lecture pack -> (trace, the pack's quiz as a JSON object, or None for a plain trace).
    ValueError says what is wrong: not JSON, a pack from a newer specviz, a trace no run could have written, a
    quiz that is not an object."""
    data = read_json(raw, "trace or lecture pack")
    if not isinstance(data, dict) or data.get("format") != PACK_FORMAT:
        return load_trace(data), None
    version = data.get("format_version")
    if version != PACK_VERSION:
        newer = isinstance(version, int) and not isinstance(version, bool) and version > PACK_VERSION
        raise ValueError(f"lecture pack version {short_repr(version)} " + (
            f"comes from a newer specviz; this one reads version {PACK_VERSION}: update specviz, or open the "
            f"pack's trace alone" if newer else f"is not one this specviz reads (version {PACK_VERSION})"))
    trace, quiz = load_trace(data.get("trace")), data.get("quiz")
    if not isinstance(quiz, dict):
        raise ValueError("malformed quiz state: expected a JSON object")
    return trace, quiz
