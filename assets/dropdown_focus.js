// Dropdowns: no list opened by focus alone (WCAG 3.2.1 "On Focus").
(() => {
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
})();
