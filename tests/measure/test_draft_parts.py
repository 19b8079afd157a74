"""measure/draft_parts.py and the Costs tab's paragraph on it: what a draft from the target's own state costs (a Medusa
head's block, the shared output layer, every head at once, an EAGLE-style layer) is timed on the loaded target beside
the one-token passes of the same run, recorded into the shipped recording alone, read back strictly, and every sum and
ratio the tab prints reproduces from the figures printed beside it."""

import dataclasses
import json
import re

import pytest

from specviz.engine.medusa import MedusaHeads
from specviz.measure import cost_charts, pass_timing, recorded_costs
from specviz.record.cost_profile import CostProfile, DraftParts

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models run on one thread

NAMES = ("head_block_s", "output_layer_s", "heads_s", "eagle_layer_s", "target_step_s", "draft_step_s")


@pytest.fixture(scope="module")
def profile(tiny_pair, tokenizer):
    from specviz.engine import Engine

    draft, target = tiny_pair
    engine = Engine(draft, target, tokenizer, "tiny-draft", "tiny-target")
    return pass_timing.measure_costs(engine, context=16, tokens=(1, 2, 3), batches=(1, 2), repeats=2)


def test_the_costs_measurement_times_the_parts_beside_its_own_one_token_passes(profile, tiny_pair):
    _, target = tiny_pair
    d = profile.parts
    assert d is not None and d.problem() is None and d.repeats == 2 and d.context == 16
    assert (d.hidden, d.vocab) == (target.config.hidden_size, target.config.vocab_size)
    assert d.heads == MedusaHeads(target).n  # the whole draft is every default head
    assert d.target_step_s == profile.target_s[0] and d.draft_step_s == profile.draft_batch_s[0]  # the same run
    assert all(lo <= getattr(d, name) <= hi for name in NAMES for lo, hi in d.spread[name])
    assert re.fullmatch(r"\d{4}-\d\d-\d\d on .+ cores .+, float32(, load average \d+)?", d.measured)


def printed(text: str) -> dict[str, float]:
    """The paragraph's figures, by what they are (the readout's own t(1) comes before it: left out)."""
    plain = re.sub(r"<[^>]+>", "", text.split('id="cost-parts"', 1)[1])
    number = r"([\d.]+)"
    found = {
        "t1": re.search(rf"t\(1\) = {number} ms", plain),
        "block": re.search(rf"one head costs {number} ms for the block", plain),
        "output": re.search(rf"\+ {number} ms for the output layer = {number} ms, {number} of t\(1\); the output layer "
                            rf"is {number} %", plain),
        "heads": re.search(rf"in one call: {number} ms, {number} of t\(1\) and {number} × one head", plain),
        "draft": re.search(rf"A draft-model step: {number} ms \({number} of t\(1\)\)", plain),
        "eagle": re.search(rf"EAGLE-style layer .*?: {number} ms \+ the output layer {number} ms = {number} ms a draft "
                           rf"step \({number} of t\(1\)\)", plain),
    }
    assert all(found.values()), {k: v for k, v in found.items() if not v}
    return {k: [float(x) for x in m.groups()] for k, m in found.items()}


def check_arithmetic(text: str) -> None:
    f = printed(text)
    (t1,), (block,), (output, head, head_ratio, share) = f["t1"], f["block"], f["output"]
    assert head == pytest.approx(block + output, rel=5e-3, abs=1e-3)
    assert head_ratio == pytest.approx(head / t1, abs=0.006) and share == pytest.approx(100 * output / head, abs=0.6)
    heads, heads_ratio, per_head = f["heads"]
    assert heads_ratio == pytest.approx(heads / t1, abs=0.006) and per_head == pytest.approx(heads / head, abs=0.006)
    draft, draft_ratio = f["draft"]
    assert draft_ratio == pytest.approx(draft / t1, abs=0.006)
    layer, again, eagle, eagle_ratio = f["eagle"]
    assert again == output and eagle == pytest.approx(layer + output, rel=5e-3, abs=1e-3)
    assert eagle_ratio == pytest.approx(eagle / t1, abs=0.006)


@pytest.mark.parametrize("scale", [1e-2, 1.0, 1e3])  # the tiny models' microseconds to a slow machine's seconds
def test_every_printed_sum_and_ratio_reproduces_from_the_figures_beside_it(profile, scale):
    d = dataclasses.replace(profile.parts, **{name: getattr(profile.parts, name) * scale for name in NAMES})
    text = cost_charts.parts_readout(dataclasses.replace(profile, target_s=[d.target_step_s, *profile.target_s[1:]],
                                                         parts=d))
    check_arithmetic(text)
    assert "a run of its own" not in text  # its target pass is the profile's t(1)
    alone = dataclasses.replace(profile, target_s=[2 * t for t in profile.target_s], parts=d)
    assert "a run of its own, not the one above" in cost_charts.parts_readout(alone)


def test_all_heads_cheaper_than_one_head_says_why(profile):
    """As recorded on the avx512_bf16 CPU: 3 heads in one call 32.7 ms against one head's 0.348 + 38.9 ms."""
    head = profile.parts.head_block_s + profile.parts.output_layer_s
    for heads_s, said in ((0.8 * head, True), (1.5 * head, False)):
        d = dataclasses.replace(profile.parts, heads_s=heads_s)
        text = cost_charts.parts_readout(dataclasses.replace(profile, parts=d))
        check_arithmetic(text)
        assert ("less than one head's: with 3 blocks in it, the output layer over 3 rows ran faster here than over "
                "one row" in text) == said


