"""llama.cpp beside specviz, recorded: the rows of the bench's table "llama.cpp beside specviz" (bench_report.py's
`beside_llama_row`) that the Costs tab shows, with the machine, the date and the wheel, shipped as
assets/costs/peers.json (`python -m specviz bench --peers llama.cpp --record-peers`) and read back strictly.

    record_peers(rows, env, machine(engine.device))   # the bench's rows and results.json's env -> the file
    recorded_peers()                                  # -> a PeerRecording, None where missing, oversized, malformed

In the file each figure is [median, least, most] over the row's runs; `speedup` is "× specviz's target alone": the
median over the turns of each turn's tokens/s over specviz's target alone's in the same turn, not a ratio of medians.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from specviz.measure.bench_report import Row, beside_llama_row
from specviz.measure.peers import SERVED
from specviz.record.stats import Spread
from specviz.record.strict_json import build

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "assets" / "costs" / "peers.json"
MAX_BYTES = 64 * 1024  # a recording is a few KiB; anything larger is not one
# A row's figures: {its name in the file, on PeerRow and on the bench's Row (its median): its key in Row.spreads};
# tokens/s and the ratio every row has, the rest a row may lack (None: acceptance where nothing was drafted)
FIGURES = {"tokens_per_s": "tps", "speedup": "speedup", "decode_tokens_per_s": "decode_tps", "ttft_s": "ttft",
           "alpha": "alpha"}


@dataclass(frozen=True)
class PeerRow:
    """One run of the table, its figures medians with their range over `runs` interleaved turns."""

    prompt_type: str  # code, story, …
    config: str  # the bench's name: "target-only", "specviz K=4", "llama.cpp target alone", …
    runs: int
    tokens_per_s: Spread  # new tokens over the wall time, the first token's wait included
    speedup: Spread  # × specviz's target alone: the median of the turns' own ratios
    decode_tokens_per_s: Spread | None = None  # the tokens after the first over the time after it
    ttft_s: Spread | None = None  # time to the first token
    alpha: Spread | None = None  # drafts kept ÷ drafts proposed


@dataclass(frozen=True)
class PeerRecording:
    """A bench run's llama.cpp comparison as recorded, with what it ran on."""

    recorded: str  # the date, 2026-12-06
    machine: str  # models/machine.machine's words, and how quiet it was where known
    cpu_flags: str  # the flags that set a CPU's speed here (models/machine.cpu_flags)
    wheel: str  # "xllamacpp 2026.10.11549"
    cpu_build: str  # the wheel's CPU build, "AVX2 (the wheel's)"
    pair: str  # "draft → target", the same GGUF files on both sides
    threads: int
    tokens: int  # new tokens a run
    rows: tuple[PeerRow, ...]


def peer_rows(rows: list[Row]) -> tuple[PeerRow, ...]:
    """The bench's rows the table shows (greedy: specviz's target alone, K=4 and cost-aware, llama.cpp's), each with
    its figures' medians and ranges."""
    return tuple(PeerRow(r.prompt_type, r.config, r.runs,
                         **{name: None if getattr(r, name) is None else r.spread(key, getattr(r, name))
                            for name, key in FIGURES.items()})
                 for r in rows if beside_llama_row(r))


def record_peers(rows: list[Row], env: dict, machine: str, path: Path = RECORDED) -> PeerRecording:
    """Write the bench's llama.cpp comparison as the Costs tab draws it; `env` is results.json's (its date, threads,
    tokens, the pair, the CPU's flags, the peer's wheel). ValueError where the run has no llama.cpp row to record."""
    kept = peer_rows(rows)
    if not env.get("peers") or not any(r.config.startswith(SERVED) for r in kept):
        raise ValueError("no llama.cpp rows to record (did its wheel load? the report says): peers.json not written")
    recording = PeerRecording(str(env["date"]), machine, str(env["cpu_flags"]), env["peers"]["wheel"],
                              env["peers"]["cpu_build"], f"{env['draft']} → {env['target']}", int(env["threads"]),
                              int(env["max_new_tokens"]), kept)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(as_json(recording), indent=1, ensure_ascii=False, allow_nan=False), encoding="utf-8")
    return recording


def as_json(recording: PeerRecording) -> dict:
    head = {k: v for k, v in recording.__dict__.items() if k != "rows"}
    return dict(head, rows=[dict(prompt_type=r.prompt_type, config=r.config, runs=r.runs,
                                 **{name: _triple(getattr(r, name)) for name in FIGURES}) for r in recording.rows])


def _triple(s: Spread | None) -> list[float] | None:
    return None if s is None else [s.median, s.low, s.high]


def recorded_peers(path: Path = RECORDED) -> PeerRecording | None:
    """The shipped recording; None where it is missing, oversized or malformed (a field not of its type, as
    record/strict_json checks trace files; a figure not [median, least, most] in order; a count under 1; no row, no
    llama.cpp row)."""
    try:
        raw = path.read_bytes()
        if len(raw) > MAX_BYTES:
            return None
        stored = build(_Stored, json.loads(raw), "peers.json")
        rows = tuple(_row(r) for r in stored.rows)
        if not any(r.config.startswith(SERVED) for r in rows):
            return None
        head = {k: v for k, v in stored.__dict__.items() if k != "rows"}
        return PeerRecording(**head | dict(threads=_count(stored.threads), tokens=_count(stored.tokens)), rows=rows)
    except (OSError, ValueError, RecursionError):
        return None


@dataclass(frozen=True)
class _StoredRow:
    """A row as the file holds it, each figure [median, least, most]; tokens/s and the ratio every row has."""

    prompt_type: str
    config: str
    runs: int
    tokens_per_s: list[float]
    speedup: list[float]
    decode_tokens_per_s: list[float] | None = None
    ttft_s: list[float] | None = None
    alpha: list[float] | None = None


@dataclass(frozen=True)
class _Stored:
    """The file as record_peers writes it (as_json)."""

    recorded: str
    machine: str
    cpu_flags: str
    wheel: str
    cpu_build: str
    pair: str
    threads: int
    tokens: int
    rows: list[_StoredRow]


def _row(r: _StoredRow) -> PeerRow:
    runs = _count(r.runs)
    return PeerRow(r.prompt_type, r.config, runs, **{name: _spread(getattr(r, name), runs) for name in FIGURES})


def _spread(value: list[float] | None, runs: int) -> Spread | None:
    """[median, least, most] -> Spread; None -> None; another length or order ValueError."""
    if value is None:
        return None
    if len(value) != 3:
        raise ValueError(f"a figure is not [median, least, most]: {value!r}")
    median, low, high = map(float, value)
    if not low <= median <= high:
        raise ValueError(f"a figure's median is outside its range: {value!r}")
    return Spread(median, low, high, runs)


def _count(value: int) -> int:
    if value < 1:
        raise ValueError(f"not a count: {value!r}")
    return value
