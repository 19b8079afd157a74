"""Self-speculation: the target's own first N layers, then its final norm and LM head, draft (LayerSkip-style early
exit; the engine builds that draft from the target in engine/self_speculation.py). No second model, no second
tokenizer; Qwen2.5 was not trained to exit early, so expect a low acceptance rate at small N."""

from specviz.drafters.base import TARGET_LAYERS, Drafter, Param, plural

DRAFT_LAYERS = Param("draft_layers", "draft layers N", "--draft-layers",
                     "the target's first N layers draft (0 = half of them)")


def _proposed(k: int, drafted: str, draft_name: str) -> str:
    return (f"The target's own first layers proposed {plural(k, 'token')}, one at a time: {drafted} "
            f"(self-speculation: {draft_name}, then the target's final norm and LM head; no second model).")


DRAFTER = Drafter(key="layers", label="self-speculation", source=TARGET_LAYERS,
                  proposed=_proposed, params=(DRAFT_LAYERS,), chart_symbol="diamond", chart_dash="dot")
