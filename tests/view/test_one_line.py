"""one_line.py: a round in the one sentence the presenter view shows, on hand-built rounds whose sentence is worked
out beside them: nothing drafted, a rejection (chain and tree), a clean sweep with its bonus kept or dropped, the
accepted tokens listed up to LISTED and counted past it, and an adaptive round's reason after it, escaped."""

import pytest

from specviz.record.trace import (ACCEPTED, BONUS, DISCARDED, REJECTED, REPLACEMENT, DraftPosition, Round, TokenProb,
                                  Trace, TreeRecord)
from specviz.view.one_line import LISTED, round_in_one_line


def q(text: str) -> str:
    """A token as the sentence quotes it (token_text.quoted)."""
    return f'<code class="sv-q-tok">“{text}”</code>'


def said(sentence: str, n: int, why: str = "") -> str:
    return f'<div class="sv-words">In words: {sentence}: <b>{n} for one target pass</b>.{why}</div>'


def chain(fates: list[str], last: str, kept: bool = True, texts: str = "ABCDEFG", confidence=None) -> Round:
    """Round 2 (index 1) of a chain: one draft per fate, texts A, B, …; then the replacement or the bonus `last`,
    committed after the accepted drafts unless `kept` is False (the accepted drafts ended the text)."""
    drafts = [DraftPosition(10 + i, texts[i], 0.5, 0.4, fate, confidence=confidence) for i, fate in enumerate(fates)]
    n = fates.count(ACCEPTED)
    kind = BONUS if n == len(fates) else REPLACEMENT
    return Round(1, len(fates), drafts, n, TokenProb(99, last, 0.5), kind, None, None,
                 [10 + i for i in range(n)] + ([99] if kept else []), 0.0, 0.0)


def line(rnd: Round, **settings) -> str:
    """round_in_one_line of `rnd` as round 2, after round 1, the target's prefill."""
    prefill = Round(0, 0, [], 0, TokenProb(1, "a", 1.0), BONUS, None, None, [1], 0.0, 0.0)
    trace = Trace({"k": 4, "max_new_tokens": 64, **settings}, "d", "t", "cpu", "float32", "", [], [prefill, rnd],
                  [1, *rnd.committed_ids], "")
    return round_in_one_line(trace, 1)


def test_a_round_that_drafted_nothing_gives_the_targets_token_on_its_own():
    rnd = Round(0, 0, [], 0, TokenProb(1, "a", 1.0), BONUS, None, None, [1], 0.0, 0.0)
    trace = Trace({}, "d", "t", "cpu", "float32", "", [], [rnd], [1], "a")
    assert round_in_one_line(trace, 0) == said(f"nothing was drafted; the target's pass gave {q('a')} on its own",
                                               "1 token")  # its reason (the prefill) is on its card, not here


@pytest.mark.parametrize("fates, agreed", [
    ([REJECTED, DISCARDED], "nothing"),
    ([ACCEPTED, REJECTED, DISCARDED], q("A")),
    ([ACCEPTED, ACCEPTED, REJECTED], f"{q('A')} and {q('B')}"),
    ([ACCEPTED, ACCEPTED, ACCEPTED, REJECTED], f"{q('A')}, {q('B')} and {q('C')}"),
    ([ACCEPTED] * 5 + [REJECTED], "the first 5"),  # past LISTED accepted tokens, counted
])
def test_a_rejection_lists_what_was_kept_then_the_residuals_draw(fates, agreed):
    n = fates.count(ACCEPTED) + 1
    assert line(chain(fates, "x")) == said(
        f"the target kept {agreed}, found the next draft less likely than the draft did and rejected it, then drew "
        f"{q('x')} from the residual in its place", f"{n} token{'s' * (n != 1)}")


