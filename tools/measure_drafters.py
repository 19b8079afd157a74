"""Drafters compared on the real pair (a script, not collected by pytest): the Lab's comparison, once per prompt.

    python -m tools.measure_drafters [--max-new-tokens 32] [--ks 1,2,4,8] [--temperature 0] \
        [--examples rewrite,story]

Loads the packaged pair as the app does (`load_pair()`), warms it up, then runs `compare.compare_drafters` on the
Lab's two example prompts (the rewrite, whose answer copies its prompt, and the story) and prints, per prompt, the
Markdown table the README quotes, with the date, the pair and the machine. One run each: no repeats, no medians.
"""
import argparse
import datetime
import os
import platform
import time

import torch

from specviz.lab import compare
from specviz.engine import Engine, RunSettings
from specviz.models.pairs import load_pair
from specviz.settings.prompts import COMPARE_PROMPTS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--ks", default="1,2,4,8")
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--examples", default="rewrite,story", help="the Lab's examples to run, by first word")
    a = parser.parse_args()
    ks = compare.check_ks(a.ks.split(","))
    pair = load_pair()
    engine = Engine.from_pair(pair)
    engine.warm_up()
    settings = RunSettings(temperature=a.temperature, max_new_tokens=a.max_new_tokens)
    print(f"{engine.draft_name} → {engine.target_name} · {engine.device} · {engine.dtype} · torch "
          f"{torch.__version__} · {torch.get_num_threads()} threads on {os.cpu_count()} cores "
          f"({platform.processor() or platform.machine()}) · {a.max_new_tokens} new tokens · temperature "
          f"{a.temperature:g} · K ∈ {{{', '.join(map(str, ks))}}} · one run each · {datetime.date.today()}")
    chosen = a.examples.split(",")
    for label, prompt in COMPARE_PROMPTS.items():
        if label.split(":")[0] not in chosen:
            continue
        started = time.perf_counter()
        rows = list(compare.compare_drafters(engine, prompt, settings, ks))
        print(f"\n**{label}** ({time.perf_counter() - started:.0f} s for {len(rows)} runs)\n")
        print(compare.markdown_table(rows))
        answer = engine.run(prompt, settings, details=False).output_text  # what the rows were timing
        print(f"\nthe answer begins: {answer[:120]!r}")


if __name__ == "__main__":
    main()
