"""A busy server, measured (closed_loop.py's runs) -> the Costs tab's chart and table: each user's tokens per second
against the server's, one point per number of users, one line per rule, so the trade a service makes reads off one
picture (up and to the right is better for both). Pure functions of the runs (no gradio, no models), and the
shipped recording of them (assets/costs/serve.json, `python -m specviz serve-bench --record`), which the tab draws
before any live run.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from html import escape
from pathlib import Path

import plotly.graph_objects as go

from specviz.measure.closed_loop import (Line, Plan, Run, greedy_same, lines, measured_crossover, predicted_crossovers,
                                         rule_k, runs_alpha)
from specviz.measure.pass_timing import BATCHES
from specviz.record.cost_profile import CostProfile
from specviz.view.charts import FONT_SIZE, base_layout, plain_figure
from specviz.view.style import GRID, INK, P_COLOR, Q_COLOR

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "assets" / "costs" / "serve.json"
MAX_BYTES = 256 * 1024  # a recording is tens of KiB; anything larger is not one
STYLES = {"target": dict(color=INK, dash="dash", symbol="square"), "cost": dict(color=P_COLOR, dash="solid",
                                                                               symbol="diamond")}
DRAFTING = dict(color=Q_COLOR, dash="dot", symbol="circle")  # any fixed K
SMALL = "<small>({})</small>"  # a figure's range in the table, smaller than its median


def rule_name(rule: str) -> str:
    """'target' -> 'the target alone'; 'k4' -> 'K = 4 every round'; 'cost' -> 'the cost-aware rule'."""
    return {"target": "the target alone", "cost": "the cost-aware rule"}.get(rule, f"K = {rule[1:]} every round")


NEAR = 0.06  # of each axis's extent: two rules' points of one number of users closer than this on both share a label


def point_labels(table: list[Line]) -> dict[tuple[str, int], str]:
    """Each point's label, its number of users, by (rule, users); '' where a point of another rule with the same
    number of users lies within NEAR of it on both axes and, higher, carries the label for both: the target alone's
    and the cost-aware rule's points at 4 users drew "44" side by side, at 2 users one "2" over the other (issue 64).
    The axes start at 0, so an axis's extent is its largest value."""
    wide = max((m.aggregate.median for m in table), default=0) or 1
    tall = max((m.per_user.median for m in table), default=0) or 1
    labels: dict[tuple[str, int], str] = {}
    for m in sorted(table, key=lambda m: -m.per_user.median):  # the higher of two near points keeps the label
        shared = any(labels.get((o.rule, o.users)) and o.users == m.users
                     and abs(o.aggregate.median - m.aggregate.median) < NEAR * wide
                     and abs(o.per_user.median - m.per_user.median) < NEAR * tall for o in table)
        labels[m.rule, m.users] = "" if shared else f"{m.users}"
    return labels


def serve_figure(table: list[Line], machine: str, font_size: int = FONT_SIZE) -> go.Figure:
    """Per-user tokens/s (y) against aggregate tokens/s (x), medians over the turns, each point labelled with its
    number of users (point_labels: near points of one number share a label), a line per rule."""
    data, labels = [], point_labels(table)
    for rule in dict.fromkeys(line.rule for line in table):
        mine = [line for line in table if line.rule == rule]
        style = STYLES.get(rule, DRAFTING)
        data.append(dict(type="scatter", x=[m.aggregate.median for m in mine], y=[m.per_user.median for m in mine],
                         mode="lines+markers+text", text=[labels[rule, m.users] for m in mine],
                         customdata=[m.users for m in mine], textposition="top center",
                         textfont=dict(size=font_size - 2), name=rule_name(rule),
                         line=dict(color=style["color"], width=3, dash=style["dash"]),
                         marker=dict(symbol=style["symbol"], size=11),
                         hovertemplate="%{customdata} users: %{x:.1f} tokens/s in all, %{y:.1f} each<extra></extra>"))
    layout = dict(base_layout(font_size, legend_size=font_size - 2), height=460,
                  margin=dict(l=80, r=24, t=90, b=150),
                  title=dict(text=f"A busy server, measured: each user's speed against the server's<br>{escape(machine)}",
                             x=0, xanchor="left", font=dict(size=font_size + 2)),
                  xaxis=dict(title=dict(text="tokens/s the server gives all its users (points: users at once)"),
                             gridcolor=GRID, zeroline=False, rangemode="tozero"),
                  yaxis=dict(title=dict(text="tokens/s each user sees"), gridcolor=GRID, zeroline=False,
                             rangemode="tozero"))
    return plain_figure(data, layout)


EACH_AND_ALL = ("“tokens/s each” counts a user's tokens after their first, while their text streams (what a user "
                "sees); “tokens/s in all” counts every user's tokens over the run's whole time, each first token's "
                "wait (its prompt's pass) included: so with one user “each” comes out the higher wherever a first "
                "token takes longer than an average one, as a prompt's pass does.")


