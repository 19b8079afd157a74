// Charts for screen readers: a name, and the data as a table (visually hidden).
(() => {
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
})();
