"""Why a round drafted as many tokens as it did, in one line: what the presenter view says where the page's explanation
(explanation.py), which no projector fits beside the cards, says it at length. The cost-aware rule's words are
cost_words.py's; why nothing was drafted and when the threshold rule stops are explanation.py's. Plain text (the
stage escapes it).

    why_k(trace, 0)   # 'Round 1 is the target's own prefill'
    why_k(trace, 5)   # 'Cost-aware K: no draft would pay: the first draft's estimated chance of surviving, …'
"""

from __future__ import annotations

from specviz.record.trace import Trace
from specviz.settings.bounds import ADAPTIVE_CONFIDENCE
from specviz.view.cost_words import round_reason
from specviz.view.explanation import stopped_by_threshold, threshold_product, why_nothing_drafted


def why_k(trace: Trace, index: int) -> str:
    """Why round `index` drafted rnd.k tokens, in one sentence without a full stop: the cost-aware rule's deciding
    comparison, the threshold rule's product, or why nothing was drafted; '' where K was simply the setting."""
    rnd = trace.rounds[index]
    reason = round_reason(rnd, trace.pass_costs, trace.eos_token_ids)
    if reason:
        return f"Cost-aware K: {reason}"
    if rnd.k == 0:
        return why_nothing_drafted(trace, index)
    if stopped_by_threshold(trace, rnd):
        threshold = trace.settings.get("confidence", ADAPTIVE_CONFIDENCE)
        product = threshold_product(trace, rnd)
        return (f"Adaptive K stopped at {rnd.k} of at most {trace.settings.get('k')}: the draft's own confidence "
                f"{'in all of them, ' + product + ',' if product else 'in all of them'} fell below {threshold:g}")
    return ""
