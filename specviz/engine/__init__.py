"""The engine: one request contract (request.py), the draft-and-verify runs (chain and tree) that record every
round, the lean draft pass, self-speculation, the trained drafters' models (Medusa heads, the EAGLE-style layer) and
the short measurement of a pair's passes that the cost-aware stop rule prices drafts with.

- request.py: RunSettings, the one request contract: one default per field, checked once when made
- engine.py: Engine: the pair and its tokenizer; checks a run's drafter, builds it, starts runs, times the target alone
- decoding.py: what every run shares: a forward pass over what a cache lacks, rollback, the run's state, the commit rule
- chain.py: a chain drafter's run: draft, one target pass, verify, commit, roll back; yields rounds
- model_draft.py: model_chain, the one loop that drafts a chain with a draft model, for a run alone and for a batch
- tree_pass.py: a draft tree through the models: drafted depth by depth, every node scored in one target pass
- tree_run.py: the tree drafter's run: draft a tree, score it, verify, keep the accepted path, commit
- lean.py: the draft's forward pass without transformers' per-call machinery: the same logits, a cheaper step
- opening.py: the chat template's opening, the same for every prompt: each model's cache of it, made once, copied
- self_speculation.py: self-speculation's draft: the target's first N layers, its final norm and LM head
- medusa.py: MedusaHeads: residual blocks over the target's last hidden state, sharing its LM head
- heads_draft.py: drafting with Medusa heads from the hidden state the last verify pass left
- eagle.py: EagleDrafter: one small decoder layer on the target's own features, read out through its LM head
- eagle_draft.py: drafting with the EAGLE-style layer from the features the verify passes kept
- readout.py: SubsetReadout: the target's LM head over part of the vocabulary (FR-Spec)
- trained.py: what both trained drafters keep beside the model cache: fingerprint, provenance, saving and loading
- batched.py: many users at once: B sequences decoded together, joining and leaving through one admission loop
- batch_slots.py: a batch's KV caches: a row per sequence and the slots each row kept
- batch_prices.py: what a batch's rounds cost, measured as they run, and every sequence's verdicts by position
- pass_costs.py: the short measurement of a pair's passes at load, and the prices the cost-aware rule drafts by
- repeats.py: a speedup as a paper publishes it: the run and the target alone in interleaved turns

Imports settings, drafters, record, algorithm and models (a loaded pair, its kernels, the timer); never the view, the
Lab or the page. `Engine` and `RunSettings` are importable from here (`from specviz.engine import Engine,
RunSettings`); a pair is loaded by specviz.models.pairs.
"""

from specviz.engine.engine import Engine  # noqa: E402  the Python API's entry points
from specviz.engine.request import RunSettings  # noqa: E402

__all__ = ["Engine", "RunSettings"]
