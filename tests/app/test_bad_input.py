"""Bad input, one row per case, through the app's API: prompts, settings and trace files.

One demo on tiny models serves the whole module. Every row must get a clear message in the status output
(or, for odd but valid prompts, a finished run), leave the server serving, and never put markup from the input
into the page unescaped. Rows that JSON from gradio_client cannot carry (NaN, infinity, a lone surrogate) go
through the HTTP API as raw text, as curl could send them.
"""

import copy
import html
import json
import os
import re

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"  # gradio_client must not look anything up on the hub

import httpx  # noqa: E402
from gradio_client.exceptions import AppError  # noqa: E402

from specviz.app import inputs
from specviz.drafters import SHAPED
from specviz.app import trace_files as trace_io
from specviz.record.trace import MAX_TRACE_BYTES, Trace  # noqa: E402
from harness import endpoints  # noqa: E402
from harness.endpoints import named, open_trace, text, value  # noqa: E402
from tests.helpers import FIXTURE  # noqa: E402

PAYLOADS = ["<img src=x onerror=alert(1)>", "<script>alert(1)</script>"]
CONTEXT = "exceeds the models' context"  # the tiny models have 256 positions


def assert_no_raw_markup(outputs) -> None:
    """No output (HTML or plot JSON) carries a tag from the input: only escaped text."""
    sent = json.dumps(outputs, ensure_ascii=False)
    assert "<img" not in sent and "<script" not in sent


SETTINGS = dict(k=4, temperature=0.7, top_p=1.0, top_k=0, seed=0, max_new_tokens=4)


def generate(client, prompt="def fib(n):", **changes):
    """/generate on the tiny pair with SETTINGS (4 new tokens: quick), any of them changed."""
    return endpoints.generate(client, prompt, "tiny", **{**SETTINGS, **changes})


def generate_raw(url, prompt="def fib(n):", **changes) -> dict:
    """/generate over plain HTTP with a JSON text that may hold NaN, Infinity or a lone surrogate."""
    data = endpoints.generate_inputs(prompt, "tiny", **{**SETTINGS, **changes})  # every input: plain HTTP
    body = json.dumps({"data": data})  # NaN -> NaN, "\ud800" -> "\\ud800"
    with httpx.Client(base_url=url, timeout=60) as http:
        event_id = http.post("gradio_api/call/generate", content=body,
                             headers={"content-type": "application/json"}).raise_for_status().json()["event_id"]
        answer = http.get(f"gradio_api/call/generate/{event_id}").raise_for_status().text
    event, data = re.findall(r"event: (\w+)\ndata: (.*)\n", answer)[-1]
    assert event == "complete", answer[-300:]
    return named("generate", json.loads(data)[1:])  # the HTTP API also lists the (hidden) trace state first


def assert_serving(client) -> None:
    """A valid Generate still works."""
    assert text(generate(client, max_new_tokens=2)["status"]).startswith("✓ Done")


# --- prompts ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("prompt, message", [
    ("", "prompt is empty"),
    (" \n\t  ", "prompt is empty"),
    ("x" * 100_000, "prompt is 100,000 characters long; the limit is 10,000"),
    ("a" * 300, CONTEXT),  # under the character limit, over the tiny models' context
    *[(p + "a" * 300, CONTEXT) for p in PAYLOADS],  # a refused payload is still quoted escaped, if at all
], ids=["empty", "whitespace", "100k-chars", "over-context", "img-over-context", "script-over-context"])
def test_refused_prompts_get_a_message(client, prompt, message):
    outputs = generate(client, prompt)
    assert message in text(outputs["status"]) and "sv-status-error" in outputs["status"]
    assert_no_raw_markup(outputs)
    assert_serving(client)


@pytest.mark.parametrize("prompt, shown", [
    ("\x00\x01\x1b[31m red", "␀␁␛[31m red"),  # control characters as their pictures
    ("مرحبا بالعالم 👋🏽 שלום", "مرحبا بالعالم 👋🏽 שלום"),  # right to left, an emoji with a skin tone
    ("\u202eevil\u202c text", "\u202eevil\u202c text"),  # a bidi override stays text
    *[(p, html.escape(p)) for p in PAYLOADS],
], ids=["control-chars", "rtl-emoji", "bidi-override", "img-payload", "script-payload"])
def test_odd_but_valid_prompts_generate_and_show_escaped(client, prompt, shown):
    outputs = generate(client, prompt)
    assert text(outputs["status"]).startswith("✓ Done")
    assert shown in outputs["stage"]
    assert_no_raw_markup(outputs)


