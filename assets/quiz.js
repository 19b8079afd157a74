// The quiz (specviz/record/quiz_data.py): with body.sv-quiz, the elements of a round that carry data-step are
// hidden until revealed; a section's data-revealed counts the steps shown, data-guess holds the class's answer.
// stepping.js's keys call svReveal and svAnswer; the page's Quiz mode box calls svQuiz; a lecture pack reads
// svQuizState; a follower's page (follow.js) sets a round's steps and answer from the room, then calls svRefresh.
(() => {
  const sections = () => Array.from(document.querySelectorAll("#stage .sv-round"));
  const quizOn = () => document.body.classList.contains("sv-quiz");
  const shown = () => window.svSection(window.svWhere().round);  // the section on screen

  function showSteps(sec) {
    const revealed = Number(sec.dataset.revealed || 0), hiding = quizOn();
    for (const el of sec.querySelectorAll("[data-step]")) {
      const shown = Number(el.dataset.step) <= revealed;
      el.classList.toggle("sv-shown", shown);
      // a token's tooltip names its verdict: while the quiz hides the verdict, it hides the tooltip too
      if (hiding && !shown && el.title) { el.dataset.title = el.title; el.removeAttribute("title"); }
      else if ((shown || !hiding) && el.dataset.title) { el.title = el.dataset.title; delete el.dataset.title; }
    }
    const guess = sec.dataset.guess;
    for (const b of sec.querySelectorAll(".sv-guess")) {
      b.classList.toggle("sv-picked", b.dataset.guess === guess);
      b.disabled = revealed > 0;  // answers close once the first verdict is out
    }
    const said = sec.querySelector(".sv-quiz-said");
    const done = revealed >= Number(sec.dataset.steps);
    let text = guess === undefined ? "" : `Your answer: ${guess}.`;
    if (done && guess !== undefined) {
      text += guess === sec.dataset.accepted ? " Right!" : ` The target accepted ${sec.dataset.accepted}.`;
    }
    if (said && said.textContent !== text) said.textContent = text;  // unchanged text: no mutation, no loop
    const reveal = sec.querySelector(".sv-reveal");
    if (reveal) reveal.disabled = done;
    showScore();
  }

  // Only a round answered and revealed to its last step counts. A follower's round in quiz form (view/quiz_form.py)
  // has no data-steps (its count would tell the answer): Number(undefined) is NaN, which compares false, so unchecked
  // it counted as revealed ("Score: 0 of 1" on a phone before any reveal).
  function showScore() {
    let right = 0, answered = 0;
    for (const sec of sections()) {
      if (sec.dataset.guess === undefined || sec.dataset.steps === undefined ||
          Number(sec.dataset.revealed) < Number(sec.dataset.steps)) continue;
      answered += 1;
      right += sec.dataset.guess === sec.dataset.accepted ? 1 : 0;
    }
    const text = answered ? `Score: ${right} of ${answered}` : "";
    for (const el of document.querySelectorAll("#stage .sv-score")) {
      if (el.textContent !== text) el.textContent = text;
    }
  }

  // Reveal the next step of the round on screen; -> false when it was all revealed already.
  window.svReveal = () => {
    const sec = shown();
    if (!sec) return false;
    const revealed = Number(sec.dataset.revealed || 0);
    if (revealed >= Number(sec.dataset.steps)) return false;
    sec.dataset.revealed = String(revealed + 1);
    showSteps(sec);
    const said = [...sec.querySelectorAll(`.sv-pos[data-step="${revealed + 1}"] .sv-pos-head`)]
      .map((el) => el.textContent.trim()).join("; ");
    // "of N" only at the last step: the number of steps is the positions examined plus one, an answer in itself
    const of = revealed + 1 >= Number(sec.dataset.steps) ? ` of ${sec.dataset.steps}` : "";
    window.svAnnounce(`Revealed step ${revealed + 1}${of}${said ? ": " + said : ""}. ` + window.svHeadText(sec));
    window.svChanged();
    return true;
  };

  // Answer `n` for the round on screen, while nothing of it is revealed; -> whether it was taken.
  window.svAnswer = (n) => {
    const sec = shown();
    if (!sec || Number(sec.dataset.revealed || 0) > 0 || n > Number(sec.dataset.k)) return false;
    sec.dataset.guess = String(n);
    showSteps(sec);
    return true;
  };

  // A follower's page (follow.js) sets a round's reveal steps and answer from the room: redraw what they show.
  window.svRefresh = (number) => {
    const sec = window.svSection(number);
    if (sec) showSteps(sec);
  };

  window.svQuiz = (on) => {
    document.body.classList.toggle("sv-quiz", Boolean(on));
    sections().forEach(showSteps);  // tooltips hidden or given back
    const sec = shown();
    if (sec) window.svAnnounce(`Quiz mode ${on ? "on" : "off"}. ${window.svHeadText(sec)}`);  // the old words too
    window.svChanged();
  };

  // The quiz as the lecture pack stores it (specviz/record/quiz_data.py: quiz_from_dict).
  window.svQuizState = () => {
    const rounds = {};
    for (const sec of sections()) {
      const guess = sec.dataset.guess, revealed = Number(sec.dataset.revealed || 0);
      if (guess !== undefined || revealed > 0) {
        rounds[sec.dataset.round] = { guess: guess === undefined ? null : Number(guess), revealed };
      }
    }
    return JSON.stringify({ on: quizOn(), current: window.svWhere().round, rounds });
  };

  // A new trace (or frame) replaces the stage's markup: restore what its data attributes say.
  // (The observer watches the body: Gradio may re-create #stage's container. It acts only on changes in #stage.)
  new MutationObserver((records) => {
    if (records.some((r) => r.target.closest?.("#stage"))) sections().forEach(showSteps);
  }).observe(document.body, { childList: true, subtree: true });

  document.addEventListener("click", (event) => {
    if (document.body.classList.contains("sv-follower")) return;  // a follower answers the room (follow.js)
    const guess = event.target.closest("#stage .sv-guess");
    if (guess) window.svAnswer(Number(guess.dataset.guess));
    if (event.target.closest("#stage .sv-reveal")) window.svReveal();
  });
})();
