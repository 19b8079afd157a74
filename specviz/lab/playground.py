"""The lab's math: a toy p/q playground and Monte Carlo runs of the accept/reject rule (the α / K / c / v model
is explorer.py's).

Notation follows Leviathan et al. (2023), as in `sampling.py`: p is the TARGET distribution, q the DRAFT.
Everything here is plain numbers in, plain records out (no gradio, no plotly), so the charts, the HTML and the
tests quote one source.

The playground: one draft position over a small named vocabulary. A draft x ~ q is accepted with probability
min(1, p(x)/q(x)); otherwise the token comes from the residual norm(max(0, p − q)). The output mass of x splits
into "accepted proposals" min(p, q)(x) and "residual" (1 − α)·norm(max(0, p − q))(x), which add up to p(x);
α = Σ min(p, q) is the chance the draft is accepted.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass

import numpy as np
import torch

from specviz.algorithm.sampling import accept_probability, residual_distribution, verify

MIN_TOKENS, MAX_TOKENS = 4, 8  # vocabulary size of the playground
MAX_TOKEN_CHARS = 24
MAX_SAMPLES = 100_000
MAX_VERIFY_SAMPLES = 20_000  # the verify sampler runs one Python call per round (its cost: docs/benchmarks.md,
#                               "Timings behind choices in the code")


# --- the toy pair ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ToyPair:
    """A named vocabulary with a target p and a draft q over it (each sums to 1)."""

    tokens: tuple[str, ...]
    p: tuple[float, ...]  # target
    q: tuple[float, ...]  # draft

    def __post_init__(self):
        check_tokens(self.tokens)
        for name, dist in (("p", self.p), ("q", self.q)):
            if len(dist) != len(self.tokens):
                raise ValueError(f"{name} has {len(dist)} entries for {len(self.tokens)} tokens")
            if any(not math.isfinite(v) or v < 0 for v in dist) or abs(sum(dist) - 1) > 1e-6:
                raise ValueError(f"{name} must be probabilities >= 0 that sum to 1, got {list(dist)}")


def check_tokens(tokens) -> None:
    """Raise ValueError unless tokens are 4-8 distinct, non-empty, short names."""
    if not MIN_TOKENS <= len(tokens) <= MAX_TOKENS:
        raise ValueError(f"the playground takes {MIN_TOKENS} to {MAX_TOKENS} tokens, got {len(tokens)}")
    for t in tokens:
        if not isinstance(t, str) or not t.strip() or len(t) > MAX_TOKEN_CHARS:
            raise ValueError(f"token names must be 1 to {MAX_TOKEN_CHARS} characters, got {t!r}")
    if len(set(tokens)) != len(tokens):
        raise ValueError("token names must all differ")


def normalise(weights) -> list[float]:
    """Weights >= 0 -> probabilities. [3, 1] -> [0.75, 0.25]."""
    weights = [float(w) for w in weights]
    if any(not math.isfinite(w) or w < 0 for w in weights):
        raise ValueError("probabilities cannot be negative")
    total = sum(weights)
    if total <= 0:
        raise ValueError("a distribution needs some positive probability")
    return [w / total for w in weights]


def set_probability(dist, i: int, value: float) -> list[float]:
    """dist with entry i set to value, the others scaled in proportion to fill the rest (shared equally when
    they were all 0): the value the user typed stays. set_probability([0.6, 0.3, 0.1], 0, 0.9) -> [0.9, 0.075,
    0.025]."""
    value = float(value)
    if not math.isfinite(value) or not 0 <= value <= 1:
        raise ValueError(f"a probability is between 0 and 1, got {value:g}")
    rest = sum(v for j, v in enumerate(dist) if j != i)
    if rest <= 0:
        return [value if j == i else (1 - value) / (len(dist) - 1) for j in range(len(dist))]
    return [value if j == i else v * (1 - value) / rest for j, v in enumerate(dist)]


def edit_pair(pair: ToyPair, column: str, i: int, value) -> ToyPair:
    """The pair after one edited cell: column "token" renames token i; "p" or "q" sets that probability and
    rescales the rest of its column."""
    if column == "token":
        tokens = list(pair.tokens)
        tokens[i] = str(value)
        return ToyPair(tuple(tokens), pair.p, pair.q)
    if column not in ("p", "q"):
        raise ValueError(f"no column {column!r}")
    dist = tuple(set_probability(getattr(pair, column), i, value))
    return ToyPair(pair.tokens, dist, pair.q) if column == "p" else ToyPair(pair.tokens, pair.p, dist)


def pair_from_weights(tokens, p, q) -> ToyPair:
    """A pair from a whole table (rows added or removed): blank names get a default, each column is scaled to
    sum to 1."""
    tokens = tuple(str(t) if str(t).strip() else f"token {i + 1}" for i, t in enumerate(tokens))
    return ToyPair(tokens, tuple(normalise(p)), tuple(normalise(q)))


SEED_EXAMPLE = ToyPair(
    tokens=(" Paris", " London", " Rome", " Berlin", " Madrid"),
    p=(0.6, 0.15, 0.1, 0.1, 0.05),  # the target likes " Paris" less than the draft does ...
    q=(0.9, 0.04, 0.03, 0.02, 0.01),  # ... so " Paris" is accepted with probability 0.6 / 0.9 = 0.667
)
TOY_PAIRS = {  # name -> toy pair, the buttons above the playground's table
    "q(Paris) 0.9, p(Paris) 0.6": SEED_EXAMPLE,
    "p(Paris) 0.95": edit_pair(SEED_EXAMPLE, "p", 0, 0.95),  # ... and now it is always accepted
    "draft = target": ToyPair(SEED_EXAMPLE.tokens, SEED_EXAMPLE.p, SEED_EXAMPLE.p),
    "they disagree": ToyPair(SEED_EXAMPLE.tokens, (0.05, 0.6, 0.15, 0.1, 0.1), SEED_EXAMPLE.q),
}


# --- one draft position, exactly -------------------------------------------------------------------------


@dataclass(frozen=True)
class PlaygroundRow:
    token: str
    q: float  # draft probability
    p: float  # target probability
    accept_prob: float  # min(1, p/q): the chance x is kept once the draft proposes it
    from_accepted: float  # q(x)·min(1, p(x)/q(x)) = min(p, q)(x): mass of x that arrives as an accepted draft
    from_residual: float  # (1 − α)·norm(max(0, p − q))(x): mass of x that arrives as a replacement


@dataclass(frozen=True)
class Playground:
    rows: list[PlaygroundRow]
    alpha: float  # Σ min(p, q): the chance a draft is accepted


def _tensors(pair: ToyPair, dtype=torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.tensor(pair.p, dtype=dtype), torch.tensor(pair.q, dtype=dtype)


def overlap(p, q) -> float:
    """α = Σ min(p, q). overlap([0.6, 0.4], [0.9, 0.1]) -> 0.7."""
    return sum(min(a, b) for a, b in zip(p, q))


def playground(pair: ToyPair) -> Playground:
    """Per token: q, p, acceptance, and the two parts of p(x) (accepted proposals + residual)."""
    p, q = _tensors(pair)
    alpha = overlap(pair.p, pair.q)
    residual = residual_distribution(p, q).tolist()  # (V,) norm(max(0, p − q)); falls back to p when p = q
    rows = []
    for i, token in enumerate(pair.tokens):
        a = accept_probability(pair.p[i], pair.q[i])
        rows.append(PlaygroundRow(token, pair.q[i], pair.p[i], a, pair.q[i] * a, (1 - alpha) * residual[i]))
    return Playground(rows, alpha)


# --- Monte Carlo: N one-token rounds (K = 1) ---------------------------------------------------------------
#
# `verify` is exact but is one Python call per round (its cost: docs/benchmarks.md, "Timings behind choices in
# the code"), so the lab runs the same rule vectorised over N draws: `first_tokens` is verify's decision for K = 1
# and tests/lab/test_lab.py checks it against verify draw by draw. The wrong samplers are the same code with one
# deliberate bug each.


def accept_table(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """(V,) min(1, p(x)/q(x)) per token, by the function verify uses; give float32 p and q to get verify's
    exact values (it reads float32 probabilities as Python floats)."""
    return torch.tensor([accept_probability(a, b) for a, b in zip(p.tolist(), q.tolist())], dtype=torch.float64)


def first_tokens(accept: torch.Tensor, drafts: torch.Tensor, uniforms: torch.Tensor,
                 replacements: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """verify's rule for K = 1, over N rounds at once: draft x_n is kept iff r_n < accept[x_n], else the
    round's token is replacements[n]. accept (V,), the rest (N,) -> tokens (N,), accepted (N,) bool."""
    accepted = uniforms.double() < accept[drafts]  # the comparison verify makes, in float64 like Python floats
    return torch.where(accepted, drafts, replacements), accepted


