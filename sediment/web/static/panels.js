// The panels: search hits (with the lanes that found each), what metabolize
// would do now, working memory and mood, the last patrol, attention (recalls
// per room per week, and the rooms nobody recalled), counts, the legend.
// A panel loads when opened, and again after a change while it is open.
(function () {
  "use strict";
  const S = window.Sediment;
  const el = S.el;

  function memoryButton(id, title) {
    const b = el("button", title, "link");
    b.type = "button";
    b.addEventListener("click", () => S.card.open(id));
    return b;
  }

  const render = {
    plan(p) {
      const out = [];
      const counts = Object.entries(p.counts || {}).map(([k, v]) => k + " " + v).join(", ");
      out.push(el("p", p.total ? "would move " + p.total + ": " + counts : "nothing to do now", "small"));
      out.push(el("p", "a dry run at " + p.now + ": nothing moved, no report written", "muted small"));
      const ul = el("ul", null, "plain small");
      for (const m of p.moves) {
        const li = el("li");
        li.appendChild(el("span", m.from + " → " + m.to + "  "));
        li.appendChild(memoryButton(m.id, m.title));
        li.appendChild(el("div", m.reason, "muted"));
        ul.appendChild(li);
      }
      out.push(ul);
      if (p.total > p.moves.length) out.push(el("p", "… " + (p.total - p.moves.length) + " more (sediment metabolize)", "muted small"));
      return out;
    },
    working(w) {
      const out = [];
      out.push(el("p", w.mood ? "mood: " + w.mood.text + " (until " + w.mood.until + ")" : "no mood set", "small"));
      if (!w.items.length) out.push(el("p", "no open todos or promises", "muted small"));
      const ul = el("ul", null, "plain small");
      for (const i of w.items) {
        const li = el("li", i.text);
        li.appendChild(el("div", "opened " + i.created + ", last mentioned " + i.mentioned, "muted"));
        ul.appendChild(li);
      }
      out.push(ul);
      return out;
    },
    patrol(p) {
      if (!p) return [el("p", "patrol never ran on this machine (sediment patrol writes one)", "muted small")];
      const out = [el("p", "patrol of " + p.date + (p.now ? ", made at " + p.now : "")
        + (p.memories !== null ? ", over " + p.memories + " memories" : ""), "small")];
      const ul = el("ul", null, "plain small");
      for (const [k, n] of Object.entries(p.counts)) ul.appendChild(el("li", k + ": " + n));
      out.push(ul);
      const report = el("details");
      report.appendChild(el("summary", "the report: " + p.path, "muted small"));
      report.appendChild(S.markdown(p.text));
      out.push(report);
      return out;
    },
    attention(a) {
      const out = [el("p", "recalls per room per week (one a memory a day), the last 12 weeks; the right column is this week",
        "muted small")];
      const table = el("table", null, "heat");
      const cols = el("colgroup");
      cols.appendChild(el("col", null, "room"));
      for (let i = 0; i < a.weeks.length; i++) cols.appendChild(el("col"));
      table.appendChild(cols);
      const head = el("tr");
      head.appendChild(el("th", "room \\ week", "room"));
      a.weeks.forEach((w, i) => {
        const th = el("th", i === a.weeks.length - 1 ? "now" : "-" + (a.weeks.length - 1 - i));
        th.title = "the week of " + w;
        head.appendChild(th);
      });
      table.appendChild(head);
      const max = Math.max(1, ...Object.values(a.rooms).flat());
      for (const [room, counts] of Object.entries(a.rooms)) {
        const tr = el("tr");
        const name = el("td", room || "(no room)", "room");
        name.title = room || "(no room)";
        tr.appendChild(name);
        for (const n of counts) {
          const td = el("td", n ? String(n) : "");
          td.style.background = n ? "rgba(243,201,105," + (0.15 + 0.85 * n / max).toFixed(2) + ")" : "transparent";
          if (n / max > 0.5) td.style.color = "#10141a";
          tr.appendChild(td);
        }
        table.appendChild(tr);
      }
      const wrap = el("div", null, "heat-wrap");
      wrap.appendChild(table);
      out.push(wrap);
      out.push(el("p", "weeks from " + a.weeks[0] + " (Mondays, the root's timezone)", "muted small"));
      out.push(el("p", a.deserts.length ? "deserts (no recall in " + a.desert_days + " days): " + a.deserts.map((r) => r || "(no room)").join(", ")
        : "no desert: every room was recalled in the last " + a.desert_days + " days", "small"));
      return out;
    },
    stats(s) {
      const out = [];
      for (const key of ["layers", "kinds", "rooms"]) {
        if (!s[key]) continue;
        out.push(el("div", key, "muted small"));
        out.push(el("p", Object.entries(s[key]).map(([k, v]) => k + " " + v).join(" · "), "small"));
      }
      out.push(el("p", "problems: " + s.problems + " (sediment check)", "small"));
      return out;
    },
  };

  async function load(details) {
    const name = details.dataset.panel;
    const body = details.querySelector(".body");
    body.replaceChildren(el("p", "…", "muted small"));
    try {
      const data = await S.source.panel(name);
      body.replaceChildren(...render[name](data));
    } catch (e) {
      body.replaceChildren(el("p", "cannot load: " + e.message, "small"));
    }
  }

  function legend() {
    const body = document.getElementById("legend");
    const { KINDS, EDGES } = S.nebula.legend;
    const kinds = el("div", null, "small");
    for (const [k, c] of Object.entries(KINDS)) {
      const s = el("span", null, "swatch");
      s.style.background = c;
      const item = el("span");
      item.append(s, el("span", k + "  "));
      kinds.appendChild(item);
    }
    const edges = el("div", null, "small");
    for (const e of Object.values(EDGES)) {
      const s = el("span", null, "edge-swatch");
      s.style.borderTopColor = e.color;
      if (e.dash) s.style.borderTopStyle = "dashed";
      const item = el("span");
      item.append(s, el("span", e.label + "  "));
      edges.appendChild(item);
    }
    body.replaceChildren(kinds, edges,
      el("p", "size: strength now · faded: archived or superseded · click a node for its card", "muted small"));
  }

  let stale = null;
  S.panels = {
    init() {
      for (const d of document.querySelectorAll("details[data-panel]")) {
        d.addEventListener("toggle", () => { if (d.open) load(d); });
      }
      legend();
    },
    // after a change: reload the open panels, once the burst is over
    changed() {
      clearTimeout(stale);
      stale = setTimeout(() => {
        for (const d of document.querySelectorAll("details[data-panel][open]")) load(d);
      }, 1500);
    },
    searchResults(res, error) {
      const d = document.getElementById("panel-search");
      d.hidden = false;
      d.open = true;
      const body = d.querySelector(".body");
      if (error) { body.replaceChildren(el("p", error, "small")); return; }
      const out = [el("p", res.hits.length + " found for “" + res.query + "”"
        + (res.exported ? " (an export: titles, tags and paths only)" : " (as the agent's search ranks them; no recall recorded)"),
      "small")];
      const ul = el("ul", null, "plain");
      for (const h of res.hits) {
        const li = el("li");
        li.appendChild(memoryButton(h.id, h.title));
        if (h.explain) {
          const lanes = Object.entries(h.explain.lanes || {}).map(([k, v]) => k + " #" + v).join(" · ");
          li.appendChild(el("div", "lanes: " + (lanes || "none") + (h.terms && h.terms.length ? " · terms: " + h.terms.join(", ") : "")
            + (h.explain.expansion_matched && h.explain.expansion_matched.length ? " · via feedback: " + h.explain.expansion_matched.join(", ") : ""),
          "lanes"));
        }
        if (h.snippet) li.appendChild(el("div", h.snippet, "muted small"));
        ul.appendChild(li);
      }
      out.push(ul);
      body.replaceChildren(...out);
    },
  };
})();
