"""A peer's runs in the benchmark's figures: one llama.cpp request as it ended (its text, our clock, its server's own
`timings`) and what the bench reports of it, and each user's output against its prompt alone. Pure functions of plain
records: measure/peers.py runs llama.cpp, measure/bench_report.py sets the figures beside specviz's.

    c = completion_of(chunks, asked_s)   # the streamed chunks of one request, each with the time it came back
    c.tokens_per_s, c.prefill_tokens_per_s, c.decode_tokens_per_s, c.acceptance

llama.cpp's `timings` name its prefill `prompt_ms` over `prompt_n` tokens and its decoding `predicted_ms`, from its
first new token to its last, over `predicted_n` tokens: so decoding makes predicted_n − 1 tokens in predicted_ms (its
own `predicted_per_second` is that ratio), as specviz's decode speed counts the tokens after the first
(record/stats.py). A speculative run adds `draft_n` (tokens its draft proposed) and `draft_n_accepted`.
"""

from __future__ import annotations

from dataclasses import dataclass

from specviz.record import stats


@dataclass(frozen=True)
class Completion:
    """One llama.cpp request as it ended. wall_s and first_s by our clock, from the moment it was asked (first_s: its
    first new token came back: its prefill, and any wait for a slot); the rest from its server's `timings`."""

    text: str
    tokens: int  # new tokens (predicted_n)
    prompt_tokens: int  # tokens it prefilled (prompt_n: the prompt less what its slot held, the opening in the bench)
    wall_s: float
    first_s: float
    prompt_ms: float  # its prefill
    predicted_ms: float  # from its first new token to its last
    draft_n: int = 0  # tokens its draft proposed (0: no draft)
    draft_accepted: int = 0

    @property
    def tokens_per_s(self) -> float:
        """New tokens over the wall time, prefill included: what the bench's tok/s is for every configuration."""
        return self.tokens / self.wall_s

    @property
    def prefill_tokens_per_s(self) -> float | None:
        return self.prompt_tokens / (self.prompt_ms / 1000) if self.prompt_ms > 0 else None

    @property
    def decode_tokens_per_s(self) -> float | None:
        """The tokens after the first over the time from the first to the last (llama.cpp's predicted_per_second);
        None for a one-token run."""
        return (self.tokens - 1) / (self.predicted_ms / 1000) if self.tokens > 1 and self.predicted_ms > 0 else None

    @property
    def after_first(self) -> float:
        """Tokens/s after the first by our clock: what one user of a busy server sees, as closed_loop counts
        it (0 for one token)."""
        return stats.after_first(self.tokens, self.first_s, self.wall_s) or 0.0

    @property
    def acceptance(self) -> float | None:
        """Drafts kept ÷ drafts proposed (specviz's α); None where nothing was drafted."""
        return self.draft_accepted / self.draft_n if self.draft_n else None


def completion_of(chunks: list[tuple[float, dict]], asked_s: float) -> Completion:
    """A streamed request's chunks, each (the perf_counter it came back at, the chunk), as one Completion: the text
    joined, the first chunk that carried text as its first token, the last chunk's `timings`. ValueError with the
    server's message where it answered with an error (or sent no timings)."""
    for _, chunk in chunks:
        if "error" in chunk or ("message" in chunk and "choices" not in chunk):
            error = chunk.get("error", chunk)
            raise ValueError(f"llama.cpp refused the request: {error.get('message', error)}")
    timings = next((chunk["timings"] for _, chunk in reversed(chunks) if "timings" in chunk), None)
    if timings is None:
        raise ValueError("llama.cpp's answer carried no timings (was the request cut short?)")
    texts = [(t, choice.get("text") or "") for t, chunk in chunks for choice in chunk.get("choices", [])[:1]]
    first = next((t for t, text in texts if text), chunks[-1][0])
    return Completion("".join(text for _, text in texts), int(timings["predicted_n"]), int(timings["prompt_n"]),
                      chunks[-1][0] - asked_s, first - asked_s, float(timings["prompt_ms"]),
                      float(timings["predicted_ms"]), int(timings.get("draft_n", 0)),
                      int(timings.get("draft_n_accepted", 0)))


def peer_values(runs: list) -> dict[str, list[float]]:
    """A peer's runs of one configuration as the bench's figures, each a list over the runs: transformers' tokens/s
    as they are ({"tps"}); llama.cpp's Completions as tokens/s with the prefill, time to first token, prefill and
    decode tokens/s, and where it drafted its acceptance ("alpha", as specviz's rows name it)."""
    if not runs or not isinstance(runs[0], Completion):
        return {"tps": list(runs)}
    values = {"tps": [c.tokens_per_s for c in runs], "ttft": [c.first_s for c in runs],
              "decode_tps": [c.decode_tokens_per_s for c in runs]}  # None in a one-token run: left out of its row
    if all(c.prefill_tokens_per_s for c in runs):
        values["prefill_tps"] = [c.prefill_tokens_per_s for c in runs]
    if all(c.draft_n for c in runs):
        values["alpha"] = [c.acceptance for c in runs]
    return values


def differed(runs, alone: dict[str, object], key: str) -> dict[int, list[str]]:
    """{number of users: the users (as 'user 2 (story)') whose output `key` of users_detail differs from their prompt
    alone's}, for every run of two users or more; a count with no user listed: every output equalled its prompt's
    alone. `alone` maps each prompt to its output run alone."""
    out: dict[int, list[str]] = {}
    for run in runs:
        if run.users < 2:
            continue
        mine = out.setdefault(run.users, [])
        for d in run.users_detail:
            who = f"user {d['user'] + 1} ({d['kind']})"
            if d[key] != alone[d["prompt"]] and who not in mine:
                mine.append(who)
    return out


def contrast_line(name: str, found: dict[int, list[str]]) -> str:
    """One line of the contrast: 'llama.cpp: at 2 users every output equalled its prompt alone's; at 4 users user 3
    (code) differed'."""
    if not found:
        return f"{name}: no run of two users or more to compare"
    said = [f"at {users} users " + (f"{', '.join(who)} differed" if who else "every output equalled its prompt "
                                                                         "alone's") for users, who in found.items()]
    return f"{name}: " + "; ".join(said)
