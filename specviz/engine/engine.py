"""`Engine`: a draft/target pair and the tokenizer they share; it starts runs (a chain, chain.py, or a tree,
tree_run.py) that record every round, handing each all it reads of the engine (a RunContext, decoding.py), and
times the target alone (`baseline`).

    run = Engine(draft, target, tokenizer).start(prompt, RunSettings(k=4, temperature=0))
    for rnd in run:          # each Round as soon as it is done (the UI streams these)
        ...
    trace = run.trace()      # settings, rounds, output, summary: the JSON a lecturer replays

Invariant between rounds: `ids` holds prompt + committed tokens; each model's KV cache holds every token of
`ids` but the last, at most. A model's next forward pass feeds exactly the tokens its cache lacks, so no round
re-encodes the prefix, and rollback is one crop to the accepted length. The caches start empty, or holding the chat
template's opening that every chat prompt begins with, read once per model (opening.py; the target alone starts
from it too): round 1 is the target's own prefill of the rest (no drafts; its one token is sampled from the
target's prompt logits, exactly as target-only decoding's first step), so the first token comes as fast as the
target alone gives it, and the draft encodes the prompt in round 2's first draft step. Each model encodes the
prompt once, with no pass of its own for it.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from functools import partial

import torch
from transformers import DynamicCache

from specviz.algorithm.sampling import sample, warp
from specviz.drafters import DRAFT_MODEL, EARLIER_TEXT, TARGET_LAYERS, TARGET_STATE
from specviz.drafters.trained import check_depth, how_to_train
from specviz.algorithm.cost_rule import CostRule
from specviz.engine import pass_costs, self_speculation
from specviz.engine.batch_prices import BatchPrices
from specviz.engine.chain import ChainRun
from specviz.engine.trained import load_trained, trained_folder
from specviz.models.packaged import cache_root
from specviz.engine.decoding import DecodingRun, RunContext, forward
from specviz.models.timer import synchronize
from specviz.engine.lean import LeanCache, LeanDecoder
from specviz.engine.opening import Openings, opening_of
from specviz.models.memory import draft_memory
from specviz.engine.request import RunSettings
from specviz.settings.bounds import COST_RULE, check_prompt_given
from specviz.engine.tree_pass import check_tree_attention
from specviz.engine.tree_run import TreeRun
from specviz.record.cost_profile import CostProfile
from specviz.record.trace import Baseline, PassCosts, Trace


class Engine:
    """Holds a draft/target pair and the tokenizer they share; starts runs."""

    def __init__(self, draft, target, tokenizer, draft_name="draft", target_name="target", dtype=None,
                 dtype_why: str = "", lean_draft: bool = True, kernels: str = ""):
        self.draft, self.target, self.tokenizer = draft, target, tokenizer
        self.draft_name, self.target_name = draft_name, target_name
        self.device = str(next(target.parameters()).device)
        self.dtype = dtype or str(next(target.parameters()).dtype).removeprefix("torch.")
        self.dtype_why = dtype_why  # why these kernels and this dtype on this device (pairs.load_pair), on the page
        self.kernels = kernels or self.dtype  # the path its linear layers run on (models/kernels.py), or the dtype
        # Models of one family may pad their embedding tables to different sizes (Qwen2.5 0.5B: 151936,
        # 7B: 152064); both distributions are taken over the shared ids only, in the baseline too.
        self.vocab = min(draft.config.vocab_size, target.config.vocab_size)
        self.max_positions = min(getattr(m.config, "max_position_embeddings", 1 << 30) for m in (draft, target))
        self.eos_ids = eos_ids(target, tokenizer)
        self._text: dict[int, str] = {}
        self.openings = Openings(opening_of(tokenizer))  # the chat template's opening, each model's read once
        self._early: dict[int, object] = {}  # self-speculation's drafts, one per N (they share the target's weights)
        self.lean_draft = lean_draft  # draft with lean.py's pass where the draft's architecture allows (same logits)
        self._lean: dict[object, LeanDecoder | None] = {}
        self._memory: dict[object, object] = {}  # drafter model -> its DraftMemory
        self._trained: dict[str, object] = {}  # trained drafters by kind (engine/trained.py), loaded when first chosen
        # What passes cost here, for the cost-aware rule: measured at load (EngineCache) or on first use, replaced by
        # the Costs tab's measurement; and the step of each drafter model but the draft (self-speculation's), timed once
        self.pass_costs: CostProfile | None = None
        self._draft_steps: dict[object, float] = {}
        self._clocks: dict[object, tuple[CostProfile, BatchPrices]] = {}  # drafter -> what its runs' rounds paid
        self.clock_prices = True  # reprice the cost-aware rule each round by what its rounds paid (clock_for); False:
        #                           the profile's prices throughout (a test's made-up prices stay as it made them)

    def check_drafter(self, settings: RunSettings) -> None:
        """ValueError, before any pass, where this engine cannot draft as `settings` ask: a self-speculation N the
        target cannot give, heads not trained for it (or trained for another target), a tree deeper than they
        reach. encode() asks it, so a run's drafter is built once, when the run starts (draft_for)."""
        spec = settings.drafter_spec
        self.layers_for(settings)
        if spec.source == TARGET_STATE:
            trained = self.trained_for(spec)
            if spec.shaped:
                check_depth(spec.trained, trained.n, depth=settings.depth)
            elif spec.tree:
                check_depth(spec.trained, trained.n, settings.widths)

    def draft_for(self, settings: RunSettings) -> tuple[object | None, str]:
        """(the model that drafts, the name a trace records) for a run whose settings check_drafter passed: the
        draft model, the target's first N layers (self-speculation), a trained drafter (Medusa heads or the EAGLE
        layer), or no model (a drafter that copies)."""
        spec = settings.drafter_spec
        if spec.source == EARLIER_TEXT:
            return None, spec.label
        if spec.source == DRAFT_MODEL:
            return self.draft, self.draft_name
        if spec.source == TARGET_STATE:
            trained = self.trained_for(spec)
            return trained, f"{trained.title} on {self.target_name}'s own hidden state"
        n = self.layers_for(settings)
        if n not in self._early:
            self._early[n] = self_speculation.early_exit(self.target, n)
        return self._early[n], (f"{self.target_name}, its first {n} of {self_speculation.layer_count(self.target)} "
                                f"layers")

    def trained_for(self, spec):
        """The trained drafter (Medusa heads or the EAGLE layer) a TARGET_STATE drafter reads: set with `use_trained`,
        or loaded once from beside the model cache (engine/trained.py); ValueError saying how to train it where none
        is, or where it was trained for another target."""
        if spec.trained not in self._trained:
            folder = trained_folder(cache_root(), self.target_name, spec.trained)
            trained = load_trained(folder, self.target, self.target_name, path=self.kernels)  # on the pair's kernels
            if trained is None:
                raise ValueError(how_to_train(spec.trained, self.target_name))
            self._trained[spec.trained] = trained
        return self._trained[spec.trained]

    def unavailable(self, spec) -> str | None:
        """Why this engine cannot draft with `spec` now (its heads are not trained yet, or were trained for another
        target), or None: what the Lab's comparison says instead of running it."""
        if spec.source != TARGET_STATE:
            return None
        try:
            self.trained_for(spec)
        except ValueError as e:
            return str(e)
        return None

    def use_trained(self, trained) -> None:
        """Draft with this trained drafter (Medusa heads or the EAGLE layer, of trained.kind) from now on: what
        train-drafters and the tests hand the engine."""
        self._trained[trained.kind] = trained

    def memory_of(self, drafter):
        """The drafter model's memory (models/memory.py), measured once per model."""
        if drafter not in self._memory:
            self._memory[drafter] = draft_memory(drafter, self.target)
        return self._memory[drafter]

    def new_draft_cache(self, drafter) -> DynamicCache | LeanCache:
        """An empty cache for a run's drafter: a LeanCache, which runs lean.py's pass, where the drafter's
        architecture allows it (and lean_draft is on), else transformers' DynamicCache."""
        if drafter is None or not self.lean_draft:
            return DynamicCache()
        if drafter not in self._lean:
            self._lean[drafter] = LeanDecoder(drafter) if LeanDecoder.supports(drafter) else None
        decoder = self._lean[drafter]
        return decoder.new_cache() if decoder else DynamicCache()

    def measure_pass_costs(self) -> CostProfile:
        """The short measurement of what passes cost (engine/pass_costs.py), kept on the engine."""
        self.pass_costs = pass_costs.measure_pass_costs(self)
        return self.pass_costs

    def price_at_load(self) -> CostProfile:
        """At load: the short measurement this machine remembered of this pair on these kernels (in the model cache),
        else measured now and remembered (pass_costs.remembered_or_measured); kept on the engine."""
        self.pass_costs = pass_costs.remembered_or_measured(self, cache_root())
        return self.pass_costs

    def cost_rule(self, drafter, settings: RunSettings, load: int = 1) -> tuple[CostRule | None, PassCosts | None,
                                                                                str | None]:
        """(the cost-aware rule, its prices, None), or (None, None, why not) when the measurement cannot price this
        run: the run then stops drafting by the threshold rule, and the trace says why."""
        if self.pass_costs is None:
            self.measure_pass_costs()
        problem = self.pass_costs.problem(self.device, self.dtype, self.target_name, self.kernels)
        if problem is None and drafter is not self.draft and drafter not in self._draft_steps:
            self._draft_steps[drafter] = pass_costs.draft_step_s(self, drafter)  # self-speculation's N layers
        if problem is None:
            step = self.pass_costs.draft_step(1) if drafter is self.draft else self._draft_steps[drafter]
            priced = pass_costs.prices(self.pass_costs, step, settings.k, load)
            if not all(math.isfinite(x) and x >= 0 for x in (priced.c, *priced.v)):
                problem = f"the cost measurement gives prices that are not numbers >= 0 (c = {priced.c:g})"
        if problem is not None:
            return None, None, f"{problem}; this run stopped drafting by the confidence threshold instead"
        return CostRule(priced.c, list(priced.v)), priced, None

    def clock_for(self, drafter) -> BatchPrices:
        """What the rounds of this drafter's cost-aware runs paid (engine/batch_prices.py at B = 1), kept across runs
        as a server keeps its batch's, and begun again when the profile is replaced (the Costs tab's measurement):
        its unit is a round of K = 0, the target alone's step as runs pay it (a run's plain rounds, and the target
        alone's steps wherever the engine times them: `baseline`)."""
        kept = self._clocks.get(drafter)
        if kept is None or kept[0] is not self.pass_costs:
            step = self.pass_costs.draft_step(1) if drafter is self.draft else self._draft_steps[drafter]
            profile = replace(self.pass_costs, batches=[1], target_batch_s=[self.pass_costs.target_step(1)],
                              draft_batch_s=[step])
            kept = self._clocks[drafter] = (self.pass_costs, BatchPrices(profile))
        return kept[1]

    def layers_for(self, settings: RunSettings) -> int:
        """Self-speculation's N for a run: as set, or half the target's layers for 0 (0 for other drafters)."""
        if settings.drafter_spec.source != TARGET_LAYERS:
            return 0
        count = self_speculation.layer_count(self.target)
        return self_speculation.check_layers(self.target, settings.draft_layers or count // 2)

    @classmethod
    def from_pair(cls, pair) -> "Engine":
        return cls(pair.draft, pair.target, pair.tokenizer, pair.draft_name, pair.target_name, pair.dtype,
                   getattr(pair, "dtype_why", ""), kernels=getattr(pair, "kernels", ""))

    def warm_up(self) -> None:
        """One short pass through each model: the first call on CPU pays for kernel selection (seconds),
        which would otherwise land in the first run's first round."""
        with torch.inference_mode():
            for model in (self.draft, self.target):
                forward(model, [0, 1, 2], DynamicCache(), 3)

    def encode(self, prompt: str, settings: RunSettings) -> list[int]:
        check_prompt_given(prompt)
        if settings.chat and getattr(self.tokenizer, "chat_template", None):
            ids = self.tokenizer.apply_chat_template([{"role": "user", "content": prompt}],
                                                     add_generation_prompt=True, tokenize=True)
            ids = ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids
        else:
            ids = self.tokenizer(prompt, add_special_tokens=False)["input_ids"]
        ids = list(ids)
        self.check_drafter(settings)  # a drafter this engine cannot give fails here, before any pass
        ahead, what = settings.k, "K"  # a round may draft this far past the committed tokens, then one more
        if settings.drafter_spec.tree:
            for model in (self.draft, self.target):
                check_tree_attention(model)  # a pair whose attention takes no custom mask fails before any pass
            ahead, what = settings.depth, "the tree's depth"
        if len(ids) + settings.max_new_tokens + ahead + 1 > self.max_positions:
            raise ValueError(f"prompt ({len(ids)} tokens) + max_new_tokens ({settings.max_new_tokens}) + {what} "
                             f"exceeds the models' context of {self.max_positions} tokens")
        return ids

    def text(self, token_id: int) -> str:
        if token_id not in self._text:
            self._text[token_id] = self.tokenizer.decode([token_id])
        return self._text[token_id]

    def start(self, prompt: str, settings: RunSettings, details: bool = True, load: int = 1,
              prompt_ids: list[int] | None = None) -> DecodingRun:
        """A run of the chain (chain.ChainRun) or, for a tree drafter, of draft trees (tree_run.TreeRun). `load`:
        the runs in flight on this device, this one included, which the cost-aware rule prices drafts at.
        `prompt_ids`: encode(prompt, settings), where the caller has checked the prompt with it already (the page
        does, before its GPU call), so that the prompt is tokenised once."""
        if settings.drafter_spec.tree:  # the trace records the shape used: the widths, or a shaped tree's depth
            shape = dict(tree_depth=settings.depth) if settings.drafter_spec.shaped else dict(tree_widths=settings.widths)
            settings = replace(settings, **shape)
            return TreeRun(self._context(prompt, settings, prompt_ids), prompt, settings, details)
        settings = replace(settings, draft_layers=self.layers_for(settings))  # and self-speculation's N
        if settings.drafter_spec.source == TARGET_STATE:  # a head a draft: K is at most the number of heads
            settings = replace(settings, k=min(settings.k, self.trained_for(settings.drafter_spec).n))
        ctx = self._context(prompt, settings, prompt_ids)
        rule = prices = note = None
        if settings.adaptive and settings.stop_rule == COST_RULE and settings.drafter_spec.has_draft_cache:
            rule, prices, note = self.cost_rule(ctx.drafter, settings, load)
        clock = self.clock_for(ctx.drafter) if rule and self.clock_prices else None
        return ChainRun(ctx, prompt, settings, details, rule, prices, note, clock)

    def _context(self, prompt: str, settings: RunSettings, prompt_ids: list[int] | None) -> RunContext:
        """All a run of `settings` reads of this engine (decoding.RunContext)."""
        ids = self.encode(prompt, settings) if prompt_ids is None else list(prompt_ids)
        drafter, drafter_name = self.draft_for(settings)
        opening = self._opening(settings, ids)
        return RunContext(prompt_ids=ids, target=self.target, drafter=drafter,
                          new_target_cache=partial(self._target_cache, opening, ids),
                          new_draft_cache=partial(self._draft_cache, drafter, opening, ids),
                          opening=opening, vocab=self.vocab,
                          eos_ids=self.eos_ids, text=self.text, tokenizer=self.tokenizer, device=self.device,
                          dtype=self.dtype, kernels=self.kernels, target_name=self.target_name,
                          drafter_name=drafter_name,
                          draft_memory=self.memory_of(drafter))

    def _opening(self, settings: RunSettings, ids: list[int]) -> int:
        """The prompt tokens a run of `settings` on these ids finds in its caches from the start: the chat template's
        opening (opening.py) where they begin with it and the drafter needs no target states of the prompt's
        positions (Medusa heads and the EAGLE layer read them, so their runs and their target alone read the whole
        prompt), else 0."""
        return self.openings.held(ids) if settings.drafter_spec.source != TARGET_STATE else 0

    def _target_cache(self, opening: int, ids: list[int]) -> DynamicCache:
        """A run's target cache: holding the template's opening where `opening` (its length), else empty."""
        return self.openings.fresh(self.target, DynamicCache, ids) if opening else DynamicCache()

    def _draft_cache(self, drafter, opening: int, ids: list[int]):
        """A run's draft cache (new_draft_cache's kind), holding the template's opening where `opening`."""
        new = partial(self.new_draft_cache, drafter)
        return self.openings.fresh(drafter, new, ids) if opening else new()

    def run(self, prompt: str, settings: RunSettings, details: bool = True, baseline: bool = False,
            load: int = 1) -> Trace:
        run = self.start(prompt, settings, details, load)
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
        new, steps = [], []
        cache = self._target_cache(self._opening(settings, ids), ids)  # from the opening as the run's target is
        t0 = last = time.perf_counter()  # from here, as a run's rounds are timed (its caches made before)
        with torch.inference_mode():
            pending = ids[cache.get_seq_length():]  # the first step encodes the prompt, as round 1 does in a run
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
        self._clock_plain_steps(steps[1:])
        return Baseline(new, self.tokenizer.decode(new, skip_special_tokens=True), steps[0], total,
                        len(new) / total if total > 0 else 0.0, steps)

    def _clock_plain_steps(self, steps: list[float]) -> None:
        """The target alone's steps (after the prompt's) into every drafter's clock as rounds of K = 0, its unit. A
        run that drafts in every round never times one itself, and its clock then took the unit from the load's short
        measurement, scaled: so v(1), what a second token adds to a pass, stayed that measurement's, which ranged from
        1.12 to 1.47 steps between loads on the AMD EPYC (2026-12-06), the difference between drafting one token on a
        story in every round or in almost none."""
        if self.pass_costs is None or self.draft is None:
            return
        for clock in {self.clock_for(self.draft)} | {kept[1] for kept in self._clocks.values()}:
            for seconds in steps:
                clock.add(1, 0, None, seconds)


def eos_ids(model, tokenizer) -> set[int]:
    """The ids that end a text for this model: its generation config's, its config's and its tokenizer's."""
    ids = set()
    for source in (getattr(model, "generation_config", None), model.config, tokenizer):
        value = getattr(source, "eos_token_id", None)
        ids.update(value if isinstance(value, (list, tuple, set)) else [] if value is None else [value])
    return {int(i) for i in ids}
