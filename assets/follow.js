// A follower's page in a room (specviz/app/room_routes.py serves it after the stage's js, whose svShow / svRefresh draw
// the stage). The room's state arrives as server-sent events: the round on the lecturer's screen, its reveal
// steps, quiz mode, and the class's panel. While following, the stage shows what the lecturer shows; ← → step on
// one's own, F (or Follow) follows again. An answer goes to the server, which keeps one per follower per round;
// this browser keeps its follower id, so a reload or a dropped connection comes back with its answers.
(() => {
  const room = document.body.dataset.room;
  const base = `${location.pathname.replace(/\/+$/, "")}`;  // /…/room/<id>
  const saved = `specviz-room-${room}`;
  const $ = (id) => document.getElementById(id);
  let follower = null, following = true, state = null, answers = {};

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

  // Each round's reveal steps as the lecturer left them, and this follower's own answers.
  function draw() {
    if (!state) return;
    document.body.classList.toggle("sv-quiz", state.quiz);
    for (const sec of document.querySelectorAll("#stage .sv-round")) {
      const n = sec.dataset.round;
      const step = n === String(state.round) ? state.step : (state.reached[n] || 0);
      sec.dataset.revealed = String(step);
      if (answers[n] !== undefined) sec.dataset.guess = String(answers[n]);
      else delete sec.dataset.guess;
    }
    if (following) window.svShow(state.round);
    for (const sec of document.querySelectorAll("#stage .sv-round")) window.svRefresh(Number(sec.dataset.round));
    for (const sec of document.querySelectorAll("#stage .sv-round")) {
      const open = state.quiz && sec.dataset.round === String(state.round) && state.step === 0 &&
        answers[sec.dataset.round] === undefined;
      for (const b of sec.querySelectorAll(".sv-guess")) b.disabled = !open;  // after quiz.js's rule (svRefresh)
    }
    const shown = Number(document.querySelector("#stage .sv-stage")?.dataset.current || 1);
    const where = following ? `Following: round ${state.round} of ${state.rounds}` :
      `On your own: round ${shown} of ${state.rounds} (the lecturer is at ${state.round}; F follows)`;
    if ($("sv-where").textContent !== where) $("sv-where").textContent = where;
    $("f-follow").classList.toggle("sv-on", following);
    $("f-follow").setAttribute("aria-pressed", String(following));
    const panel = $("sv-class");
    if (panel.dataset.version !== String(state.version)) {
      panel.innerHTML = state.panel;  // rendered and escaped by the server (view/room.py): counts only
      panel.dataset.version = String(state.version);
    }
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
      const data = await post("answer", { follower, round: Number(sec.dataset.round), guess: Number(button.dataset.guess) });
      answers = data.answers;
      say("");
    } catch (e) {
      say(e.message);
    }
    draw();
  }

  function listen() {
    const events = new EventSource(`${base}/events`);
    events.onmessage = (event) => {
      state = JSON.parse(event.data);
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

  // A phone's row of cards scrolls sideways: focusable, so a keyboard can scroll it too (and named)
  for (const cards of document.querySelectorAll("#stage .sv-cards")) {
    cards.tabIndex = 0;
    cards.setAttribute("aria-label", "the round's cards, one per draft position");
  }

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
