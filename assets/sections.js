// The presenter view of the Lab and the Costs tab (issue 46): each section of the tab in front alone on the 16:9
// screen, stepped with the presenter's keys. A section is a column its tab marks `sv-section`
// (specviz/app/sections.py), opening with a heading, its title; this script finds them on the page, in the page's
// order, and keeps no list of its own. present.js opens and closes it with the presenter view (window.svSections)
// and hands it the stepping keys; assets/sections.css lays the section out (body.sv-sections; the section on screen:
// .sv-on).
//
// Charts: plotly draws a figure at the height and the fonts the server gave it, so each chart of the section on
// screen is drawn again to fill its box, every font size and margin scaled by one factor that brings its smallest text
// to the presenter view's floor (1 rem: 16 px at 1280x720, 24 px at 1920x1080); a new figure from the server (a slider
// moved) is fitted as it is drawn, and leaving draws each figure as the server gave it.
//
// `tab=lab` (or `tab=costs`, `tab=rounds`) in the page's link opens that tab, as `present=1` opens the presenter view;
// a value that names no tab is ignored.
(() => {
  const body = document.body;
  let shown = -1;  // the section on screen: its index among the tab's sections
  let scrolled = 0;  // the page's scroll as the presenter view opened, given back as it closes
  const on = () => body.classList.contains("sv-sections");

  // The panel of the tab in front, if it has sections (the Lab's page of its own has no tabs: the page itself).
  function tabInFront() {
    for (const sec of document.querySelectorAll(".sv-section")) {
      const tab = sec.closest("[role=tabpanel], .tabitem") ?? body;
      if (tab.checkVisibility()) return tab;
    }
    return null;
  }

  const sections = (tab) => [...tab.querySelectorAll(".sv-section")];
  const title = (sec) => sec.querySelector("h2, h3")?.textContent.trim() ?? "";
  const tabName = (tab) => document.getElementById(`${tab.id}-button`)?.textContent.trim() || "Section";

  function counter() {  // "Lab · section 2 of 9", top right; made once
    let count = document.getElementById("sv-section-count");
    if (!count) {
      count = document.createElement("div");
      count.id = "sv-section-count";
      body.append(count);
    }
    return count;
  }

  // Section `index` of the tab in front alone on the screen (held within its sections); -> false if it has none.
  function show(index) {
    const tab = tabInFront();
    if (!tab) return false;
    const all = sections(tab), next = Math.max(0, Math.min(index, all.length - 1));
    const moved = next !== shown || !on();
    for (const sec of document.querySelectorAll(".sv-section.sv-on")) sec.classList.remove("sv-on");
    shown = next;
    all[shown].classList.add("sv-on");
    body.classList.add("sv-sections");
    const name = tabName(tab), where = `section ${shown + 1} of ${all.length}`;
    counter().textContent = `${name} · ${where}`;
    if (moved) window.svAnnounce(`${name}, ${where}: ${title(all[shown])}`);
    requestAnimationFrame(() => fitAll(all[shown]));
    return true;
  }

  // The section that the page shows at its top, where the presenter view opens (one whose last tenth of a screen
  // or less is still on it has been read: the next one).
  function inView(tab) {
    const at = sections(tab).findIndex((sec) => sec.getBoundingClientRect().bottom > innerHeight / 10);
    return Math.max(at, 0);
  }

  // --- charts ---------------------------------------------------------------------------------------------------

  const floor = () => parseFloat(getComputedStyle(document.documentElement).fontSize);
  const plain = (value) => JSON.parse(JSON.stringify(value ?? {}, (k, v) => (k.startsWith("_") ? undefined : v)));

  // A copy of a figure's layout (or data) with every power written on one line, at its text's own size: plotly draws
  // <sup> at 70 % of it, under the floor ("α<sup>K+1</sup>" -> "α^(K+1)", "α<sup>j</sup>" -> "α^j").
  function powers(value) {
    if (typeof value === "string") {
      return value.replace(/<sup>(.*?)<\/sup>/g, (_, x) => (x.length > 1 ? `^(${x})` : `^${x}`));
    }
    if (Array.isArray(value)) return value.map(powers);
    if (!value || typeof value !== "object") return value;
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, powers(v)]));
  }

  // A copy of a figure's layout (or data) with `font` applied to every font size and `margin` to every margin and pad.
  function remap(value, font, margin, key = "") {
    if (Array.isArray(value)) return value.map((v) => remap(v, font, margin, key));
    if (!value || typeof value !== "object") return value;
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k,
      typeof v !== "number" ? remap(v, font, margin, k)
        : /font$/i.test(key) && k === "size" ? font(v)
          : /^(margin|pad)$/.test(key) && /^[lrtb]$/.test(k) ? margin(v) : v]));
  }

  // Draw the chart to fill its box, its smallest text at the floor; the server's figure is kept for `unfit`.
  function fit(gd) {
    if (!window.Plotly || !gd.layout || !gd.data) return;
    if (!gd.layout._svFitted) gd.svServer = { data: plain(gd.data), layout: plain(gd.layout) };
    const { data, layout } = gd.svServer, box = gd.closest(".block") ?? gd.parentElement;
    let least = layout.font?.size ?? 12;  // plotly's default
    remap([layout, data], (v) => (least = Math.min(least, v)), (v) => v);
    const s = Math.max(1, floor() / least), grow = (v) => v * s;
    const bottom = box.getBoundingClientRect().bottom - parseFloat(getComputedStyle(box).paddingBottom);
    const height = Math.floor(bottom - gd.getBoundingClientRect().top - 2);
    // bar text: plotly shrinks it to fit a bar unless told not to, below the floor
    const bars = powers(remap(data, grow, grow)).map((t) => (t.text ? { ...t, constraintext: "none" } : t));
    window.Plotly.react(gd, bars, { ...powers(remap(layout, grow, grow)), width: Math.floor(gd.parentElement.clientWidth),
      height: Math.max(height, 100), _svFitted: true }).then(() => wrapTitle(gd));
  }

  // The words of `text` in `n` lines of about equal length (the last takes what is left), joined by plotly's <br>.
  function inLines(text, n) {
    const per = text.length / n, lines = [];
    let line = "";
    for (const word of text.split(" ")) {
      if (line && `${line} ${word}`.length > per && lines.length < n - 1) {
        lines.push(line);
        line = word;
      } else line = line ? `${line} ${word}` : word;
    }
    return [...lines, line].join("<br>");
  }

  // A title wider than its chart (its type grew more than the chart did) in more lines, one more at a time while it
  // is still too wide (at most MORE_LINES more): the line cut into the longest pieces is cut once more, at its spaces
  // (the server's own lines stay: a machine's name under the title). Each line added grows the top margin by a line,
  // and the first line stays where it was: plotly draws a title of several lines with its first baseline where it
  // puts the top of a title of one line (the lines' own dy undo the title's 0.7 em "cap shift"), so a title anchored
  // at its top is padded down by that much once it has several lines, and one in the middle of the top margin
  // (y "auto") gets a margin that holds its lines under that middle. `cuts`: the pieces of each server line;
  // `before`: the top margin and the title's pad as fit() drew them.
  const MORE_LINES = 3, LINE = 1.3, CAP_SHIFT = 0.7;  // plotly's line spacing and cap shift, in em
  function wrapTitle(gd, cuts = null, before = null) {
    const title = gd.querySelector(".gtitle"), full = gd._fullLayout;
    if (!title || !full || !gd.layout?._svFitted) return;
    const box = title.getBBox();
    if (box.x + box.width <= full.width - 2) return;
    const server = powers(String(gd.svServer.layout.title?.text ?? gd.layout.title?.text ?? "")).split(/<br\s*\/?>/i);
    cuts ??= server.map(() => 1);
    before ??= { t: full.margin.t, pad: full.title.pad?.t ?? 0 };
    const most = cuts.reduce((a, n, i) => (server[i].length / n > server[a].length / cuts[a] ? i : a), 0);
    cuts = cuts.map((n, i) => n + (i === most));
    const lines = cuts.reduce((a, n) => a + n, 0), added = lines - server.length;
    if (added > MORE_LINES) return;
    const size = full.title.font.size, top = full.title.yanchor === "top", middle = full.title.y === "auto";
    const margin = { ...gd.layout.margin, t: Math.max(before.t + added * LINE * size,
      middle ? 2 * ((lines - 1) * LINE + 0.6) * size : 0) };
    const pad = top && server.length === 1 ? { "title.pad.t": before.pad + CAP_SHIFT * size } : {};
    window.Plotly.relayout(gd, { "title.text": server.map((line, i) => inLines(line, cuts[i])).join("<br>"), margin,
      ...pad }).then(() => wrapTitle(gd, cuts, before));
  }

  function unfit(gd) {
    if (window.Plotly && gd.layout?._svFitted && gd.svServer) {
      window.Plotly.react(gd, gd.svServer.data, gd.svServer.layout);
    }
  }

  // Every chart of the section, now and each time the server sends it a new figure.
  function fitAll(sec) {
    for (const gd of sec.querySelectorAll(".js-plotly-plot")) {
      if (!gd.svWatched) {
        gd.svWatched = true;
        gd.on?.("plotly_afterplot", () => {  // after the draw, not inside it
          if (!gd.layout?._svFitted && gd.closest(".sv-section.sv-on") && on()) requestAnimationFrame(() => fit(gd));
        });
      }
      fit(gd);
    }
  }

  // A chart drawn for the first time in the section on screen (plotly's script arrives with the first figure)
  new MutationObserver(() => {
    const sec = on() && document.querySelector(".sv-section.sv-on");
    if (sec && [...sec.querySelectorAll(".js-plotly-plot")].some((gd) => !gd.svWatched)) fitAll(sec);
  }).observe(body, { childList: true, subtree: true });

  window.addEventListener("resize", () => {  // full screen (F), a window resized: the root font and the boxes change
    const sec = on() && document.querySelector(".sv-section.sv-on");
    if (sec) requestAnimationFrame(() => fitAll(sec));
  });

  // --- what present.js calls --------------------------------------------------------------------------------------

  // The test-yourself card's next step, while the section on screen shows the card with steps still to show.
  function revealNext() {
    const card = document.querySelector(".sv-section.sv-on #lab-card");
    if (!card || card.querySelectorAll("li").length >= Number(card.dataset.steps)) return false;
    return window.svRevealCard();
  }

  window.svSections = {
    available: () => tabInFront() !== null,  // the tab in front has sections
    // The presenter view opened, or the tab in front changed while it is open: -> whether a section is on screen.
    open() {
      const tab = tabInFront();
      if (!tab) {
        window.svSections.close();
        return false;
      }
      if (!on()) scrolled = window.scrollY;
      return show(on() ? shown : inView(tab));
    },
    close() {
      const was = on();
      for (const sec of document.querySelectorAll(".sv-section.sv-on")) sec.classList.remove("sv-on");
      body.classList.remove("sv-sections");
      shown = -1;
      // once the page is back: plotly sizes a chart by its box (a hidden one has none)
      for (const gd of document.querySelectorAll(".js-plotly-plot")) unfit(gd);
      if (was) window.scrollTo(0, scrolled);
    },
    // → PageDown Space (delta 1): the card's next step, else the next section; ← PageUp (-1): the section before.
    step(delta) {
      if (!on()) return false;
      if (!(delta > 0 && revealNext())) show(shown + delta);
      return true;
    },
    on,
  };

  // A tab chosen while the presenter view is open, or a link's `tab=` with `present=1` (which of the two comes first
  // is the page's to decide): its first section once the presenter view is on and the tab has drawn its sections
  // (a tab draws them when it is first chosen: seconds on a busy machine), or the rounds.
  function openSoon(tries) {
    if (tries <= 0 || (body.classList.contains("sv-present") && window.svSections.open())) return;
    setTimeout(() => openSoon(tries - 1), 100);
  }

  document.addEventListener("click", (event) => {
    if (!event.target.closest("[role=tab]") || !body.classList.contains("sv-present")) return;
    shown = -1;
    body.classList.remove("sv-sections");
    setTimeout(() => requestAnimationFrame(() => openSoon(150)), 0);
  });

  function openTab(id, tries = 100) {  // the tab's button once the page has drawn it
    const button = document.getElementById(id);
    if (button) {
      button.click();
      openSoon(150);
    }
    else if (tries > 0) setTimeout(() => openTab(id, tries - 1), 50);
  }

  const asked = new URLSearchParams(location.search).get("tab") ?? "";
  if (/^[a-z]{1,20}$/.test(asked)) openTab(`${asked}-tab-button`);
})();
