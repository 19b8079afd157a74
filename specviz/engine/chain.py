"""A run of a chain drafter: each round the drafter proposes up to K tokens in a row, the target scores them all in
ONE pass, and the modified rejection sampler (algorithm/sampling.py's `verify`) keeps a prefix and adds a
replacement from the residual max(0, p − q), or a bonus token after a clean sweep.

Invariant between rounds (engine.py says why): `ids` holds prompt + committed tokens; each model's KV cache holds
every token of `ids` but the last, at most, so a model's next pass feeds exactly the tokens its cache lacks and a
rollback is one crop to the committed length. Round 1 is the target's prefill alone (no drafts).
"""

from __future__ import annotations

import time
from typing import Callable

import torch

from specviz.algorithm.sampling import verify, warp
from specviz.algorithm.cost_rule import CostRule
from specviz.engine.batch_prices import BatchPrices
from specviz.engine.decoding import TOP_N, DecodingRun, RunContext, forward, rollback
from specviz.models.layers import largest
from specviz.models.timer import synchronize
from specviz.drafters.trained import EAGLE
from specviz.engine.eagle_draft import eagle_chain
from specviz.engine.heads_draft import heads_chain
from specviz.engine.model_draft import model_chain
from specviz.record.trace import ACCEPTED, BONUS, DISCARDED, REJECTED, REPLACEMENT, CacheLengths, DraftPosition, \
    PassCosts, Round, TokenProb


def _confidence(logits: torch.Tensor, token: int) -> float:
    """The draft's own probability of its token at temperature 1 (greedy q is one-hot, so q itself can't
    tell a sure draft from a guess).

    Adaptive K multiplies these along the round: the product is the draft's own estimate that every draft so
    far survives, which bounds what one more draft step can add (it is used only if all before it are). A
    step costs c of a target pass, so drafting on pays while that estimate is well above c. A threshold on
    the product, rather than on each token (transformers' rule), lets a run of sure tokens go long and stops
    after two shaky ones; the benchmark compares it with fixed K (docs/benchmarks.md)."""
    return float(torch.exp(logits[token] - torch.logsumexp(logits, -1)))


