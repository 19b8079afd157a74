"""The one data model: what a speculative decoding run recorded, round by round, and its JSON form.

Everything the app draws is a pure function of these records, so a trace saved to JSON replays with no model
loaded. `Trace.to_json` / `Trace.from_json` round-trip without loss; `load_trace` adds the checks an
uploaded file needs (size, shape, types) and raises ValueError with a readable message.
"""

from __future__ import annotations

import json
import math
from dataclasses import MISSING, asdict, dataclass, field, fields
from typing import Any

FORMAT = "specviz-trace"
FORMAT_VERSION = 1
MAX_K = 16  # the most draft tokens per round anywhere in specviz (engine settings, lab explorer)
MAX_TRACE_BYTES = 20 * 1024 * 1024  # an upload larger than this is refused before parsing

# The fate of a token in a round. One word per fate, used by the CLI, the HTML and the charts alike.
ACCEPTED, REJECTED, DISCARDED, REPLACEMENT, BONUS = "accepted", "rejected", "discarded", "replacement", "bonus"


@dataclass
class TokenProb:
    """One candidate token with its probabilities under the target (p) and the draft (q)."""

    token_id: int
    text: str
    p: float
    q: float | None = None  # None where the draft proposed nothing (the bonus position)
    residual: float | None = None  # normalised max(0, p - q), only in a rejection's residual list


@dataclass
class DraftPosition:
    """One token the draft proposed, and what verification decided about it."""

    token_id: int
    text: str
    q: float  # q(x): probability the draft gave the token it sampled
    p: float  # p(x): probability the target gives it at the same position
    fate: str  # ACCEPTED, REJECTED or DISCARDED (after an earlier rejection: never examined)
    accept_prob: float | None = None  # min(1, p/q); None when DISCARDED
    uniform: float | None = None  # the draw r; None when DISCARDED
    overlap: float | None = None  # sum over the vocabulary of min(p, q): the chance this position accepts
    candidates: list[TokenProb] = field(default_factory=list)  # top tokens of p and of q, with both probs


@dataclass
class Round:
    """One draft-and-verify round: K draft tokens, one target pass, then 1..K+1 committed tokens."""

    index: int  # 0-based
    k: int  # tokens drafted this round (may be below the setting near EOS, max_new_tokens or adaptive K)
    drafts: list[DraftPosition]
    n_accepted: int
    next_token: TokenProb  # the replacement (after a rejection) or the bonus (after a clean sweep)
    next_kind: str  # REPLACEMENT or BONUS
    residual: list[TokenProb] | None  # top of norm(max(0, p - q)) at the rejection, else None
    bonus_candidates: list[TokenProb] | None  # top of p at the bonus position after a clean sweep, else None
    committed_ids: list[int]  # what this round appended to the output (cut at EOS / max_new_tokens)
    draft_time_s: float
    verify_time_s: float
    stop: str | None = None  # "eos", "max_new_tokens" when the run ended in this round

    @property
    def tokens_this_pass(self) -> int:
        return len(self.committed_ids)

    @property
    def examined(self) -> int:
        return sum(d.fate != DISCARDED for d in self.drafts)


@dataclass
class Summary:
    n_rounds: int
    n_new_tokens: int
    n_drafted: int
    n_examined: int
    n_accepted: int
    acceptance_rate: float  # accepted / examined draft tokens (bonus and replacements never count)
    mean_overlap: float  # mean of sum(min(p, q)) over examined positions: alpha estimated from distributions
    tokens_per_pass: float  # new tokens / target passes (round 1's pass also encodes the prompt)
    first_token_time_s: float  # time to the first committed tokens: round 1, which also encodes the prompt
    draft_time_s: float
    verify_time_s: float
    total_time_s: float
    tokens_per_s: float


@dataclass
class Baseline:
    """A target-only run with the same settings and seed, timed the same way."""

    output_token_ids: list[int]
    output_text: str
    first_token_time_s: float  # the first step, which also encodes the prompt
    total_time_s: float
    tokens_per_s: float


@dataclass
class Trace:
    settings: dict[str, Any]  # k, temperature, top_k, top_p, seed, max_new_tokens, drafter, adaptive, dtype ...
    draft_model: str
    target_model: str
    device: str
    dtype: str
    prompt: str
    prompt_token_ids: list[int]
    rounds: list[Round]
    output_token_ids: list[int]
    output_text: str
    summary: Summary | None = None
    baseline: Baseline | None = None
    eos_token_ids: list[int] = field(default_factory=list)
    format: str = FORMAT
    format_version: int = FORMAT_VERSION

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False, allow_nan=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Trace":
        return _build(cls, data, "trace")

    @classmethod
    def from_json(cls, text: str) -> "Trace":
        return cls.from_dict(json.loads(text))


