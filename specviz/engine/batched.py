"""Many users at once: B sequences decoded together, each with its own prompt, sampling settings and seed, as a
serving engine runs them (continuous batching). Each round the draft model drafts for every sequence in lockstep
(one batched draft step per draft position), ONE target pass scores every sequence's drafts (B × (K + 1)
positions), and each sequence accepts its own prefix, takes its own replacement or bonus, and keeps its own caches.
A sequence that finishes leaves the batch; a waiting request joins it with its prompt scored alone by the target, and
by the draft only when a round first drafts for it (a batch that drafts nothing never pays for the draft).

    batch = Batch(target, draft, vocab=..., eos_ids=..., k=4)
    served = batch.serve([Request(ids, SamplingSettings(temperature=0), seed=1, max_new_tokens=48), ...], most=8)

A round reuses the single-user round's pieces: the draft model's loop (model_draft.py), the draw of each draft
(algorithm/sampling.draw), `verify`, and the commit rule (decoding.cut_at_stop). `Batch.serve` is the one admission
loop (who joins as seats free; a closed loop of users asks its next request as one ends), and `BatchCounts` what
the rounds did.

Why each sequence stays exact. Sequences accept different numbers of drafts, so their lengths go ragged (the pitfall
of batched speculative decoding: Zhang et al. 2025 found published batched implementations repeating tokens or
emitting garbage at larger batches). Here the caches are never realigned (batch_slots.py): every pass appends the
same number of slots to every sequence, and a slot whose token a sequence did not keep (a rejected draft, a padding
slot) stays in the cache masked, a hole. Each sequence's attention mask covers exactly the tokens it committed, and
its position ids count only those, so each row of a pass computes what the same sequence alone would: its own
tokens at its own positions (tests/engine/test_batched.py holds every sequence's greedy output to its output alone,
and its sampled output to the target's distribution). Rows computed together must not depend on each other: the kernels' row check
covers the largest pass a batch makes (models/kernel_choice.py, ROW_COUNTS).

One round's K is the same for the whole batch (a sequence near its token limit uses fewer of its drafts): fixed, or
chosen each round by the cost-aware rule for a batch (algorithm/batch_rule.py) from a measured profile of the pair;
K = 0 is the target alone, batched. The draft model's numbers need not match a run alone: verification uses the q
each draft was drawn from.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable

import torch
from transformers import DynamicCache

from specviz.algorithm.acceptance import Positions
from specviz.algorithm.batch_rule import BatchChoice, choose_k
from specviz.algorithm.sampling import SamplingSettings, verify, warp
from specviz.engine.batch_prices import BatchPrices
from specviz.engine.batch_slots import LeanSlots, Slots
from specviz.engine.decoding import cut_at_stop
from specviz.engine.lean import LeanDecoder
from specviz.engine.model_draft import model_chain
from specviz.record.cost_profile import CostProfile
from specviz.settings.bounds import MAX_BATCH


@dataclass(frozen=True)
class Request:
    """One user's request: the prompt's ids, how to sample, the seed of its own generator, how many new tokens."""

    prompt_ids: tuple[int, ...]
    sampling: SamplingSettings
    seed: int
    max_new_tokens: int
    label: str = ""  # what a report calls it (the prompt's kind)
    user: int = 0  # who asked: a closed loop's user (measure/closed_loop.py); 0 where one list is served


@dataclass
class Served:
    """A request's outcome, with its times in seconds from when the batch started serving."""

    request: Request
    output_ids: list[int] = field(default_factory=list)
    joined_s: float = 0.0  # when it left the queue and its prompt was scored
    first_token_s: float = 0.0  # when its first token was sampled (time to first token: first_token_s − asked_s)
    finished_s: float = 0.0
    asked_s: float = 0.0  # when it was asked for (closed loop: when its user's last request ended)
    passes: int = 0  # target passes that scored it, its prefill included


@dataclass
class BatchCounts:
    """What a batch's rounds did, over its life, prefills not counted: what a serving benchmark reports of it (its
    tokens per pass, α, the rule's reasons), and the plain rounds in a row that the batch rule reads."""

    passes: int = 0  # target passes over the whole batch (rounds)
    row_rounds: int = 0  # sequences those passes verified, summed over the passes (a round of B counts B)
    tokens: int = 0  # tokens those passes committed, over every sequence
    examined: int = 0  # drafts verification examined, over every sequence
    accepted: int = 0  # of those, the drafts kept
    plain_rounds: int = 0  # rounds at K = 0 in a row (acceptance.PROBE_EVERY_WHERE_IT_COULD_PAY)
    choices: list[BatchChoice] = field(default_factory=list)  # the cost-aware rule's choice each round, with why

    def add_round(self, batch: int, k: int) -> None:
        """A round of `batch` sequences at K = k."""
        self.passes, self.row_rounds = self.passes + 1, self.row_rounds + batch
        self.plain_rounds = self.plain_rounds + 1 if k == 0 else 0

    def add_verdict(self, examined: int, accepted: int, kept: int) -> None:
        """One sequence's verdict in a round: drafts examined and accepted, tokens it kept."""
        self.examined, self.accepted = self.examined + examined, self.accepted + accepted
        self.tokens += kept


