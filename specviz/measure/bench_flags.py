"""`python -m specviz bench`'s flags: each flag with its default and help, and `BENCH_NEEDS`, the flags that apply
only with another of its flags (read as settings/needs.py reads a run's settings: the command line refuses the first
flag set besides its default whose need is unmet, naming what it needs). The bench itself is measure/bench.py.
"""

from __future__ import annotations

import argparse
from typing import Any, Callable, Mapping

from specviz.drafters import EAGLE, HEADS
from specviz.settings import defaults
from specviz.settings.needs import Need
from specviz.settings.prompts import BENCH_PROMPTS
from specviz.models.pair_flags import add_pair_flags
from specviz.measure.peers import add_peers_flag  # llama.cpp beside specviz

DEFAULT_TYPES, DEFAULT_REPEATS = "code,factual,story,rewrite", 2
DRAFTERS_TYPES, DRAFTERS_REPEATS = "code,factual,story,json", 5  # --drafters' when --types or --repeats are not set:
#   the prompt kinds issue #35 names, and five runs each (the least a published median stands on)
DRAFTERS_K = 4  # --drafters' K for every drafter (Medusa heads draft at most one a head: the engine caps K there)
OWN_STATE = (HEADS, EAGLE)  # the drafters reading the target's own state, as --drafters runs them


def add_bench_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default="bench-out", help="folder for results.json, report.md, chart.html")
    add_pair_flags(p, helps={"--preset": None, "--draft-weights": (
        "specviz's draft: int4 or int8 weights, or as loaded (auto: the fastest on this CPU); the peer always gets "
        "the draft as loaded, and then also rows with specviz's draft")})
    p.add_argument("--ks", default="1,2,3,4,5,6,7,8", help="K values for specviz with the draft model")
    p.add_argument("--adaptive-k", type=int, default=12, help="the most K of specviz's adaptive rows")
    p.add_argument("--lookup-ks", default="2,4,8", help="K values for specviz with prompt lookup")
    p.add_argument("--tree", default=None, metavar="WIDTHS",
                   help="also specviz with the tree drafter of these widths, e.g. 2-2-1-1 (compare it with the "
                        "chain K = its depth, same draft passes, and K = its node count, same drafted tokens)")
    p.add_argument("--draft-layers", default="", metavar="NS",
                   help="also specviz with self-speculation: the target's first N layers draft, e.g. 14,21")
    p.add_argument("--layers-k", type=int, default=4, help="K of the --draft-layers rows")
    p.add_argument("--modes", default="greedy,sampled")
    p.add_argument("--temperature", type=float, default=defaults.TEMPERATURE, help="temperature of the sampled mode")
    p.add_argument("--types", default=DEFAULT_TYPES, help=f"prompt kinds, of {', '.join(BENCH_PROMPTS)}")
    p.add_argument("--prompts-per-type", type=int, default=1)
    p.add_argument("--repeats", type=int, default=DEFAULT_REPEATS)
    p.add_argument("--max-new-tokens", type=int, default=48)
    p.add_argument("--no-peer", action="store_true", help="skip transformers' assisted generation")
    add_peers_flag(p)
    p.add_argument("--record-peers", action="store_true",
                   help="with --peers llama.cpp: also write the recording of llama.cpp beside specviz that the Costs "
                        "tab ships (assets/costs/peers.json)")
    p.add_argument("--rules", action="store_true",
                   help="only the stop rules side by side: target-only, K=4, the threshold rule, the cost-aware rule "
                        "(both adaptive up to --adaptive-k) and transformers' own heuristic")
    p.add_argument("--verify-cost", type=float, default=None, metavar="V",
                   help="simulate a dearer verify pass: every target pass over 2 to 17 tokens takes extra time so "
                        "that t(5)/t(1) is V (3: as measured on an AVX2-only CPU in float32); see slow_verify")
    p.add_argument("--drafters", action="store_true",
                   help=f"only the drafters side by side at K = {DRAFTERS_K}: the draft model, self-speculation "
                        "(--draft-layers, default half the target's layers), Medusa heads and the EAGLE-style layer "
                        "(trained with train-drafters), with acceptance by position, and beside them the trees: the "
                        "draft model's and the heads' of fixed widths, and the shaped trees of the draft model, the "
                        f"heads and the EAGLE layer, each at its default shape; default types {DRAFTERS_TYPES}, "
                        f"{DRAFTERS_REPEATS} repeats")
    p.add_argument("--quick", action="store_true", help="a smoke run: tiny settings, finishes in minutes")
    p.add_argument("--tiny", action="store_true", help="random-weight tiny models instead of the real pair (CI)")
    p.add_argument("--gpu-projection", action="store_true",
                   help="time random-weight Qwen2.5 0.5B/7B passes (CUDA) and project speedups from measured α")
    p.add_argument("--alpha-from", default=None, metavar="RESULTS_JSON",
                   help="with --gpu-projection: take α per prompt type from an earlier bench's results.json")