def serve_table(runs: list[Run], plan: Plan, machine: str, predicted: dict[str, int | None],
                same: bool | None) -> str:
    """The measured figures as an HTML table (medians and ranges over the turns), what its two rates count
    (EACH_AND_ALL), the crossovers and the greedy check (`same`: closed_loop.greedy_same of the runs; None: not made)
    in sentences."""
    table = lines(runs)
    head = ("<tr><th>users</th><th>rule</th><th>tokens/s in all</th><th>tokens/s each, after the first</th>"
            "<th>first token, s</th><th>tokens a pass</th></tr>")
    rows = "".join(f"<tr><td>{m.users}</td><td>{escape(rule_name(m.rule))}</td><td>{m.aggregate.text(1, aside=SMALL)}"
                   f"</td><td>{m.per_user.text(1, aside=SMALL)}</td><td>{m.ttft.text(2, aside=SMALL)}</td>"
                   f"<td>{m.tokens_per_pass:.2f}</td></tr>"
                   for m in table)
    said = [crossover_sentence(table, runs, rule, predicted) for rule in dict.fromkeys(m.rule for m in table)
            if rule != "target"]
    if plan.temperature == 0 and same is not None:
        said.append("Greedy: every rule gave each prompt the same tokens, the target alone's." if same
                    else "Greedy: the rules' tokens DIFFER for some prompt.")
    return (f'<div class="sv-serve"><p>{escape(machine)}: {plan.turns} interleaved turns, {plan.max_new_tokens} new '
            f'tokens a request, prompts {escape(", ".join(plan.kinds))}, temperature {plan.temperature}; each figure '
            f'the median over the turns (least–most). {escape(EACH_AND_ALL)}</p><table class="sv-serve-table">{head}'
            f'{rows}</table><p>{" ".join(said)}</p></div>')


def crossover_sentence(table: list[Line], runs: list[Run], rule: str, predicted: dict[str, int | None]) -> str:
    """Where `rule`'s tokens/s in all fall below the target alone's, named only beyond what the turns vary
    (closed_loop.measured_crossover: with one turn, by more than record/stats' QUIET), and where the pass costs
    predict it, at the α of these runs and the K named: 'K = 4 every round: from 2 users the server's tokens/s in all
    fall below the target alone's by more than the turns vary; drafting K = 4 every round at these runs' α = 0.82,
    the pass costs above predict that from 2 users.'"""
    (k, priced), found, alpha = rule_k(rule), measured_crossover(table, rule), runs_alpha(runs, rule)
    below = "the server's tokens/s in all fall below the target alone's by more than the turns vary"
    said = (f"{escape(rule_name(rule)).capitalize()}: "
            + (f"from {found} users {below}" if found else f"at no number of users measured do {below}"))
    if rule in predicted and alpha is not None:
        guess, way = predicted[rule], ("were it to draft", "it would fall below") if priced else ("drafting", "that")
        said += (f"; {way[0]} K = {k} every round at these runs' α = {alpha:.2f}, the pass costs above predict "
                 + (f"{way[1]} from {guess} users" if guess else f"that it pays up to {BATCHES[-1]} users"))
    return said + "."


# --- the recording ---------------------------------------------------------------------------------------------

def record_serve(runs: list[Run], plan: Plan, machine: str, profile: CostProfile | None, when: str,
                 path: Path = RECORDED) -> None:
    """Write the runs as the tab draws them: every figure, each user's tokens left out (the greedy check, done on
    them, is kept), with the date and machine."""
    slim = [dict(asdict(r), users_detail=[{k: v for k, v in d.items() if k != "output_token_ids"}
                                          for d in r.users_detail]) for r in runs]
    data = dict(recorded=when, machine=machine, plan=asdict(plan), greedy_same=greedy_same(runs),
                predicted={k: v for k, v in predicted_crossovers(runs, profile).items()}, runs=slim)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, allow_nan=False), encoding="utf-8")


def recorded_serve(path: Path = RECORDED) -> dict | None:
    """The shipped recording: {"recorded", "machine", "plan" (a Plan), "runs" (Runs), "predicted", "greedy_same"};
    None where it is missing, oversized or malformed."""
    try:
        raw = path.read_bytes()
        if len(raw) > MAX_BYTES:
            return None
        data = json.loads(raw)
        plan = Plan(**{k: tuple(v) if isinstance(v, list) else v for k, v in data["plan"].items()})
        runs = [Run(**r) for r in data["runs"]]
        if not runs or not all(r.users_detail for r in runs):
            return None
        return dict(recorded=str(data["recorded"]), machine=str(data["machine"]), plan=plan, runs=runs,
                    predicted={str(k): v for k, v in dict(data["predicted"]).items()},
                    greedy_same=bool(data["greedy_same"]))
    except (OSError, ValueError, TypeError, KeyError, RecursionError):
        return None
