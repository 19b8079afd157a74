// Keyboard navigation for specviz, run once when the page loads (Gradio's launch(js=...)).
// ← / → click "Previous round" / "Next round". Keys typed into a field (prompt, numbers, sliders, dropdowns)
// are left alone, and so are key chords with Ctrl, Alt or Meta (browser shortcuts) and keys pressed while
// another tab (the Lab) hides the buttons.
() => {
  const BUTTONS = { ArrowLeft: "prev-round", ArrowRight: "next-round" };

  function typing(element) {
    if (!element) return false;
    const tag = element.tagName;
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || element.isContentEditable;
  }

  function button(id) {
    const host = document.getElementById(id);
    if (!host) return null;
    return host.tagName === "BUTTON" ? host : host.querySelector("button");
  }

  document.addEventListener("keydown", (event) => {
    const id = BUTTONS[event.key];
    if (!id || event.ctrlKey || event.altKey || event.metaKey || typing(document.activeElement)) return;
    const target = button(id);
    if (target && !target.disabled && target.offsetParent !== null) {  // only while the rounds view is shown
      event.preventDefault();
      target.click();
    }
  });
};
