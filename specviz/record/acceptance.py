"""Acceptance as real systems report it, counted from a trace's rounds (pure functions of the record):

- per position: of the drafts tested at position i of their round (i = 1 … K), how many were accepted. E(α, K)
  assumes one α at every position, independent of the others; vLLM, SGLang and llama.cpp report these counts
  because the measured rates fall with the position where that assumption breaks.
- round sizes: how many rounds of K drafts committed n tokens (n = 1 … K + 1), against the probabilities the same
  assumption predicts, (1 − α)·α^(n−1) and α^K (algorithm/theory.py's round_size_probs).

Which acceptance metric each number is: `acceptance_rate` in the summary is accepted ÷ tested drafts over the run
(llama.cpp's definition since its #14104); tokens per target pass is the "mean acceptance length" (accepted + 1 a
round, EAGLE's); the per-position rate is accepted ÷ tested at that position.
"""

from __future__ import annotations

from dataclasses import dataclass

from specviz.record.trace import ACCEPTED, DISCARDED, Round, Trace


@dataclass(frozen=True)
class PositionCount:
    position: int  # 1-based place in the round's chain of drafts
    tested: int  # drafts at this position the target tested (not discarded after an earlier rejection)
    accepted: int

    @property
    def rate(self) -> float | None:
        return self.accepted / self.tested if self.tested else None


def chain_rounds(trace: Trace) -> list[Round]:
    """The rounds that drafted a chain (not round 1's prefill, not a tree's)."""
    return [r for r in trace.rounds if r.k and r.tree is None]


def per_position(trace: Trace) -> list[PositionCount]:
    """Tested and accepted drafts at each position 1 … the longest chain drafted."""
    rounds = chain_rounds(trace)
    longest = max((r.k for r in rounds), default=0)
    counts = []
    for i in range(longest):
        fates = [r.drafts[i].fate for r in rounds if i < r.k]
        tested = [f for f in fates if f != DISCARDED]
        counts.append(PositionCount(i + 1, len(tested), tested.count(ACCEPTED)))
    return counts


def round_sizes(trace: Trace, k: int) -> list[int]:
    """How many rounds that drafted exactly k committed n tokens, n = 1 … k + 1 (rounds the run's end cut short are
    left out: their size says when the text ended, not what verification kept)."""
    sizes = [0] * (k + 1)
    for r in chain_rounds(trace):
        if r.k == k and not r.stop:
            sizes[len(r.committed_ids) - 1] += 1
    return sizes
