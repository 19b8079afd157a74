// The lecturer's side of a room, on the main page (specviz/app/room_panel.py). Once "Open a room" (or a lecturer
// link) puts a hidden .sv-lead element on the page, this page leads the room: every change stepping.js reports
// (round, reveal, quiz mode) is sent to /room/<id>/drive with the lecturer's key, and the room's stream draws the
// class's panel under the QR code. The stream also carries what another page leading the same room did (the
// lecturer link opened on a second machine): this page follows it, so the two stay in step. Every drive names the
// trace this page leads the room on (the room box's data-trace), and the room refuses one for another trace. A page
// off the room's trace is told so at once, with both titles: when it opens another trace itself (it then asks the
// room to wait, and its followers are told), and when another page has moved the room to another trace (its steps
// then move nothing). It can move the room to its trace, follow the room (its lecturer link: the room's trace at
// the room's round), or stop leading.
(() => {
  // { el, part, room, key, base, link, trace, title, events, print, state, inflight, sent, asked, stopped }
  let lead = null;
  let applying = false;  // while this page follows the room's state: no drive back

  const $ = (id) => document.getElementById(id);
  const stageText = () => {
    const sections = document.querySelectorAll("#stage .sv-round");
    const last = sections[sections.length - 1];
    return `${sections.length}:${last?.querySelector(".sv-text")?.textContent || ""}`;
  };
  const same = (a, b) => a && b && a.round === b.round && a.step === b.step && a.quiz === b.quiz;
  const moved = () => stageText() !== lead.print;  // this page has opened another trace since it got the room box
  const stale = () => Boolean(lead.state) && lead.state.trace !== lead.trace;  // the room is on another trace now

  async function post(path, body) {
    const response = await fetch(`${lead.base}room/${lead.room}/${path}`, {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ key: lead.key, ...body }),
    });
    if (!response.ok) throw new Error((await response.json()).error || `the room answered ${response.status}`);
    return response;
  }

  // A step of this page, sent to the room with the trace it leads the room on: the room refuses it (and says why)
  // when it is on another trace.
  async function drive() {
    if (!lead || lead.stopped || applying) return;
    if (moved()) return ask();
    lead.asked = false;  // back on the trace it led the room on: lead again
    notice();
    const where = window.svWhere();
    if (!stale() && same(where, lead.state) && lead.state.leading) return;  // the room is there already
    lead.inflight += 1;
    try {
      const data = await (await post("drive", { ...where, trace: lead.trace, leading: true })).json();
      lead.sent = Math.max(lead.sent, data.version);
      say("");
    } catch (e) {
      say(`This page's step did not move the room: ${e.message}`);
    } finally {
      lead.inflight -= 1;
      if (!lead.inflight) follow(lead.state);
    }
  }

  // Another trace on the stage: the room waits where it was (its followers are told) and the lecturer chooses.
  async function ask() {
    notice();
    if (lead.asked) return;
    lead.asked = true;
    const at = lead.state || { round: 1, step: 0 };
    try {
      await post("drive", { round: at.round, step: at.step, trace: lead.trace, leading: false });
    } catch (e) {
      say(`This page's step did not move the room: ${e.message}`);
    }
  }

  // What this page shows when it has opened another trace: its prompt's start and its rounds.
  function another() {
    const prompt = document.querySelector("#stage .sv-prompt")?.textContent.replace(/^prompt/, "").trim() || "";
    const rounds = document.querySelectorAll("#stage .sv-round").length;
    return `another trace, “${prompt.slice(0, 40)}${prompt.length > 40 ? "…" : ""}” (${rounds} rounds)`;
  }

  // The question, with both traces named, while this page and the room are on different traces.
  function notice() {
    const box = lead?.el.closest(".sv-room-box")?.querySelector(".sv-room-ask");
    if (!box) return;
    const off = !lead.stopped && (moved() || stale());
    if (box.hidden === off) box.hidden = !off;
    if (!off) return;
    const text = `The room is on ${lead.state?.title || lead.title}; this page shows ` +
      `${moved() ? another() : lead.title}: move the room here, or follow the room.`;
    const said = box.querySelector(".sv-room-ask-said");
    if (said && said.textContent !== text) said.textContent = text;  // unchanged text: no mutation, no loop
  }

  // The room's state from its stream, drawn on this page (what another lecturer page did), unless this page's own
  // drives are on their way (their state follows) or the page shows another trace.
  function follow(state) {
    if (!state || !lead || lead.inflight || lead.asked || lead.stopped || state.version < lead.sent) return;
    if (moved() || stale() || !state.leading) return;
    applying = true;
    try {
      for (const [n, step] of Object.entries(state.reached)) {
        const sec = document.querySelector(`#stage .sv-round[data-round="${n}"]`);
        if (sec && Number(sec.dataset.revealed || 0) < step) {
          sec.dataset.revealed = String(step);
          window.svRefresh(Number(n));
        }
      }
      if (window.svWhere().round !== state.round) window.svShow(state.round);
      const quiz = document.querySelector("#quiz-mode input");
      if (quiz && quiz.checked !== state.quiz) quiz.click();  // Gradio's change event then runs svQuiz
    } finally {
      applying = false;
    }
  }

  function say(text) {
    const panel = $("sv-room-said");
    if (panel && panel.textContent !== text) panel.textContent = text;
  }

  function stop(text) {
    if (!lead) return;
    lead.events.close();
    lead.stopped = true;
    notice();
    say(text);
  }

  function start(el) {
    if (lead) lead.events.close();
    const base = el.dataset.base, key = el.dataset.key;
    const events = new EventSource(`${base}room/${el.dataset.room}/events?key=${encodeURIComponent(key)}`);
    lead = { el, part: el.dataset.part, room: el.dataset.room, key, base, link: el.dataset.link,
             trace: el.dataset.trace, title: el.dataset.title, events, print: stageText(), state: null, inflight: 0,
             sent: 0, asked: false, stopped: false };
    const mine = lead;
    events.onmessage = (event) => {
      const panel = $("sv-class-lead"), state = JSON.parse(event.data);
      mine.state = state;
      if (panel && panel.dataset.version !== `${state.version}:${state.here}`) {
        panel.innerHTML = state.panel;  // rendered and escaped by the server (view/class_panel.py)
        panel.dataset.version = `${state.version}:${state.here}`;
      }
      if (mine === lead) {
        notice();  // another page may have moved the room to another trace: said at once
        follow(state);
      }
    };
    events.addEventListener("closed", (event) => stop(JSON.parse(event.data).error));
    window.svOnChange = drive;
    drive();
  }

  let looking = false;
  new MutationObserver(() => {
    const el = document.querySelector("#room-box .sv-lead");
    // a new room box: a room opened, moved to another trace (Gradio may keep the element and change its data-part),
    // or led from a link
    if (el && (el !== lead?.el || el.dataset.part !== lead.part || el.dataset.room !== lead.room ||
               el.dataset.trace !== lead.trace)) start(el);
    if (!lead || lead.stopped || looking) return;
    looking = true;
    requestAnimationFrame(() => {  // once a frame at most: another trace on the stage asks at once
      looking = false;
      if (lead && !lead.stopped && stageText() !== lead.print) drive();
    });
  }).observe(document.body, { childList: true, subtree: true, attributes: true,
                              attributeFilter: ["data-part", "data-room", "data-trace"] });

  async function download(format) {
    try {
      const blob = await (await post("results", { format })).blob();
      const a = Object.assign(document.createElement("a"), { href: URL.createObjectURL(blob),
        download: `specviz-room-results.${format}` });
      a.click();
      URL.revokeObjectURL(a.href);
    } catch (e) {
      say(`Could not download the results: ${e.message}`);
    }
  }

  document.addEventListener("click", async (event) => {
    const target = event.target;
    if (target.closest(".sv-stop-lead") && lead) {
      const round = lead.state?.round || 1;
      stop(`You no longer lead the room; it stays at round ${round}. Its lecturer link leads it again.`);
    } else if (target.closest(".sv-follow-room") && lead) {
      location.assign(lead.link);  // the lecturer link: the room's trace, at the room's round and reveals
    } else if (target.closest(".sv-move-room")) {
      const move = $("move-room");
      (move?.tagName === "BUTTON" ? move : move?.querySelector("button"))?.click();
    } else if (target.closest(".sv-results") && lead) {
      download(target.closest(".sv-results").dataset.format);
    }
    if (!target.closest(".sv-copy-lead")) return;
    const link = document.querySelector("#room-box .sv-lead")?.dataset.link;
    if (!link) return;
    try {
      await navigator.clipboard.writeText(link);
      target.textContent = "Lecturer link copied";
    } catch (e) {
      window.prompt("Your lecturer link (keep it private):", link);  // no clipboard (a plain-http address)
    }
  });
})();
