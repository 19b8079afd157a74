"""The draft-and-verify loop over two causal LMs, recording every round.

    run = Engine(draft, target, tokenizer).start(prompt, RunSettings(k=4, temperature=0))
    for rnd in run:          # each Round as soon as it is done (the UI streams these)
        ...
    trace = run.trace()      # settings, rounds, output, summary: the JSON a lecturer replays

Invariant between rounds: `ids` holds prompt + committed tokens; each model's KV cache holds every token of
`ids` but the last, at most. A model's next forward pass feeds exactly the tokens its cache lacks, so no round
re-encodes the prefix, and rollback is one crop to the accepted length. The caches start empty: round 1 is the
target's own prefill (no drafts; its one token is sampled from the target's prompt logits, exactly as target-only
decoding's first step), so the first token comes as fast as the target alone gives it, and the draft encodes the
prompt in round 2's first draft step. Each model encodes the prompt once, with no pass of its own for it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import torch
from transformers import DynamicCache

from specviz.engine import self_speculation as early_exit
from specviz.engine.decoding import TOP_N, DecodingRun, forward, rollback, synchronize
from specviz.engine.lean import LeanCache, LeanDecoder
from specviz.drafters.lookup import prompt_lookup
from specviz.settings.bounds import DEFAULT_TREE, RUN_BOUNDS, RUN_DRAFTERS, TREE, short_repr
from specviz.algorithm.sampling import SamplingSettings, sample, verify, warp
from specviz.record.trace import ACCEPTED, BONUS, DISCARDED, REJECTED, REPLACEMENT, Baseline, CacheLengths, DraftPosition, \
    Round, TokenProb, Trace
from specviz.algorithm.tree import check_widths
from specviz.engine.tree_pass import check_tree_attention
from specviz.engine.tree_run import TreeRun


@dataclass(frozen=True)
class RunSettings:
    k: int = 4  # draft tokens per round (the most, when adaptive)
    temperature: float = 0.0  # 0 = greedy
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0
    max_new_tokens: int = 64
    adaptive: bool = False  # K per round: stop drafting once the draft's estimate that all its drafts so far
    confidence: float = 0.25  # survive (the product of its probabilities of them) falls below this. Exact:
    #                           the rule reads only the draft; see _confidence
    chat: bool = True  # wrap the prompt in the tokenizer's chat template when it has one
    drafter: str = "model"  # a key of options.RUN_DRAFTERS: "model" (the draft model), "lookup" (n-gram copy),
    #                         "layers" (self-speculation: the target's first draft_layers layers draft) or "tree"
    #                         (the draft model drafts a tree of tree_widths, verified in one target pass)
    draft_layers: int = 0  # N for drafter "layers"; 0: half the target's layers
    tree_widths: tuple[int, ...] | None = None  # for drafter "tree": children per node at each depth, e.g.
    #                                             (2, 2, 1, 1); None: options.DEFAULT_TREE. K is unused there

    def __post_init__(self):
        # options.RUN_BOUNDS is the one statement of what a run accepts; the page offers a subset of it
        for name, bound in RUN_BOUNDS.items():
            object.__setattr__(self, name, bound.check(getattr(self, name), name))  # 4.0 -> 4: ints where whole
        if self.drafter not in RUN_DRAFTERS:
            raise ValueError(f"drafter must be one of {', '.join(RUN_DRAFTERS)}, got {short_repr(self.drafter)}")
        if self.tree_widths is not None:
            object.__setattr__(self, "tree_widths", check_widths(self.tree_widths))  # [2, 1] -> (2, 1)
            if self.drafter != TREE:
                raise ValueError(f"tree widths are for the tree drafter only; {RUN_DRAFTERS[self.drafter]} drafts a "
                                 f"chain (choose drafter {TREE!r} to draft a tree)")
        if self.drafter == TREE and self.adaptive:
            raise ValueError("adaptive K sets a chain's length; a draft tree has a fixed shape (set its widths "
                             "instead), so the tree drafter cannot be adaptive")

    @property
    def widths(self) -> tuple[int, ...]:
        """The tree's widths a run of the tree drafter uses."""
        return self.tree_widths or DEFAULT_TREE

    @property
    def sampling(self) -> SamplingSettings:
        return SamplingSettings(self.temperature, self.top_k, self.top_p)


