// The presenter view (issue 32): the stage alone, composed for a 16:9 projector (assets/present.css), driven from
// the keyboard or a clicker. body.sv-present turns it on: the Present button, the P key, or `present=1` in the page's
// link (`/?example=paris&round=3&step=1&present=1`). stepping.js keeps stepping, revealing and answering (→
// PageDown Space, ← PageUp, digits); this script adds the presenter's own keys: Esc (or P) leaves, F full screen (the
// browser's Fullscreen API: a key press is the user gesture it needs), R the room rail, ? the list of keys. On the Lab
// and the Costs tab it shows their sections, one a screen (sections.js), and the stepping keys step through them.
(() => {
  const body = document.body;
  const presenting = () => body.classList.contains("sv-present");
  const KEYS = [
    ["→ PageDown Space", "next: the next reveal step in quiz mode, else the next round (Lab, Costs: section)"],
    ["← PageUp", "the round before (Lab, Costs: the section before)"],
    ["0 … 9", "answer, in quiz mode"],
    ["R", "the room rail: QR code, join link, the class's answers"],
    ["F", "full screen (again: leave it)"],
    ["?", "this list of keys"],
    ["Esc P", "leave the presenter view"],
  ];

  // The presenter's own elements, made once: the help overlay, the rail's "open a room" and the corner tools.
  function chrome() {
    if (document.getElementById("sv-present-tools")) return;
    const help = document.createElement("div");
    help.id = "sv-help";
    help.hidden = true;
    help.setAttribute("role", "dialog");
    help.setAttribute("aria-label", "keys of the presenter view");
    const list = document.createElement("dl");
    for (const [keys, what] of KEYS) {
      const dt = document.createElement("dt"), dd = document.createElement("dd");
      dt.textContent = keys;
      dd.textContent = what;
      list.append(dt, dd);
    }
    const title = document.createElement("h2");
    title.textContent = "Keys (a clicker's buttons send PageDown and PageUp)";
    help.append(title, list);
    const rail = document.createElement("aside");
    rail.id = "sv-rail";
    rail.setAttribute("aria-label", "the room");
    rail.innerHTML = '<h2>Room</h2><p>Let the class follow on their phones and answer in quiz mode.</p>' +
      '<button type="button" class="sv-rail-open">Open a room</button>';
    const tools = document.createElement("div");
    tools.id = "sv-present-tools";
    tools.innerHTML = '<button type="button" data-key="r">Room (R)</button>' +
      '<button type="button" data-key="?">Keys (?)</button><button type="button" data-key="Escape">Leave (Esc)</button>';
    body.append(help, rail, tools);
  }

  function roomBox() {  // the room panel's box (room_panel.py), unfolded: the rail shows it
    const box = document.getElementById("room-box");
    if (!box?.checkVisibility()) document.querySelector("#room-panel .label-wrap")?.click();
    return box;
  }

  // The room panel unfolded, then `then(its "Open a room for this trace" button)` once its accordion has drawn it:
  // the rail's "Open a room" presses it, the lecturer's tools atop the page bring it into view (first_screen.js).
  window.svRoomPanel = (then) => {
    roomBox();
    let tries = 0;
    const wait = () => {
      const button = document.getElementById("open-room");
      if (button?.checkVisibility()) then(button);
      else if (++tries < 40) setTimeout(wait, 50);
    };
    wait();
  };
  const openRoom = () => window.svRoomPanel((button) => button.click());

  window.svPresent = (on) => {
    chrome();
    body.classList.toggle("sv-present", Boolean(on));
    if (on) window.svSections.open();  // the Lab or the Costs tab in front: its sections, one a screen
    if (!on) {
      window.svSections.close();
      body.classList.remove("sv-rail");
      document.getElementById("sv-help").hidden = true;
      if (document.fullscreenElement) document.exitFullscreen().catch(() => {});
    }
    if (document.activeElement !== body) document.activeElement?.blur?.();  // Space steps, not presses a button
    return Boolean(on);
  };

  function key(name) {
    if (name === "Escape" || name === "p" || name === "P") {
      const help = document.getElementById("sv-help");
      if (name === "Escape" && !help.hidden) help.hidden = true;
      else window.svPresent(false);
    } else if (name === "f" || name === "F") {
      if (document.fullscreenElement) document.exitFullscreen().catch(() => {});
      else document.documentElement.requestFullscreen?.().catch(() => {});
    } else if (name === "r" || name === "R") {
      if (body.classList.toggle("sv-rail")) roomBox();
    } else if (name === "?") {
      const help = document.getElementById("sv-help");
      help.hidden = !help.hidden;
    } else return false;
    return true;
  }

  // The stepping keys while a section of the Lab or the Costs tab is on screen (sections.js): its own, not
  // stepping.js's. A focused button or box keeps Space (it presses or ticks it), as on the page.
  function sectionKey(event) {
    if (!window.svSections.on()) return false;
    if (event.key === " " && document.activeElement?.matches("button, input, [role=button]")) return false;
    if (window.svStepKeys.FORWARD.includes(event.key)) return window.svSections.step(1);
    if (window.svStepKeys.BACK.includes(event.key)) return window.svSections.step(-1);
    return false;
  }

  function typing(element) {  // a field, or a table's cell (the Lab's table starts editing a cell as one types)
    const tag = element?.tagName;
    return (tag === "INPUT" && element.type !== "checkbox") || tag === "TEXTAREA" || tag === "SELECT" ||
      Boolean(element?.isContentEditable) || Boolean(element?.closest?.("table, [role=grid]"));
  }

  // In the capture phase: before stepping.js, which would otherwise read these keys as its own.
  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.altKey || event.metaKey) return;
    // a field keeps its keys, but Esc: a focused slider of the Lab must not hold the presenter view open
    if (typing(document.activeElement) && !(presenting() && event.key === "Escape")) return;
    const stageShown = document.getElementById("next-round")?.offsetParent != null;  // the Rounds tab in front
    if (!presenting()) {
      if ((event.key === "p" || event.key === "P") && (stageShown || window.svSections.available())) {
        window.svPresent(true);
        event.preventDefault();
      }
      return;
    }
    if (key(event.key) || sectionKey(event)) {
      event.preventDefault();
      event.stopImmediatePropagation();
    }
  }, true);

  document.addEventListener("click", (event) => {
    const tool = event.target.closest("#sv-present-tools button");
    if (tool) key(tool.dataset.key);
    if (event.target.closest(".sv-rail-open")) openRoom();
    if (tool && presenting()) tool.blur();  // the clicker's Space then steps again
  });

  if (new URLSearchParams(location.search).get("present") === "1") window.svPresent(true);
})();
