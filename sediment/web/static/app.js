// The page's start: draw the nebula, wire the search and the panels, and keep
// the picture current from the server's change stream (none in an export).
// Changes are numbered: one that does not follow the last applied means some
// were missed (the stream dropped), and the picture is loaded again.
(function () {
  "use strict";
  const S = window.Sediment;
  let version = 0;
  let loading = null;
  let early = []; // changes that came while the picture was loading

  S.toast = function (text) {
    const t = document.getElementById("toast");
    t.textContent = text;
    t.hidden = false;
    clearTimeout(S.toast.timer);
    S.toast.timer = setTimeout(() => { t.hidden = true; }, 4000);
  };

  async function load(first) {
    const data = await S.source.nebula();
    document.getElementById("root").textContent = data.root;
    document.title = "sediment view · " + data.root;
    if (first) S.nebula.init(document.getElementById("nebula"), data);
    else S.nebula.build(data);
    version = data.version;
  }

  function startLoad(first) {
    loading = load(first).finally(() => {
      loading = null;
      const pending = early;
      early = [];
      pending.forEach(onDiff);
    });
    return loading;
  }

  function reload() {
    return loading || startLoad(false);
  }

  function onDiff(d) {
    if (loading) { early.push(d); return; }
    if (d.hello !== undefined) { if (d.hello !== version) reload(); return; }
    if (d.version <= version) return;
    if (d.reload || d.version !== version + 1) { reload(); return; }
    version = d.version;
    S.nebula.apply(d);
    document.body.dataset.version = String(version);
    S.panels.changed();
    const shown = S.card.current;
    if (shown && (d.upsert || []).some((n) => n.id === shown)) S.card.reopen();
  }

  async function search(q) {
    if (!q.trim()) { clear(); return; }
    try {
      const res = await S.source.search(q);
      S.nebula.highlight(res.hits.map((h) => h.id), res.hits.map((h) => ({ id: h.id, layer: (h.path || "").split("/")[0], room: roomOf(h.path) })));
      S.panels.searchResults(res);
      document.getElementById("clear").hidden = false;
    } catch (e) {
      S.panels.searchResults(null, "search: " + e.message);
    }
  }

  // The room of a hit, from its path (to count it on a closed room's node):
  // layer/room…/name.md, or room…/name.md for a person's note.
  function roomOf(path) {
    const parts = (path || "").split("/");
    const layered = ["shallow", "sediment", "bedrock", "archive"].includes(parts[0]);
    return parts.slice(layered ? 1 : 0, -1).join("/");
  }

  function clear() {
    S.nebula.highlight([], []);
    document.getElementById("panel-search").hidden = true;
    document.getElementById("clear").hidden = true;
    document.getElementById("q").value = "";
  }

  async function start() {
    S.panels.init();
    document.getElementById("search").addEventListener("submit", (e) => {
      e.preventDefault();
      search(document.getElementById("q").value);
    });
    document.getElementById("clear").addEventListener("click", clear);
    document.getElementById("fit").addEventListener("click", () => S.nebula.fit());
    document.getElementById("collapse").addEventListener("click", () => S.nebula.collapse());
    const live = document.getElementById("live");
    if (S.source.listen) {
      S.source.listen(onDiff, (on) => {
        live.className = "live " + (on ? "on" : "off");
        live.title = on ? "live: changes to the files show here" : "live updates: reconnecting";
      });
    } else {
      live.className = "live export";
    }
    try {
      await startLoad(true);
    } catch (e) {
      document.getElementById("count").textContent = "cannot load the memory: " + e.message;
    }
  }

  start();
})();