def test_the_readout_says_nothing_of_parts_it_has_not(profile):
    assert 'id="cost-parts"' in cost_charts.readout(profile, 0.8, 2)
    assert 'id="cost-parts"' not in cost_charts.readout(dataclasses.replace(profile, parts=None), 0.8, 2)
    spoilt = dataclasses.replace(profile.parts, output_layer_s=float("nan"))
    assert cost_charts.parts_readout(dataclasses.replace(profile, parts=spoilt)) == ""


def recording(profile: CostProfile, tmp_path):
    path = tmp_path / "packaged.json"
    shipped = dataclasses.replace(profile, parts=None, recorded="2026-12-02 on a CPU", source="the recording")
    path.write_text(json.dumps(dataclasses.asdict(shipped)))
    return path


def test_recording_the_parts_leaves_the_other_figures_as_they_were(engine, profile, tmp_path):
    path = recording(profile, tmp_path)
    before = json.loads(path.read_text())
    parts = recorded_costs.record_parts(engine, path)
    after = json.loads(path.read_text())
    assert before.pop("parts") is None and {k: v for k, v in after.items() if k != "parts"} == before
    assert after["parts"] == json.loads(
        json.dumps(dataclasses.asdict(parts)))
    back = recorded_costs.recorded_costs(path)
    assert back is not None and back.parts == DraftParts(**{**after["parts"], "spread": back.parts.spread})
    assert parts.target_step_s != back.target_s[0] and parts.repeats == pass_timing.REPEATS
    check_arithmetic(cost_charts.readout(back, 0.8, 2))
    after["parts"]["heads_s"] = "fast"  # read strictly: a spoilt part spoils the recording
    path.write_text(json.dumps(after))
    assert recorded_costs.recorded_costs(path) is None


def test_recording_the_parts_of_another_pair_is_refused(engine, profile, tmp_path):
    path = recording(dataclasses.replace(profile, target="Qwen2.5-Coder-1.5B-Instruct"), tmp_path)
    with pytest.raises(ValueError, match="is of tiny-draft → Qwen2.5-Coder-1.5B-Instruct in float32, not of the "
                                         "loaded tiny-draft → tiny-target"):
        recorded_costs.record_parts(engine, path)


def test_the_eagle_style_layer_is_timed_for_a_target_whose_padding_id_lies_past_a_small_token_table(tiny_pair):
    import copy

    from specviz.measure.draft_parts import eagle_layer_times

    target = copy.deepcopy(tiny_pair[1])
    target.config.pad_token_id = target.config.vocab_size - 1  # as Qwen2.5's 151643 lies past the layer's 16 rows
    times = eagle_layer_times(target, context=8, repeats=2)
    assert len(times) == 2 and all(t > 0 for t in times)


def test_the_shipped_recording_prices_a_draft_from_the_targets_own_state():
    shipped = recorded_costs.recorded_costs()
    assert shipped is not None and shipped.parts is not None and shipped.parts.problem() is None
    d = shipped.parts
    assert (d.hidden, d.vocab, d.context) == (1536, 151936, shipped.context) and "avx" in d.measured
    check_arithmetic(cost_charts.readout(shipped, 0.8, 4))


def test_the_heads_draft_over_fewer_rows_is_timed_and_its_ratios_redo(profile, tiny_pair):
    """FR-Spec's subsets (engine/readout.py): the heads' draft is timed over n rows (the tiny target's 82-token
    vocabulary is below every size the real one is timed at, so its parts have none, and n = 16 is timed here), each
    printed ratio from the printed figures; with head 1's agreement where heads were trained here; sizes that do not
    line up are refused."""
    import torch

    from specviz.engine.readout import SUBSET_SIZES
    from specviz.measure.draft_parts import subset_heads_times

    _, target = tiny_pair
    d = profile.parts
    assert d.rows == [n for n in SUBSET_SIZES if n < d.vocab] and d.rows_agreement == []  # none trained for it
    heads = MedusaHeads(target).eval()
    with torch.inference_mode():
        times = subset_heads_times(heads, 16, None, 2, torch.randn(1, d.hidden))
    assert len(times) == 2 and all(t > 0 for t in times) and heads.lm_head is heads.full_head  # all rows after
    timed = dataclasses.replace(d, rows=[16, 64], rows_heads_s=[min(times), 2 * max(times)])
    trained = dataclasses.replace(timed, rows_agreement=[0.45, 0.44])
    for parts in (timed, trained):
        assert parts.problem() is None
        text = re.sub(r"<[^>]+>", "", cost_charts.parts_readout(dataclasses.replace(profile, parts=parts)))
        t1 = float(re.search(r"t\(1\) = ([\d.]+) ms", text.split("Measured", 1)[1]).group(1))
        said = re.findall(r"([\d,]+) rows ([\d.]+) ms \(([\d.]+) of t\(1\)(?:, head 1 agreeing ([\d.]+) ?%)?", text)
        assert [int(n.replace(",", "")) for n, *_ in said] == [16, 64]
        for _, ms, ratio, _ in said:
            assert float(ratio) == pytest.approx(float(ms) / t1, abs=6e-4)
        assert [a for *_, a in said] == (["45.0", "44.0"] if parts is trained else ["", ""])
    assert dataclasses.replace(timed, rows_heads_s=timed.rows_heads_s[:-1]).problem() is not None
    assert dataclasses.replace(timed, rows_agreement=[1.5, 0.4]).problem() is not None
    assert "fewer rows" not in cost_charts.parts_readout(profile)