def _draws(p, q, n, generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    drafts = torch.multinomial(q, n, replacement=True, generator=generator)  # (N,) x ~ q
    uniforms = torch.rand(n, generator=generator)  # (N,) one independent r per round
    residual = residual_distribution(p, q)  # (V,) the row verify would sample its replacement from
    replacements = torch.multinomial(residual, n, replacement=True, generator=generator)  # used where rejected
    return drafts, uniforms, replacements


def sample_speculative(p, q, n, generator):
    """The correct sampler (verify's rule): accept with min(1, p/q), else sample norm(max(0, p − q))."""
    drafts, uniforms, replacements = _draws(p, q, n, generator)
    return first_tokens(accept_table(p, q), drafts, uniforms, replacements)


def sample_resample_from_p(p, q, n, generator):
    """WRONG: on rejection sample from p itself instead of the residual; p's mass where the draft already
    delivered it is counted twice."""
    drafts, uniforms, _ = _draws(p, q, n, generator)
    from_p = torch.multinomial(p, n, replacement=True, generator=generator)  # the bug
    return first_tokens(accept_table(p, q), drafts, uniforms, from_p)


def sample_always_accept(p, q, n, generator):
    """WRONG: keep every draft; the output is just q."""
    drafts, _, _ = _draws(p, q, n, generator)
    return drafts, torch.ones(n, dtype=torch.bool)


def sample_swapped_ratio(p, q, n, generator):
    """WRONG: the ratio upside down, min(1, q/p) (mixing up which model is p, as gpt-fast's names invite)."""
    drafts, uniforms, replacements = _draws(p, q, n, generator)
    return first_tokens(accept_table(q, p), drafts, uniforms, replacements)  # the bug: q and p swapped


# Medusa's typical acceptance (Cai et al. 2024), shown as a contrast, never offered as a verify rule: keep a draft x
# when p(x) > min(ε, δ·exp(−H(p))), H the entropy of p in nats, with Medusa's defaults ε = posterior_threshold = 0.09
# and δ = posterior_alpha = 0.3; else take the target's own token, drawn from p. It trades exactness for acceptance:
# what it keeps follows q wherever q proposes a plausible token, so the output is no longer p. At temperature 0 (p
# one-hot, H = 0) it is the exact rule: keep the draft iff it is the target's argmax.
TYPICAL_EPSILON, TYPICAL_DELTA = 0.09, 0.3


def typical_threshold(p: torch.Tensor, epsilon: float = TYPICAL_EPSILON, delta: float = TYPICAL_DELTA) -> float:
    """min(ε, δ·exp(−H(p))): the probability under p a draft must exceed to be kept by typical acceptance.
    p = (0.6, 0.15, 0.1, 0.1, 0.05): H = 1.2 nats, δ·e^−H = 0.0905, so the threshold is ε = 0.09."""
    p = p.double()
    entropy = float(-(p[p > 0] * p[p > 0].log()).sum())
    return min(epsilon, delta * math.exp(-entropy))


def typical_accept(p: torch.Tensor) -> torch.Tensor:
    """(V,) 1 where typical acceptance keeps a draft of that token, 0 elsewhere."""
    return (p.double() > typical_threshold(p)).double()


def sample_typical(p, q, n, generator):
    """NOT EXACT (Medusa's typical acceptance): keep x ~ q when p(x) clears the threshold, else draw from p."""
    drafts, uniforms, _ = _draws(p, q, n, generator)
    from_p = torch.multinomial(p, n, replacement=True, generator=generator)
    return first_tokens(typical_accept(p), drafts, uniforms, from_p)


def sample_with_verify(p, q, n, generator):
    """The correct sampler through the project's own `verify`, one call per round (K = 1): slow (a Python call a
    round), and the same histogram as `sample_speculative`."""
    drafts = torch.multinomial(q, n, replacement=True, generator=generator)  # (N,) x ~ q
    rows, cols = torch.stack([p, p]), q[None]  # p (K+1, V), q (K, V); row 1 is the bonus row, unused here
    verdicts = [verify(rows, cols, x, generator) for x in drafts[:, None].unbind(0)]
    accepted = torch.tensor([v.n_accepted == 1 for v in verdicts])
    replacements = torch.tensor([v.next_token for v in verdicts])
    return torch.where(accepted, drafts, replacements), accepted


_SAMPLERS = {  # key -> (what the page calls it, the function)
    "correct": ("correct: residual max(0, p − q)", sample_speculative),
    "verify": ("correct, one call of the engine's own verify per round (slower)", sample_with_verify),
    "resample_from_p": ("wrong: resample from p", sample_resample_from_p),
    "always_accept": ("wrong: always accept", sample_always_accept),
    "swapped_ratio": ("wrong: ratio min(1, q/p)", sample_swapped_ratio),
    "typical": ("Medusa's typical acceptance (not exact): keep x if p(x) > min(0.09, 0.3·e^−H(p)), else draw from p",
                sample_typical),
}
SAMPLER_LABELS = {key: label for key, (label, _) in _SAMPLERS.items()}  # the one-position samplers, as offered


def output_distribution(sampler: str, pair: ToyPair) -> list[float]:
    """The exact distribution a sampler's token follows (p for the correct one), for comparison with its
    histogram: accepted mass q·accept + rejection mass × what the rejection samples from."""
    p, q = _tensors(pair)
    if sampler == "always_accept":
        return q.tolist()
    accept = (accept_table(q, p) if sampler == "swapped_ratio" else typical_accept(p) if sampler == "typical"
              else accept_table(p, q))
    kept = q * accept
    fallback = p if sampler in ("resample_from_p", "typical") else residual_distribution(p, q)
    return (kept + (1 - kept.sum()) * fallback).tolist()


def total_variation(a, b) -> float:
    """½ Σ |a − b|: the largest difference in probability the two give any set of tokens."""
    return 0.5 * sum(abs(x - y) for x, y in zip(a, b))


def noise_tv(p, n: int) -> float:
    """Expected TV between p and the histogram of n exact draws from p (normal approximation): the level
    below which a distance is sampling noise. E|p̂ − p| ≈ sqrt(2 p (1 − p) / (π n)) per token."""
    return 0.5 * sum(math.sqrt(2 * x * (1 - x) / (math.pi * n)) for x in p)


NOISE_RUNS = 2_000  # simulated exact histograms behind noise_limit: its 99th percentile moves < 5 % between seeds


@functools.lru_cache(maxsize=64)
def noise_limit(p: tuple[float, ...], n: int, share: float = 0.99) -> float:
    """The TV that exact sampling stays below in `share` of runs: TV(histogram, p) of NOISE_RUNS histograms of n
    draws from p (multinomial, a fixed seed), at that quantile. A single run's TV above noise_tv is common (about half
    of exact runs exceed their expectation); above this limit it happens to an exact sampler 1 time in 100."""
    weights = np.asarray(p, dtype=float)
    counts = np.random.default_rng(0).multinomial(n, weights / weights.sum(), size=NOISE_RUNS)
    return float(np.quantile(0.5 * np.abs(counts / n - weights).sum(axis=1), share))


@dataclass(frozen=True)
class MonteCarlo:
    sampler: str  # key of SAMPLER_LABELS
    n: int
    seed: int
    p: tuple[float, ...]  # the target the histogram is compared with
    accepted_counts: list[int]  # per token: rounds whose token was the accepted draft
    replaced_counts: list[int]  # per token: rounds whose token came from the rejection branch
    exact_tv: float  # TV(the sampler's exact output distribution, p): 0 for the correct sampler
    seconds: float

    @property
    def frequencies(self) -> list[float]:
        return [(a + r) / self.n for a, r in zip(self.accepted_counts, self.replaced_counts)]

    @property
    def tv(self) -> float:
        """TV(histogram, p)."""
        return total_variation(self.frequencies, self.p)

    @property
    def noise(self) -> float:
        return noise_tv(self.p, self.n)

    @property
    def noise_99(self) -> float:
        """The TV an exact sampler stays below in 99 of 100 runs of this N (noise_limit)."""
        return noise_limit(tuple(self.p), self.n)

    @property
    def faithful(self) -> bool:
        """Whether this sampler's tokens follow p exactly (up to float rounding)."""
        return self.exact_tv < 1e-9


def check_monte_carlo(n, sampler: str, samplers, seed) -> None:
    """ValueError naming the first bad setting of a Monte Carlo run: N, the sampler (a key of `samplers`), the seed."""
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_SAMPLES:
        raise ValueError(f"N must be a whole number from 1 to {MAX_SAMPLES}, got {n!r}")
    if sampler not in samplers:
        raise ValueError(f"sampler must be one of {', '.join(samplers)}, got {sampler!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:
        raise ValueError(f"seed must be a whole number >= 0, got {seed!r}")


def monte_carlo(pair: ToyPair, n: int, sampler: str = "correct", seed: int = 0) -> MonteCarlo:
    """Run n independent one-token rounds with a sampler and compare the histogram with p."""
    check_monte_carlo(n, sampler, SAMPLER_LABELS, seed)
    if sampler == "verify" and n > MAX_VERIFY_SAMPLES:
        raise ValueError(f"verify() itself runs one Python call per round; choose N <= {MAX_VERIFY_SAMPLES:,} "
                         "or the vectorised correct sampler")
    t0 = time.perf_counter()
    p, q = _tensors(pair, torch.float32)  # float32, the precision verify works in
    tokens, accepted = _SAMPLERS[sampler][1](p, q, n, torch.Generator().manual_seed(seed))
    v = len(pair.tokens)
    accepted_counts = torch.bincount(tokens[accepted], minlength=v).tolist()
    replaced_counts = torch.bincount(tokens[~accepted], minlength=v).tolist()
    seconds = time.perf_counter() - t0
    exact_tv = total_variation(output_distribution(sampler, pair), pair.p)
    return MonteCarlo(sampler, n, seed, pair.p, accepted_counts, replaced_counts, exact_tv, seconds)