class ChainRun(DecodingRun):
    """One speculative decoding run with a chain of drafts. Iterate it to get rounds; `trace()` at any point gives
    the record so far."""

    def __init__(self, ctx: RunContext, prompt: str, settings, details: bool = True, rule: CostRule | None = None,
                 prices: PassCosts | None = None, rule_note: str | None = None, clock: BatchPrices | None = None):
        super().__init__(ctx, prompt, settings, details)
        # The cost-aware rule (algorithm/cost_rule.py) and its prices when adaptive K is set to it, or why it could
        # not price this run (Engine.cost_rule); the clock of what this drafter's rounds paid, which reprices the rule
        # each round (batch_prices.py at B = 1)
        self.rule, self.prices, self.rule_note, self.clock = rule, prices, rule_note, clock
        self._steps: list[tuple[int, float]] = []  # this round's draft steps: (tokens fed, seconds)

    def _round(self) -> Round:
        ctx, s = self.ctx, self.s
        left = self.s.max_new_tokens - self.n_new
        # A round yields at most k+1 tokens: never draft past max_new_tokens. Round 1 drafts nothing: it is the
        # target's prefill, whose token needs no draft (the first token waits for no draft pass).
        k = min(s.k, left - 1) if self.rounds else 0

        # 1. Draft: k tokens one at a time, each sampled from q, the warped draft distribution.
        before = self._cache_lengths()
        t0 = time.perf_counter()
        self._price_round(k)
        drafts, q, sure = self._draft(k)
        synchronize(ctx.device)
        t1 = time.perf_counter()
        drafted = self._cache_lengths()

        # 2. Target: ONE pass over the tokens its cache lacks plus all drafts; p has a row per draft + bonus.
        feed = self.ids[self.target_cache.get_seq_length():] + drafts
        p = warp(self._target_pass(feed, len(drafts) + 1)[:, :ctx.vocab], s.sampling)

        # 3. Verify: accept a prefix, then a replacement from the residual or a bonus from p[k].
        verdict = verify(p, q, torch.tensor(drafts, dtype=torch.long), self.gen)
        self._keep_state(list(range(verdict.n_accepted + 1)))  # rows 0..n: the last gave the next token
        synchronize(ctx.device)
        t2 = time.perf_counter()
        verified = self._cache_lengths()

        # 4. Commit, cut at EOS or max_new_tokens, and roll both caches back to the committed prefix.
        new = drafts[:verdict.n_accepted] + [verdict.next_token]
        committed = self._commit(new)
        decision = self.rule.end_round(sure, verdict.n_accepted, len(committed)) if self.rule and self.rounds else None
        self._clock_round(len(drafts), t2 - t1)
        rollback(self.target_cache, len(self.ids) - 1)
        rollback(self.draft_cache, min(self.draft_cache.get_seq_length(), len(self.ids) - 1))
        lengths = [before, drafted, verified, self._cache_lengths()]  # (draft, target) at each moment
        cache = CacheLengths(draft=[d for d, _ in lengths], target=[t for _, t in lengths])
        return self._record(drafts, p, q, verdict, committed, t1 - t0, t2 - t1, cache, sure, decision)

    def _draft(self, k: int) -> tuple[list[int], torch.Tensor, list[float]]:
        """(drafts, q with a row per draft, and with adaptive K the draft's own temperature-1 probability of each
        draft, the factors of the product its stop rule reads; else [])."""
        if self.s.drafter_spec.propose:
            return *self._copied_draft(k), []
        if self.reads_state:
            return self._heads_draft(k)
        ends, sure = self._chain_end()

        def step(drafts: list[list[int]]) -> torch.Tensor:
            # The draft cache lacks the prompt and the first token in round 2, later 1 token (usual) or 2 (after a
            # clean sweep: the last draft and the bonus), more after plain rounds (a catch-up).
            feed = (self.ids + drafts[0])[self.draft_cache.get_seq_length():]
            began = time.perf_counter()
            logits = forward(self.ctx.drafter, feed, self.draft_cache, 1)[:, :self.ctx.vocab]
            synchronize(self.ctx.device)
            self._steps.append((len(feed), time.perf_counter() - began))
            return logits

        drafts, q = model_chain(step, k, [(self.s.sampling, self.gen)], self.ctx.vocab,
                                more=(lambda: self.rule.draft_more(k)) if self.rule else None,
                                stop=lambda logits, drafts: ends(logits[0], drafts[0][-1]))
        return drafts[0], q[0], sure

    def _price_round(self, k: int) -> None:
        """Before a round's drafts: the rule repriced by what this drafter's rounds paid (once the clock has read a
        round; before, the prices the run began with), and told the catch-up its first draft would pay. Round 1
        drafts nothing (k = 0): the rule first weighs round 2."""
        self._steps = []
        if not self.rule or not self.rounds:
            return
        per_token = 0.0
        if self.clock is not None:
            if self.clock.rests:
                at = self.clock.prices_at(1, len(self.rule.v) - 1).steady()
                self.rule.reprice(at.c, at.v)
            per_token = self.clock.fill_token() / self.clock.rest(1, 0)
        self.rule.start_round(self._lag() * per_token, self.s.max_new_tokens - self.n_new)

    def _lag(self) -> int:
        """Tokens the draft's cache lacks beyond what a drafting round leaves it lacking (the newest, or after a clean
        sweep two): what its first step must catch up on."""
        return max(0, len(self.ids) - self.draft_cache.get_seq_length() - 2)

    def _clock_round(self, k: int, verify_s: float) -> None:
        """The round's clock into the rule's: its draft steps fed one token each (or two, the newest after a clean
        sweep) price a draft step; one that caught up prices a token of catch-up; the verify pass, the rest."""
        if self.clock is None or not self.rounds:
            return
        steps = [(n, seconds) for n, seconds in self._steps if n <= 2]
        for n, seconds in self._steps:
            if n > 2:
                self.clock.add_fill(n, seconds)
        self.clock.add(1, k, sum(s for _, s in steps) if steps else None, verify_s, len(steps))

    def _chain_end(self) -> tuple[Callable[[torch.Tensor, int], bool], list[float]]:
        """(ends(logits, x): whether a chain of drafts ends after draft x, drawn from the raw logits (V,); the
        draft's own probabilities of its drafts, in order, which `ends` appends to with adaptive K). A chain ends
        after EOS (nothing after it can be kept), and with adaptive K once the product of those probabilities falls
        below the confidence, unless the cost-aware rule runs: it hears each probability and weighs the next draft
        itself."""
        sure: list[float] = []
        alive = [1.0]

        def ends(logits: torch.Tensor, x: int) -> bool:
            if self.s.adaptive:
                sure.append(_confidence(logits, x))
                alive[0] *= sure[-1]
                if self.rule:
                    self.rule.drafted(sure[-1])
            return x in self.ctx.eos_ids or (self.s.adaptive and not self.rule and alive[0] < self.s.confidence)

        return ends, sure

    def _heads_draft(self, k: int) -> tuple[list[int], torch.Tensor, list[float]]:
        """Drafts from the target's own state: Medusa heads all at once from its last hidden state (heads_draft.py),
        the EAGLE layer step by step from its recent features (eagle_draft.py); cut as the draft model's chain is cut
        (`_chain_end`)."""
        if k == 0:
            return [], torch.zeros(0, self.ctx.vocab), []
        ends, sure = self._chain_end()
        if self.s.drafter_spec.trained == EAGLE:  # one EAGLE step a draft, stopping as soon as `ends` says
            drafts, q, _ = eagle_chain(self.ctx.drafter, self.features, self.ids, k, self.s.sampling, self.ctx.vocab,
                                       self.gen, lambda i, logits, x: ends(logits, x))
            return drafts, q, sure
        drafts, q, logits = heads_chain(self.ctx.drafter, self.hidden, k, self.s.sampling, self.ctx.vocab, self.gen)
        n = next((i + 1 for i, x in enumerate(drafts) if ends(logits[i], x)), len(drafts))
        return drafts[:n], q[:n], sure[:n]

    def _copied_draft(self, k: int) -> tuple[list[int], torch.Tensor]:
        """Tokens a drafter without a model proposes (copied from earlier text); q is a point mass on each, so
        acceptance is p(x)."""
        drafts = self.s.drafter_spec.propose(self.ids, k)
        for i, x in enumerate(drafts):
            if x in self.ctx.eos_ids:
                drafts = drafts[:i + 1]
                break
        q = torch.zeros(len(drafts), self.ctx.vocab)
        q[torch.arange(len(drafts)), torch.tensor(drafts, dtype=torch.long)] = 1.0
        return drafts, q

    def _record(self, drafts, p, q, verdict, committed, draft_time, verify_time, cache, sure, decision) -> Round:
        """Turn one round's tensors into a Round record (the only place that decides what is kept)."""
        ctx, n, k = self.ctx, verdict.n_accepted, len(drafts)
        # Every number read from the (K, V) rows in one call each, then to Python once: per-position tensor
        # calls and float() round trips cost more than the arithmetic over the vocabulary.
        index = torch.tensor(drafts, dtype=torch.long)
        q_x, p_x = q[torch.arange(k), index].tolist(), p[torch.arange(k), index].tolist()
        overlaps = torch.minimum(p[:k], q).sum(-1).tolist() if self.details and k else []
        tops = self._tops(p[:k], q) if self.details and k else []
        positions = []
        for i, x in enumerate(drafts):
            examined = i <= n and i < len(verdict.accept_probs)
            fate = ACCEPTED if i < n else REJECTED if examined else DISCARDED
            positions.append(DraftPosition(
                token_id=x, text=ctx.text(x), q=q_x[i], p=p_x[i], fate=fate,
                accept_prob=verdict.accept_probs[i] if examined else None,
                uniform=verdict.uniforms[i] if examined else None,
                overlap=overlaps[i] if examined and self.details else None,
                candidates=self._candidates(tops[i], p[i], q[i]) if self.details else [],
                confidence=sure[i] if i < len(sure) else None))
        nxt = verdict.next_token
        rejected = verdict.rejected
        residual = bonus = None
        if self.details and rejected:
            residual = self._residual_top(p[n], q[n], verdict.residual, nxt)
        if self.details and not rejected:
            bonus = self._bonus_top(p[n])
        next_prob = TokenProb(nxt, ctx.text(nxt), float(p[n, nxt]), float(q[n, nxt]) if rejected else None,
                              float(verdict.residual[nxt]) if rejected else None)
        return Round(index=len(self.rounds), k=len(drafts), drafts=positions, n_accepted=n, next_token=next_prob,
                     next_kind=REPLACEMENT if rejected else BONUS, residual=residual, bonus_candidates=bonus,
                     committed_ids=committed, draft_time_s=draft_time, verify_time_s=verify_time, stop=self.stop,
                     cache=cache, drafter=self.s.drafter, cost=decision)

    def _tops(self, p: torch.Tensor, q: torch.Tensor) -> list[list[int]]:
        """Per draft position, the ids of the top tokens of p and of q (p's first), from one topk over the rows."""
        n = min(TOP_N, self.ctx.vocab)
        top = largest(torch.cat([p, q]), n, ordered=True).tolist()  # (2K, n): p's rows, then q's
        return [top[i] + top[len(q) + i] for i in range(len(q))]

    def _candidates(self, ids: list[int], p_row: torch.Tensor, q_row: torch.Tensor) -> list[TokenProb]:
        """The top tokens of p and of q at one position, each with both probabilities, most likely first."""
        ids = list(dict.fromkeys(ids))
        index = torch.tensor(ids, dtype=torch.long)
        tokens = [TokenProb(t, self.ctx.text(t), pt, qt)
                  for t, pt, qt in zip(ids, p_row[index].tolist(), q_row[index].tolist())]
        tokens = [t for t in tokens if t.p > 0 or t.q > 0]
        return sorted(tokens, key=lambda t: -max(t.p, t.q))
