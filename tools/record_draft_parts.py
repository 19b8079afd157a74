"""Record what a draft from the target's own state costs, part by part, into the Costs tab's shipped recording.

    python -m tools.record_draft_parts [--path assets/costs/packaged.json]

Loads the packaged pair as the recording names it (its dtype and draft weights), times a Medusa head's block, the
shared output layer, all the default heads at once and an EAGLE-style layer beside a one-token target pass and a
draft-model step (measure/draft_parts.py), and writes them into the recording's "parts", leaving its other figures as
they were. `python -m specviz record-examples --costs` re-records the whole file, these parts with it, in one run.
"""
import argparse
import json

from specviz.engine import Engine
from specviz.models.pairs import load_pair
from specviz.models.quant import FULL, INT4, INT8
from specviz.measure.cost_charts import parts_line
from specviz.measure.recorded_costs import RECORDED, record_parts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--path", default=str(RECORDED), help="the recording to add the parts to")
    a = parser.parse_args()
    shipped = json.loads(open(a.path, encoding="utf-8").read())
    weights = next((kind for kind in (INT4, INT8) if f"({kind})" in shipped["draft"]), FULL)
    engine = Engine.from_pair(load_pair(dtype=shipped["dtype"], draft_weights=weights,
                                        progress=lambda fraction, text: print(f"{fraction:4.0%} {text}", flush=True)))
    engine.warm_up()
    d = record_parts(engine, a.path)
    print(f"recorded {d.measured}: {parts_line(d)}")


if __name__ == "__main__":
    main()
