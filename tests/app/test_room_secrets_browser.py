"""A room the class cannot cheat and the lecturer cannot lose (issue 44), in one browser: a lecturer's page, phones
following it (390×844), a second lecturer page. A round's fates reach a phone only at their reveal, step by step;
a late joiner and a reload get only what has been released; a phone stepping ahead finds placeholders; the live
region of the lecturer's page, the presenter view and a phone never says what is not revealed, whichever order quiz
mode and steps come in; a lecturer page left on another trace is told so, with both titles, and its Next does not
move the room. What is read is what a student could read: each section's markup (view-source), its text, and the
accessibility tree. Every check waits for its condition (harness/browser.py).
"""

from __future__ import annotations

from harness.browser import AppPage, Page
from harness.room_pages import WHERE, FollowerPage, open_room
from specviz.app.room_hub import ROOMS
from specviz.lecture.examples import EXAMPLES, load_example
from tests.helpers import BROWSER

pytestmark = BROWSER

# What gives a round's verdicts away (tests/app/test_room_secrets.py greps the same over HTTP), as a JS regex
LEAK = (r"accepted|rejected|discarded|replacement|bonus|examined|[✓✗░◆★]|r = |for 1 target pass|data-accepted|"
        r"data-steps|sv-next|sv-last|sv-explain|sv-cache|sv-answer|sv-dec-")
SAID = r"accepted|rejected|discarded|replacement|bonus|examined|[✓✗░◆★]|for 1 target pass"  # in words, to a person
ROUND = 3  # the first example's round 3: K = 4, two drafts accepted, the third rejected: 4 reveal steps
STEPS = 4


def section(page: Page, n: int) -> str:
    return page.page.evaluate(f"() => document.querySelector('#stage .sv-round[data-round=\"{n}\"]')?.outerHTML ?? ''")


def leaked(page: Page, n: int) -> list[str]:
    """What of round n's verdicts this page's markup holds (empty: nothing)."""
    return page.page.evaluate("([n, leak]) => { const s = document.querySelector(`#stage .sv-round[data-round=\"${n}\"]`);"
                              " return [...(s?.outerHTML ?? '').matchAll(new RegExp(leak, 'gi'))].map(m => m[0]); }",
                              [n, LEAK])


def live(page: Page) -> tuple[str, str]:
    """The live region as a screen reader gets it: its innerText and its accessibility tree."""
    return (page.page.evaluate("() => document.getElementById('sv-announce').innerText"),
            page.page.locator("#sv-announce").aria_snapshot())


def says_nothing_hidden(page: Page) -> None:
    import re

    for text in live(page):
        assert not re.search(SAID, text, re.I), text


def reveal(lecturer: AppPage, times: int = 1) -> None:
    for _ in range(times):
        lecturer.page.click(f'#stage .sv-round[data-round="{ROUND}"] .sv-reveal')


def test_fates_reach_a_phone_only_at_their_reveal_and_a_late_joiner_gets_no_more(browser, url):
    lecturer = AppPage(browser, url)
    join = open_room(lecturer)
    lecturer.page.check("#quiz-mode input")  # quiz on before round 2 or 3 is ever on screen
    lecturer.page.click("#next-round")
    lecturer.page.click("#next-round")
    lecturer.wait_round(ROUND)
    phone = FollowerPage(browser, join, viewport=(390, 844))
    phone.wait_text(WHERE, f"Following: round {ROUND} of")
    phone.wait_js("() => document.body.classList.contains('sv-quiz')")
    for n in range(2, 17):
        assert leaked(phone, n) == [], (n, leaked(phone, n))
    assert "sv-unseen" in section(phone, ROUND + 1)  # round 2 not revealed: nothing after round 3 either

    for step in range(1, STEPS):  # each step brings its position's verdict, and no other
        reveal(lecturer)
        phone.wait_js(f"""() => {{ const cards = document.querySelectorAll(
            '#stage .sv-round[data-round="{ROUND}"] .sv-cards > .sv-pos');
            return cards.length === 4 && [...cards].slice(0, {step}).every(c => /accepted|rejected/.test(c.innerText));
        }}""")
        cards = phone.page.evaluate(f"() => [...document.querySelectorAll('#stage .sv-round[data-round=\"{ROUND}\"] "
                                    f".sv-cards > .sv-pos')].map(c => c.outerHTML)")
        assert all("accepted" not in c and "rejected" not in c for c in cards[step:]), step
        assert "data-accepted" not in section(phone, ROUND) and "sv-next" not in section(phone, ROUND)
    reveal(lecturer)  # the last step: the round in full
    phone.wait_js(f"() => document.querySelector('#stage .sv-round[data-round=\"{ROUND}\"]').dataset.accepted === '2'")
    phone.wait_js(f"() => /replacement/.test(document.querySelector('#stage .sv-round[data-round=\"{ROUND}\"] "
                  ".sv-last').innerText)")

    late = FollowerPage(browser, join, viewport=(390, 844))  # a late joiner, then a reload: what is released, only
    late.wait_text(WHERE, f"Following: round {ROUND} of")
    phone.page.reload()
    phone.wait_text(WHERE, f"Following: round {ROUND} of")
    for page in (late, phone):
        assert 'data-accepted="2"' in section(page, ROUND) and leaked(page, 2) == []
        assert all("sv-unseen" in section(page, n) for n in range(ROUND + 1, 17))

    phone.page.keyboard.press("ArrowRight")  # stepping ahead on its own: a placeholder, nothing of the round
    phone.wait_text(WHERE, f"On your own: round {ROUND + 1}")
    phone.wait_match("#stage .sv-round:not([hidden])", "shown here once the lecturer gets there", inner=True)
    for page in (late, phone, lecturer):
        page.close()