class Engine:
    """Holds a draft/target pair and the tokenizer they share; starts runs."""

    def __init__(self, draft, target, tokenizer, draft_name="draft", target_name="target", dtype=None,
                 dtype_why: str = "", lean_draft: bool = True):
        self.draft, self.target, self.tokenizer = draft, target, tokenizer
        self.draft_name, self.target_name = draft_name, target_name
        self.device = str(next(target.parameters()).device)
        self.dtype = dtype or str(next(target.parameters()).dtype).removeprefix("torch.")
        self.dtype_why = dtype_why  # why this dtype on this device (models.auto_dtype), shown on the page
        # Models of one family may pad their embedding tables to different sizes (Qwen2.5 0.5B: 151936,
        # 7B: 152064); both distributions are taken over the shared ids only, in the baseline too.
        self.vocab = min(draft.config.vocab_size, target.config.vocab_size)
        self.max_positions = min(getattr(m.config, "max_position_embeddings", 1 << 30) for m in (draft, target))
        self.eos_ids = _eos_ids(target, tokenizer)
        self._text: dict[int, str] = {}
        self._early: dict[int, object] = {}  # self-speculation's drafts, one per N (they share the target's weights)
        self.lean_draft = lean_draft  # draft with lean.py's pass where the draft's architecture allows (same logits)
        self._lean: dict[object, LeanDecoder | None] = {}  # draft model -> its lean pass, None where unsupported

    def draft_for(self, settings: RunSettings) -> tuple[object | None, str]:
        """(the model that drafts, the name a trace records) for a run: the draft model, the target's first N
        layers (self-speculation), or no model (prompt lookup). ValueError for an N the target cannot give."""
        if settings.drafter == "lookup":
            return None, RUN_DRAFTERS["lookup"]
        if settings.drafter in ("model", TREE):
            return self.draft, self.draft_name
        n = self.layers_for(settings)
        if n not in self._early:
            self._early[n] = early_exit.early_exit(self.target, n)
        return self._early[n], f"{self.target_name}, its first {n} of {early_exit.layer_count(self.target)} layers"

    def new_draft_cache(self, drafter) -> DynamicCache | LeanCache:
        """An empty cache for a run's drafter: a LeanCache, which runs lean.py's pass, where the drafter's
        architecture allows it (and lean_draft is on), else transformers' DynamicCache."""
        if drafter is None or not self.lean_draft:
            return DynamicCache()
        if drafter not in self._lean:
            self._lean[drafter] = LeanDecoder(drafter) if LeanDecoder.supports(drafter) else None
        decoder = self._lean[drafter]
        return decoder.new_cache() if decoder else DynamicCache()

    def layers_for(self, settings: RunSettings) -> int:
        """Self-speculation's N for a run: as set, or half the target's layers for 0 (0 for other drafters)."""
        if settings.drafter != "layers":
            return 0
        return early_exit.check_layers(self.target, settings.draft_layers or early_exit.layer_count(self.target) // 2)

    @classmethod
    def from_pair(cls, pair) -> "Engine":
        return cls(pair.draft, pair.target, pair.tokenizer, pair.draft_name, pair.target_name, pair.dtype,
                   getattr(pair, "dtype_why", ""))

    def warm_up(self) -> None:
        """One short pass through each model: the first call on CPU pays for kernel selection (seconds),
        which would otherwise land in the first run's first round."""
        with torch.inference_mode():
            for model in (self.draft, self.target):
                forward(model, [0, 1, 2], DynamicCache(), 3)

    def encode(self, prompt: str, settings: RunSettings) -> list[int]:
        if not isinstance(prompt, str) or not prompt.strip():
            raise ValueError("prompt is empty")
        if settings.chat and getattr(self.tokenizer, "chat_template", None):
            ids = self.tokenizer.apply_chat_template([{"role": "user", "content": prompt}],
                                                     add_generation_prompt=True, tokenize=True)
            ids = ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids
        else:
            ids = self.tokenizer(prompt, add_special_tokens=False)["input_ids"]
        ids = list(ids)
        self.draft_for(settings)  # a self-speculation N the target cannot give fails here, before any pass
        ahead, what = settings.k, "K"  # a round may draft this far past the committed tokens, then one more
        if settings.drafter == TREE:
            for model in (self.draft, self.target):
                check_tree_attention(model)  # a pair whose attention takes no custom mask fails before any pass
            ahead, what = len(settings.widths), "the tree's depth"
        if len(ids) + settings.max_new_tokens + ahead + 1 > self.max_positions:
            raise ValueError(f"prompt ({len(ids)} tokens) + max_new_tokens ({settings.max_new_tokens}) + {what} "
                             f"exceeds the models' context of {self.max_positions} tokens")
        return ids

    def text(self, token_id: int) -> str:
        if token_id not in self._text:
            self._text[token_id] = self.tokenizer.decode([token_id])
        return self._text[token_id]

    def start(self, prompt: str, settings: RunSettings, details: bool = True) -> DecodingRun:
        """A run of the chain (SpeculativeRun) or, for the tree drafter, of draft trees (tree_run.TreeRun)."""
        if settings.drafter == TREE:
            return TreeRun(self, prompt, settings, details)
        return SpeculativeRun(self, prompt, settings, details)

    def run(self, prompt: str, settings: RunSettings, details: bool = True, baseline: bool = False) -> Trace:
        run = self.start(prompt, settings, details)
        for _ in run:
            pass
        trace = run.trace()
        if baseline:
            trace.baseline = self.baseline(prompt, settings)
        return trace

    def baseline(self, prompt: str, settings: RunSettings) -> Baseline:
        """Target-only autoregressive decoding: same warping, same seed, timed the same way."""
        ids = self.encode(prompt, settings)
        gen = torch.Generator().manual_seed(settings.seed)
        cache, new, steps = DynamicCache(), [], []
        t0 = last = time.perf_counter()
        with torch.inference_mode():
            pending = ids  # the first step encodes the whole prompt, as round 1 does in a speculative run
            while len(new) < settings.max_new_tokens:
                logits = forward(self.target, pending, cache, 1)[:, :self.vocab]
                token = int(sample(warp(logits, settings.sampling), gen)[0])  # a CPU value: the step has ended
                new.append(token)
                now = time.perf_counter()
                steps.append(now - last)
                last = now
                if token in self.eos_ids:
                    break
                pending = [token]
        synchronize(self.device)
        total = time.perf_counter() - t0
        return Baseline(new, self.tokenizer.decode(new, skip_special_tokens=True), steps[0], total,
                        len(new) / total if total > 0 else 0.0, steps)


def _confidence(logits: torch.Tensor, token: int) -> float:
    """The draft's own probability of its token at temperature 1 (greedy q is one-hot, so q itself can't
    tell a sure draft from a guess).

    Adaptive K multiplies these along the round: the product is the draft's own estimate that every draft so
    far survives, which bounds what one more draft step can add (it is used only if all before it are). A
    step costs c of a target pass, so drafting on pays while that estimate is well above c. A threshold on
    the product, rather than on each token (transformers' rule), lets a run of sure tokens go long and stops
    after two shaky ones; the benchmark compares it with fixed K (docs/benchmarks.md)."""
    return float(torch.exp(logits[token] - torch.logsumexp(logits, -1)))


def _eos_ids(model, tokenizer) -> set[int]:
    ids = set()
    for source in (getattr(model, "generation_config", None), model.config, tokenizer):
        value = getattr(source, "eos_token_id", None)
        ids.update(value if isinstance(value, (list, tuple, set)) else [] if value is None else [value])
    return {int(i) for i in ids}


class SpeculativeRun(DecodingRun):
    """One speculative decoding run with a chain of drafts. Iterate it to get rounds; `trace()` at any point gives
    the record so far."""

    def __init__(self, engine: Engine, prompt: str, settings: RunSettings, details: bool = True):
        settings = replace(settings, draft_layers=engine.layers_for(settings))  # the trace records the N used
        super().__init__(engine, prompt, settings, details)

    def _round(self) -> Round:
        e, s = self.e, self.s
        left = self.s.max_new_tokens - self.n_new
        # A round yields at most k+1 tokens: never draft past max_new_tokens. Round 1 drafts nothing: it is the
        # target's prefill, whose token needs no draft (the first token waits for no draft pass).
        k = min(s.k, left - 1) if self.rounds else 0

        # 1. Draft: k tokens one at a time, each sampled from q, the warped draft distribution.
        before = self._cache_lengths()
        t0 = time.perf_counter()
        drafts, q = self._draft(k)
        synchronize(e.device)
        t1 = time.perf_counter()
        drafted = self._cache_lengths()

        # 2. Target: ONE pass over the tokens its cache lacks plus all drafts; p has a row per draft + bonus.
        feed = self.ids[self.target_cache.get_seq_length():] + drafts
        p = warp(forward(e.target, feed, self.target_cache, len(drafts) + 1)[:, :e.vocab], s.sampling)

        # 3. Verify: accept a prefix, then a replacement from the residual or a bonus from p[k].
        verdict = verify(p, q, torch.tensor(drafts, dtype=torch.long), self.gen)
        synchronize(e.device)
        t2 = time.perf_counter()
        verified = self._cache_lengths()

        # 4. Commit, cut at EOS or max_new_tokens, and roll both caches back to the committed prefix.
        new = drafts[:verdict.n_accepted] + [verdict.next_token]
        committed = self._commit(new)
        rollback(self.target_cache, len(self.ids) - 1)
        rollback(self.draft_cache, min(self.draft_cache.get_seq_length(), len(self.ids) - 1))
        lengths = [before, drafted, verified, self._cache_lengths()]  # (draft, target) at each moment
        cache = CacheLengths(draft=[d for d, _ in lengths], target=[t for _, t in lengths])
        return self._record(drafts, p, q, verdict, committed, t1 - t0, t2 - t1, cache)

    def _draft(self, k: int) -> tuple[list[int], torch.Tensor]:
        if self.s.drafter == "lookup":
            return self._lookup_draft(k)
        drafts, qs, alive = [], [], 1.0
        for _ in range(k):
            # The draft cache lacks the prompt and the first token in round 2, later 1 token (usual) or 2 (after a
            # clean sweep: the last draft and the bonus).
            feed = (self.ids + drafts)[self.draft_cache.get_seq_length():]
            logits = forward(self.drafter, feed, self.draft_cache, 1)[:, :self.e.vocab]
            row = warp(logits, self.s.sampling)[0]
            # A one-hot row's only sample is its argmax: greedy skips the float64 CDF over the vocabulary
            x = int(row.argmax()) if self.s.sampling.greedy else int(sample(row[None], self.gen)[0])
            drafts.append(x)
            qs.append(row)
            if x in self.e.eos_ids:
                break  # nothing after EOS can be kept
            if self.s.adaptive:
                alive *= _confidence(logits[0], x)
                if alive < self.s.confidence:
                    break
        q = torch.stack(qs) if qs else torch.zeros(0, self.e.vocab)
        return drafts, q

    def _lookup_draft(self, k: int) -> tuple[list[int], torch.Tensor]:
        """Copy tokens from earlier text; q is a point mass on each, so acceptance is p(x)."""
        drafts = prompt_lookup(self.ids, k)
        for i, x in enumerate(drafts):
            if x in self.e.eos_ids:
                drafts = drafts[:i + 1]
                break
        q = torch.zeros(len(drafts), self.e.vocab)
        q[torch.arange(len(drafts)), torch.tensor(drafts, dtype=torch.long)] = 1.0
        return drafts, q

    def _record(self, drafts, p, q, verdict, committed, draft_time, verify_time, cache) -> Round:
        """Turn one round's tensors into a Round record (the only place that decides what is kept)."""
        e, n, k = self.e, verdict.n_accepted, len(drafts)
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
                token_id=x, text=e.text(x), q=q_x[i], p=p_x[i], fate=fate,
                accept_prob=verdict.accept_probs[i] if examined else None,
                uniform=verdict.uniforms[i] if examined else None,
                overlap=overlaps[i] if examined and self.details else None,
                candidates=self._candidates(tops[i], p[i], q[i]) if self.details else []))
        nxt = verdict.next_token
        rejected = verdict.rejected
        residual = bonus = None
        if self.details and rejected:
            residual = self._residual_top(p[n], q[n], verdict.residual, nxt)
        if self.details and not rejected:
            bonus = self._bonus_top(p[n])
        next_prob = TokenProb(nxt, e.text(nxt), float(p[n, nxt]), float(q[n, nxt]) if rejected else None,
                              float(verdict.residual[nxt]) if rejected else None)
        return Round(index=len(self.rounds), k=len(drafts), drafts=positions, n_accepted=n, next_token=next_prob,
                     next_kind=REPLACEMENT if rejected else BONUS, residual=residual, bonus_candidates=bonus,
                     committed_ids=committed, draft_time_s=draft_time, verify_time_s=verify_time, stop=self.stop,
                     cache=cache, drafter=self.s.drafter)

    def _tops(self, p: torch.Tensor, q: torch.Tensor) -> list[list[int]]:
        """Per draft position, the ids of the top tokens of p and of q (p's first), from one topk over the rows."""
        n = min(TOP_N, self.e.vocab)
        top = torch.topk(torch.cat([p, q]), n).indices.tolist()  # (2K, n): p's rows, then q's
        return [top[i] + top[len(q) + i] for i in range(len(q))]

    def _candidates(self, ids: list[int], p_row: torch.Tensor, q_row: torch.Tensor) -> list[TokenProb]:
        """The top tokens of p and of q at one position, each with both probabilities, most likely first."""
        ids = list(dict.fromkeys(ids))
        index = torch.tensor(ids, dtype=torch.long)
        tokens = [TokenProb(t, self.e.text(t), pt, qt)
                  for t, pt, qt in zip(ids, p_row[index].tolist(), q_row[index].tolist())]
        tokens = [t for t in tokens if t.p > 0 or t.q > 0]
        return sorted(tokens, key=lambda t: -max(t.p, t.q))
