"""What every speculative run shares, whatever drafts: a forward pass over the tokens a KV cache lacks, the
cache's rollback, the commit rule (`cut_at_stop`: cut after EOS or max_new_tokens, which a batch's sequences keep
too, batched.py), `RunContext`, all a run reads of its engine, and `DecodingRun`, the run's state (the committed
ids, both caches, the seeded generator), its iteration round by round with the time each took and its trace. The
chain (chain.ChainRun) and the tree (tree_run.TreeRun) each add their own `_round`.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any, Callable, Iterator

import torch
from transformers import DynamicCache

from specviz.drafters import TARGET_STATE
from specviz.engine.lean import LeanCache
from specviz.models.layers import largest
from specviz.record.stats import summarize
from specviz.record.trace import DraftMemory, Round, TokenProb, Trace

TOP_N = 10  # candidates recorded per position for the bars
FEATURE_WINDOW = 64  # the target's features a run of drafting heads keeps (the EAGLE layer reads its last 32)


def forward(model, tokens: list[int], cache: DynamicCache | LeanCache, keep: int) -> torch.Tensor:
    """Feed tokens through model with its cache; logits (keep, V) for the last `keep` positions, on CPU. A
    LeanCache (a draft's, see lean.py) runs its decoder's lean pass over the same model instead."""
    if not tokens:
        raise ValueError("nothing to feed")
    if isinstance(cache, LeanCache):
        return cache.decoder(tokens, cache, keep)
    device = next(model.parameters()).device
    out = model(input_ids=torch.tensor([tokens], device=device), cache=cache, use_cache=True, logits_to_keep=keep)
    return out.logits[0].float().cpu()


def forward_states(model, keep: int, **inputs) -> tuple[torch.Tensor, torch.Tensor]:
    """The same pass as `model(**inputs, logits_to_keep=keep)`, also giving what its LM head reads: (logits (keep, V)
    float32 on CPU, the hidden states (fed, H) of every fed row, as computed). The model's decoder stack, then its LM
    head on the last `keep` rows, is what a causal LM's forward does, so the logits are the same numbers
    (tests/engine/test_heads_run.py). Drafting heads and the EAGLE layer read these states (engine/heads_draft.py,
    engine/eagle_draft.py): no extra pass."""
    states = model.model(**inputs, use_cache=True).last_hidden_state[0]
    return model.lm_head(states[-keep:]).float().cpu(), states


def rollback(cache: DynamicCache | LeanCache, keep: int) -> None:
    """Crop a cache to its first `keep` positions (transformers 5: crop(-n) removes the last n)."""
    extra = cache.get_seq_length() - keep
    if extra > 0:
        cache.crop(-extra)


def cut_at_stop(tokens: list[int], eos_ids: set[int], left: int) -> tuple[list[int], str | None]:
    """The commit rule: of a round's new tokens, those kept, up to and including the first EOS and at most `left`
    (what max_new_tokens leaves) -> (kept, why the output ends there: "eos", "max_new_tokens"; None: it goes on).

    >>> cut_at_stop([5, 2, 7], {2}, 10), cut_at_stop([5, 6, 7], {2}, 2), cut_at_stop([5], {2}, 3)
    (([5, 2], 'eos'), ([5, 6], 'max_new_tokens'), ([5], None))
    """
    kept = []
    for token in tokens[:max(left, 0)]:
        kept.append(token)
        if token in eos_ids:
            return kept, "eos"
    return kept, "max_new_tokens" if len(kept) >= left else None


@dataclass(frozen=True)
class RunContext:
    """All a run reads of its engine: Engine.start builds one per run (engine.py), so the run needs no engine.
    A round reads the models, `vocab`, `eos_ids`, `text` and `device`; the trace reads the rest."""

    prompt_ids: list[int]  # the prompt, tokenised once (Engine.encode)
    target: Any  # the target model
    drafter: Any | None  # the model that drafts: the draft model, the target's first N layers, or None (copies text)
    new_target_cache: Callable[[], DynamicCache]  # a run's target cache: empty, or holding the template's opening
    new_draft_cache: Callable[[], DynamicCache | LeanCache]  # the drafter's (Engine.new_draft_cache's kind), the same
    opening: int  # prompt tokens the new caches hold already: the chat template's opening (opening.py), or 0
    vocab: int  # the ids both models score (their embedding tables may be padded to different sizes)
    eos_ids: set[int]
    text: Callable[[int], str]  # one token's text (the engine keeps each it has decoded)
    tokenizer: Any  # decodes the output for the trace
    device: str
    dtype: str
    kernels: str  # the path the linear layers run on (models/kernels.py); the dtype's name for its own kernels
    target_name: str
    drafter_name: str  # as the trace records it
    draft_memory: DraftMemory | None  # the drafter model's memory (models/memory.py); None without one


class DecodingRun:
    """One run. Iterate it to get rounds; `trace()` at any point gives the record so far. Subclasses define
    `_round() -> Round`; `settings` is the RunSettings as the trace records them (with the values used)."""

    def __init__(self, ctx: RunContext, prompt: str, settings, details: bool = True):
        self.ctx, self.prompt, self.s, self.details = ctx, prompt, settings, details
        self.prices, self.rule_note = None, None  # the cost-aware rule's prices, or why it could not run (chain.py)
        self.prompt_ids = ctx.prompt_ids
        self.ids = list(self.prompt_ids)
        self.rounds: list[Round] = []
        self.gen = torch.Generator().manual_seed(settings.seed)
        self.draft_cache, self.target_cache = self._new_draft_cache(), ctx.new_target_cache()
        self.elapsed = 0.0  # wall time of the rounds, excluding time the consumer spends between rounds
        self.stop: str | None = None
        # Drafting heads (engine/heads_draft.py) read the target's own state: the verify pass keeps its hidden
        # states, and the row whose LM head gave the newest committed token is what the next round drafts from; the
        # EAGLE layer (engine/eagle_draft.py) reads a window of the committed positions' states ("features")
        self.reads_state = settings.drafter_spec.source == TARGET_STATE
        self.features: torch.Tensor | None = None  # (m, H) the target's features of the newest m committed positions
        self.hidden: torch.Tensor | None = None  # features[-1]: the row that gave the newest committed token
        self._states: torch.Tensor | None = None  # the last target pass's states, every fed row
        self._kept = 0  # how many of its last rows had logits kept (the rows verify read)

    @property
    def n_new(self) -> int:
        return len(self.ids) - len(self.prompt_ids)

    def __iter__(self) -> Iterator[Round]:
        # Inference mode is entered per round, never held across a yield: it belongs to one thread, and a
        # consumer such as Gradio may resume this generator on another.
        while self.stop is None:
            t0 = time.perf_counter()
            with torch.inference_mode():
                rnd = self._round()
            self.elapsed += time.perf_counter() - t0
            self.rounds.append(rnd)
            yield rnd

    def _round(self) -> Round:
        raise NotImplementedError

    def _target_pass(self, feed: list[int], keep: int) -> torch.Tensor:
        """The target's pass over `feed` with its cache: logits (keep, V); a run of heads keeps the hidden states."""
        if not self.reads_state:
            return forward(self.ctx.target, feed, self.target_cache, keep)
        ids = torch.tensor([feed], device=next(self.ctx.target.parameters()).device)
        logits, self._states = forward_states(self.ctx.target, keep, input_ids=ids, cache=self.target_cache)
        self._kept = keep
        return logits

    def _keep_state(self, rows: list[int]) -> None:
        """After a verify pass: keep the features of the positions it committed, in order: the fed rows before the
        kept ones (committed tokens the cache lacked: the prompt at the prefill) and the kept rows `rows` (a chain's
        0 .. n accepted; a tree's root and accepted path), the last of them the one that gave the newest token."""
        if self._states is None:
            return
        lead = len(self._states) - self._kept
        new = torch.cat([self._states[:lead], self._states[lead + torch.tensor(rows)]])
        fresh = new if self.features is None else torch.cat([self.features, new])
        self.features, self.hidden, self._states = fresh[-FEATURE_WINDOW:], fresh[-1], None

    def _new_draft_cache(self):
        """The drafter's cache: a LeanCache where the engine drafts with the lean pass (lean.py), else transformers'."""
        return self.ctx.new_draft_cache()

    def _cache_lengths(self) -> tuple[int, int]:
        return self.draft_cache.get_seq_length(), self.target_cache.get_seq_length()

    def _commit(self, new: list[int]) -> list[int]:
        """Keep the round's new tokens by the commit rule (`cut_at_stop`), which says when the run stops."""
        committed, self.stop = cut_at_stop(new, self.ctx.eos_ids, self.s.max_new_tokens - self.n_new)
        self.ids.extend(committed)
        return committed

    def _residual_top(self, p_row, q_row, residual, chosen: int) -> list[TokenProb]:
        """The top tokens of the residual at a rejection (those with mass, and the chosen one), with p and q."""
        top = largest(residual, min(TOP_N, self.ctx.vocab), ordered=True)
        rows = torch.stack([p_row[top], q_row[top], residual[top]]).tolist()
        return [TokenProb(t, self.ctx.text(t), pt, qt, rt) for t, pt, qt, rt in zip(top.tolist(), *rows)
                if rt > 0 or t == chosen]

    def _bonus_top(self, p_row: torch.Tensor) -> list[TokenProb]:
        """The top tokens of p where the bonus is sampled (after a clean sweep, or the prefill's first token)."""
        top = largest(p_row, min(TOP_N, self.ctx.vocab), ordered=True)
        return [TokenProb(t, self.ctx.text(t), pt) for t, pt in zip(top.tolist(), p_row[top].tolist())]

    def trace(self) -> Trace:
        ctx = self.ctx
        new = self.ids[len(self.prompt_ids):]
        settings = {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self.s).items()}  # as JSON reads
        return Trace(
            settings=settings, draft_model=ctx.drafter_name,
            target_model=ctx.target_name, device=ctx.device,
            dtype=ctx.dtype, prompt=self.prompt, prompt_token_ids=list(self.prompt_ids), rounds=list(self.rounds),
            output_token_ids=new, output_text=ctx.tokenizer.decode(new, skip_special_tokens=True),
            summary=summarize(self.rounds, self.elapsed), eos_token_ids=sorted(ctx.eos_ids),
            draft_memory=ctx.draft_memory, pass_costs=self.prices, rule_note=self.rule_note,
            kernels="" if ctx.kernels == ctx.dtype else ctx.kernels, opening=ctx.opening)