@pytest.mark.parametrize("prompt, message", [
    ("\ud800 lone surrogate", "not valid text"),
    (None, "prompt is empty"),
    (42, "prompt is empty"),
], ids=["lone-surrogate", "null", "number"])
def test_prompts_only_an_api_client_can_send(url, client, prompt, message):
    outputs = generate_raw(url, prompt)
    assert message in text(outputs["status"])
    assert_serving(client)


# --- settings -----------------------------------------------------------------------------------------------

def bound_rows():
    """(field, value, ok) at, below and above each numeric field's bounds on the page (inputs.LIMITS)."""
    rows = []
    for field, limit in inputs.LIMITS.items():
        step = 1 if limit.whole else 0.01
        rows += [(field, limit.low, True), (field, limit.high, True),
                 (field, limit.low - step, False), (field, limit.high + step, False)]
    return rows


@pytest.mark.parametrize("field, value, ok", bound_rows(), ids=lambda v: str(v))
def test_each_setting_at_below_and_above_its_bounds(client, field, value, ok):
    shaped = {"drafter": SHAPED.key} if SHAPED.reads(field) else {}  # the fields only a shaped tree reads
    outputs = generate(client, **{field: value}, **shaped)
    if field == "max_new_tokens" and value == inputs.LIMITS[field].high:  # the page allows 512; the tiny models don't
        assert CONTEXT in text(outputs["status"])
    elif field == "draft_layers" and ok and value:  # within the page's bound, but the draft model reads no N
        assert "draft_layers applies only with self-speculation" in text(outputs["status"])  # (settings/needs.py)
    elif ok:
        assert text(outputs["status"]).startswith("✓ Done"), outputs["status"]
    else:
        name, low, high, whole = inputs.LIMITS[field]
        assert f"{name} must be {'a whole number' if whole else 'a number'} from {low} to {high}" in text(outputs["status"])
        assert_serving(client)


@pytest.mark.parametrize("field", list(inputs.LIMITS))
@pytest.mark.parametrize("value", ["abc", None, True, [1], 2.5, 10**400], ids=["text", "null", "bool", "list",
                                                                                 "fraction", "huge"])
def test_non_numbers_through_the_api(client, field, value):
    if value == 2.5 and not inputs.LIMITS[field].whole:
        value = "2.5"  # a fraction is fine for temperature and top-p; a numeric string is not
    outputs = generate(client, **{field: value})
    assert f"{inputs.LIMITS[field].name} must be" in text(outputs["status"]), outputs["status"]
    assert "sv-status-error" in outputs["status"]


@pytest.mark.parametrize("field", list(inputs.LIMITS))
@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")], ids=["nan", "inf", "-inf"])
def test_nan_and_infinity_through_the_http_api(url, client, field, value):
    outputs = generate_raw(url, **{field: value})
    assert f"{inputs.LIMITS[field].name} must be" in text(outputs["status"]) and f"got {value}" in text(outputs["status"])


@pytest.mark.parametrize("preset", ["qwen2.5-0.5b-7b", "<img src=x onerror=alert(1)>", None])
def test_a_pair_the_page_does_not_offer_is_refused(client, preset):
    outputs = named("generate", client.predict("def f", preset, *SETTINGS.values(), False, api_name="/generate"))
    assert "unknown model pair" in text(outputs["status"]) and "this app offers: tiny" in text(outputs["status"])
    assert_no_raw_markup(outputs)


def test_loading_a_pair_the_page_does_not_offer_is_refused(client):
    with pytest.raises(AppError, match="not in the list of choices"):  # Gradio's own check of the dropdown
        client.predict("qwen2.5-0.5b-7b", api_name="/load_pair")
    assert_serving(client)


@pytest.mark.parametrize("number", [0, -5, 10**9, 10**400, "abc", None, [2]])
def test_round_navigation_clamps_anything(client, number):
    generate(client, max_new_tokens=8)
    slider, per_pass = client.predict(number, False, api_name="/show_round")
    assert value(slider) in range(1, 9) and per_pass["type"] == "plotly"  # 8 tokens: at most 8 rounds