def _bench_flag(flag: str) -> Callable[[Mapping[str, Any]], bool]:
    """A need met while the bench's switch `flag` is on, or its list (text) is not empty."""
    def met(options: Mapping[str, Any]) -> bool:
        value = options.get(flag)
        return value is True or (isinstance(value, str) and bool(value.strip()))
    return met


def _bench_off(flag: str) -> Callable[[Mapping[str, Any]], bool]:
    return lambda options: not options.get(flag)


_PROJECTION = ("without --gpu-projection (it times random-weight models and runs none of the bench's rows)",
               "gpu_projection")
_QUICK = ("without --quick (the smoke run sets it)", "quick")
_RULES = ("without --rules (it runs K = 4 and the two stop rules only)", "rules")
_DRAFTERS = ("without --drafters (it runs each drafter at one K, without the stop rules or the peers)", "drafters")
_TINY = ("without --tiny (random-weight tiny models in float32 stand in for the pair)", "tiny")


def _without(when: tuple[str, str], *settings: str) -> list[Need]:
    return [Need(s, when[0], when[1], "", _bench_off(when[1]), off=True) for s in settings]


BENCH_NEEDS = (
    Need("alpha_from", "with --gpu-projection (the projection's α per prompt type)", "gpu_projection", "",
         _bench_flag("gpu_projection")),
    # (bench's option names, written as one string: its --tree option is not the drafter "tree")
    *_without(_PROJECTION, *("preset dtype draft_weights ks adaptive_k lookup_ks tree draft_layers layers_k modes "
                             "temperature types prompts_per_type repeats max_new_tokens no_peer rules verify_cost "
                             "quick drafters peers").split()),
    *_without(_QUICK, "ks", "lookup_ks", "modes", "types", "repeats", "max_new_tokens", "adaptive_k",
              "prompts_per_type"),
    *_without(_RULES, *"ks lookup_ks tree draft_layers layers_k".split()),
    *_without(_DRAFTERS, *"ks lookup_ks tree adaptive_k no_peer rules quick peers".split()),
    *_without(_TINY, "preset", "dtype", "drafters", "peers"),
    Need("layers_k", "with self-speculation rows (the K of the --draft-layers rows)", "draft_layers",
         "to the layers that draft, e.g. 14,21", lambda options: _bench_flag("draft_layers")(options)
         or options.get("quick") is True),  # the smoke run drafts with 1 layer
    Need("record_peers", "with --peers llama.cpp (it records llama.cpp's rows beside specviz's)", "peers",
         "to llama.cpp", lambda options: "llama.cpp" in (options.get("peers") or ())),
    Need("temperature", "with the sampled mode (the temperature of its rows)", "modes", "to include sampled",
         lambda options: "sampled" in str(options.get("modes", "")).split(",")),
)