class Sequence:
    """A request in the batch: its committed ids, its generator, and which of its caches' slots it kept."""

    def __init__(self, served: Served):
        self.served, self.req = served, served.request
        self.ids = list(self.req.prompt_ids)
        self.gen = torch.Generator().manual_seed(self.req.seed)
        self.drafted = 0  # how many of ids the draft cache holds (a prefix of ids; the rest it is fed next)
        self.done = False
        self.draft_acceptance = Positions()  # its drafts examined and kept, by position: what the batch rule reads

    @property
    def left(self) -> int:
        return self.req.max_new_tokens - len(self.served.output_ids)

    def commit(self, tokens: list[int], eos_ids: set[int]) -> list[int]:
        """Keep `tokens` by a run's commit rule (decoding.cut_at_stop: up to and including an EOS, within
        max_new_tokens); the ones kept. A sequence whose output ends there is done."""
        kept, stop = cut_at_stop(tokens, eos_ids, self.left)
        self.ids += kept
        self.served.output_ids += kept
        self.done = stop is not None
        return kept


class Batch:
    """Sequences decoded together on one target (and one draft model, where K > 0). `k`: the drafts a round makes,
    or with `prices` (the pair's measured profile, or the BatchPrices a server keeps across batches) the most the
    cost-aware rule for a batch may choose; each round's clock is added to those prices."""

    def __init__(self, target, draft, vocab: int, eos_ids: set[int], k: int,
                 prices: CostProfile | BatchPrices | None = None):
        if k > 0 and draft is None:
            raise ValueError("drafting needs a draft model: the batched engine drafts with the draft model only")
        self.target, self.draft, self.vocab, self.eos_ids, self.k = target, draft, vocab, set(eos_ids), k
        self.prices = BatchPrices(prices) if isinstance(prices, CostProfile) else prices
        self.rows: list[Sequence] = []
        self.target_slots = Slots()  # the target runs transformers' own forward, the reference
        self.draft_slots = LeanSlots(LeanDecoder(draft)) if draft is not None and LeanDecoder.supports(draft) else Slots()
        self.counts = BatchCounts()  # what its rounds did, over its life
        self.clock = time.perf_counter

    def serve(self, requests: list[Request], most: int, then: Callable[[Served, float], Request | None] | None = None,
              stop: threading.Event | None = None) -> list[Served]:
        """The admission loop: every request, at most `most` at once, each joining as soon as a seat is free (in the
        order asked), a round for every seated one between joins -> each request's Served, in the order asked.
        `then(served, now)`, told of each request as it ends (now: seconds since serving began), may ask the next
        one, asked at `now` (a closed loop of users: measure/closed_loop.py). `stop` set: serving ends after the
        round in progress."""
        if not 1 <= most <= MAX_BATCH:
            raise ValueError(f"at most {MAX_BATCH} sequences at once, and at least 1; got {most}")
        started = self.clock()
        waiting = [Served(r) for r in requests]
        out = list(waiting)
        while (waiting or self.rows) and not (stop is not None and stop.is_set()):
            ended = []
            while waiting and len(self.rows) < most:
                ended += self.join(waiting.pop(0), started)
            ended += self.round(started)
            for served in ended if then is not None else []:
                now = self.clock() - started
                asked = then(served, now)
                if asked is not None:
                    waiting.append(Served(asked, asked_s=now))
                    out.append(waiting[-1])
        return out

    @torch.inference_mode()
    def join(self, served: Served, started: float) -> list[Served]:
        """Score the request's prompt alone, sample its first token, and seat it in the batch -> the requests that
        ended (this one, if its first token ends it)."""
        seq = Sequence(served)
        served.joined_s = self.clock() - started
        alone = DynamicCache()
        device = next(self.target.parameters()).device
        logits = self.target(input_ids=torch.tensor([seq.ids], device=device), cache=alone, use_cache=True,
                             logits_to_keep=1).logits[0].float().cpu()
        p = warp(logits[:, :self.vocab], seq.req.sampling)
        first = verify(p, p[:0], torch.zeros(0, dtype=torch.long), seq.gen).next_token  # as a run's round 1
        served.passes += 1
        self.target_slots.join(alone, len(seq.ids))
        if self.draft is not None:
            self.draft_slots.add_empty()  # filled when a round first drafts for it (_fill_draft): never, under a
        #                                   rule that drafts nothing at this many users, so no join pays for a draft
        seq.commit([first], self.eos_ids)
        served.first_token_s = self.clock() - started
        self.rows.append(seq)
        return self._leave(started)

    def _fill_draft(self, row: int, seq: Sequence) -> None:
        """The draft's cache of all the sequence's ids but the last, filled alone, so that its first draft step is
        fed the last: the prompt and what it committed before the batch first drafted for it."""
        alone, began = DynamicCache(), self.clock()
        device = next(self.draft.parameters()).device
        self.draft(input_ids=torch.tensor([seq.ids[:-1]], device=device), cache=alone, use_cache=True,
                   logits_to_keep=1)
        self.draft_slots.fill(row, alone, len(seq.ids) - 1)
        seq.drafted = len(seq.ids) - 1
        if self.prices is not None:
            self.prices.add_fill(seq.drafted, self.clock() - began)

    @torch.inference_mode()
    def round(self, started: float) -> list[Served]:
        """One round for every sequence in the batch: draft in lockstep, one target pass, verify each, commit -> the
        requests that ended."""
        if not self.rows:
            return []
        k = min(self._chosen_k(), max(seq.left - 1 for seq in self.rows))
        caught_up = all(seq.drafted and len(seq.ids) - seq.drafted <= 2 for seq in self.rows)  # the draft's caches
        #                      lack at most a drafting round's tokens: its steps are no catch-up (batch_prices.py)
        batch, began = len(self.rows), self.clock()
        drafts, q = self._draft(k)
        drafted = self.clock()
        feeds = [seq.ids[-1:] + d for seq, d in zip(self.rows, drafts)]
        logits = self.target_slots.feed(self.target, feeds, k + 1)
        self.counts.add_round(batch, k)
        for b, seq in enumerate(self.rows):
            mine = min(k, seq.left - 1)  # the drafts this sequence may use within its token limit
            p = warp(logits[b, :mine + 1, :self.vocab], seq.req.sampling)
            verdict = verify(p, q[b][:mine], torch.tensor(drafts[b][:mine], dtype=torch.long), seq.gen)
            kept = seq.commit(drafts[b][:verdict.n_accepted] + [verdict.next_token], self.eos_ids)
            seq.draft_acceptance.add(len(verdict.accept_probs), verdict.n_accepted)
            if self.prices is not None:
                self.prices.pooled.add(len(verdict.accept_probs), verdict.n_accepted)
            self.counts.add_verdict(len(verdict.accept_probs), verdict.n_accepted, len(kept))
            seq.served.passes += 1
            self.target_slots.drop(b, k + 1, len(kept))  # its cache holds every committed token but the last
            if self.draft is not None and k:
                fed_drafts = min(k - 1, verdict.n_accepted, len(kept))  # the drafts fed to the draft and kept
                self.draft_slots.drop(b, k - 1, fed_drafts)
                seq.drafted += fed_drafts
        if self.prices is not None:
            self.prices.add(batch, k, drafted - began if caught_up else None, self.clock() - drafted)
        return self._leave(started)

    def _chosen_k(self) -> int:
        """This round's K: fixed, or the cost-aware rule's at this batch size, priced by what the batch's rounds
        cost (engine/batch_prices.py): c_B, a draft step of B rows, and v_B(K), the rest of a round of K drafts, both in
        the batch's one-token steps."""
        if self.prices is None or self.k == 0:
            return self.k
        prices, b = self.prices, len(self.rows)
        per_token = prices.fill_token() / prices.rest(b, 0)  # a token of catch-up, in the batch's one-token steps
        catch_up = [max(0, len(seq.ids) - seq.drafted - 2) * per_token for seq in self.rows]
        choice = choose_k([seq.draft_acceptance for seq in self.rows], prices.c(b), lambda k: prices.v(b, k), self.k,
                          self.counts.plain_rounds, prices.pooled, catch_up, [seq.left for seq in self.rows])
        self.counts.choices.append(choice)
        return choice.k

    def _draft(self, k: int) -> tuple[list[list[int]], list[torch.Tensor]]:
        """k drafts for every sequence, one batched draft step each, through a run's loop (model_draft.py): (drafts
        per row, q per row (k, V))."""
        for b, seq in enumerate(self.rows):
            if k and not seq.drafted:
                self._fill_draft(b, seq)

        def step(drafts: list[list[int]]) -> torch.Tensor:
            if not drafts[0]:  # what the draft's cache lacks: the newest token, or after a clean sweep two
                feeds = [seq.ids[seq.drafted:] for seq in self.rows]
                for seq in self.rows:
                    seq.drafted = len(seq.ids)
            else:
                feeds = [[d[-1]] for d in drafts]
            return self.draft_slots.feed(self.draft, feeds, 1)[:, 0, :self.vocab]

        return model_chain(step, k, [(seq.req.sampling, seq.gen) for seq in self.rows], self.vocab)

    def _leave(self, started: float) -> list[Served]:
        """Sequences that finished leave the batch, their slots with them -> their requests, in the batch's order."""
        ended = [seq.served for seq in self.rows if seq.done]
        if not ended:
            return []
        now = self.clock() - started
        for served in ended:
            served.finished_s = now
        staying = [b for b, seq in enumerate(self.rows) if not seq.done]
        self.rows = [self.rows[b] for b in staying]
        self.target_slots.select(staying)
        if self.draft is not None:
            self.draft_slots.select(staying)
        return ended