# --- trace files --------------------------------------------------------------------------------------------

def tiny(trace: Trace) -> dict:
    """The module's tiny-model trace as a dict to spoil."""
    return copy.deepcopy(trace.to_dict())


def spoil(path: str, value):
    """A function setting one field of a trace dict, the field named by a dotted path ('rounds.0.k')."""
    def apply(data):
        *parents, last = path.split(".")
        for key in parents:
            data = data[int(key) if key.isdigit() else key]
        data[int(last) if last.isdigit() else last] = value
    return apply


def every_text(value):
    """A function giving every token the text `value` + its id: one text per id, not the tokenizer's."""
    def apply(data):
        for obj in _objects(data):
            if "token_id" in obj and "text" in obj:
                obj["text"] = f"{value}{obj['token_id']}"
    return apply


def _objects(data):
    if isinstance(data, dict):
        yield data
        data = list(data.values())
    if isinstance(data, list):
        for item in data:
            yield from _objects(item)


def second_text(data):
    """Change the text of one token whose id is recorded again elsewhere (with its first text)."""
    seen = set()
    for obj in _objects(data):
        if "token_id" in obj and "text" in obj:
            if obj["token_id"] in seen:
                obj["text"] += "!"
                return
            seen.add(obj["token_id"])


def many_rounds(data):
    """10 001 copies of round 1, its candidate lists dropped (to stay under the upload limit)."""
    first = data["rounds"][0]
    for draft in first["drafts"]:
        draft["candidates"] = []
    first.update(residual=None, bonus_candidates=None)
    data["rounds"] = [first] * 10_001


TRACE_ROWS = {  # name -> (the file: bytes, or a function spoiling a valid trace dict; the message)
    "not-json": (b"this is not JSON {", "not valid JSON"),
    "empty-file": (b"", "not valid JSON"),
    "binary": (bytes(range(256)) * 4, "not valid JSON"),
    "json-list": (b"[1, 2, 3]", "not a specviz trace"),
    "other-format": (b'{"format": "other"}', "not a specviz trace"),
    "future-version": (spoil("format_version", 99), "unsupported trace format_version 99"),
    "nested-100k-lists": (b"[" * 100_000 + b"]" * 100_000, "not valid JSON"),
    "nested-100k-objects": (b'{"a":' * 100_000 + b"1" + b"}" * 100_000, "not valid JSON"),
    "nested-settings": (spoil("settings.k", json.loads("[" * 500 + "]" * 500)), "should be a plain value"),
    "5000-digit-number": (lambda d: json.dumps(d).replace('"seed": 6', '"seed": ' + "9" * 5000).encode(),
                          "not valid JSON"),
    "no-rounds": (lambda d: d.pop("rounds"), 'lacks "rounds"'),
    "rounds-a-string": (spoil("rounds", "abc"), "rounds should be a list"),
    "round-a-number": (spoil("rounds.0", 7), "rounds[0] should be an object"),
    "10001-rounds": (many_rounds, "10001 rounds; the limit is 10000"),
    "k-mismatch": (spoil("rounds.0.k", 9), "k, drafts and n_accepted disagree"),
    "unknown-fate": (spoil("rounds.1.drafts.0.fate", PAYLOADS[1]), "the drafts' fates should be"),
    "unknown-next-kind": (spoil("rounds.0.next_kind", "surprise"), "next_kind should be"),
    "unknown-stop": (spoil("rounds.0.stop", PAYLOADS[0]), "stop should be"),
    "committed-mismatch": (spoil("rounds.0.committed_ids", [3, 3, 3, 3, 3, 3]), "committed_ids should be"),
    "output-mismatch": (spoil("output_token_ids", [5]), "output_token_ids differ"),
    "nan-probability": (spoil("rounds.1.drafts.0.p", float("nan")), "not a finite number"),
    "infinite-time": (spoil("rounds.0.draft_time_s", float("inf")), "not a finite number"),
    "probability-above-1": (spoil("rounds.1.drafts.0.q", 3.5), "q = 3.5 is not a probability"),
    "negative-probability": (spoil("rounds.0.next_token.p", -0.1), "is not a probability"),
    "negative-token-id": (spoil("prompt_token_ids.0", -5), "token id -5 is out of range"),
    "huge-token-id": (spoil("prompt_token_ids.0", 2**40), f"token id {2**40} is out of range"),
    "id-past-the-vocabulary": (spoil("prompt_token_ids.0", 5000), "out of range for the vocabulary of tiny-target"),
    "another-tokenizer": (every_text("tok"), "recorded with another tokenizer"),
    "two-texts-for-one-id": (second_text, "one tokenizer gives one text per id"),
    "string-temperature": (spoil("settings.temperature", PAYLOADS[0]), "settings.temperature should be a number"),
    "unknown-drafter": (spoil("settings.drafter", PAYLOADS[1]), "malformed trace: settings: drafter must be"),
    "k-too-large": (spoil("settings.k", 10**12), "settings.k should be a whole number from 1 to 16"),
    "token-text-a-number": (spoil("rounds.0.next_token.text", 5), "text should be str"),
}


