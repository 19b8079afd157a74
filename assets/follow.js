// A follower's page in a room (specviz/app/room_routes.py serves it after the stage's js, whose svShow / svRefresh draw
// the stage). The room's state arrives as server-sent events: the round on the lecturer's screen, its reveal
// steps, quiz mode, and the class's panel. While following, the stage shows what the lecturer shows; ← → step on
// one's own, F (or Follow) follows again. An answer goes to the server, which keeps the latest per follower per
// round (a mis-tap can be changed until the round's first reveal); this browser keeps its follower id, so a reload
// or a dropped connection comes back with its seat and its answers. When the lecturer moves the room to another
// trace the page reloads with it; "Your answers" lists this follower's answers and score.
//
// The page holds each round only as far as the room has released it (specviz/view/follower.py: a placeholder, the
// quiz form, or the round in full). Each state from the stream carries the rounds whose form changed since the
// last one this page received (the page's own version, body[data-since], on connecting; the browser's Last-Event-ID
// on a reconnect): their new sections replace the old ones here, so a reveal needs no reload.
(() => {
  const room = document.body.dataset.room;
  const base = `${location.pathname.replace(/\/+$/, "")}`;  // /…/room/<id>
  const saved = `specviz-room-${room}`;
  const $ = (id) => document.getElementById(id);
  const part = Number(document.body.dataset.part);  // which of the room's traces this page holds
  let follower = null, following = true, state = null, answers = {}, across = false, quiz = null;

  function section(n) {
    return document.querySelector(`#stage .sv-round[data-round="${n}"]`);
  }

  function say(text) {
    const el = $("sv-room-error");
    if (el.textContent !== text) el.textContent = text;
  }

  async function post(path, body) {
    const response = await fetch(`${base}/${path}`, {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
    });
    const data = await response.json().catch(() => ({ error: `the server answered ${response.status}` }));
    if (!response.ok) throw new Error(data.error || `the server answered ${response.status}`);
    return data;
  }

  // Each round's reveal steps as the lecturer left them, and this follower's own answers. Only the rounds whose
  // steps, answer or quiz mode changed are redrawn (quiz.js's svRefresh walks every step of a round): the one on
  // screen at once, the others after the next frame, so quiz mode reaches the screen as fast as a step does.
  const drawn = new Map();  // round -> what it was last drawn with
  let later = null;

  // The reveal steps the class has seen of round n (the lecturer never takes a step back from a phone).
  const stepOf = (n) => Math.max(n === String(state.round) ? state.step : 0, state.reached[n] || 0);

  function refresh(sec) {
    const n = sec.dataset.round;
    const step = stepOf(n);
    const mark = `${state.quiz}:${step}:${answers[n]}:${n === String(state.round)}`;
    if (drawn.get(n) === mark) return;
    drawn.set(n, mark);
    sec.dataset.revealed = String(step);
    if (answers[n] !== undefined) sec.dataset.guess = String(answers[n]);
    else delete sec.dataset.guess;
    window.svRefresh(Number(n));
    guesses(sec);
  }

  // A round's answer buttons: open only for the lecturer's round in quiz mode before its first reveal (after
  // quiz.js's own rule, which knows only the reveal), and never for a round this page holds in full (the room released
  // it with quiz mode off: its verdicts are here, so the room counts no answer to it and says so).
  function guesses(sec) {
    const released = sec.dataset.accepted !== undefined;
    const open = state.quiz && sec.dataset.round === String(state.round) && state.step === 0 && !released;
    for (const b of sec.querySelectorAll(".sv-guess")) b.disabled = !open;
  }

  // The stage's scripts redraw every round when the stage's markup changes (its own observer, registered before this one):
  // the answer buttons' rule again after it.
  new MutationObserver((records) => {
    if (state && records.some((r) => r.target.closest?.("#stage"))) {
      document.querySelectorAll("#stage .sv-round").forEach(guesses);
    }
  }).observe(document.body, { childList: true, subtree: true });

  // A round whose form changed (the room released more of it): its new section in place of the old one.
  function replace(n, html) {
    const old = section(n), made = document.createElement("template");
    made.innerHTML = html;
    const sec = made.content.firstElementChild;
    if (!old || !sec) return;
    sec.hidden = old.hidden;
    old.replaceWith(sec);
    drawn.delete(n);
    dress(sec);
  }

  // A phone's row of cards scrolls sideways: focusable, so a keyboard can scroll it too (and named)
  function dress(sec) {
    for (const cards of sec.querySelectorAll(".sv-cards")) {
      cards.tabIndex = 0;
      cards.setAttribute("aria-label", "the round's cards, one per draft position");
    }
  }

  function draw() {
    if (!state) return;
    const switched = quiz !== null && quiz !== state.quiz;
    quiz = state.quiz;
    document.body.classList.toggle("sv-quiz", state.quiz);
    if (following) window.svShow(state.round);
    const now = section(document.querySelector("#stage .sv-stage")?.dataset.current);
    if (now) refresh(now);
    // Quiz mode turned on or off: said anew, so nothing said before (a round's outcome, with quiz mode off) lingers
    // in the live region into the quiz; the round's head as svHeadText says it (without what the quiz hides).
    if (switched) window.svAnnounce(`Quiz mode ${state.quiz ? "on" : "off"}. ${now ? window.svHeadText(now) : ""}`);
    cancelAnimationFrame(later);
    later = requestAnimationFrame(() => setTimeout(() => {
      for (const sec of document.querySelectorAll("#stage .sv-round")) refresh(sec);
    }, 0));
    const shown = Number(document.querySelector("#stage .sv-stage")?.dataset.current || 1);
    const left = state.leading ? "" : " (the lecturer's screen has left this trace; the room waits here)";
    const where = (following ? `Following: round ${state.round} of ${state.rounds}` :
      `On your own: round ${shown} of ${state.rounds} (the lecturer is at ${state.round}; F follows)`) + left;
    if ($("sv-where").textContent !== where) $("sv-where").textContent = where;
    $("f-follow").classList.toggle("sv-on", following);
    $("f-follow").setAttribute("aria-pressed", String(following));
    const panel = $("sv-class");
    if (panel.dataset.version !== `${state.version}:${state.here}`) {
      panel.innerHTML = state.panel;  // rendered and escaped by the server (view/class_panel.py): counts only
      panel.dataset.version = `${state.version}:${state.here}`;
      const table = panel.querySelector("details.sv-across");  // folded on a follower's page until opened
      if (table) {
        table.open = across;
        table.addEventListener("toggle", () => { across = table.open; });
      }
    }
    drawMine();
  }

  // This follower's own answers, and their score over the rounds revealed to the end (as quiz.js counts it).
  function drawMine() {
    const rows = [];
    let right = 0, scored = 0;
    for (const n of Object.keys(answers).sort((a, b) => a - b)) {
      const sec = section(n);
      if (!sec) continue;
      const done = sec.dataset.steps !== undefined && stepOf(n) >= Number(sec.dataset.steps);  // in full: released
      const hit = String(answers[n]) === sec.dataset.accepted;
      if (done) { scored += 1; right += hit ? 1 : 0; }
      rows.push(`Round ${n}: you answered ${answers[n]}; ` +
        (done ? `the target accepted ${sec.dataset.accepted}${hit ? " ✓ right" : " ✗"}` : "not revealed yet"));
    }
    const mine = $("sv-mine");
    mine.hidden = rows.length === 0;
    const text = JSON.stringify(rows) + scored;
    if (mine.dataset.text === text) return;
    mine.dataset.text = text;
    const head = document.createElement("h2");
    head.textContent = scored ? `Your answers: ${right} of ${scored} right` : "Your answers";
    const list = document.createElement("ul");
    for (const row of rows) list.append(Object.assign(document.createElement("li"), { textContent: row }));
    mine.replaceChildren(head, list);
  }

  function step(delta) {
    following = false;
    const shown = Number(document.querySelector("#stage .sv-stage")?.dataset.current || 1);
    window.svShow(shown + delta);
    draw();
  }

  function follow() {
    following = true;
    draw();
  }

  async function answer(button) {
    const sec = button.closest(".sv-round");
    if (!follower || !sec) return;
    try {
      // `part`: the trace this page holds; the room refuses the answer if the lecturer has moved it to another
      const data = await post("answer", { follower, part, round: Number(sec.dataset.round),
                                          guess: Number(button.dataset.guess) });
      answers = data.answers;
      say("");
    } catch (e) {
      say(e.message);
    }
    draw();
  }

  function listen() {
    const since = encodeURIComponent(document.body.dataset.since || "0");
    const events = new EventSource(`${base}/events?follower=${encodeURIComponent(follower)}&since=${since}`);
    events.onmessage = (event) => {
      state = JSON.parse(event.data);
      if (state.part !== part) {  // the lecturer moved the room to another trace: its page
        events.close();
        location.reload();
        return;
      }
      for (const [n, html] of Object.entries(state.sections || {})) replace(n, html);
      say("");
      draw();
    };
    events.addEventListener("closed", (event) => {
      events.close();
      say(JSON.parse(event.data).error);
    });
    events.onerror = () => {
      if (events.readyState !== EventSource.CLOSED) say("Connection lost; reconnecting…");  // the browser retries
    };
  }

  async function join() {
    try {
      const data = await post("join", { follower: localStorage.getItem(saved) });
      follower = data.follower;
      answers = data.answers;
      localStorage.setItem(saved, follower);
      listen();
    } catch (e) {
      say(e.message);
      $("sv-where").textContent = "Not in the room";
    }
  }

  document.querySelectorAll("#stage .sv-round").forEach(dress);

  document.addEventListener("click", (event) => {
    const guess = event.target.closest("#stage .sv-guess");
    if (guess && !guess.disabled) answer(guess);
  });
  $("f-prev").addEventListener("click", () => step(-1));
  $("f-next").addEventListener("click", () => step(1));
  $("f-follow").addEventListener("click", follow);
  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.altKey || event.metaKey) return;
    if (event.key === "ArrowLeft" || event.key === "PageUp") step(-1);
    else if (event.key === "ArrowRight" || event.key === "PageDown") step(1);
    else if (event.key === "f" || event.key === "F") follow();
    else if (state?.quiz && /^[0-9]$/.test(event.key)) {
      const b = section(state.round)?.querySelector(`.sv-guess[data-guess="${event.key}"]`);
      if (b && !b.disabled && following) answer(b);
      else return;
    } else return;
    event.preventDefault();
  });
  join();
})();
