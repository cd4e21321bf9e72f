// A memory's card: what it says (markdown rendered with raw HTML off, so a
// note's own HTML shows as text) and what sediment knows about it: layer,
// room, kind, tags, value, strength now and over the next 180 days, its uses
// with dates, the supersede chain both ways, links and backlinks, the file.
// Every other text goes on screen through textContent.
(function () {
  "use strict";
  const S = window.Sediment;
  const md = window.markdownit({ html: false, linkify: false, breaks: true });
  const SECTION_NAMES = { evidence: "Evidence", hesitation: "Hesitation", conclusion: "Conclusion", context: "Context",
    gesture: "Gesture", direction: "Cognition direction" };
  // Links in a note open elsewhere, never in place of the page (and send no referrer: the URL has the token).
  const linkOpen = md.renderer.rules.link_open || ((tokens, i, options, env, self) => self.renderToken(tokens, i, options));
  md.renderer.rules.link_open = (tokens, i, options, env, self) => {
    tokens[i].attrSet("target", "_blank");
    tokens[i].attrSet("rel", "noopener noreferrer");
    return linkOpen(tokens, i, options, env, self);
  };
  const box = () => document.getElementById("card");
  let plot = null;
  let current = null;

  function markdown(text) {
    const div = S.el("div", null, "markdown");
    div.innerHTML = md.render(text || ""); // html: false — markdown-it escapes every tag of the note
    return div;
  }

  function kv(pairs) {
    const dl = S.el("dl", null, "kv");
    for (const [k, v] of pairs) {
      if (v === null || v === undefined || v === "") continue;
      dl.appendChild(S.el("dt", k));
      dl.appendChild(S.el("dd", v));
    }
    return dl;
  }

  function memoryList(items, empty) {
    if (!items.length) return S.el("p", empty, "muted small");
    const ul = S.el("ul", null, "plain");
    for (const m of items) {
      const li = S.el("li");
      if (m.id) {
        const a = S.el("button", m.title, "link");
        a.type = "button";
        a.addEventListener("click", () => S.card.open(m.id));
        li.appendChild(a);
        li.appendChild(S.el("span", "  " + (m.path || ""), "muted small"));
      } else {
        li.appendChild(S.el("span", m.title + " (no such memory)", "muted"));
      }
      ul.appendChild(li);
    }
    return ul;
  }

  function strengthPlot(c, holder) {
    if (plot) { plot.destroy(); plot = null; }
    const f = c.forecast;
    const width = Math.max(280, holder.clientWidth || 380);
    plot = new window.uPlot({
      width, height: 170,
      scales: { x: { time: false }, y: { range: [0, Math.max(1, ...f.as_is, ...f.recalled)] } },
      axes: [{ stroke: "#8b95a5", grid: { stroke: "#222a35" }, label: "days from now" },
        { stroke: "#8b95a5", grid: { stroke: "#222a35" } }],
      series: [{ label: "day" },
        { label: "as is", stroke: "#4b9fe8", width: 2 },
        { label: "recalled once more now", stroke: "#f3c969", width: 2, dash: [6, 4] }],
    }, [f.days, f.as_is, f.recalled], holder);
  }

  function history(h) {
    const wrap = S.el("div");
    wrap.appendChild(S.el("p", "recalled " + h.recalls + "×, confirmed " + h.confirms + "×, refuted " + h.refutes + "×"
      + " (one recall a day counts; every machine's)", "small"));
    if (h.uses.length) {
      const ul = S.el("ul", null, "plain small");
      for (const u of h.uses.slice().reverse().slice(0, 200)) {
        ul.appendChild(S.el("li", u.day + "  " + u.event + (u.time ? "  " + u.time.slice(11) : "")));
      }
      wrap.appendChild(ul);
    } else {
      wrap.appendChild(S.el("p", "never recalled, confirmed or refuted", "muted small"));
    }
    for (const [ev, n] of Object.entries(h.undated || {})) {
      if (n) wrap.appendChild(S.el("p", n + " earlier " + ev + "(s) without a date (their records were compacted)", "muted small"));
    }
    return wrap;
  }

  function render(c) {
    const el = box();
    el.replaceChildren();
    const close = S.el("button", "×", "close");
    close.type = "button";
    close.title = "close";
    close.addEventListener("click", () => S.card.close());
    el.appendChild(close);
    el.appendChild(S.el("h2", c.title));
    const chips = S.el("div");
    for (const t of c.tags) chips.appendChild(S.el("span", "#" + t, "chip"));
    el.appendChild(chips);
    el.appendChild(kv([["layer", c.layer], ["room", c.room || "(none)"], ["kind", c.kind], ["status", c.status],
      ["value", c.value], ["strength now", c.strength.now.toFixed(3)], ["created", c.created], ["updated", c.updated],
      ["event", c.event], ["source", c.source], ["reason", c.reason]]));
    for (const w of c.warnings) el.appendChild(S.el("p", "⚠ " + w, "small"));
    el.appendChild(S.el("h3", "Text"));
    el.appendChild(markdown(c.text));
    for (const [k, text] of Object.entries(c.sections)) {
      el.appendChild(S.el("h3", SECTION_NAMES[k] || k));
      el.appendChild(markdown(text));
    }
    el.appendChild(S.el("h3", "Strength over the next 180 days"));
    el.appendChild(S.el("p", c.strength.explain, "muted small"));
    const holder = S.el("div", null, "plot");
    el.appendChild(holder);
    el.appendChild(S.el("h3", "Recalls, confirmations, refutations"));
    el.appendChild(history(c.history));
    el.appendChild(S.el("h3", "Supersedes (older)"));
    el.appendChild(memoryList(c.supersedes, "nothing"));
    el.appendChild(S.el("h3", "Superseded by (newer)"));
    el.appendChild(memoryList(c.superseded_by, "nothing"));
    el.appendChild(S.el("h3", "Links to"));
    el.appendChild(memoryList(c.links, "no links"));
    el.appendChild(S.el("h3", "Backlinks"));
    el.appendChild(memoryList(c.backlinks, "no memory links here"));
    el.appendChild(S.el("h3", "The file"));
    el.appendChild(kv([["path", c.path], ["id", c.id], ["name", c.name]]));
    el.appendChild(S.el("p", "open it (edit it in your editor; this page only reads):", "muted small"));
    el.appendChild(S.el("pre", c.open.editor));
    el.appendChild(S.el("pre", c.open.cli));
    const wasHidden = el.hidden;
    el.hidden = false;
    el.scrollTop = 0;
    if (wasHidden) S.nebula.resize();
    strengthPlot(c, holder);
  }

  S.markdown = markdown;

  S.card = {
    async open(id) {
      current = id;
      S.nebula.select(id);
      try {
        const c = await S.source.card(id);
        if (current === id) render(c);
      } catch (e) {
        S.toast("cannot open " + id + ": " + e.message);
      }
    },
    close() {
      current = null;
      box().hidden = true;
      S.nebula.resize();
      S.nebula.select(null);
    },
    reopen() { if (current) S.card.open(current); },
    get current() { return current; },
  };
})();