def trace_file(tmp_path, trace, content) -> str:
    if callable(content):  # a spoiler changes a copy of the valid trace in place, or returns the file itself
        data = tiny(trace)
        made = content(data)
        content = made if isinstance(made, bytes) else json.dumps(data).encode()  # NaN as JSON's usual extension
    path = tmp_path / "trace.json"
    path.write_bytes(content)
    return str(path)


@pytest.mark.parametrize("name", list(TRACE_ROWS))
def test_bad_trace_files_get_a_message(client, trace, tmp_path, name):
    content, message = TRACE_ROWS[name]
    outputs = open_trace(client, trace_file(tmp_path, trace, content))
    assert message in text(outputs["status"]) and "sv-status-error" in outputs["status"], outputs["status"]
    assert_no_raw_markup(outputs)
    opened = open_trace(client, FIXTURE)  # still serving
    assert "Opened a trace of 7 rounds" in text(opened["status"])


def test_the_valid_tiny_trace_opens(client, trace, tmp_path):
    """The control for the rows above: unspoiled, the same file opens, and its tokens are the loaded pair's."""
    outputs = open_trace(client, trace_file(tmp_path, trace, lambda d: None))
    assert text(outputs["status"]).startswith("✓ Opened a trace of") and "Baseline needs" not in outputs["status"]


def test_a_50_mb_upload_is_refused_by_the_server_and_by_the_loader(client, tmp_path):
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (50 << 20))
    with pytest.raises(Exception, match="(?i)exceeds|too large|size"):  # Gradio's max_file_size, before it lands
        open_trace(client, big)
    with pytest.raises(ValueError, match=f"over {MAX_TRACE_BYTES >> 20} MB, the limit"):  # the loader's own limit
        trace_io.read_lecture(str(big))
    assert_serving(client)


def test_markup_in_every_text_field_of_a_trace_stays_text(client, trace, tmp_path):
    """A shared trace file is the way into another person's page: every string it holds must stay text."""
    img, script = PAYLOADS

    def everywhere(data):
        every_text(script)(data)
        data.update(prompt=img, output_text=script, draft_model=img, target_model=script, device=img, dtype=script)
        data["settings"]["note"] = img
        data["baseline"]["output_text"] = img

    outputs = open_trace(client, trace_file(tmp_path, trace, everywhere))
    assert "Opened a trace" in text(outputs["status"]) and html.escape(img) in outputs["stage"]
    assert html.escape(script) in outputs["info"] and "Baseline needs that pair" in text(outputs["status"])
    # the settings box gets the trace's prompt back as a textbox's value: text the box shows as typed, never markup
    assert outputs["prompt"] == img
    assert_no_raw_markup({name: value for name, value in outputs.items() if name != "prompt"})
    for number in range(1, len(trace.rounds) + 1):
        assert_no_raw_markup(client.predict(number, False, api_name="/show_round"))


@pytest.mark.parametrize("drafter, said", [("heads", "No Medusa heads are trained for"),
                                           ("heads-tree", "No Medusa heads are trained for"),
                                           ("eagle", "No EAGLE-style layer is trained for"),
                                           ("eagle-tree", "No EAGLE-style layer is trained for")])
def test_drafting_heads_never_trained_say_how_to_train_them(client, drafter, said):
    out = generate(client, drafter=drafter)
    assert said in text(out["status"])
    assert "python -m specviz train-drafters" in text(out["status"])
    assert_serving(client)
