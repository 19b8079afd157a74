"""Load test: many sessions at once against the app, through gradio_client on loopback (a script; the driver is
harness/load.py, which tests/app/test_load.py runs on tiny models).

    python -m tools.load_test --real                  # the packaged pair: the README's numbers
    python -m tools.load_test --real --sessions 16 --tokens 32 --concurrency 1

Each session is a thread with its own Client (so its own Gradio session and trace state). All of them press
Generate at once, each with its own prompt and seed, then step through every recorded round (show_round 1 to the
last: the slider and the tokens-per-pass chart; the page's browser shows the round itself). The script checks that every session got exactly the trace its prompt and seed give
when run alone on the engine directly, that no request failed, that no more generations overlapped than the
queue allows, and it reports p50/p95 latency of a round step and of a generation (queue wait + run, at the
client), and how many steps were served while a generation was running. The clients share the server's process
(and cores), so their own work, parsing every frame, competes with it: the latencies are pessimistic.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # before gradio is imported: no telemetry
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # gradio_client must not look anything up on the hub

import torch  # noqa: E402

from harness.load import Overlap, expected_tokens, run_load, serve, table  # noqa: E402
from specviz.settings.prompts import EXAMPLE_PROMPTS  # noqa: E402
from specviz.app import pair_cache, serving  # noqa: E402
from specviz.engine import Engine, RunSettings  # noqa: E402

REAL_PROMPTS = list(EXAMPLE_PROMPTS.values())


def real_pair():
    """The packaged pair through the app's own loader (as app.py serves it) -> preset, loader, engine, prompts."""
    from specviz.models.pairs import DEFAULT_PRESET

    def prompt(i):
        return f"{REAL_PROMPTS[i % len(REAL_PROMPTS)]} (Variant {i}.)"

    loader = pair_cache.default_engine_loader
    return DEFAULT_PRESET, loader, loader(DEFAULT_PRESET), prompt


def tiny_pair():
    """The tests' tiny random pair -> preset, loader, engine, prompts."""
    from harness.tiny_models import char_tokenizer, noisy_copy, tiny_model

    torch.set_num_threads(1)  # tiny models gain nothing from a second thread, and it spins on a busy machine
    target = tiny_model(seed=2)
    engine = Engine(noisy_copy(target, 0.2), target, char_tokenizer(), "tiny-draft", "tiny-target")
    return "tiny", lambda name, progress: engine, engine, lambda i: f"def f{i}(n):"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--real", action="store_true", help="the packaged pair (default preset); else tiny models")
    parser.add_argument("--sessions", type=int, default=16)
    parser.add_argument("--tokens", type=int, default=32, help="max new tokens per generation")
    parser.add_argument("--concurrency", type=int, default=serving.DEFAULT_CONCURRENCY,
                        help="generations at once (the app's --concurrency)")
    parser.add_argument("--timeout", type=float, default=1800, help="give up on the whole run after this long")
    args = parser.parse_args()
    settings = RunSettings(k=4, temperature=0.7, max_new_tokens=args.tokens)
    preset, get_engine, engine, prompt = real_pair() if args.real else tiny_pair()
    prompts = [prompt(i) for i in range(args.sessions)]
    t0 = time.perf_counter()
    expected = expected_tokens(engine, prompts, settings)
    print(f"{len(prompts)} reference runs alone: {time.perf_counter() - t0:.1f} s")
    overlap = Overlap()
    overlap.watch(engine)
    demo, url = serve(get_engine, {preset: preset}, preset, args.concurrency)
    try:
        report = run_load(url, overlap, prompts, settings, preset, expected, args.timeout)
    finally:
        demo.close()
    print(f"preset {preset}, {args.sessions} sessions, {args.tokens} new tokens, K=4, temperature 0.7, "
          f"concurrency {args.concurrency}, torch threads {torch.get_num_threads()}")
    print({k: v for k, v in report.items() if not k.endswith(("p50", "p95"))})
    print(table(report))
    if report["errors"] or report["mismatched"] or report["unfinished"] or report["most_at_once"] > args.concurrency:
        raise SystemExit("FAILED: see the report above")


if __name__ == "__main__":
    main()