def summarize(rounds: list[Round], total_time_s: float) -> Summary:
    """Summary figures of a run, computed from its rounds only (so the UI and CLI quote one source)."""
    drafts = [d for r in rounds for d in r.drafts]
    examined = [d for d in drafts if d.fate != DISCARDED]
    accepted = sum(d.fate == ACCEPTED for d in drafts)
    new_tokens = sum(r.tokens_this_pass for r in rounds)
    overlaps = [d.overlap for d in examined if d.overlap is not None]
    return Summary(
        n_rounds=len(rounds),
        n_new_tokens=new_tokens,
        n_drafted=len(drafts),
        n_examined=len(examined),
        n_accepted=accepted,
        acceptance_rate=accepted / len(examined) if examined else 0.0,
        mean_overlap=sum(overlaps) / len(overlaps) if overlaps else 0.0,
        tokens_per_pass=new_tokens / len(rounds) if rounds else 0.0,
        first_token_time_s=rounds[0].draft_time_s + rounds[0].verify_time_s if rounds else 0.0,
        draft_time_s=sum(r.draft_time_s for r in rounds),
        verify_time_s=sum(r.verify_time_s for r in rounds),
        total_time_s=total_time_s,
        tokens_per_s=new_tokens / total_time_s if total_time_s > 0 else 0.0,
    )


def step_times(rounds: list[Round]) -> tuple[float | None, float]:
    """(seconds per drafted token, seconds per verify pass) of a run, from the rounds after the first, whose
    passes also encode the prompt (a one-round run has only that one). None when nothing was drafted."""
    later = rounds[1:] or rounds
    drafted = sum(r.k for r in later)
    draft = sum(r.draft_time_s for r in later) / drafted if drafted else None
    return draft, sum(r.verify_time_s for r in later) / len(later)


def expected_tokens_per_pass(alpha: float, k: int) -> float:
    """E = (1 - alpha^(K+1)) / (1 - alpha): expected tokens per target pass for i.i.d. acceptance alpha.

    >>> round(expected_tokens_per_pass(0.7, 4), 2)
    2.77
    """
    if alpha >= 1.0:
        return float(k + 1)
    return (1 - alpha ** (k + 1)) / (1 - alpha)


def load_trace(raw: bytes | str) -> Trace:
    """Parse an uploaded trace file, refusing anything oversized or malformed with a ValueError."""
    if isinstance(raw, str):
        raw = raw.encode("utf-8", errors="replace")
    if len(raw) > MAX_TRACE_BYTES:
        raise ValueError(f"trace file is {len(raw) / 1e6:.1f} MB; the limit is {MAX_TRACE_BYTES / 1e6:.0f} MB")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise ValueError(f"not a specviz trace: the file is not valid JSON ({type(e).__name__})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"not a specviz trace: expected a JSON object with \"format\": \"{FORMAT}\"")
    if data.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"unsupported trace format_version {data.get('format_version')!r}; "
                         f"this specviz reads version {FORMAT_VERSION}")
    return Trace.from_dict(data)


# --- strict reconstruction of dataclasses from JSON ------------------------------------------------------

_NESTED = {
    ("Trace", "rounds"): ("list", Round),
    ("Trace", "summary"): ("one", Summary),
    ("Trace", "baseline"): ("one", Baseline),
    ("Round", "drafts"): ("list", DraftPosition),
    ("Round", "next_token"): ("one", TokenProb),
    ("Round", "residual"): ("list", TokenProb),
    ("Round", "bonus_candidates"): ("list", TokenProb),
    ("DraftPosition", "candidates"): ("list", TokenProb),
}
_SCALARS = {"int": (int,), "float": (int, float), "str": (str,), "bool": (bool,)}


def _build(cls, data: Any, where: str):
    if not isinstance(data, dict):
        raise ValueError(f"malformed trace: {where} should be an object, got {type(data).__name__}")
    kwargs = {}
    for f in fields(cls):
        if f.name not in data:
            if f.default is not MISSING or f.default_factory is not MISSING:
                continue  # optional field, absent from the file
            raise ValueError(f"malformed trace: {where} lacks \"{f.name}\"")
        kwargs[f.name] = _value(cls, f, data[f.name], f"{where}.{f.name}")
    return cls(**kwargs)


def _value(cls, f, value, where: str):
    nested = _NESTED.get((cls.__name__, f.name))
    if value is None:
        if "None" in str(f.type):
            return None
        raise ValueError(f"malformed trace: {where} must not be null")
    if nested:
        kind, sub = nested
        if kind == "one":
            return _build(sub, value, where)
        if not isinstance(value, list):
            raise ValueError(f"malformed trace: {where} should be a list")
        return [_build(sub, v, f"{where}[{i}]") for i, v in enumerate(value)]
    return _check_scalar(str(f.type), value, where)


def _check_scalar(type_name: str, value, where: str):
    base = type_name.split("|")[0].strip()
    if base.startswith("list[int]"):
        if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise ValueError(f"malformed trace: {where} should be a list of token ids")
        return value
    if base.startswith("list"):
        if not isinstance(value, list):
            raise ValueError(f"malformed trace: {where} should be a list")
        return value
    if base.startswith("dict"):
        if not isinstance(value, dict):
            raise ValueError(f"malformed trace: {where} should be an object")
        return value
    allowed = _SCALARS.get(base)
    if allowed is None:
        return value
    if isinstance(value, bool) and base != "bool" or not isinstance(value, allowed):
        raise ValueError(f"malformed trace: {where} should be {base}, got {type(value).__name__}")
    if base == "float" and not math.isfinite(value):
        raise ValueError(f"malformed trace: {where} is not a finite number")
    return float(value) if base == "float" else value
