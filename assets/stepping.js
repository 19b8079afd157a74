// Stepping through the stage's rounds, by the page's buttons and by keys.
//
// The server renders every round of a trace once, as <section class="sv-round"> elements inside #stage
// (specviz/view/stage.py); this script shows one at a time, so stepping redraws a round without a server call. The
// page's events call window.svStep / svShow / svPlayFrom in their `js` and send the round they return to the
// server, which moves the slider and the chart's mark (specviz/app/round_view.py).
//
// Keys: ← / PageUp step back; → / PageDown / space reveal the next step in quiz mode (quiz.js: svReveal), else step
// forward (what a presenter's clicker sends); digits answer in quiz mode (svAnswer). On the Lab tab the forward keys
// reveal the next step of its "test yourself" card while the card is on screen (in the presenter view the Lab and the
// Costs tab step by section instead, the card's steps first: sections.js). Keys typed into a field are left alone, and
// so are chords with Ctrl, Alt or Meta, and keys pressed while another tab (the Lab) hides the stage.
(() => {
  const stage = () => document.querySelector("#stage .sv-stage");
  const sections = () => Array.from(document.querySelectorAll("#stage .sv-round"));
  const quizOn = () => document.body.classList.contains("sv-quiz");

  function current() {
    const s = stage();
    return s ? Number(s.dataset.current) : 1;
  }

  // The section of round `number` (1-based), if the stage holds it.
  window.svSection = (number) => document.querySelector(`#stage .sv-round[data-round="${number}"]`);

  // Show round `number` if the stage holds it (while a run streams it holds only the newest); -> the round shown.
  window.svShow = (number) => {
    const s = stage(), target = window.svSection(Math.round(Number(number)));
    if (!s || !target) return current();
    const moved = s.dataset.current !== target.dataset.round;
    for (const other of sections()) other.hidden = other !== target;
    s.dataset.current = target.dataset.round;
    s.dataset.shownK = target.dataset.k;  // the rounds laid out with it (present.css): those of its K
    if (moved) window.svAnnounce(window.svHeadText(target));
    window.svChanged();
    return Number(target.dataset.round);
  };

  // A room's lecturer page (room.js) listens here to every change a class follows: round, reveal, quiz mode.
  window.svChanged = () => {
    if (typeof window.svOnChange === "function") window.svOnChange();
  };

  // Where the stage is: the round on screen and the reveal steps shown in it.
  window.svWhere = () => {
    const sec = window.svSection(current());
    return { round: current(), step: sec ? Number(sec.dataset.revealed || 0) : 0, quiz: quizOn() };
  };

  window.svStep = (delta) => window.svShow(current() + delta);

  // Play: from the last round it starts again at round 1.
  window.svPlayFrom = (label) => {
    const s = stage();
    if (label === "Play" && s && current() >= Number(s.dataset.rounds)) return window.svShow(1);
    return current();
  };

  // Reduced motion (the system's setting): Play takes one step a press instead of playing on (PLAY_JS).
  window.svReduced = () => window.matchMedia("(prefers-reduced-motion: reduce)").matches;

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
  window.svStepKeys = { BACK, FORWARD };  // the presenter view steps the Lab's and the Costs tab's sections with them

  // The Lab's "test yourself" card, while it is on screen: the forward keys press its "Reveal next step" (here, and in
  // the presenter view's Lab: sections.js).
  function revealCard() {
    const card = document.getElementById("lab-card"), box = card?.getBoundingClientRect();
    if (!card || card.offsetParent === null || box.bottom <= 0 || box.top >= window.innerHeight) return false;
    return press("lab-card-reveal");
  }
  window.svRevealCard = revealCard;

  document.addEventListener("click", (event) => {
    if (!event.target.closest(".sv-skip")) return;  // "Skip to the round": focus Next round, the round in view
    event.preventDefault();
    const next = button("next-round");
    next?.focus();
    next?.scrollIntoView({ block: "center" });
  });

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.altKey || event.metaKey || typing(document.activeElement)) return;
    if (event.key === " " && document.activeElement?.matches("button, input")) return;  // space presses/ticks it
    if (button("next-round")?.offsetParent == null) {  // the Lab or Costs tab is in front
      if (FORWARD.includes(event.key) && revealCard()) event.preventDefault();
      return;
    }
    let handled = false;
    if (BACK.includes(event.key)) handled = press("prev-round");
    else if (FORWARD.includes(event.key)) handled = (quizOn() && window.svReveal()) || press("next-round");
    else if (quizOn() && /^[0-9]$/.test(event.key)) handled = window.svAnswer(Number(event.key));
    if (handled || event.key === " ") event.preventDefault();  // space would scroll the page
  });
})();
