// The lecturer's side of a room, on the main page (specviz/app/room_panel.py). Once "Open a room" (or a lecturer
// link) puts a hidden .sv-lead element on the page, this page leads the room: every change stepping.js reports
// (round, reveal, quiz mode) is sent to /room/<id>/drive with the lecturer's key, and the room's stream draws the
// class's panel under the QR code. Opening another trace on the page stops leading (the room keeps its own).
(() => {
  let lead = null;  // { room, key, base, events, print }

  const stageText = () => {
    const sections = document.querySelectorAll("#stage .sv-round");
    const last = sections[sections.length - 1];
    return last?.querySelector(".sv-text")?.textContent || "";
  };

  async function drive() {
    if (!lead) return;
    if (stageText() !== lead.print) {  // another trace on the stage: the room stays on its own
      stop("This page now shows another trace; the room stays on the one it was opened on. Open its lecturer link to lead it again.");
      return;
    }
    const where = window.svWhere();
    try {
      const response = await fetch(`${lead.base}room/${lead.room}/drive`, {
        method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ key: lead.key, round: where.round, step: where.step, quiz: where.quiz }),
      });
      if (!response.ok) say((await response.json()).error || `the room answered ${response.status}`);
    } catch (e) {
      say(`Could not reach the room: ${e.message}`);
    }
  }

  function say(text) {
    const panel = document.getElementById("sv-class-lead");
    if (panel) panel.textContent = text;
  }

  function stop(text) {
    if (!lead) return;
    lead.events.close();
    lead = null;
    window.svOnChange = null;
    say(text);
  }

  function start(el) {
    if (lead && lead.room === el.dataset.room) return;
    if (lead) stop("");
    const base = el.dataset.base;
    const events = new EventSource(`${base}room/${el.dataset.room}/events`);
    lead = { room: el.dataset.room, key: el.dataset.key, base, events, print: stageText() };
    events.onmessage = (event) => {
      const panel = document.getElementById("sv-class-lead"), state = JSON.parse(event.data);
      if (panel && panel.dataset.version !== String(state.version)) {
        panel.innerHTML = state.panel;  // rendered and escaped by the server (view/room.py)
        panel.dataset.version = String(state.version);
      }
    };
    events.addEventListener("closed", (event) => stop(JSON.parse(event.data).error));
    window.svOnChange = drive;
    drive();
  }

  new MutationObserver(() => {
    const el = document.querySelector("#room-box .sv-lead");
    if (el) start(el);
  }).observe(document.body, { childList: true, subtree: true });

  document.addEventListener("click", async (event) => {
    if (!event.target.closest(".sv-copy-lead")) return;
    const link = document.querySelector("#room-box .sv-lead")?.dataset.link;
    if (!link) return;
    try {
      await navigator.clipboard.writeText(link);
      event.target.textContent = "Lecturer link copied";
    } catch (e) {
      window.prompt("Your lecturer link (keep it private):", link);  // no clipboard (a plain-http address)
    }
  });
})();
