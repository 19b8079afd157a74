// Screen readers: the round change and each reveal, said in the page's live region (#sv-announce). stepping.js and
// quiz.js call these; a round's head is said as a student may hear it, without what the quiz still hides.
(() => {
  window.svAnnounce = (text) => {
    const live = document.getElementById("sv-announce");
    if (live && text) live.textContent = text;
  };

  // A round's head as a screen reader should hear it: what the quiz still hides is left out.
  window.svHeadText = (sec) => {
    const head = sec.querySelector(".sv-round-head")?.cloneNode(true);
    if (!head) return "";
    if (document.body.classList.contains("sv-quiz")) {
      head.querySelectorAll("[data-step]:not(.sv-shown)").forEach((el) => el.remove());
    }
    return head.textContent.trim();
  };
})();
