// The nebula: every memory a node, clustered by layer (shallow, sediment,
// bedrock, archive; a person's own notes apart), in one disc per room,
// coloured by kind, sized by strength now; edges for links, evidence,
// supersedes and events. force-graph (2D canvas) draws it: drag, pan, zoom,
// hover for the title. Past the server's limit, rooms are single nodes that
// open on a click.
//
// Positions are computed here, not by the simulation: each room is a disc
// sized by its count, packed within its layer, and each memory sits on the
// room's sunflower spiral, strongest in the middle. So the first picture is
// the final one (no seconds of layout on 10,000 nodes), and a node that
// arrives later takes the next place of its room. Small nebulae also run the
// forces (links pull, nodes push, a spring holds each near its place).
(function () {
  "use strict";
  const S = window.Sediment;
  const ORDER = ["shallow", "sediment", "bedrock", "archive", "notes"];
  const LAYER_NAMES = { shallow: "shallow", sediment: "sediment", bedrock: "bedrock", archive: "archive", notes: "your notes" };
  const KINDS = {
    core: "#ff6b6b", rule: "#f7b731", fact: "#4b9fe8", skill: "#2ecc71", event: "#a37cf0", daily: "#95a5b8",
    "daily-core": "#e67e22", mood: "#ff79c6", inbox: "#d0d0d0", person: "#22d3ee", reference: "#c9b28f",
  };
  const EXTRA = ["#7fd1b9", "#e0a96d", "#b39ddb", "#80cbc4", "#f48fb1", "#aed581", "#90a4ae", "#ffcc80"];
  const EDGES = {
    link: { color: "rgba(150,165,185,0.28)", label: "link" },
    evidence: { color: "rgba(46,204,113,0.75)", label: "evidence" },
    supersedes: { color: "rgba(255,107,107,0.85)", label: "supersedes", arrow: 5 },
    event: { color: "rgba(163,124,240,0.7)", label: "same event", dash: [3, 3] },
  };
  const SPACING = 7; // between neighbours on a room's spiral
  const GOLDEN = Math.PI * (3 - Math.sqrt(5));
  const FORCES_UP_TO = 1500; // drawn nodes; past it the layout is the picture

  let g = null;
  let chargeForce = null;
  let linkForce = null;
  let payload = null;
  const nodes = new Map(); // id → node drawn (memories and room aggregates)
  let links = [];
  const edgePool = new Map(); // "s|t|type" → edge, for rooms opened later
  const rooms = new Map(); // key → {key, layer, room, count, open, next}
  const homes = new Map(); // key → {x, y, r}
  const clusters = new Map(); // layer → {x, y, r, count}
  let hits = new Set();
  let selected = null;
  let hovered = null;
  let settled = false; // the layout engine stopped since the last change
  let userZoomed = false;
  const metrics = { firstPicture: null, updates: [] };

  function kindColor(kind) {
    if (KINDS[kind]) return KINDS[kind];
    let h = 0;
    for (const c of String(kind)) h = (h * 31 + c.codePointAt(0)) >>> 0;
    return EXTRA[h % EXTRA.length];
  }
  const keyOf = (n) => n.layer + "/" + n.room;
  const radius = (n) => (n.agg ? Math.max(6, homes.get(n.key).r * 0.92) : 1.6 + 4.4 * Math.sqrt(Math.max(0, n.strength)));

  // ------------------------------------------------------------------ layout
  function discRadius(count) {
    return SPACING * Math.sqrt(count + 1) + 8;
  }

  function layout() {
    homes.clear();
    clusters.clear();
    const byLayer = new Map();
    for (const r of rooms.values()) {
      if (!byLayer.has(r.layer)) byLayer.set(r.layer, []);
      byLayer.get(r.layer).push(r);
    }
    const layers = ORDER.filter((l) => byLayer.has(l)).concat([...byLayer.keys()].filter((l) => !ORDER.includes(l)));
    const packed = [];
    for (const layer of layers) {
      const list = byLayer.get(layer).sort((a, b) => b.count - a.count || a.key.localeCompare(b.key));
      const placed = [];
      for (const [i, r] of list.entries()) {
        const rad = discRadius(r.count);
        let pos = { x: 0, y: 0 };
        if (i > 0) {
          // out along a sunflower direction until it touches nothing placed
          const angle = i * GOLDEN;
          let d = placed[0].r + rad + 6;
          for (let step = 0; step < 400; step++, d += 6) {
            const p = { x: Math.cos(angle) * d, y: Math.sin(angle) * d };
            if (placed.every((q) => Math.hypot(q.x - p.x, q.y - p.y) >= q.r + rad + 6)) { pos = p; break; }
            pos = p;
          }
        }
        placed.push({ x: pos.x, y: pos.y, r: rad, key: r.key });
      }
      const extent = Math.max(...placed.map((p) => Math.hypot(p.x, p.y) + p.r));
      packed.push({ layer, placed, extent, count: list.reduce((s, r) => s + r.count, 0) });
    }
    // the layers in reading order, in rows about as wide as a screen is wide for their area
    const GAP = 90;
    const width = Math.sqrt(packed.reduce((s, c) => s + (2 * c.extent + GAP) ** 2, 0) * 1.7);
    let x = 0;
    let y = 0;
    let rowHeight = 0;
    for (const c of packed) {
      if (x > 0 && x + 2 * c.extent > width) { x = 0; y += rowHeight + GAP; rowHeight = 0; }
      const cx = x + c.extent;
      const cy = y + c.extent;
      clusters.set(c.layer, { x: cx, y: cy, r: c.extent, count: c.count });
      for (const p of c.placed) homes.set(p.key, { x: cx + p.x, y: cy + p.y, r: p.r });
      x += 2 * c.extent + GAP;
      rowHeight = Math.max(rowHeight, 2 * c.extent);
    }
  }

  function homeOf(key) {
    if (!homes.has(key)) { // a room that appeared after the layout: on its layer's rim
      const [layer] = key.split("/", 1);
      const c = clusters.get(layer) || { x: 0, y: 0, r: 40 };
      const a = [...key].reduce((h, ch) => (h * 31 + ch.codePointAt(0)) >>> 0, 7) % 360 * Math.PI / 180;
      homes.set(key, { x: c.x + Math.cos(a) * (c.r + 30), y: c.y + Math.sin(a) * (c.r + 30), r: discRadius(1) });
    }
    return homes.get(key);
  }

  function place(n, index) {
    const h = homeOf(keyOf(n));
    const d = SPACING * Math.sqrt(index + 0.5);
    n.hx = h.x + Math.cos(index * GOLDEN) * d;
    n.hy = h.y + Math.sin(index * GOLDEN) * d;
    n.x = n.hx;
    n.y = n.hy;
  }

  function room(key, layer, name) {
    if (!rooms.has(key)) rooms.set(key, { key, layer, room: name, count: 0, open: !payload.aggregated, next: 0 });
    return rooms.get(key);
  }

  // ------------------------------------------------------------------ building
  function addMemories(list) {
    const byRoom = new Map();
    for (const n of list) {
      const k = keyOf(n);
      if (!byRoom.has(k)) byRoom.set(k, []);
      byRoom.get(k).push(n);
    }
    for (const [k, members] of byRoom) {
      members.sort((a, b) => b.strength - a.strength || a.path.localeCompare(b.path));
      const r = room(k, members[0].layer, members[0].room);
      for (const n of members) place(n, r.next++);
      for (const n of members) nodes.set(n.id, n);
    }
  }

  function addEdges(list) {
    for (const [s, t, type] of list) edgePool.set(s + "|" + t + "|" + type, [s, t, type]);
  }

  const endId = (x) => (typeof x === "object" ? x.id : x);

  // Fresh link objects each time: force-graph swaps a link's ids for node
  // objects, and a room closed and opened again has new ones.
  function drawnLinks() {
    const out = [];
    for (const [s, t, type] of edgePool.values()) if (nodes.has(s) && nodes.has(t)) out.push({ source: s, target: t, type });
    return out;
  }

  function aggregate(r) {
    const h = homeOf(r.key);
    nodes.set("room:" + r.key, { id: "room:" + r.key, agg: true, key: r.key, layer: r.layer, room: r.room,
      count: r.count, x: h.x, y: h.y, hx: h.x, hy: h.y, strength: 0 });
  }

  function push() {
    links = drawnLinks();
    const list = [...nodes.values()];
    const forces = list.length <= FORCES_UP_TO;
    g.d3Force("charge", forces ? chargeForce : null);
    if (linkForce) linkForce.strength(forces ? 0.01 : 0); // (kept: it resolves the links' ids)
    g.cooldownTicks(forces ? 300 : 1);
    settled = false;
    g.graphData({ nodes: list, links });
    updateCount();
  }

  function homeForce() {
    let list = [];
    const f = (alpha) => {
      for (const n of list) {
        n.vx += (n.hx - n.x) * 0.3 * alpha;
        n.vy += (n.hy - n.y) * 0.3 * alpha;
      }
    };
    f.initialize = (ns) => { list = ns; };
    return f;
  }

  // ------------------------------------------------------------------ drawing
  function color(n) {
    if (n.agg) return hits.size && !roomHits(n.key) ? "rgba(90,100,115,0.25)" : "rgba(120,140,170,0.28)";
    if (hits.size && !hits.has(n.id)) return "rgba(110,120,135,0.16)";
    const c = kindColor(n.kind);
    return n.layer === "archive" || (n.status && n.status !== "active") ? c + "77" : c;
  }

  function roomHits(key) {
    let k = 0;
    for (const id of hits) { const n = S.nebula.found.get(id); if (n && keyOf(n) === key) k++; }
    return k;
  }

  function label(n) {
    const box = S.el("div");
    if (n.agg) {
      box.appendChild(S.el("strong", (n.room || "(no room)") + " · " + (LAYER_NAMES[n.layer] || n.layer)));
      box.appendChild(S.el("div", n.count + " memories: click to open the room", "muted"));
      return box;
    }
    box.appendChild(S.el("strong", n.title));
    const where = (LAYER_NAMES[n.layer] || n.layer) + (n.room ? " / " + n.room : "");
    box.appendChild(S.el("div", where + " · " + n.kind + " · strength " + n.strength.toFixed(2)
      + (n.status ? " · " + n.status : ""), "muted"));
    return box;
  }

  function decorate(n, ctx, scale) {
    const r = radius(n);
    if (n.agg) {
      const k = roomHits(n.key);
      ctx.fillStyle = "rgba(216,222,233,0.9)";
      ctx.textAlign = "center";
      ctx.textBaseline = "middle";
      const size = Math.max(3, Math.min(r / 3.2, 14 / scale));
      ctx.font = size + "px sans-serif";
      ctx.fillText(n.room || "(no room)", n.x, n.y - size * 0.7);
      ctx.fillText(n.count + (k ? " · " + k + " found" : ""), n.x, n.y + size * 0.7);
      if (k) ring(ctx, n, r + 2 / scale, "#f3c969", 3 / scale);
      return;
    }
    if (hits.has(n.id)) ring(ctx, n, r + 1.5, "#f3c969", 2 / scale + 0.6);
    if (n.id === selected) ring(ctx, n, r + 3, "#ffffff", 1.5 / scale + 0.4);
    if (n.freshUntil && n.freshUntil > performance.now()) ring(ctx, n, r + 4, "#5fd38d", 2 / scale + 0.6);
  }

  function ring(ctx, n, r, stroke, width) {
    ctx.beginPath();
    ctx.arc(n.x, n.y, r, 0, 2 * Math.PI);
    ctx.strokeStyle = stroke;
    ctx.lineWidth = width;
    ctx.stroke();
  }

  function labels(ctx, scale) {
    ctx.textAlign = "center";
    ctx.textBaseline = "bottom";
    for (const [layer, c] of clusters) {
      ctx.font = "600 " + Math.max(12 / scale, Math.min(c.r / 9, 26 / scale)) + "px sans-serif";
      ctx.fillStyle = "rgba(243,201,105,0.85)";
      ctx.fillText((LAYER_NAMES[layer] || layer) + " (" + c.count + ")", c.x, c.y - c.r - 8);
    }
    if (payload.aggregated) return;
    ctx.font = 11 / scale + "px sans-serif";
    ctx.fillStyle = "rgba(180,190,205,0.75)";
    for (const [key, h] of homes) {
      if (h.r * scale < 45) continue;
      const name = key.slice(key.indexOf("/") + 1);
      ctx.fillText(name || "(no room)", h.x, h.y - h.r - 2);
    }
  }

  function afterFrame() {
    if (metrics.firstPicture === null && nodes.size) {
      metrics.firstPicture = performance.now();
      document.body.dataset.ready = "1";
    }
  }

  function redraw() { g.nodeColor((n) => color(n)); }

  function resize() {
    const el = document.getElementById("nebula");
    g.width(el.clientWidth).height(el.clientHeight);
  }

  // ------------------------------------------------------------------ public
  function updateCount() {
    const memories = [...nodes.values()].filter((n) => !n.agg).length;
    const el = document.getElementById("count");
    if (payload.aggregated) {
      el.textContent = payload.total.toLocaleString("en") + " memories in " + rooms.size + " rooms · "
        + memories.toLocaleString("en") + " drawn (rooms past " + payload.limit.toLocaleString("en") + "; click one to open it)";
    } else {
      el.textContent = memories.toLocaleString("en") + " memories · " + links.length.toLocaleString("en") + " edges"
        + (payload.edges_ready ? "" : " (edges coming)");
    }
    el.dataset.memories = String(memories);
    document.getElementById("collapse").hidden = !payload.aggregated || ![...rooms.values()].some((r) => r.open);
  }

  function init(el, data) {
    payload = data;
    g = new ForceGraph(el)
      .width(el.clientWidth).height(el.clientHeight)
      .backgroundColor("#10141a")
      .nodeId("id")
      .nodeRelSize(1)
      .nodeVal((n) => radius(n) ** 2)
      .nodeColor((n) => color(n))
      .nodeLabel(label)
      .nodeCanvasObjectMode((n) => (n.agg || hits.has(n.id) || n.id === selected || n.freshUntil ? "after" : undefined))
      .nodeCanvasObject(decorate)
      .linkColor((l) => (hits.size && !hits.has(endId(l.source)) && !hits.has(endId(l.target))
        ? "rgba(120,130,145,0.07)" : EDGES[l.type].color))
      .linkLineDash((l) => EDGES[l.type].dash || null)
      .linkDirectionalArrowLength((l) => EDGES[l.type].arrow || 0)
      .linkDirectionalArrowRelPos(0.9)
      .linkLabel((l) => S.esc(EDGES[l.type].label))
      .onNodeClick((n) => (n.agg ? S.nebula.open(n.key) : S.card.open(n.id)))
      .onNodeHover((n) => { hovered = n ? n.id : null; })
      .onEngineStop(() => {
        // the forces moved things: all in view again (at once: a click may follow as soon as it settled)
        if (!userZoomed && links.length) g.zoomToFit(0, 50);
        settled = true;
      })
      .onRenderFramePre(labels)
      .onRenderFramePost(afterFrame)
      .warmupTicks(0)
      .d3AlphaDecay(0.04);
    g.d3Force("center", null);
    g.d3Force("home", homeForce());
    chargeForce = g.d3Force("charge");
    if (chargeForce) chargeForce.strength(-6).distanceMax(40);
    linkForce = g.d3Force("link");
    if (linkForce) linkForce.distance(20);
    window.addEventListener("resize", resize);
    // a person's own zoom or pan is kept (the picture is not fitted again under them)
    el.addEventListener("wheel", () => { userZoomed = true; }, { passive: true });
    el.addEventListener("pointerdown", () => { userZoomed = true; });
    build(data);
  }

  function build(data) {
    payload = data;
    nodes.clear();
    rooms.clear();
    edgePool.clear();
    for (const r of data.rooms) Object.assign(room(r.key, r.layer, r.room), { count: r.count });
    layout();
    if (data.aggregated) for (const r of rooms.values()) aggregate(r);
    else { addMemories(data.nodes); addEdges(data.edges); }
    push();
    g.zoomToFit(0, 50);
    userZoomed = false;
  }

  async function open(key) {
    const r = rooms.get(key);
    if (!r || r.open) return;
    const data = await S.source.room(key);
    r.open = true;
    r.next = 0;
    nodes.delete("room:" + key);
    addMemories(data.nodes);
    addEdges(data.edges);
    push();
    if (data.more) S.toast(data.more.toLocaleString("en") + " weaker memories of this room are not drawn");
  }

  function collapse() {
    for (const r of rooms.values()) {
      if (!r.open) continue;
      r.open = false;
      for (const [id, n] of nodes) if (!n.agg && keyOf(n) === r.key) nodes.delete(id);
      aggregate(r);
    }
    push();
  }

  function countRoom(key, layer, name, d) {
    const r = room(key, layer, name);
    r.count += d;
    if (payload.aggregated && !r.open) {
      if (r.count > 0) aggregate(r); else nodes.delete("room:" + key);
    }
  }

  // A change pushed by the server (numbered; the caller checks the order).
  function apply(diff) {
    if (diff.edges_ready) payload.edges_ready = true;
    for (const x of diff.remove || []) {
      nodes.delete(x.id);
      const [layer] = x.was.split("/", 1);
      countRoom(x.was, layer, x.was.slice(layer.length + 1), -1);
      payload.total -= 1;
    }
    const now = performance.now();
    for (const up of diff.upsert || []) {
      const { was, ...n } = up;
      const key = keyOf(n);
      if (was === null) { countRoom(key, n.layer, n.room, +1); payload.total += 1; }
      else if (was !== key) {
        const [layer] = was.split("/", 1);
        countRoom(was, layer, was.slice(layer.length + 1), -1);
        countRoom(key, n.layer, n.room, +1);
      }
      const old = nodes.get(n.id);
      if (old) {
        for (const k of ["title", "kind", "status", "tags", "strength", "path", "layer", "room"]) delete old[k];
        Object.assign(old, n);
        if (was !== key) {
          if (rooms.get(key).open || !payload.aggregated) { place(old, rooms.get(key).next++); old.freshUntil = now + 3000; }
          else nodes.delete(n.id);
        }
      } else if (!payload.aggregated || rooms.get(key).open) {
        place(n, rooms.get(key).next++);
        n.freshUntil = now + 3000;
        nodes.set(n.id, n);
      }
      metrics.updates.push({ id: n.id, path: n.path, at: performance.timeOrigin + performance.now() });
    }
    for (const [s, t, type] of diff.edges_remove || []) edgePool.delete(s + "|" + t + "|" + type);
    addEdges(diff.edges_add || []);
    push();
    setTimeout(redraw, 3100); // the "grows in" rings fade
  }

  function highlight(ids, found) {
    hits = new Set(ids);
    S.nebula.found = new Map((found || []).map((n) => [n.id, n]));
    redraw();
  }

  S.nebula = {
    init, build, open, collapse, apply, highlight, resize, metrics, found: new Map(),
    select(id) {
      selected = id;
      const n = id && nodes.get(id);
      if (n) { // opened from a list, and out of sight: bring it into view
        const p = g.graph2ScreenCoords(n.x, n.y);
        if (p.x < 0 || p.y < 0 || p.x > g.width() || p.y > g.height()) g.centerAt(n.x, n.y, 0);
      }
      redraw();
    },
    fit() { g.zoomToFit(400, 50); userZoomed = false; },
    nodes: () => [...nodes.values()].filter((n) => !n.agg),
    // for people's scripts and the tests: what is drawn, and where
    count: () => [...nodes.values()].filter((n) => !n.agg).length,
    aggregates: () => [...nodes.values()].filter((n) => n.agg).map((n) => ({ key: n.key, count: n.count })),
    highlighted: () => [...hits].filter((id) => nodes.has(id)).sort(),
    titles: () => [...nodes.values()].filter((n) => !n.agg).map((n) => n.title),
    edges: () => links.map((l) => [endId(l.source), endId(l.target), l.type]),
    screen(id) {
      const n = nodes.get(id);
      if (!n) return null;
      const p = g.graph2ScreenCoords(n.x, n.y);
      const box = document.getElementById("nebula").getBoundingClientRect();
      return { x: box.left + p.x, y: box.top + p.y };
    },
    zoomTo(id, k) { const n = nodes.get(id); if (n) { g.centerAt(n.x, n.y, 0); g.zoom(k || 4, 0); } },
    legend: { KINDS, EDGES, kindColor },
    userZoomed: () => userZoomed,
    hovered: () => hovered,
    settled: () => settled,
    edgesReady: () => !!payload.edges_ready,
  };
})();
