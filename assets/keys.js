// The stage in the browser, run once when the page loads (Gradio's launch(js=...)).
//
// The server renders every round of a trace once, as <section class="sv-round"> elements inside #stage
// (specviz/view/stage.py); this script shows one at a time, so stepping redraws a round without a server call. The
// page's events call window.svStep / svShow / svPlayFrom in their `js` and send the round they return to the
// server, which moves the slider and the chart's mark (specviz/app/round_view.py).
//
// Quiz (specviz/view/quiz.py): with body.sv-quiz, the elements of a round that carry data-step are hidden until
// revealed; a section's data-revealed counts the steps shown, data-guess holds the class's answer.
//
// Keys: ← / PageUp step back; → / PageDown / space reveal the next step in quiz mode, else step forward (what a
// presenter's clicker sends); digits answer in quiz mode. On the Lab tab the forward keys reveal the next step of
// its "test yourself" card while the card is on screen. Keys typed into a field are left alone, and so are
// chords with Ctrl, Alt or Meta, and keys pressed while another tab (the Lab) hides the stage.
() => {
  const stage = () => document.querySelector("#stage .sv-stage");
  const sections = () => Array.from(document.querySelectorAll("#stage .sv-round"));
  const quizOn = () => document.body.classList.contains("sv-quiz");

  function current() {
    const s = stage();
    return s ? Number(s.dataset.current) : 1;
  }

  function section(number) {
    return document.querySelector(`#stage .sv-round[data-round="${number}"]`);
  }

  // Show round `number` if the stage holds it (while a run streams it holds only the newest); -> the round shown.
  window.svShow = (number) => {
    const s = stage(), target = section(Math.round(Number(number)));
    if (!s || !target) return current();
    const moved = s.dataset.current !== target.dataset.round;
    for (const other of sections()) other.hidden = other !== target;
    s.dataset.current = target.dataset.round;
    if (moved) announce(headText(target));
    changed();
    return Number(target.dataset.round);
  };

  // --- screen readers: the round change and each reveal, said in the page's live region -------------------
  function announce(text) {
    const live = document.getElementById("sv-announce");
    if (live && text) live.textContent = text;
  }

  // A round's head as a screen reader should hear it: what the quiz still hides is left out.
  function headText(sec) {
    const head = sec.querySelector(".sv-round-head")?.cloneNode(true);
    if (!head) return "";
    if (quizOn()) head.querySelectorAll("[data-step]:not(.sv-shown)").forEach((el) => el.remove());
    return head.textContent.trim();
  }

  // A room's lecturer page (room.js) listens here to every change a class follows: round, reveal, quiz mode.
  function changed() {
    if (typeof window.svOnChange === "function") window.svOnChange();
  }

  // Where the stage is: the round on screen and the reveal steps shown in it.
  window.svWhere = () => {
    const sec = section(current());
    return { round: current(), step: sec ? Number(sec.dataset.revealed || 0) : 0, quiz: quizOn() };
  };

  window.svStep = (delta) => window.svShow(current() + delta);

  // Play: from the last round it starts again at round 1.
  window.svPlayFrom = (label) => {
    const s = stage();
    if (label === "Play" && s && current() >= Number(s.dataset.rounds)) return window.svShow(1);
    return current();
  };

  // --- the quiz ---------------------------------------------------------------------------------------------

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

  function showScore() {
    let right = 0, answered = 0;
    for (const sec of sections()) {
      if (sec.dataset.guess === undefined || Number(sec.dataset.revealed) < Number(sec.dataset.steps)) continue;
      answered += 1;
      right += sec.dataset.guess === sec.dataset.accepted ? 1 : 0;
    }
    const text = answered ? `Score: ${right} of ${answered}` : "";
    for (const el of document.querySelectorAll("#stage .sv-score")) {
      if (el.textContent !== text) el.textContent = text;
    }
  }

  // Reveal the next step of the round on screen; -> false when it was all revealed already.
  function reveal() {
    const sec = section(current());
    if (!sec) return false;
    const revealed = Number(sec.dataset.revealed || 0);
    if (revealed >= Number(sec.dataset.steps)) return false;
    sec.dataset.revealed = String(revealed + 1);
    showSteps(sec);
    const said = [...sec.querySelectorAll(`.sv-pos[data-step="${revealed + 1}"] .sv-pos-head`)]
      .map((el) => el.textContent.trim()).join("; ");
    announce(`Revealed step ${revealed + 1} of ${sec.dataset.steps}${said ? ": " + said : ""}. ${headText(sec)}`);
    changed();
    return true;
  }

  // A follower's page (follow.js) sets a round's reveal steps and answer from the room: redraw what they show.
  window.svRefresh = (number) => {
    const sec = section(number);
    if (sec) showSteps(sec);
  };

  function answer(n) {
    const sec = section(current());
    if (!sec || Number(sec.dataset.revealed || 0) > 0 || n > Number(sec.dataset.k)) return false;
    sec.dataset.guess = String(n);
    showSteps(sec);
    return true;
  }

  window.svQuiz = (on) => {
    document.body.classList.toggle("sv-quiz", Boolean(on));
    sections().forEach(showSteps);  // tooltips hidden or given back
    const sec = section(current());
    if (sec) announce(`Quiz mode ${on ? "on" : "off"}. ${headText(sec)}`);  // and the live region's old words too
    changed();
  };

  // Reduced motion (the system's setting): Play takes one step a press instead of playing on (PLAY_JS).
  window.svReduced = () => window.matchMedia("(prefers-reduced-motion: reduce)").matches;

  // The quiz as the lecture pack stores it (specviz/view/quiz.py: quiz_from_dict).
  window.svQuizState = () => {
    const rounds = {};
    for (const sec of sections()) {
      const guess = sec.dataset.guess, revealed = Number(sec.dataset.revealed || 0);
      if (guess !== undefined || revealed > 0) {
        rounds[sec.dataset.round] = { guess: guess === undefined ? null : Number(guess), revealed };
      }
    }
    return JSON.stringify({ on: quizOn(), current: current(), rounds });
  };

  // A new trace (or frame) replaces the stage's markup: restore what its data attributes say.
  // (The observer watches the body: Gradio may re-create #stage's container. It acts only on changes in #stage.)
  new MutationObserver((records) => {
    if (records.some((r) => r.target.closest?.("#stage"))) sections().forEach(showSteps);
  }).observe(document.body, { childList: true, subtree: true });

  document.addEventListener("click", (event) => {
    if (event.target.closest(".sv-skip")) {  // "Skip to the round": focus Next round, the round in view
      event.preventDefault();
      const next = button("next-round");
      next?.focus();
      next?.scrollIntoView({ block: "center" });
      return;
    }
    if (document.body.classList.contains("sv-follower")) return;  // a follower answers the room (follow.js)
    const guess = event.target.closest("#stage .sv-guess");
    if (guess) answer(Number(guess.dataset.guess));
    if (event.target.closest("#stage .sv-reveal")) reveal();
  });

  // --- charts for screen readers: a name, and the data as a table (visually hidden) ------------------------
  // Every plotly chart on the page (the round view's, the Lab's, the Costs tab's) gets an accessible name from its
  // title (a chart without one, which only says why it is empty or covered, from that note) and, after each draw,
  // a table of what it plots: one row per point, its series, x and y. Text only (textContent), at most MAX_ROWS
  // rows a chart; a chart that plots nothing gets no table (an empty one is no alternative), its name says so.
  const MAX_ROWS = 400;

  function plain(text) {  // a title's text without its markup (DOMParser: nothing in it runs or loads)
    return new DOMParser().parseFromString(String(text || ""), "text/html").body.textContent.trim();
  }

  function describe(gd) {
    const box = gd.closest("[id]");
    const title = plain(gd.layout?.title?.text) || plain(gd.layout?.annotations?.[0]?.text) ||
      box?.getAttribute("aria-label") || "chart";
    const rows = [["series", "x", "y"]];
    for (const trace of gd.data || []) {
      const xs = trace.customdata && trace.customdata.length === (trace.x || []).length ? trace.customdata : trace.x || [];
      (trace.y || []).forEach((y, i) => { if (rows.length <= MAX_ROWS) rows.push([plain(trace.name) || "", xs[i], y]); });
    }
    // a figure, not an img: the chart holds buttons (plotly's mode bar), which an img's children may not be
    gd.setAttribute("role", "figure");
    let table = gd.parentElement?.querySelector(":scope > table.sv-plot-data");
    if (rows.length === 1) {
      gd.setAttribute("aria-label", `${title}: a chart with no data yet`);
      table?.remove();
      return;
    }
    gd.setAttribute("aria-label", `${title}: a chart; its data follow as a table`);
    if (!table) {
      table = document.createElement("table");
      table.className = "sv-sr sv-plot-data";
      gd.after(table);
    }
    const caption = document.createElement("caption");
    caption.textContent = `The data of “${title}”`;
    table.replaceChildren(caption, ...rows.map((cells, r) => {
      const tr = document.createElement("tr");
      for (const cell of cells) {
        const td = document.createElement(r === 0 ? "th" : "td");
        td.textContent = typeof cell === "number" ? String(Math.round(cell * 1000) / 1000) : String(cell ?? "");
        tr.append(td);
      }
      return tr;
    }));
  }

  new MutationObserver(() => {
    for (const gd of document.querySelectorAll(".js-plotly-plot:not([data-sv-described])")) {
      gd.dataset.svDescribed = "1";
      if (typeof gd.on === "function") gd.on("plotly_afterplot", () => describe(gd));
      describe(gd);
    }
  }).observe(document.body, { childList: true, subtree: true });

  // --- dropdowns: no list opened by focus alone (WCAG 3.2.1 "On Focus") ----------------------------------
  // Gradio's dropdown (the pair's box) opens its list whenever its input gets focus, so Tab would open it on the
  // way past. A focus that no pointer caused is held back from Gradio's own listener (stopped on its way down, in
  // the capture phase), so the list is never drawn. The box's first key (↓ ↑ Enter, typing) or a press on it then
  // passes the focus on, and Gradio opens the list with its choice active, the key acting on it as ever.
  const COMBOBOX = "input[role=combobox]";
  // keys that do nothing to a list, kept from Gradio: it would open the list on each (6.31), a moment after the key,
  // so Tab and Shift+Tab left it open beside the next control
  const IDLE = ["Tab", "Shift", "Control", "Alt", "Meta"];
  let pointed = null;  // what a pointer pressed last, forgotten at the next key: the focus it causes opens the list
  let held = null;  // the box focused without Gradio knowing

  function release(box) {  // Gradio's focus listener runs now (an event of ours, not the browser's: let through)
    held = null;
    box.dispatchEvent(new FocusEvent("focus"));
  }

  document.addEventListener("pointerdown", (event) => { pointed = event.target; }, true);
  document.addEventListener("focus", (event) => {
    const box = event.target;
    if (!event.isTrusted || !box.matches?.(COMBOBOX) || box.closest(".block")?.contains(pointed)) return;
    held = box;
    event.stopImmediatePropagation();
  }, true);
  document.addEventListener("blur", (event) => { if (event.target === held) held = null; }, true);
  document.addEventListener("keydown", (event) => {
    pointed = null;
    if (!event.target.matches?.(COMBOBOX)) return;
    if (IDLE.includes(event.key)) event.stopPropagation();  // the focus still moves on Tab
    else if (event.target === held && event.key !== "Escape") release(held);  // as Gradio opens on a key
  }, true);
  document.addEventListener("mousedown", (event) => {
    if (held?.closest(".block")?.contains(event.target)) release(held);
  }, true);

  // --- keys -------------------------------------------------------------------------------------------------

  function typing(element) {
    if (!element) return false;
    const tag = element.tagName;
    if (tag === "INPUT" && element.type === "checkbox") return false;  // e.g. just ticked Lecture mode
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || element.isContentEditable;
  }

  function button(id) {
    const host = document.getElementById(id);
    if (!host) return null;
    return host.tagName === "BUTTON" ? host : host.querySelector("button");
  }

  function press(id) {
    const target = button(id);
    if (target && !target.disabled && target.offsetParent !== null) {  // only while the rounds view is shown
      target.click();
      return true;
    }
    return false;
  }

  const BACK = ["ArrowLeft", "PageUp"], FORWARD = ["ArrowRight", "PageDown", " "];

  // The Lab's "test yourself" card, while it is on screen: the forward keys press its "Reveal next step".
  function revealCard() {
    const card = document.getElementById("lab-card"), box = card?.getBoundingClientRect();
    if (!card || card.offsetParent === null || box.bottom <= 0 || box.top >= window.innerHeight) return false;
    return press("lab-card-reveal");
  }

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.altKey || event.metaKey || typing(document.activeElement)) return;
    if (event.key === " " && document.activeElement?.matches("button, input")) return;  // space presses/ticks it
    if (button("next-round")?.offsetParent == null) {  // the Lab or Costs tab is in front
      if (FORWARD.includes(event.key) && revealCard()) event.preventDefault();
      return;
    }
    let handled = false;
    if (BACK.includes(event.key)) handled = press("prev-round");
    else if (FORWARD.includes(event.key)) handled = (quizOn() && reveal()) || press("next-round");
    else if (quizOn() && /^[0-9]$/.test(event.key)) handled = answer(Number(event.key));
    if (handled || event.key === " ") event.preventDefault();  // space would scroll the page
  });
};
