"""A room in one browser (issue 23): a lecturer's page and two followers' pages, one on a phone (390×844), one on a
tablet (768×1024). The followers track the lecturer's rounds, quiz mode and reveals; each answers on their own
device, the lecturer's screen counts both, and no follower's page shows the other's choice; a follower who calls
the lecturer's endpoint without the key is refused with a message; deep links open an example at a round.

Every check waits for its condition (harness/browser.py)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from harness.browser import AppPage, Page
from harness.room_pages import WHERE, FollowerPage, open_room
from specviz.lecture.examples import EXAMPLES, FIRST, load_example
from tests.helpers import BROWSER

pytestmark = BROWSER


def test_a_lecturer_leads_two_followers_who_answer_on_their_own_devices(browser, url):
    lecturer = AppPage(browser, url)
    join = open_room(lecturer)
    assert join.startswith(url) and "/room/" in join
    key = lecturer.page.evaluate("() => document.querySelector('#room-box .sv-lead').dataset.key")
    assert key not in lecturer.page.evaluate("() => document.body.innerText")  # never on the projector
    phone = FollowerPage(browser, join, viewport=(390, 844))
    tablet = FollowerPage(browser, join, viewport=(768, 1024))
    lecturer.page.click("#next-round")
    lecturer.page.check("#quiz-mode input")  # before round 3: one shown with quiz mode off takes no answers (#64)
    lecturer.page.click("#next-round")
    lecturer.wait_round(3)
    for follower in (phone, tablet):
        follower.wait_text(WHERE, "Following: round 3 of")
        assert follower.shown() == 3
    for follower in (phone, tablet):
        follower.wait_js("() => document.body.classList.contains('sv-quiz')")
    section = '#stage .sv-round[data-round="3"]'
    most = int(phone.page.evaluate(f"() => document.querySelector('{section}').dataset.k"))
    assert most >= 2, "the first example's round 3 drafts at least two tokens"
    phone.page.click(f'{section} .sv-guess[data-guess="1"]')
    tablet.page.click(f'{section} .sv-guess[data-guess="2"]')
    lecturer.wait_text("#sv-class-lead", "2 answered round 3")
    phone.wait_js("() => document.querySelector('.sv-guess.sv-picked')")
    tablet.wait_js("() => document.querySelector('.sv-guess.sv-picked')")
    assert phone.picked() == ["3:1"] and tablet.picked() == ["3:2"]  # never another student's choice

    steps = int(lecturer.page.evaluate(f"() => document.querySelector('{section}').dataset.steps"))
    for _ in range(steps):
        lecturer.page.click(f"{section} .sv-reveal")
    accepted = lecturer.page.evaluate(f"() => document.querySelector('{section}').dataset.accepted")
    lecturer.wait_text("#sv-class-lead", "Round 3: 2 answers", f"the target accepted {accepted}")
    for follower in (phone, tablet):
        follower.wait_js(f"() => document.querySelector('{section}').dataset.revealed === '{steps}'")
        follower.wait_text("#sv-class", "Round 3: 2 answers")
    phone.wait_text(f"{section} .sv-quiz-said", "Your answer: 1.")
    assert phone.picked() == ["3:1"] and tablet.picked() == ["3:2"]

    tablet.page.keyboard.press("ArrowLeft")  # on their own, then back to following
    tablet.wait_text(WHERE, "On your own: round 2")
    tablet.page.keyboard.press("f")
    tablet.wait_text(WHERE, "Following: round 3")

    refused = phone.page.evaluate("""async () => {
        const r = await fetch(location.pathname + '/drive', {method: 'POST', headers: {'Content-Type':
          'application/json'}, body: JSON.stringify({round: 1})});
        return [r.status, (await r.json()).error]; }""")
    assert refused[0] == 403 and "only the lecturer" in refused[1]
    assert phone.shown() == 3  # the room went on

    # the phone: answer buttons and navigation tappable without zooming, one card at a time across the width
    sizes = phone.page.evaluate("() => [...document.querySelectorAll('.sv-room-nav button, "
                                ".sv-round:not([hidden]) .sv-guess')].map(b => { const r = b.getBoundingClientRect(); "
                                "return [r.height, r.right]; })")
    assert sizes and all(h >= 44 and right <= 390 for h, right in sizes), sizes
    card = phone.page.evaluate("() => document.querySelector('.sv-round:not([hidden]) .sv-cards > *')"
                               ".getBoundingClientRect().width")
    assert 250 < card <= 390
    phone.screenshot("room-phone.png")
    lecturer.screenshot("room-lecturer.png")
    for page in (phone, tablet, lecturer):
        page.close()


def test_a_follower_who_reloads_keeps_their_answer(browser, url):
    lecturer = AppPage(browser, url)
    join = open_room(lecturer)
    lecturer.page.click("#next-round")
    lecturer.page.check("#quiz-mode input")  # before round 3: one shown with quiz mode off takes no answers (#64)
    lecturer.page.click("#next-round")
    phone = FollowerPage(browser, join, viewport=(390, 844))
    phone.wait_js("() => document.body.classList.contains('sv-quiz')")
    phone.wait_text(WHERE, "Following: round 3")
    phone.page.click('#stage .sv-round[data-round="3"] .sv-guess[data-guess="0"]')
    lecturer.wait_text("#sv-class-lead", "1 answered round 3")
    phone.page.reload()
    phone.wait_text(WHERE, "Following: round 3")
    phone.wait_js("() => document.querySelector('.sv-guess.sv-picked')")
    assert phone.picked() == ["3:0"]
    assert "1 following" in phone.wait_text("#sv-class", "following")  # the same follower, not a second one
    for page in (phone, lecturer):
        page.close()


def test_a_phones_score_counts_a_round_once_it_is_revealed_to_the_end(browser, url):
    """Issue 55: a phone said "Score: 0 of 1" as soon as it answered, before any reveal. Its round in quiz form carries
    no step count (it would tell the answer) and the score read it as revealed to the end. Until the lecturer's last
    reveal step the score says nothing; then the round counts (the right answer given: 1 of 1)."""
    lecturer = AppPage(browser, url)
    join = open_room(lecturer)
    lecturer.page.check("#quiz-mode input")  # before the round: the class gets it in quiz form (view/quiz_form.py)
    lecturer.page.click("#next-round")
    lecturer.page.click("#next-round")
    lecturer.wait_round(3)
    phone = FollowerPage(browser, join, viewport=(390, 844))
    phone.wait_js("() => document.body.classList.contains('sv-quiz')")
    phone.wait_text(WHERE, "Following: round 3")
    section = '#stage .sv-round[data-round="3"]'
    assert phone.page.evaluate(f"() => document.querySelector('{section}').matches('.sv-quiz-form')")
    steps = int(lecturer.page.evaluate(f"() => document.querySelector('{section}').dataset.steps"))
    accepted = lecturer.page.evaluate(f"() => document.querySelector('{section}').dataset.accepted")
    score = "() => [...document.querySelectorAll('#stage .sv-score')].map(e => e.textContent).join('|')"
    phone.page.click(f'{section} .sv-guess[data-guess="{accepted}"]')
    phone.wait_js("() => document.querySelector('.sv-guess.sv-picked')")
    lecturer.wait_text("#sv-class-lead", "1 answered round 3")
    assert "of" not in phone.page.evaluate(score), phone.page.evaluate(score)  # answered, nothing revealed
    for step in range(1, steps + 1):
        lecturer.page.click(f"{section} .sv-reveal")
        phone.wait_js(f"() => document.querySelector('{section}').dataset.revealed === '{step}'")
        if step < steps:
            assert "of" not in phone.page.evaluate(score), (step, phone.page.evaluate(score))
    phone.wait_text(f"{section} .sv-score", "Score: 1 of 1")
    for page in (phone, lecturer):
        page.close()


def test_a_deep_link_opens_an_example_at_a_round_and_step(browser, url):
    page = Page(browser, f"{url}?example=paris&round=3&step=1")
    page.wait_text("#status", "at round 3 from a link")
    page.wait_text("#stage .sv-round:not([hidden]) .sv-round-head", "Round 3 of")
    assert page.page.evaluate("() => document.body.classList.contains('sv-quiz')")
    assert page.page.evaluate("() => document.querySelector('.sv-round:not([hidden])').dataset.revealed") == "1"
    page.page.click("#room-panel button, #room-panel .label-wrap")
    page.page.click("#link-round")
    link = page.wait_js("() => document.querySelector('#round-link textarea, #round-link input')?.value")
    assert link == f"{url}?example=paris&round=3&step=1"
    page.close()
    past = Page(browser, f"{url}?example=paris&round=999")
    past.wait_text("#status", "the link asks for round 999", "rounds 1 to")
    past.close()


def test_the_lecturers_link_reopens_the_room_where_it_was_and_a_forged_one_is_refused(browser, url):
    first = AppPage(browser, url)
    open_room(first)
    first.page.click("#next-round")
    first.wait_round(2)
    lead = first.page.evaluate("() => document.querySelector('#room-box .sv-lead').dataset.link")
    room = first.page.evaluate("() => document.querySelector('#room-box .sv-lead').dataset.room")
    first.close()
    again = Page(browser, lead)  # the projector's machine, say
    again.wait_text("#status", "You lead room")
    again.wait_text("#stage .sv-round:not([hidden]) .sv-round-head", "Round 2 of")
    again.wait_js("() => document.querySelector('#room-box .sv-lead')")
    again.close()
    forged = Page(browser, f"{url}?room={room}&key=not-the-key")
    forged.wait_text("#status", "could not open the room", "key does not open this room")
    assert forged.page.evaluate("() => document.querySelector('#room-box .sv-lead')") is None
    forged.close()


HEAD = "#stage .sv-round:not([hidden]) .sv-round-head"


def section_text(page: Page, number: int) -> str:
    return page.page.evaluate(f"() => document.querySelector('#stage .sv-round[data-round=\"{number}\"] .sv-text')"
                              ".textContent")


def test_another_trace_on_the_lecturers_screen_asks_and_phones_never_disagree(browser, url):
    lecturer = AppPage(browser, url)
    join = open_room(lecturer)  # on the first example
    phone = FollowerPage(browser, join, viewport=(390, 844))
    phone.wait_ready()
    first, story = load_example(FIRST), load_example("story")
    lecturer.page.locator("#recorded-examples button").nth(list(EXAMPLES).index("story")).click()
    lecturer.wait_text("#status", f"Recorded example “{EXAMPLES['story'].title}”")
    lecturer.wait_js("() => !document.querySelector('#room-box .sv-room-ask').hidden")  # it asks
    lecturer.page.click("#next-round")
    lecturer.wait_round(2)
    phone.wait_text(WHERE, f"Following: round 1 of {len(first.rounds)}", "left this trace")  # waits, and says so
    assert phone.shown() == 1

    lecturer.page.click("#room-box .sv-move-room")  # move the room to the story
    lecturer.wait_text("#status", "now shows this trace")
    phone.wait_text(WHERE, f"Following: round 2 of {len(story.rounds)}")  # the page reloaded on the story
    assert "left this trace" not in phone.text(WHERE)
    assert section_text(phone, 2) == section_text(lecturer, 2)  # the same round of the same trace
    lecturer.page.click("#next-round")
    phone.wait_text(WHERE, f"Following: round 3 of {len(story.rounds)}")

    lecturer.page.locator("#recorded-examples button").nth(list(EXAMPLES).index(FIRST)).click()
    lecturer.wait_text("#status", f"Recorded example “{EXAMPLES[FIRST].title}”")
    lecturer.page.click("#room-box .sv-stop-lead")  # stop leading: the room stays on the story, and says so
    lecturer.wait_text("#sv-room-said", "You no longer lead the room")
    lecturer.page.click("#next-round")
    lecturer.wait_round(2)
    phone.wait_text(WHERE, f"round 3 of {len(story.rounds)}", "left this trace")
    for page in (phone, lecturer):
        page.close()


def test_a_moved_room_asks_afresh_and_its_download_lists_every_trace(browser, url):
    """Issue 55, item 7: the class answers round 2 of the first example; the lecturer opens the story and moves the
    room there: round 2 of the story has no answers, on the lecturer's screen or as the phone's pick, until the phone
    answers it; the lecturer's download holds both traces under their titles. Before any answer the download says
    there is nothing yet."""
    first, story = load_example(FIRST), load_example("story")
    lecturer = AppPage(browser, url)
    join = open_room(lecturer)
    phone = FollowerPage(browser, join, viewport=(390, 844))
    phone.wait_ready()
    lecturer.page.click('#room-box .sv-results[data-format="json"]')
    lecturer.wait_text("#sv-room-said", "Could not download the results", "nothing to download yet")
    section = '#stage .sv-round[data-round="2"]'
    lecturer.page.check("#quiz-mode input")
    lecturer.page.click("#next-round")
    lecturer.wait_round(2)
    phone.wait_text(WHERE, f"Following: round 2 of {len(first.rounds)}")
    phone.wait_js("() => document.body.classList.contains('sv-quiz')")
    phone.page.click(f'{section} .sv-guess[data-guess="1"]')
    lecturer.wait_text("#sv-class-lead", "1 answered round 2")

    lecturer.page.locator("#recorded-examples button").nth(list(EXAMPLES).index("story")).click()
    lecturer.wait_text("#status", f"Recorded example “{EXAMPLES['story'].title}”")
    lecturer.wait_js("() => !document.querySelector('#room-box .sv-room-ask').hidden")
    lecturer.page.click("#next-round")
    lecturer.wait_round(2)
    lecturer.page.click("#room-box .sv-move-room")
    lecturer.wait_text("#status", "now shows this trace", "the results keep every trace's")
    lecturer.page.check("#quiz-mode input")
    phone.wait_text(WHERE, f"Following: round 2 of {len(story.rounds)}")
    phone.wait_js("() => document.body.classList.contains('sv-quiz')")
    lecturer.wait_text("#sv-class-lead", "0 answered round 2")  # nothing of the first example's round 2
    assert phone.picked() == []
    phone.page.click(f'{section} .sv-guess[data-guess="0"]')
    lecturer.wait_text("#sv-class-lead", "1 answered round 2")
    assert phone.picked() == ["2:0"]

    with lecturer.page.expect_download() as got:
        lecturer.page.click('#room-box .sv-results[data-format="json"]')
    results = json.loads(Path(got.value.path()).read_text(encoding="utf-8"))
    assert [(t["title"], [(r["round"], r["answers"]) for r in t["rounds"]]) for t in results["traces"]] == [
        (f"the example “{EXAMPLES[FIRST].title}”", [(2, 1)]), (f"the example “{EXAMPLES['story'].title}”", [(2, 1)])]
    assert results["traces"][0]["rounds"][0]["histogram"]["1"] == 1
    assert results["traces"][1]["rounds"][0]["histogram"]["0"] == 1 and results["dropped"] == 0
    for page in (phone, lecturer):
        page.close()


def test_two_lecturer_pages_stay_in_step_and_a_phone_changes_its_answer(browser, url):
    first = AppPage(browser, url)
    join = open_room(first)
    link = first.page.evaluate("() => document.querySelector('#room-box .sv-lead').dataset.link")
    second = Page(browser, link)  # the lecturer link on the projector's machine
    second.wait_text("#status", "You lead room")
    second.wait_js("() => document.querySelector('#room-box .sv-lead')")
    phone = FollowerPage(browser, join, viewport=(390, 844))
    phone.wait_ready()
    first.page.click("#next-round")
    second.wait_text(HEAD, "Round 2 of")
    second.page.check("#quiz-mode input")  # quiz mode from the second page reaches the first and the phone
    first.wait_js("() => document.body.classList.contains('sv-quiz') && document.querySelector('#quiz-mode input')"
                  ".checked")
    first.page.click("#next-round")  # round 3 reaches the class in quiz form, never shown with quiz mode off (#64)
    second.wait_text(HEAD, "Round 3 of")
    phone.wait_js("() => document.body.classList.contains('sv-quiz')")
    phone.wait_text(WHERE, "Following: round 3")

    section = '#stage .sv-round[data-round="3"]'
    phone.page.click(f'{section} .sv-guess[data-guess="0"]')  # a mis-tap, then the answer meant
    phone.wait_js("() => document.querySelector('.sv-guess.sv-picked')")
    phone.page.click(f'{section} .sv-guess[data-guess="2"]')
    phone.wait_js("() => document.querySelector('.sv-guess.sv-picked')?.dataset.guess === '2'")
    first.wait_text("#sv-class-lead", "1 answered round 3")
    second.wait_text("#sv-class-lead", "1 answered round 3")

    most = int(first.page.evaluate(f"() => document.querySelector('{section}').dataset.k"))
    steps = int(first.page.evaluate(f"() => document.querySelector('{section}').dataset.steps"))
    for _ in range(steps):  # the first page reveals, the second follows it step by step
        first.page.click(f"{section} .sv-reveal")
    second.wait_js(f"() => document.querySelector('{section}').dataset.revealed === '{steps}'")
    phone.wait_js(f"() => document.querySelector('{section}').dataset.revealed === '{steps}'")
    accepted = first.page.evaluate(f"() => document.querySelector('{section}').dataset.accepted")
    first.wait_text("#sv-class-lead", "Round 3: 1 answer", f"the target accepted {accepted}")
    assert phone.picked() == ["3:2"]  # the latest answer counted, once
    mine = phone.wait_text("#sv-mine", "Round 3: you answered 2", f"the target accepted {accepted}")
    assert ("1 of 1 right" if accepted == "2" else "0 of 1 right") in mine
    with second.page.expect_download() as download:  # after the bell: the results, from either lecturer page
        second.page.click("#room-box .sv-results[data-format='csv']")
    rows = list(csv.reader(Path(download.value.path()).read_text(encoding="utf-8").splitlines()))
    assert rows[1][:5] == [f"the example “{EXAMPLES[FIRST].title}”", "3", str(most), "true", "1"] and len(rows) == 2, rows

    second.page.click("#next-round")
    first.wait_round(4)
    phone.wait_text(WHERE, "Following: round 4")
    assert first.round_shown() == phone.shown() == 4 and "Round 4 of" in second.text(HEAD)

    # the phone: the class's panel above the round, its table whole at 390 px
    phone.page.evaluate("() => document.querySelector('#sv-class details').open = true")
    box = phone.page.evaluate("""() => { const t = document.querySelector('#sv-class .sv-across-table');
        const r = t.getBoundingClientRect(); return [r.right, t.scrollWidth, t.clientWidth,
        document.querySelector('#sv-class').getBoundingClientRect().top,
        document.querySelector('#stage').getBoundingClientRect().top]; }""")
    assert box[0] <= 390 and box[1] <= box[2] + 1 and box[3] < box[4], box
    for page in (phone, first, second):
        page.close()
