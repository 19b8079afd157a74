"""The page's controls whose setting only applies with another (app/controls.py, settings/needs.py), in a real
browser: each is disabled, back at the page's default and saying why while its need is unmet, and enabled again
once it is met, as the drafter, adaptive K and the temperature change."""

from harness.browser import AppPage
from tests.helpers import BROWSER

pytestmark = BROWSER
FIELD = {"k": "#k input[type=number]", "adaptive": "#adaptive input", "stop-rule": "#stop-rule input",
         "draft-layers": "#draft-layers input", "tree-widths": "#tree-widths textarea", "seed": "#seed input",
         "top-k": "#top-k input", "top-p": "#top-p input[type=number]"}


def wait_enabled(page: AppPage, name: str, enabled: bool, says: str = "") -> None:
    """Wait until the control's field is enabled (or disabled) and its block's text holds `says`."""
    page.wait_js("([s, id, on, says]) => { const e = document.querySelector(s);"
                 " return e && e.disabled === !on && document.getElementById(id).textContent.includes(says); }",
                 [FIELD[name], name, enabled, says])


def test_controls_follow_what_their_setting_needs(browser, url):
    page = AppPage(browser, url, info="tiny")
    for name in ("stop-rule", "draft-layers", "tree-widths"):  # as the page opens: the draft model, adaptive K off
        wait_enabled(page, name, False, "Applies only with")
    for name in ("k", "adaptive"):
        wait_enabled(page, name, True)
    # the page opens on the first example, greedy, and the settings box shows its settings: nothing is sampled
    for name in ("seed", "top-k", "top-p"):
        wait_enabled(page, name, False, "Applies only when sampling")
    page.set_number("temperature", 0.7)
    for name in ("seed", "top-k", "top-p"):
        wait_enabled(page, name, True)
    page.page.locator("#drafter").get_by_label("self-speculation", exact=True).check()
    wait_enabled(page, "draft-layers", True)
    page.set_number("draft-layers", 1)
    page.page.locator("#drafter").get_by_label("draft tree", exact=True).check()
    wait_enabled(page, "tree-widths", True)
    wait_enabled(page, "k", False, "Applies only with a chain drafter")
    wait_enabled(page, "adaptive", False, "Applies only with a chain drafter that runs a model")
    wait_enabled(page, "draft-layers", False, "Applies only with self-speculation")
    assert page.page.input_value(FIELD["draft-layers"]) == "0"  # back at the page's default: Generate sends it
    page.page.locator("#drafter").get_by_label("draft model", exact=True).check()
    wait_enabled(page, "adaptive", True)
    page.page.click(FIELD["adaptive"])
    wait_enabled(page, "stop-rule", True)
    page.set_number("temperature", 0)
    for name in ("seed", "top-k", "top-p"):
        wait_enabled(page, name, False, "Applies only when sampling")
    page.close()


def test_an_untrained_drafter_says_so_when_chosen(browser, named_pairs_url, models, tmp_path, monkeypatch):
    """Issue 46: choosing Medusa heads or the EAGLE layer where none is trained for the pair's target says so under the
    drafter, with the command that trains it, before any Generate (no model runs); the draft model takes it away."""
    from specviz.drafters import EAGLE, HEADS, MODEL
    from specviz.drafters.trained import TRAIN_COMMAND

    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path))  # where trained weights would be (actions.drafter_note): none
    _, calls = models
    passes = calls.n
    page = AppPage(browser, named_pairs_url)
    note = "() => document.getElementById('drafter-note').textContent.trim()"
    assert page.page.evaluate(note) == ""  # the draft model, as the page opens
    for drafter in (HEADS, EAGLE):
        page.page.locator("#drafter").get_by_label(drafter.label, exact=True).check()
        said = page.wait_text("#drafter-note", "trained for", TRAIN_COMMAND)
        assert drafter.label in said and ("--kind eagle" in said) == (drafter is EAGLE), said
        page.page.locator("#drafter").get_by_label(MODEL.label, exact=True).check()
        page.wait_js(f"() => ({note})() === ''")
    assert calls.n == passes and "Recorded example" in page.text("#status")  # nothing generated meanwhile
    page.close()
