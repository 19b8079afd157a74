"""The recorded examples that ship with the app: real runs of the packaged pair, each with its target-only
baseline, saved as trace files under assets/examples/ so the page can show them with no model loaded (and at
once, while the first start still prepares the pair).

`EXAMPLES` is the catalogue: what each one records (prompt and settings) and what it shows, in one sentence that
`Example.shows` checks against the recorded trace, so a re-recording that no longer shows it is caught.
`record_examples` records them (`python -m specviz record-examples`): each as the run and the target alone timed in
turns (engine/repeats.py), the median turn kept with every turn's times, all the turns timed once more where a side's
turns varied more than record/stats.py's QUIET (1.15×), and none whose speedup is above its
ceiling (what its own target passes allow with drafting free: record/stats.py's Ceiling) passes as shown; `load_example` reads one back and raises `ExampleError`, naming the
file and what is wrong, for a missing or corrupt file.
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable

from specviz.drafters import DISTINCT, HEADS, LOOKUP
from specviz.engine import Engine, RunSettings
from specviz.engine.repeats import timed_run
from specviz.settings.bounds import COST_RULE, THRESHOLD_RULE, Progress
from specviz.settings.prompts import (CODE_ONLY_PROMPT, CODE_PROMPT, PARIS_MORE_PROMPT, POOR_DRAFT_PROMPT,
                                      REWRITE_PROMPT, STORY_PROMPT)
from specviz.record.stats import QUIET, quiet, speedups, turn_rates
from specviz.record.trace import ACCEPTED, PUBLISHED_TURNS, REJECTED, Trace
from specviz.record.load import load_trace

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES_DIR = ROOT / "assets" / "examples"
SUFFIX = ".json"  # not ".trace.json": .gitignore ignores those (downloaded traces), and these are committed
MAX_EXAMPLE_BYTES = 150 * 1024  # each file stays small: the repository carries them, the first page load reads one


class ExampleError(ValueError):
    """A shipped example that cannot be shown: unknown, missing, corrupt or not what the catalogue says."""


@dataclass(frozen=True)
class Example:
    """One shipped recording: what was run, and what it shows."""

    name: str  # the key in EXAMPLES, and the file's stem
    title: str  # a few words for the gallery
    description: str  # one sentence: what a viewer sees in it (`shows` checks it)
    prompt: str
    settings: RunSettings
    shows: Callable[[Trace], bool]  # whether a recording shows what `description` says

    @property
    def file(self) -> str:
        return self.name + SUFFIX


# --- what each example must show (checked on every recording, and by the tests on the shipped files) ----------

def rejections(trace: Trace) -> int:
    """Rounds that ended in a rejection (and so in a replacement token)."""
    return sum(1 for r in trace.rounds if any(d.fate == REJECTED for d in r.drafts))


def clean_sweeps(trace: Trace) -> int:
    """Rounds that accepted every draft (and so drew a bonus token)."""
    return sum(1 for r in trace.rounds if r.drafts and r.n_accepted == r.k)


def _shows_code(trace: Trace) -> bool:
    same = trace.baseline is not None and trace.baseline.output_token_ids == trace.output_token_ids
    return clean_sweeps(trace) > len(trace.rounds) / 2 and same


def _shows_paris(trace: Trace) -> bool:
    # " Paris" drafted and kept with min(1, p/q) = 1 (both models sure of it), and rejections after it
    sure = any(d.text.strip() == "Paris" and d.fate == ACCEPTED and d.accept_prob == 1.0
               for r in trace.rounds for d in r.drafts)
    return sure and rejections(trace) >= 2


def _shows_story(trace: Trace) -> bool:
    return rejections(trace) >= len(trace.rounds) / 2


def _shows_rewrite(trace: Trace) -> bool:
    return clean_sweeps(trace) >= 5 and any(r.k == 0 for r in trace.rounds)


def _cost_rounds(trace: Trace) -> list:
    """The rounds the rule chose K for freely: after the first (the target's own prefill, which drafts nothing), and
    not cut short by the run's end (whose K the tokens left bound)."""
    return [r for r in trace.rounds[1:] if not r.stop]


def _shows_adaptive(trace: Trace) -> bool:
    # Round 1 is the target's own prefill (it drafts nothing); the last round may be cut short by max_new_tokens.
    ks = [r.k for r in trace.rounds[1:-1]]
    code = "def " in trace.output_text and "return" in trace.output_text
    # How far the rule goes depends on the machine's prices: all 8 on the Xeon of 2026-12-05, at most 7 on the EPYC of
    # 2026-12-06 (a draft step there 0.46 of a target step); what the example shows is that the rounds differ.
    return bool(ks) and trace.settings["adaptive"] and min(ks) < max(ks) <= trace.settings["k"] and code


TREE_WIDTHS = (2, 2, 1, 1)  # the tree example's children per node at each depth

# The adaptive example's run, and how its description says the rule stops (the recording named no rule: the threshold)
ADAPTIVE = RunSettings(k=8, temperature=0.7, seed=1, max_new_tokens=48, adaptive=True, stop_rule=COST_RULE)
STOPS = {THRESHOLD_RULE: f"the draft stops once the product of its own probabilities of its drafts (at temperature 1) "
                         f"falls below {ADAPTIVE.confidence:g}",
         COST_RULE: "the cost-aware rule drafts one more token only while its estimated chance of surviving pays for "
                    "what it costs on this machine"}


def _shows_short_rounds(trace: Trace) -> bool:
    # most rounds after the first drafted one token at most, because the rule found no further draft worth its cost,
    # and some drafted more: the rule chose, round by round
    later = _cost_rounds(trace)
    short = [r for r in later if r.k <= 1 and r.cost is not None and r.cost.choices
             and not r.cost.choices[-1].drafted]
    return (trace.settings.get("stop_rule") == COST_RULE and len(short) > len(later) / 2
            and any(r.k >= 2 for r in later))


def sibling_saves(trace: Trace) -> int:
    """Tree rounds that kept a node whose earlier sibling was rejected: where a chain would have stopped."""
    def saved(tree) -> bool:
        return any(tree.parents[j] == tree.parents[node] for node in tree.path for j in range(1, node))
    return sum(1 for r in trace.rounds if r.tree is not None and saved(r.tree))


def duplicate_siblings(trace: Trace) -> int:
    """Tree nodes whose token an earlier sibling already drafted. Such a node's test could never pass: the earlier
    copy is rejected only where p < q, and the residual max(0, p − q) then gives the token nothing (p′ = 0)."""
    def repeats(r) -> int:
        parents, tokens = r.tree.parents, [r.tree.root_id] + [d.token_id for d in r.drafts]
        return sum(any(parents[j] == parents[node] and tokens[j] == tokens[node] for j in range(1, node))
                   for node in range(1, len(parents)))
    return sum(repeats(r) for r in trace.rounds if r.tree is not None)


def _shows_tree(trace: Trace) -> bool:
    # siblings distinct (every sibling's test could pass), one kept after its sibling's rejection, and slower than
    # the target alone, as its description says
    both = speedups(trace)
    return (trace.settings.get("drafter") == DISTINCT.key and duplicate_siblings(trace) == 0
            and sibling_saves(trace) >= 1 and bool(both) and both[0].value.median < 1)


def _shows_heads(trace: Trace) -> bool:
    # the heads' text is the target's own, and a later head earned its keep: a round kept two drafts or more
    same = trace.baseline is not None and trace.baseline.output_token_ids == trace.output_token_ids
    return trace.settings.get("drafter") == HEADS.key and same and any(r.n_accepted >= 2 for r in trace.rounds)


def speedup_is_a_result(trace: Trace) -> bool:
    """Whether the recording's speedups are results: a baseline timed in at least PUBLISHED_TURNS turns, and no
    median above its ceiling, what the run's own target passes allow with drafting free (that would be timing
    noise)."""
    both = speedups(trace)
    return (both is not None and trace.baseline.repeats is not None
            and len(trace.baseline.repeats.speculative) >= PUBLISHED_TURNS and not any(sp and sp.beyond for sp in both))


STEADY = 1.5  # the slowest turn of a side over its fastest, at most: beyond it the machine was busy while recording,
#               and the recording is refused (within it but above stats.QUIET, it is timed again once, then kept with
#               its spread said on the page)
MAX_C = 1.0  # a draft step priced above one target step: a 0.5B draft cannot cost more than its 1.5B target, unless
#              the machine was busy while the pair's costs were measured (issue 46: c = 1.45 on an overloaded one)


def unsteady(trace: Trace) -> list[str]:
    """Why a recording was made on a busy machine, in words (empty: it was not): a side whose turns differ by more
    than STEADY times, or a cost-aware c above MAX_C."""
    why = []
    repeats = trace.baseline.repeats if trace.baseline else None
    for side, rates in zip(("speculative", "target alone"), turn_rates(repeats) if repeats else ()):
        if rates.ratio > STEADY:
            why.append(f"the {side}'s turns ran at {rates.low:.2f}-{rates.high:.2f} tokens/s (over {STEADY:g}x)")
    if trace.pass_costs is not None and trace.pass_costs.c > MAX_C:
        why.append(f"a draft step priced at c = {trace.pass_costs.c:.2f} target steps (over {MAX_C:g})")
    return why


EXAMPLES = {e.name: e for e in [
    Example("code", "Code, greedy",
            "A Python function at temperature 0: the draft guesses most code right, so most rounds keep all K drafts "
            "and one target pass commits K + 1 tokens; the text equals the target's own greedy output.",
            CODE_PROMPT, RunSettings(k=4, temperature=0.0, seed=0, max_new_tokens=64), _shows_code),
    Example("paris", "Paris, sampled",
            "The Lab's Paris question asked of the real models at temperature 1: unlike the Lab's toy pair (q 0.9, "
            "p 0.6, kept with probability 0.667), both models are sure of “ Paris”, so min(1, p/q) = 1 keeps it for "
            "certain; in the sentence after it they differ, drafts are rejected and the residual max(0, p − q) "
            "picks each replacement.",
            PARIS_MORE_PROMPT, RunSettings(k=5, temperature=1.0, seed=1, max_new_tokens=48), _shows_paris),
    Example("story", "Story, sampled",
            "A story opening sampled at temperature 0.8 with top-p 0.95 (the text reads well; at temperature 1 the "
            "rare words it drew looked like a fault): the models still disagree on word choice, so most rounds end in "
            "a rejection and a replacement drawn from the residual max(0, p − q).",
            STORY_PROMPT, RunSettings(k=4, temperature=0.8, top_p=0.95, seed=2, max_new_tokens=30), _shows_story),
    Example("rewrite", "Rewrite, prompt lookup",
            "Adding type hints to a function, drafted by prompt lookup (no draft model): once the answer copies the "
            "function's body, copied drafts are accepted K at a time; where nothing matches, a round drafts nothing.",
            REWRITE_PROMPT, RunSettings(k=4, temperature=0.0, seed=0, max_new_tokens=64, drafter=LOOKUP.key),
            _shows_rewrite),
    Example("adaptive", "Adaptive K",
            f"Adaptive K (at most {ADAPTIVE.k}) on code: {STOPS[ADAPTIVE.stop_rule]}, so rounds draft different "
            f"numbers of tokens: more where the draft is surer, fewer where it is not; each round's explanation says "
            f"why.",
            CODE_ONLY_PROMPT, ADAPTIVE, _shows_adaptive),
    Example("spices", "Drafts poorly, short rounds",
            "Made-up spice names sampled at temperature 1 with adaptive K (at most 8) and the cost-aware rule: the "
            "small draft guesses the target's invented words poorly, so in most rounds the rule finds a first draft "
            "worth its cost and no second one, and drafts a single token; where the draft is surer it drafts more. "
            "Each round's weighing is on the page.",
            POOR_DRAFT_PROMPT, RunSettings(k=8, temperature=1.0, seed=3, max_new_tokens=24, adaptive=True,
                                           stop_rule=COST_RULE), _shows_short_rounds),
    Example("story-tree", "Story, draft tree, distinct children",
            f"The story opening as a tree whose siblings are distinct ({TREE_WIDTHS[0]} children at each of the first "
            "two depths, then one, drawn from q without replacement, at temperature 0.8 with no top-p, so that q "
            "always has another token to give): the target scores every node in one pass; where it rejects a draft, "
            "its sibling, another token, is tested against the residual max(0, p − q) and may be kept, where a chain "
            "would have stopped. Slower than the target alone here: on this CPU one pass over the tree's 15 positions "
            "costs about 3.6 one-token steps (the Costs tab's t(15) ÷ t(1)), close to the tokens a round keeps, so "
            "even with drafting free the tree would gain little (its ceiling, beside the speedup), and drafting its "
            "nodes costs the rest.",
            STORY_PROMPT, RunSettings(temperature=0.8, seed=5, max_new_tokens=30, drafter=DISTINCT.key,
                                      tree_widths=TREE_WIDTHS), _shows_tree),
    Example("code-heads", "Code, Medusa heads",
            "The Fibonacci function drafted by three Medusa heads that specviz trained on the target's own answers "
            "when this run was recorded (`python -m specviz train-drafters`; a machine that has not run it has no "
            "heads of its own, as its settings say): no draft model runs; each head reads the target's last hidden state "
            "and guesses the token 1, 2 or 3 places ahead, a later head kept only after every head before it was; "
            "the text equals the target's own greedy output. Its draft reads only the output rows of the tokens the "
            "target used most in training (at most 32,768 of 151,936), so its draft time compares with the Costs "
            "tab's “Drafting over fewer rows”, not with its heads over all rows.",
            CODE_PROMPT, RunSettings(k=3, temperature=0.0, seed=0, max_new_tokens=48, drafter=HEADS.key),
            _shows_heads),
]}
FIRST = "code"  # the one the page opens while the models prepare


# --- reading ----------------------------------------------------------------------------------------------------

def load_example(name: str, folder: Path | None = None) -> Trace:
    """The recorded trace of example `name`; ExampleError naming the file and what is wrong otherwise."""
    example = EXAMPLES.get(name) if isinstance(name, str) else None
    if example is None:
        raise ExampleError(f"there is no recorded example {name!r}; the examples are {', '.join(EXAMPLES)}")
    path = (folder or EXAMPLES_DIR) / example.file
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ExampleError(f"the recorded example {shown(path)} is missing; record it again with "
                           "`python -m specviz record-examples`") from None
    except OSError as e:
        raise ExampleError(f"could not read the recorded example {shown(path)}: {e.strerror}") from None
    try:
        trace = load_trace(raw)
    except ValueError as e:
        raise ExampleError(f"the recorded example {shown(path)} is corrupt: {e}") from None
    check_recorded_as(example, trace, path)
    return trace


@lru_cache(maxsize=len(EXAMPLES))
def _shipped(name: str) -> Trace:
    return load_example(name)


def example_named(trace: Trace) -> str | None:
    """The shipped example `trace` is (a baseline run on it since aside), or None: what a link can name."""
    plain = dataclasses.replace(trace, baseline=None)
    for name in EXAMPLES:
        try:
            if dataclasses.replace(_shipped(name), baseline=None) == plain:
                return name
        except ExampleError:
            continue
    return None


def check_recorded_as(example: Example, trace: Trace, path: Path) -> None:
    """The file must hold the run the catalogue describes: its prompt and settings (a setting added to RunSettings
    after the recording, absent from the file, counts as its default: the recording did not use it)."""
    expected, defaults = asdict(example.settings), asdict(RunSettings())
    differ = [key for key, value in expected.items() if trace.settings.get(key, defaults[key]) != _as_json(value)]
    if trace.prompt != example.prompt:
        differ.insert(0, "prompt")
    if differ:
        raise ExampleError(f"the recorded example {shown(path)} does not match its description (it differs in "
                           f"{', '.join(differ)}); record it again with `python -m specviz record-examples`")


def _as_json(value):
    """A setting as a trace file holds it: a tuple (tree widths) as a list."""
    return list(value) if isinstance(value, tuple) else value


def shown(path: Path) -> str:
    """A file as a message names it: relative to the repository when it is in it."""
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


# --- recording --------------------------------------------------------------------------------------------------

@dataclass
class Recorded:
    example: Example
    path: Path
    trace: Trace
    size: int  # bytes written

    @property
    def shows(self) -> bool:
        """What its description says, with speedups that are results, recorded on a steady machine (record_command
        says which failed)."""
        return self.example.shows(self.trace) and speedup_is_a_result(self.trace) and not unsteady(self.trace)


def record_example(engine: Engine, example: Example, folder: Path | None = None, turns: int = PUBLISHED_TURNS,
                   say=lambda line: None) -> Recorded:
    """Run one example and the target alone in `turns` turns (after a warm-up run of each), and all the turns once
    more where a side's turns varied more than QUIET times (the machine was not quiet); write the median turn's
    trace, its baseline and every turn's times as compact JSON (the files ship). Still not quiet, it is kept, and the
    page says how far its turns varied."""
    trace = timed_run(engine, example.prompt, example.settings, turns, say=say)
    if not quiet(trace.baseline.repeats):
        said = max(rates.ratio for rates in turn_rates(trace.baseline.repeats))
        say(f"{example.name}: a side's turns varied {said:.2f}x (over {QUIET:g}x); timing all {turns} turns again")
        trace = timed_run(engine, example.prompt, example.settings, turns, say=say)
    text = trace.to_json()
    folder = folder or EXAMPLES_DIR
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / example.file
    path.write_text(text, encoding="utf-8")
    return Recorded(example, path, trace, len(text.encode("utf-8")))


def record_examples(engine: Engine, names: list[str] | None = None, folder: Path | None = None,
                    progress: Progress | None = None, turns: int = PUBLISHED_TURNS) -> list[Recorded]:
    """Record the named examples (all by default), in catalogue order."""
    unknown = [n for n in names or [] if n not in EXAMPLES]
    if unknown:
        raise ValueError(f"unknown example {', '.join(unknown)}; the examples are {', '.join(EXAMPLES)}")
    chosen = [e for e in EXAMPLES.values() if not names or e.name in names]
    done = []
    for i, example in enumerate(chosen):
        if progress:
            progress(i / len(chosen), f"recording {example.name}")
        done.append(record_example(engine, example, folder, turns,
                                   say=(lambda line: progress((i + 0.5) / len(chosen), line)) if progress else
                                   (lambda line: None)))
    return done
