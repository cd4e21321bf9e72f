// Where the page's data comes from: the server (sediment view: every request
// carries the token of the page's own URL) or the data inlined in an export
// (sediment view --export: no server; cards and rooms in data/*.js files,
// loaded as scripts because a page opened from disk may not fetch).
(function () {
  "use strict";
  const S = (window.Sediment = window.Sediment || {});
  const params = new URLSearchParams(location.search);
  const token = params.get("token") || "";
  const limit = params.get("limit") || "";
  // (this script runs before the body is parsed: an export's data sits above it)
  const inline = document.getElementById("sediment-data");

  S.esc = function (s) {
    return String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
  };
  // An element with text: the one way the page puts a note's words on screen.
  S.el = function (tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  };

  function url(path, query) {
    const u = new URL(path, location.href);
    u.search = "";
    u.searchParams.set("token", token);
    for (const [k, v] of Object.entries(query || {})) if (v !== "" && v !== undefined) u.searchParams.set(k, v);
    return u.toString();
  }

  async function get(path, query) {
    const r = await fetch(url(path, query), { cache: "no-store" });
    const body = await r.json().catch(() => ({}));
    if (!r.ok) throw new Error(body.error || r.status + " " + r.statusText);
    return body;
  }

  if (!inline) {
    // asked for at once, while the drawing code loads: the first picture waits on both
    let first = get("api/nebula", { limit });
    S.source = {
      exported: false,
      nebula() {
        const out = first || get("api/nebula", { limit });
        first = null;
        return out;
      },
      room: (key) => get("api/room", { key, limit }),
      card: (id) => get("api/memory/" + encodeURIComponent(id)),
      panel: (name) => get("api/panel/" + encodeURIComponent(name)),
      search: (q) => get("api/search", { q }),
      // onDiff(diff) for each change; onState(true|false) as the stream opens or drops
      listen(onDiff, onState) {
        const es = new EventSource(url("api/events"));
        es.onopen = () => onState(true);
        es.onerror = () => onState(false);
        es.onmessage = (m) => onDiff(JSON.parse(m.data));
        es.addEventListener("hello", (m) => onDiff({ hello: JSON.parse(m.data).version }));
        return es;
      },
    };
    return;
  }

  const data = JSON.parse(inline.textContent);
  const loaded = {};
  const waiting = {};
  S.loaded = function (kind, key, value) {
    const k = kind + ":" + key;
    loaded[k] = value;
    (waiting[k] || []).forEach((resolve) => resolve(value));
    delete waiting[k];
  };
  function load(kind, key, file) {
    const k = kind + ":" + key;
    if (k in loaded) return Promise.resolve(loaded[k]);
    return new Promise((resolve, reject) => {
      if (!waiting[k]) {
        waiting[k] = [];
        const s = document.createElement("script");
        s.src = file;
        s.onerror = () => reject(new Error("cannot load " + file));
        document.body.appendChild(s);
      }
      waiting[k].push(resolve);
    });
  }
  S.source = {
    exported: true,
    nebula: () => Promise.resolve(data.nebula),
    room: (key) => (key in data.rooms ? load("room", key, "data/room-" + data.rooms[key] + ".js")
      : Promise.reject(new Error("no room " + key))),
    card: (id) => (id in data.shards
      ? load("cards", data.shards[id], "data/cards-" + data.shards[id] + ".js").then((cards) => cards[id])
      : Promise.reject(new Error("not in this export"))),
    panel: (name) => Promise.resolve(data.panels[name]),
    // No index in an export: titles, tags and paths of the memories drawn, as plain text.
    search(q) {
      const words = q.toLowerCase().split(/\s+/).filter(Boolean);
      const hits = S.nebula.nodes().filter((n) => {
        const hay = (n.title + " " + (n.tags || []).join(" ") + " " + n.path).toLowerCase();
        return words.length && words.every((w) => hay.includes(w));
      });
      return Promise.resolve({ query: q, exported: true, hits: hits.slice(0, 50).map((n) => ({ id: n.id, title: n.title, path: n.path })) });
    },
    listen: null,
  };
})();
