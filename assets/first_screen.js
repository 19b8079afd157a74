// The round on the first screen (issue 46). Opening a recorded example from the list, a link that opens one (or a
// room) and leaving the presenter view each used to leave the page where it was, at its top with the settings open:
// at 1280x720 no part of the round was on screen. Each now scrolls the status line (what was opened, or what is
// wrong with the link) to the top of the window, the navigation and the round under it, as Generate does (page.py).
// The settings stay open on a desktop: they show the opened trace's prompt and settings, and the list of examples
// stays one scroll away (a phone folds them instead: page.py's FOLD_JS). Focus stays where it was (the example's
// button, or nothing after a page load or the presenter view), so Tab goes on from there and the stepping keys
// work as before; a screen reader hears the opened round's head in the live region instead.
(() => {
  const shown = () => document.querySelector("#stage .sv-round:not([hidden])");

  // After the page has drawn what an event sent: the frame that applies it, then the one that lays it out.
  const drawn = (then) => requestAnimationFrame(() => requestAnimationFrame(then));

  function toRound() {
    if (document.body.classList.contains("sv-present")) return;  // the presenter view shows the stage alone
    const stage = document.getElementById("stage");
    if (!stage?.checkVisibility()) return;  // another tab (the Lab, the Costs) in front: leave the page as it is
    const head = (shown()?.querySelector(".sv-round-head") ?? stage).getBoundingClientRect();
    if (head.top >= 0 && head.bottom <= innerHeight) return;  // on screen already (a phone, its settings folded)
    // lecture mode hides a status that is neither an error nor busy: the navigation goes to the top then
    const top = ["status", "sv-nav"].map((id) => document.getElementById(id)).find((e) => e?.checkVisibility());
    top?.scrollIntoView({ block: "start", behavior: window.svReduced() ? "auto" : "smooth" });
  }

  // Called by the page's events once what they opened is on the page (page.py's _wire_layout).
  window.svToRound = () => drawn(toRound);

  window.svOpenedExample = () => drawn(() => {
    toRound();
    const round = shown();
    if (round) window.svAnnounce(window.svHeadText(round));
  });

  // Text typed into the prompt box before the first screen landed (issue 64, item 16). The first load writes only the
  // settings its example changes (app/room_panel.py's open_linked), but a link's example may change the prompt: what
  // was typed is put back once the first screen is drawn, and Gradio hears of it, so Generate runs it.
  let typed = null, landed = false;
  document.addEventListener("input", (event) => {
    if (!landed && event.isTrusted && event.target.closest?.("#prompt")) typed = event.target.value;
  }, true);
  // Text typed before these scripts ran: Gradio runs them once it has drawn the page, and on a busy machine a person
  // (or a test) can type into the drawn box before that. The box then holds other than the prompt it was served with.
  const served = window.gradio_config?.components?.find((c) => c.props?.elem_id === "prompt")?.props?.value;
  const early = document.querySelector("#prompt textarea")?.value;
  if (typeof served === "string" && typeof early === "string" && early !== served) typed = early;
  function keepTyped() {
    landed = true;
    const box = document.querySelector("#prompt textarea");
    if (typed === null || !box || box.value === typed) return;
    box.value = typed;
    box.dispatchEvent(new Event("input", { bubbles: true }));
  }

  // The page's first load: what was typed meanwhile kept; the round brought into view only where its link asked for
  // something (app/room_panel.py's open_linked reads the same names): a plain visit starts at the top, with the title
  // and the settings.
  window.svOpenedLink = () => {
    drawn(keepTyped);
    const asked = new URLSearchParams(location.search);
    if (asked.has("example") || asked.has("room")) window.svToRound();
  };

  // The lecturer's tools atop the page (page.py's _lecture_tools): "Open a room…" unfolds the room panel (present.js)
  // and brings it to the top of the window, its "Open a room for this trace" focused: Enter then opens the room.
  window.svToRoom = () => window.svRoomPanel((button) => {
    document.getElementById("room-panel")?.scrollIntoView({
      block: "start", behavior: window.svReduced() ? "auto" : "smooth" });
    button.focus({ preventScroll: true });
  });

  // Leaving the presenter view, whichever way (Esc, P, its Leave button: present.js), returns to the round it showed.
  let presenting = document.body.classList.contains("sv-present");
  new MutationObserver(() => {
    const now = document.body.classList.contains("sv-present");
    if (presenting && !now) window.svToRound();
    presenting = now;
  }).observe(document.body, { attributes: true, attributeFilter: ["class"] });
})();