def test_a_greedy_rejection_takes_the_targets_top_token_nothing_drawn():
    """Issue 64, item 7: at temperature 0 nothing is drawn (p is one-hot), yet the sentence said "drew “·#” from the
    residual"; the target's top token is taken, as the phone's longer text says."""
    n = 2
    assert line(chain([ACCEPTED, REJECTED], "x"), temperature=0) == said(
        f"the target kept {q('A')}, found that the next draft was not its top token and rejected it, then took its "
        f"top token {q('x')} in its place", f"{n} tokens")
    assert line(tree_round([ACCEPTED, REJECTED], [1], "x"), temperature=0) == said(
        f"the target kept {q('A')}, found that none of the path's next nodes was its top token, so it rejected them, "
        f"then took its top token {q('x')} in its place", f"{n} tokens")


def test_a_clean_sweep_keeps_all_its_drafts_and_adds_the_bonus():
    assert line(chain([ACCEPTED, ACCEPTED], "z")) == said(
        f"the target kept all 2 drafts ({q('A')} and {q('B')}) and added the bonus {q('z')} from p", "3 tokens")


def test_one_draft_kept_is_named_not_called_all_1():
    assert line(chain([ACCEPTED], "z")) == said(f"the target kept {q('A')} and added the bonus {q('z')} from p",
                                                "2 tokens")


def test_more_than_listed_drafts_kept_are_counted_not_quoted():
    k = LISTED + 1
    assert line(chain([ACCEPTED] * k, "z")) == said(f"the target kept all {k} drafts and added the bonus {q('z')} "
                                                    f"from p", f"{k + 1} tokens")


def test_a_bonus_after_the_text_ended_is_dropped():
    assert line(chain([ACCEPTED, ACCEPTED], "z", kept=False)) == said(
        f"the target kept all 2 drafts ({q('A')} and {q('B')}) and dropped the bonus {q('z')}: the text ended",
        "2 tokens")


def tree_round(fates: list[str], path: list[int], last: str) -> Round:
    """A chain-shaped tree (widths 1-1: node 1 below the root, node 2 below node 1) walked along `path`."""
    rnd = chain(fates, last)
    rnd.tree = TreeRecord(widths=[1, 1], parents=[-1, 0, 1], depth=[0, 1, 2], root_id=1, root_text="a", path=path,
                          test_p=[0.5, 0.5 if fates[1] != DISCARDED else None])
    return rnd


def test_a_tree_keeps_a_path_and_rejects_the_next_path():
    assert line(tree_round([ACCEPTED, REJECTED], [1], "x")) == said(
        f"the target kept {q('A')}, found the next path less likely than the draft did and rejected it, then drew "
        f"{q('x')} from the residual in its place", "2 tokens")


def test_a_tree_walked_to_a_leaf_says_so():
    assert line(tree_round([ACCEPTED, ACCEPTED], [1, 2], "z")) == said(
        f"the target kept the path {q('A')} and {q('B')} to a leaf and added the bonus {q('z')} from p", "3 tokens")


def test_token_text_is_escaped():
    assert line(chain([ACCEPTED, REJECTED], "<i>", texts="<>")) == said(
        f"the target kept {q('&lt;')}, found the next draft less likely than the draft did and rejected it, then "
        f"drew {q('&lt;i&gt;')} from the residual in its place", "2 tokens")


def test_an_adaptive_round_says_why_it_stopped_after_what_it_did_escaped():
    # 2 of at most 4 drafted, tokens left and no end of text: the threshold rule stopped it (why_k.py); no
    # confidences recorded, so no product is written out; the apostrophe is escaped with the rest of the reason
    rnd = chain([ACCEPTED, REJECTED], "x")
    assert line(rnd, adaptive=True, confidence=0.5) == said(
        f"the target kept {q('A')}, found the next draft less likely than the draft did and rejected it, then drew "
        f"{q('x')} from the residual in its place", "2 tokens",
        " Adaptive K stopped at 2 of at most 4: the draft&#x27;s own confidence in all of them fell below 0.5.")
    assert line(rnd) == said(  # K drafted as set: nothing to add
        f"the target kept {q('A')}, found the next draft less likely than the draft did and rejected it, then drew "
        f"{q('x')} from the residual in its place", "2 tokens")