def test_quiz_mode_over_a_shown_round_leaves_nothing_in_any_live_region(browser, url):
    lecturer = AppPage(browser, url)
    join = open_room(lecturer)
    phone = FollowerPage(browser, join, viewport=(390, 844))
    phone.wait_ready()
    lecturer.page.keyboard.press("p")  # the presenter view: the same page, the stage alone
    lecturer.wait_js("() => document.body.classList.contains('sv-present')")
    quiz = "() => document.querySelector('#quiz-mode input').click()"  # the switch, under the presenter view
    for _ in range(ROUND - 1):  # quiz off: each round is said with its outcome, on the projector and the phone
        lecturer.page.keyboard.press("PageDown")
    lecturer.wait_text("#sv-announce", f"Round {ROUND} of", "accepted")
    phone.wait_text("#sv-announce", f"Round {ROUND} of", "accepted")

    lecturer.page.evaluate(quiz)  # quiz on over the round shown: its outcome leaves both live regions
    for page in (lecturer, phone):
        page.wait_text("#sv-announce", "Quiz mode on.", f"Round {ROUND} of", "K = 4")
        says_nothing_hidden(page)

    lecturer.page.keyboard.press("PageDown")  # a reveal step: said, and not "of N" (the steps tell the answer)
    said = lecturer.wait_text("#sv-announce", "Revealed step 1")
    assert "Revealed step 1 of" not in said and "for 1 target pass" not in said, said
    lecturer.page.evaluate("() => document.getElementById('next-round').click()")  # quiz on, then the next round
    for page in (lecturer, phone):
        page.wait_text("#sv-announce", f"Round {ROUND + 1} of 16 · K = 4")
        says_nothing_hidden(page)

    lecturer.page.evaluate(quiz)  # quiz off, a step with it off (said in full), then quiz on again
    lecturer.page.keyboard.press("PageDown")
    lecturer.wait_text("#sv-announce", f"Round {ROUND + 2} of", "accepted")
    lecturer.page.evaluate(quiz)
    for page in (lecturer, phone):
        page.wait_text("#sv-announce", "Quiz mode on.", f"Round {ROUND + 2} of")
        says_nothing_hidden(page)
    for page in (phone, lecturer):
        page.close()


def test_a_lecturer_page_on_another_trace_is_told_and_its_next_does_not_move_the_room(browser, url):
    first = AppPage(browser, url)  # on the first example, "Code, greedy"
    join = open_room(first)
    lead = first.page.evaluate("() => document.querySelector('#room-box .sv-lead').dataset.link")
    room = first.page.evaluate("() => document.querySelector('#room-box .sv-lead').dataset.room")
    second = Page(browser, lead)  # the lecturer link on the projector's machine
    second.wait_text("#status", "You lead room")
    second.wait_js("() => document.querySelector('#room-box .sv-lead')")
    phone = FollowerPage(browser, join, viewport=(390, 844))
    phone.wait_ready()
    story = load_example("story")

    first.page.locator("#recorded-examples button").nth(list(EXAMPLES).index("story")).click()
    first.wait_text("#status", f"Recorded example “{EXAMPLES['story'].title}”")
    first.wait_text("#room-box .sv-room-ask-said", "The room is on the example “Code, greedy”; this page shows "
                                                    "another trace")
    first.page.click("#room-box .sv-move-room")  # the room moves to the story
    first.wait_text("#status", "now shows this trace")
    phone.wait_text(WHERE, f"of {len(story.rounds)}")

    said = second.wait_text("#room-box .sv-room-ask-said", "The room is on the example “Story, sampled”; this page "
                                                           "shows the example “Code, greedy”")
    assert "move the room here, or follow the room" in said  # told at once, from the room's stream
    assert second.page.evaluate("() => !document.querySelector('#room-box .sv-room-ask').hidden")
    second.page.click("#next-round")  # its Next: refused by the room, with a sentence
    second.wait_text("#stage .sv-round:not([hidden]) .sv-round-head", "Round 2 of 16")
    second.wait_text("#sv-room-said", "did not move the room", "not on the trace this page shows")
    assert ROOMS.rooms.view(room).round_ == 1 and phone.shown() == 1
    assert f"Following: round 1 of {len(story.rounds)}" in phone.text(WHERE)

    with second.page.expect_navigation():  # follow the room: its lecturer link, its trace at its round
        second.page.click("#room-box .sv-follow-room")
    second.wait_text("#status", "You lead room")
    second.wait_text("#stage .sv-round:not([hidden]) .sv-round-head", f"Round 1 of {len(story.rounds)}")
    second.wait_js("() => document.querySelector('#room-box .sv-room-ask')?.hidden")
    second.page.click("#next-round")
    phone.wait_text(WHERE, f"Following: round 2 of {len(story.rounds)}")
    first.wait_round(2)
    for page in (phone, first, second):
        page.close()
