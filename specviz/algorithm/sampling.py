"""The math of speculative decoding, as pure functions over tensors.

Notation follows Leviathan et al. (2023): p is the TARGET distribution, q is the DRAFT distribution.
(gpt-fast and Chen et al. use the opposite names; we do not.)

Nothing here knows about models, caches or the UI: the engine calls `warp` on both models' logits with the
same settings, samples drafts from q, then calls `verify` once per round.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from specviz.settings import defaults
from specviz.settings.bounds import RUN_BOUNDS


@dataclass(frozen=True)
class SamplingSettings:
    """How logits become a distribution. Applied identically to draft and target, so q is the distribution
    the draft really sampled from and p the one the target alone would sample from."""

    temperature: float = defaults.TEMPERATURE  # 0 means greedy: a one-hot distribution on the argmax
    top_k: int = defaults.TOP_K  # 0 disables top-k
    top_p: float = defaults.TOP_P  # 1.0 disables nucleus filtering

    def __post_init__(self):
        check_sampling_settings(self.temperature, self.top_k, self.top_p)

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


def check_sampling_settings(temperature: float, top_k: int, top_p: float) -> None:
    """Raise ValueError naming the first bad value (the bounds are bounds.RUN_BOUNDS')."""
    for name, value in (("temperature", temperature), ("top_k", top_k), ("top_p", top_p)):
        RUN_BOUNDS[name].check(value, name)


def _warped_scores(scores: torch.Tensor, s: SamplingSettings) -> torch.Tensor:
    """Temperature, then top-k, then top-p, as transformers' generate applies its warpers (Temperature-, TopK-
    and TopPLogitsWarper, written out here so the math imports only torch; tests/algorithm/test_sampling.py holds
    them equal to transformers' own, bit for bit)."""
    if s.temperature != 1.0:
        scores = scores / s.temperature
    if s.top_k > 0:  # drop every token below the k-th largest score (ties at the k-th stay)
        kth = torch.topk(scores, min(s.top_k, scores.size(-1)))[0][..., -1, None]
        scores = scores.masked_fill(scores < kth, -float("inf"))
    if s.top_p < 1.0:  # drop the least likely tokens whose mass adds up to at most 1 − top_p; the likeliest stays
        ascending, order = torch.sort(scores, descending=False)
        drop = ascending.softmax(dim=-1).cumsum(dim=-1) <= (1 - s.top_p)
        drop[..., -1:] = False
        scores = scores.masked_fill(drop.scatter(1, order, drop), -float("inf"))
    return scores


def warp(logits: torch.Tensor, s: SamplingSettings) -> torch.Tensor:
    """Logits (N, V) -> probabilities (N, V) in float32 under settings s.

    >>> warp(torch.tensor([[1.0, 3.0, 2.0]]), SamplingSettings(temperature=0))
    tensor([[0., 1., 0.]])
    """
    logits = logits.float()
    if s.greedy:  # scattered into zeros: one_hot builds int64 rows first, far slower over a 150k vocabulary
        return torch.zeros_like(logits).scatter_(-1, logits.argmax(-1, keepdim=True), 1.0)
    scores = _warped_scores(logits, s)
    return torch.softmax(scores, dim=-1)


def sample(probs: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """One token id per row of probs (N, V) -> (N,), by inverting the CDF with one uniform draw per row.

    Exact, and never picks a zero-probability token (its CDF step is flat); faster than torch.multinomial on a
    150k-token row (both readings: docs/benchmarks.md, "Timings behind choices in the code"). The CDF is summed
    in float64 so the tail of a large vocabulary keeps its mass.

    >>> sample(torch.tensor([[0.0, 1.0, 0.0]])).tolist()
    [1]
    """
    cdf = probs.double().cumsum(-1)
    u = torch.rand(probs.shape[0], 1, generator=generator, dtype=torch.float64) * cdf[:, -1:]
    return torch.searchsorted(cdf, u, right=True).squeeze(-1).clamp_(max=probs.shape[-1] - 1)


def draw(probs: torch.Tensor, greedy: bool, generator: torch.Generator | None = None) -> torch.Tensor:
    """One token id per row of probs (N, V) -> (N,): the argmax when greedy, else `sample`'s draw. A greedy row is
    one-hot (warp), so its argmax is its only sample: taking it skips the float64 CDF over the vocabulary and leaves
    the generator untouched.

    >>> draw(torch.tensor([[0.0, 1.0, 0.0]]), greedy=True).tolist()
    [1]
    """
    return probs.argmax(-1) if greedy else sample(probs, generator)


@dataclass
class Verdict:
    """The outcome of verifying one round of K draft tokens."""

    n_accepted: int  # 0..K: length of the accepted prefix
    next_token: int  # the replacement from the residual, or the bonus from p[K] after a clean sweep
    accept_probs: list[float]  # min(1, p(x)/q(x)) per examined position (accepted ones + the first rejected)
    uniforms: list[float]  # the draw r per examined position; accepted iff r < accept_prob
    residual: torch.Tensor | None  # (V,) normalised max(0, p - q) at the rejected position, else None

    @property
    def rejected(self) -> bool:
        return self.residual is not None


def residual_distribution(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """norm(max(0, p - q)) for one position, (V,) -> (V,).

    When p and q agree to rounding the difference can be all zero; then the rejection itself had
    probability ~0 and p is the right distribution to fall back to (never an all-zero row, which would make
    multinomial fail or return an arbitrary id).

    >>> residual_distribution(torch.tensor([0.6, 0.4]), torch.tensor([0.9, 0.1]))
    tensor([0., 1.])
    """
    diff = torch.clamp(p - q, min=0)
    total = diff.sum()
    if not torch.isfinite(total) or total <= 1e-12:
        return p / p.sum()
    return diff / total


def accept_probability(p_x: float, q_x: float) -> float:
    """min(1, p(x)/q(x)) for a drafted token x. q(x) = 0 cannot happen for a sampled draft; treat it as
    'the draft is never wrong to propose what the target likes' (accept iff p(x) > 0)."""
    if q_x <= 0:
        return 1.0 if p_x > 0 else 0.0
    return min(1.0, p_x / q_x)


def verify(
    p: torch.Tensor,
    q: torch.Tensor,
    draft_tokens: torch.Tensor,
    generator: torch.Generator | None = None,
) -> Verdict:
    """Modified rejection sampling (Leviathan et al., Algorithm 1).

    p: (K+1, V) target probabilities, row i for draft position i and row K for the bonus position.
    q: (K, V) draft probabilities the drafts were sampled from. draft_tokens: (K,).
    Each position gets its own independent uniform draw r; x_i is accepted iff r_i < min(1, p(x_i)/q(x_i)).
    At the first rejection the next token comes from norm(max(0, p_i - q_i)); after K acceptances it is the
    bonus token, sampled from p[K]. The committed tokens are then distributed exactly as p alone would give.

    Worked example: q(" Paris") = 0.9, p(" Paris") = 0.6 -> accepted with probability 0.6/0.9 = 0.667;
    if rejected, the residual puts all its mass where p exceeds q.
    """
    k = draft_tokens.shape[0]
    if p.ndim != 2 or q.ndim != 2 or p.shape[0] != k + 1 or q.shape[0] != k or p.shape[1] != q.shape[1]:
        raise ValueError(f"verify wants p (K+1, V), q (K, V), draft_tokens (K,); got {tuple(p.shape)}, "
                         f"{tuple(q.shape)}, {tuple(draft_tokens.shape)}")
    p, q = p.float(), q.float()
    uniforms = torch.rand(k, generator=generator).tolist()  # one independent draw per position
    accept_probs, used = [], []
    for i, x in enumerate(draft_tokens.tolist()):
        a = accept_probability(p[i, x].item(), q[i, x].item())
        accept_probs.append(a)
        used.append(uniforms[i])
        if uniforms[i] >= a:  # rejected: resample from the residual, discard the rest of the draft
            residual = residual_distribution(p[i], q[i])
            token = int(sample(residual[None], generator)[0])
            return Verdict(i, token, accept_probs, used, residual)
    bonus = int(sample(p[k][None], generator)[0])
    return Verdict(k, bonus, accept_probs, used, None)
