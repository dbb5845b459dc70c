// The schedule trace view (issue #17, item 5): a canvas timeline drawn like Perfetto / chrome://tracing.
// One lane per compute and memcpy lane of each device; wheel zooms around the cursor, drag pans,
// double-click or "Fit" shows the whole schedule; all of it in the browser, no Streamlit rerun.
// Every frame picks the level of detail: ops narrower than LOD_PX pixels add their busy time to
// per-pixel-column coverage (drawn as bars whose height is the busy fraction), wider ops are drawn
// one by one and named when their bar holds the text (a scoped name cut to "…/" + its last part).
// A click on an op sends its index to Python (trigger "op"). Read-only debug hook for tests and
// benchmarks: the canvas's data-trace attribute (window, ops drawn / named, frame times) and data-latency
// (wheel or drag event to the next animation frame after its draw, ms).

const LOD_PX = 1.5;          // narrower ops are binned into pixel columns
const NAME_PX = 28;          // bars at least this wide get their name written inside
const LANE_H = 26;
const LANE_GAP = 6;
const TOP = 6;
const AXIS_H = 30;
const RIGHT = 12;
const FRAMES_KEPT = 64;
const VIEWS = (window.__placelabTraceViews ||= new Map());   // zoom per schedule, across reruns

function decode(text, Type) {
  const bin = atob(text);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return new Type(bytes.buffer);
}

function lowerBound(a, x) {  // first index with a[i] >= x
  let lo = 0, hi = a.length;
  while (lo < hi) { const mid = (lo + hi) >>> 1; if (a[mid] < x) lo = mid + 1; else hi = mid; }
  return lo;
}

function maxOf(a) { let m = 0; for (let i = 0; i < a.length; i++) if (a[i] > m) m = a[i]; return m; }

function rgb(hex) {
  const h = hex.replace("#", "");
  return [0, 2, 4].map((k) => parseInt(h.slice(k, k + 2), 16));
}

function parseColor(css, fallback) {  // "#rrggbb" or "rgb(a)(...)" to [r, g, b]
  const c = (css || "").trim();
  if (c.startsWith("#") && c.length === 7) return rgb(c);
  const m = c.match(/rgba?\(([^)]+)\)/);
  return m ? m[1].split(",").slice(0, 3).map((v) => parseFloat(v)) : rgb(fallback);
}

function luminance([r, g, b]) {
  const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
  return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
}

function fmtMs(v) {
  const a = Math.abs(v);
  if (a === 0) return "0";
  return a >= 100 ? v.toFixed(1) : a >= 1 ? v.toFixed(3) : a >= 1e-3 ? v.toFixed(5) : v.toExponential(3);
}

function fmtBytes(b) {
  for (const [u, s] of [["GB", 1e9], ["MB", 1e6], ["KB", 1e3]]) if (Math.abs(b) >= s) return (b / s).toPrecision(3) + " " + u;
  return b.toFixed(0) + " B";
}

function niceStep(raw) {
  const p = 10 ** Math.floor(Math.log10(raw));
  const f = raw / p;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
}

function buildModel(data) {
  const ops = data.ops, tr = data.transfers;
  const group = (g, extra) => ({
    start: decode(g.start, Float64Array), dur: decode(g.dur, Float32Array), op: decode(g.op, Int32Array),
    offsets: g.offsets, ...extra,
  });
  const og = group(ops, {});
  const tg = group(tr, { dst: decode(tr.dst, Uint16Array), bytes: decode(tr.bytes, Float32Array) });
  const typeIdx = decode(data.type_idx, data.type_dtype === "i4" ? Int32Array : Uint16Array);
  const lanes = [];
  data.devices.forEach((dev, d) => {
    for (const [g, copy] of [[og, false], [tg, true]]) {
      const a = g.offsets[d], b = g.offsets[d + 1];
      const lane = {
        name: data.lanes[lanes.length], device: d, copy, color: (copy ? data.memcpy_colors : data.colors)[d],
        start: g.start.subarray(a, b), dur: g.dur.subarray(a, b),
        op: g.op.subarray(a, b), dst: copy ? g.dst.subarray(a, b) : null, bytes: copy ? g.bytes.subarray(a, b) : null,
      };
      lane.maxDur = maxOf(lane.dur);
      lanes.push(lane);
    }
  });
  // where each op ran: its lane and row, for the red outlines of marked ops
  const opLane = new Int32Array(data.names.length).fill(-1), opRow = new Int32Array(data.names.length);
  lanes.forEach((lane, l) => { if (!lane.copy) lane.op.forEach((o, r) => { opLane[o] = l; opRow[o] = r; }); });
  return { lanes, names: data.names, types: data.types, typeIdx, devices: data.devices, opLane, opRow,
           marked: decode(data.marked, Int32Array), makespan: data.makespan_ms || 1e-9, nameW: new Map() };
}

export default function (component) {
  try {
    return mount(component);
  } catch (err) {  // a short note in place of the view, never a stack trace on the page
    console.error("trace view:", err);
    const parent = component.parentElement;
    parent.querySelectorAll(".pl-trace, .pl-error").forEach((e) => e.remove());
    const note = document.createElement("div");
    note.className = "pl-error";
    note.textContent = `The trace view could not draw this schedule (${(err && err.message) || err}); `
      + "the Plotly figure toggle above shows it.";
    parent.appendChild(note);
    return () => note.remove();
  }
}

function mount(component) {
  const t0 = performance.now();
  const { data, parentElement, setTriggerValue } = component;
  // a rerun with new data calls this again on the same parent: take down the previous view first
  if (parentElement.__plTraceCleanup) parentElement.__plTraceCleanup();
  parentElement.querySelectorAll(".pl-error").forEach((e) => e.remove());
  if (!data || !data.lanes) return undefined;
  const root = document.createElement("div");
  root.className = "pl-trace";
  root.innerHTML = `<div class="pl-bar"><span class="pl-title"></span><span class="pl-info"></span>
    <button type="button" class="pl-fit" title="Show the whole schedule (or double-click the chart)">Fit</button></div>
    <div class="pl-wrap"><canvas class="pl-canvas" data-testid="trace-view-canvas"></canvas>
    <div class="pl-tip" hidden></div></div>`;
  parentElement.appendChild(root);
  const canvas = root.querySelector("canvas"), tip = root.querySelector(".pl-tip");
  const info = root.querySelector(".pl-info");
  root.querySelector(".pl-title").textContent = data.title;
  const ctx = canvas.getContext("2d");
  const m = buildModel(data);
  const decodeMs = performance.now() - t0;
  const height = TOP + m.lanes.length * (LANE_H + LANE_GAP) + AXIS_H;
  canvas.style.height = height + "px";
  const full = () => [0, m.makespan * 1.01];
  const saved = VIEWS.get(data.id);
  let [v0, v1] = saved || full();
  let gutter = 80, theme = null, frames = [], firstPaint = null, pending = false, cov = new Float32Array(0);
  let frameCount = 0, inputAt = null, latencies = [];  // wheel / drag event → the next animation frame after its draw

  function readTheme() {
    const s = getComputedStyle(root);
    const v = (name, fb) => (s.getPropertyValue(name) || "").trim() || fb;
    const bg = v("--st-background-color", "#ffffff");
    const text = v("--st-text-color", "#31333f");
    const font = v("--st-font", "sans-serif");
    const bgRgb = parseColor(bg, "#ffffff");
    const dark = luminance(bgRgb) < 0.3;
    // name colour per lane: black or white, whichever reads on the bar (every lane's colour is opaque)
    const ink = m.lanes.map((lane) => (luminance(rgb(lane.color)) > 0.33 ? "#111111" : "#ffffff"));
    return { bg, text, font, ink, dark, grid: dark ? "rgba(255,255,255,0.10)" : "rgba(0,0,0,0.08)",
             band: dark ? "rgba(255,255,255,0.04)" : "rgba(0,0,0,0.035)", mark: dark ? "#ff5c5c" : "#d00000" };
  }

  function plotWidth() { return Math.max(10, canvas.clientWidth - gutter - RIGHT); }
  function laneY(l) { return TOP + l * (LANE_H + LANE_GAP); }
  function timeAt(x) { return v0 + (x - gutter) * (v1 - v0) / plotWidth(); }

  function nameWidth(i) {
    let w = m.nameW.get(i);
    if (w === undefined) { w = ctx.measureText(m.names[i]).width; m.nameW.set(i, w); }
    return w;
  }

  function label(i, avail) {  // the op's name fitted into avail px: whole, else "…/" and its last scope part, cut
    const name = m.names[i], w = nameWidth(i);
    if (w <= avail) return name;
    const slash = name.lastIndexOf("/");
    const leaf = slash >= 0 && slash < name.length - 1 ? name.slice(slash + 1) : name;
    if (leaf !== name && ctx.measureText("…/" + leaf).width <= avail) return "…/" + leaf;
    const lw = ctx.measureText(leaf).width;
    let n = Math.floor(leaf.length * avail / lw) - 1;
    while (n > 1) {
      const s = leaf.slice(0, n) + "…";
      if (ctx.measureText(s).width <= avail) return s;
      n -= 1;
    }
    return null;
  }

  function draw() {
    pending = false;
    const start = performance.now();
    if (!theme) theme = readTheme();
    const dpr = window.devicePixelRatio || 1;
    const W = canvas.clientWidth, H = height;
    if (canvas.width !== Math.round(W * dpr) || canvas.height !== Math.round(H * dpr)) {
      canvas.width = Math.round(W * dpr); canvas.height = Math.round(H * dpr);
    }
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    ctx.font = `12px ${theme.font}`;
    gutter = Math.ceil(Math.max(...m.lanes.map((l) => ctx.measureText(l.name).width))) + 16;
    const pw = plotWidth(), scale = pw / (v1 - v0);
    const lanesBottom = laneY(m.lanes.length) - LANE_GAP;
    // lane bands and labels
    ctx.textBaseline = "middle";
    m.lanes.forEach((lane, l) => {
      ctx.fillStyle = theme.band;
      ctx.fillRect(gutter, laneY(l), pw, LANE_H);
      ctx.fillStyle = theme.text;
      ctx.textAlign = "right";
      ctx.fillText(lane.name, gutter - 8, laneY(l) + LANE_H / 2);
    });
    // time axis: nice ticks, grid lines
    const step = niceStep((v1 - v0) / Math.max(2, pw / 110));
    const dec = Math.max(0, -Math.floor(Math.log10(step)));
    ctx.textAlign = "center";
    ctx.textBaseline = "top";
    ctx.strokeStyle = theme.grid;
    ctx.lineWidth = 1;
    for (let t = Math.ceil(v0 / step) * step; t <= v1; t += step) {
      const x = Math.round(gutter + (t - v0) * scale) + 0.5;
      ctx.beginPath(); ctx.moveTo(x, TOP); ctx.lineTo(x, lanesBottom + 4); ctx.stroke();
      ctx.fillStyle = theme.text;
      ctx.fillText(dec > 12 ? t.toExponential(2) : t.toFixed(dec), x, lanesBottom + 6);
    }
    ctx.textAlign = "right";
    ctx.fillText("time (ms)", W - RIGHT, lanesBottom + 18);
    // ops: binned when narrow, one by one when wide, named when wider still
    ctx.save();
    ctx.beginPath(); ctx.rect(gutter, 0, pw, H); ctx.clip();
    if (cov.length < pw + 2) cov = new Float32Array(pw + 2);
    let drawn = 0, named = 0, binnedCols = 0, sample = null;
    const names = [];
    m.lanes.forEach((lane, l) => {
      const y = laneY(l), s = lane.start, d = lane.dur;
      cov.fill(0, 0, pw + 2);
      ctx.fillStyle = lane.color;
      const lo = lowerBound(s, v0 - lane.maxDur), hi = lowerBound(s, v1);
      ctx.beginPath();
      for (let i = lo; i < hi; i++) {
        const e = s[i] + d[i];
        if (e < v0) continue;
        const x0 = (s[i] - v0) * scale, x1 = (e - v0) * scale;
        if (x1 - x0 < LOD_PX) {
          const a = Math.max(0, x0), b = Math.min(pw, x1);
          if (b <= a) continue;
          const c0 = a | 0, c1 = Math.min(b | 0, pw);
          if (c0 === c1) cov[c0] += b - a;
          else { cov[c0] += c0 + 1 - a; for (let c = c0 + 1; c < c1; c++) cov[c] += 1; cov[c1] += b - c1; }
        } else {
          const a = Math.max(x0, -2), b = Math.min(x1, pw + 2);
          ctx.rect(gutter + a, y, Math.max(1, b - a - (b - a > 4 ? 1 : 0)), LANE_H);
          drawn++;
          if (b - a >= NAME_PX) names.push(l, i, a, b);
        }
      }
      // busy coverage of the narrow ops: per pixel column, bar height = busy fraction (runs merged)
      let c = 0;
      while (c < pw) {
        const f = Math.min(1, cov[c]);
        if (f <= 0) { c++; continue; }
        const q = Math.max(1, Math.round(f * 16)), c0 = c;
        while (c < pw && Math.max(1, Math.round(Math.min(1, cov[c]) * 16)) === q && cov[c] > 0) c++;
        const h = LANE_H * q / 16;
        ctx.rect(gutter + c0, y + LANE_H - h, c - c0, h);
        binnedCols += c - c0;
      }
      ctx.fill();
    });
    // names inside the bars that hold them
    ctx.textAlign = "left";
    ctx.textBaseline = "middle";
    for (let k = 0; k < names.length; k += 4) {
      const l = names[k], i = names[k + 1], a = names[k + 2], b = names[k + 3], lane = m.lanes[l];
      const text = label(lane.op[i], b - a - 8);
      if (text === null) continue;
      ctx.fillStyle = theme.ink[l];
      ctx.fillText(text, gutter + Math.max(a, 0) + 4, laneY(l) + LANE_H / 2);
      named++;
      if (!lane.copy && (sample === null || b - a > sample.w))
        sample = { op: lane.op[i], name: m.names[lane.op[i]], x: gutter + (Math.max(a, 0) + Math.min(b, pw)) / 2,
                   y: laneY(l) + LANE_H / 2, w: b - a };
    }
    // marked ops (search matches, the op selected in the graph): red outlines, at least 5 px wide
    ctx.strokeStyle = theme.mark;
    ctx.lineWidth = 2;
    ctx.beginPath();
    let marks = 0;
    for (const o of m.marked) {
      const l = m.opLane[o];
      if (l < 0) continue;
      const lane = m.lanes[l], r = m.opRow[o];
      const x0 = (lane.start[r] - v0) * scale, x1 = (lane.start[r] + lane.dur[r] - v0) * scale;
      if (x1 < -3 || x0 > pw + 3) continue;
      const mid = (x0 + x1) / 2, w = Math.max(5, x1 - x0);
      ctx.rect(gutter + mid - w / 2, laneY(l) - 1, w, LANE_H + 2);
      marks++;
    }
    ctx.stroke();
    // makespan
    const xm = gutter + (m.makespan - v0) * scale;
    ctx.setLineDash([3, 3]);
    ctx.strokeStyle = theme.text;
    ctx.lineWidth = 1;
    ctx.beginPath(); ctx.moveTo(xm, TOP - 4); ctx.lineTo(xm, lanesBottom + 2); ctx.stroke();
    ctx.setLineDash([]);
    ctx.restore();
    const ms = performance.now() - start;
    frames.push(ms);
    frameCount++;
    if (frames.length > FRAMES_KEPT) frames = frames.slice(-FRAMES_KEPT);
    if (firstPaint === null) firstPaint = performance.now() - t0;
    if (inputAt !== null) {
      const at = inputAt;
      inputAt = null;
      requestAnimationFrame(() => {
        latencies.push(performance.now() - at);
        if (latencies.length > FRAMES_KEPT) latencies = latencies.slice(-FRAMES_KEPT);
        canvas.dataset.latency = JSON.stringify(latencies);
      });
    }
    VIEWS.set(data.id, [v0, v1]);
    info.textContent = `${fmtMs(v0)} – ${fmtMs(v1)} ms · ` + (drawn === 0 ? "every op binned per pixel column"
      : `${drawn.toLocaleString()} ops drawn one by one` + (binnedCols ? ", the rest binned per pixel column" : ""));
    canvas.dataset.trace = JSON.stringify({ t0: v0, t1: v1, drawn, named, binned_cols: binnedCols, marks,
      frame_ms: ms, frames: frameCount, frame_times: frames, first_paint_ms: firstPaint, decode_ms: decodeMs,
      sample, lanes: m.lanes.map((l) => l.name) });
  }

  function redraw() { if (!pending) { pending = true; requestAnimationFrame(draw); } }

  function setView(a, b) {
    if (inputAt === null) inputAt = performance.now();
    const [f0, f1] = full(), span = f1 - f0;
    const r = Math.min(Math.max(b - a, Math.max(span * 1e-9, 1e-9)), span * 1.5);
    const c = Math.min(Math.max((a + b) / 2, f0 - span * 0.25), f1 + span * 0.25);  // the centre stays near
    v0 = c - r / 2; v1 = c + r / 2;
    redraw();
  }

  function fit() { [v0, v1] = full(); redraw(); }

  function hit(px, py) {  // the op or transfer under a point (3 px tolerance): {lane, row} or null
    const l = Math.floor((py - TOP) / (LANE_H + LANE_GAP));
    if (l < 0 || l >= m.lanes.length || py - laneY(l) > LANE_H || px < gutter) return null;
    const lane = m.lanes[l], t = timeAt(px), tol = 3 * (v1 - v0) / plotWidth();
    let best = null, bestDist = Infinity;
    for (let i = lowerBound(lane.start, t + tol) - 1, n = 0; i >= 0 && n < 20000; i--, n++) {
      const s = lane.start[i], e = s + lane.dur[i];
      if (s < t - tol - lane.maxDur) break;  // every earlier one ends before t
      const dist = t < s ? s - t : t > e ? t - e : 0;
      if (dist <= tol && (dist < bestDist || (dist === 0 && lane.dur[i] < lane.dur[best.row]))) {
        best = { lane: l, row: i }; bestDist = dist;
      }
    }
    return best;
  }

  function showTip(h, px, py) {
    if (!h) { tip.hidden = true; return; }
    const lane = m.lanes[h.lane], o = lane.op[h.row];
    const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));
    const head = lane.copy ? `${esc(m.names[o])} → ${esc(m.devices[lane.dst[h.row]])}` : esc(m.names[o]);
    tip.innerHTML = `<b>${head}</b><br>${esc(m.types[m.typeIdx[o]])} · ${esc(lane.name)}`
      + `<br>start ${fmtMs(lane.start[h.row])} ms · duration ${fmtMs(lane.dur[h.row])} ms`
      + (lane.copy ? `<br>${fmtBytes(lane.bytes[h.row])}` : "");
    tip.hidden = false;
    const wrap = canvas.clientWidth;
    tip.style.left = Math.min(px + 14, Math.max(0, wrap - tip.offsetWidth - 4)) + "px";
    tip.style.top = (py + 16) + "px";
  }

  let drag = null;
  const pos = (e) => { const r = canvas.getBoundingClientRect(); return [e.clientX - r.left, e.clientY - r.top]; };
  const onWheel = (e) => {
    e.preventDefault();
    const [px] = pos(e);
    const unit = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? 400 : 1;
    if (Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
      const dt = e.deltaX * unit * (v1 - v0) / plotWidth();
      setView(v0 + dt, v1 + dt);
      return;
    }
    const t = timeAt(Math.max(px, gutter)), k = Math.exp(e.deltaY * unit * 0.002);
    setView(t - (t - v0) * k, t + (v1 - t) * k);
  };
  const onDown = (e) => {
    if (e.button !== 0) return;
    const [px, py] = pos(e);
    drag = { x: px, y: py, v0, v1, moved: false };
    canvas.setPointerCapture(e.pointerId);
  };
  const onMove = (e) => {
    const [px, py] = pos(e);
    if (drag) {
      const dx = px - drag.x;
      if (Math.abs(dx) > 3) drag.moved = true;
      if (drag.moved) {
        const dt = dx * (drag.v1 - drag.v0) / plotWidth();
        setView(drag.v0 - dt, drag.v1 - dt);
        canvas.style.cursor = "grabbing";
        tip.hidden = true;
        return;
      }
    }
    showTip(hit(px, py), px, py);
  };
  const onUp = (e) => {
    if (!drag) return;
    const [px, py] = pos(e), was = drag;
    drag = null;
    canvas.style.cursor = "";
    if (was.moved) return;
    const h = hit(px, py);
    if (h) setTriggerValue("op", m.lanes[h.lane].op[h.row]);
  };
  const onLeave = () => { tip.hidden = true; };
  canvas.addEventListener("wheel", onWheel, { passive: false });
  canvas.addEventListener("pointerdown", onDown);
  canvas.addEventListener("pointermove", onMove);
  canvas.addEventListener("pointerup", onUp);
  canvas.addEventListener("pointerleave", onLeave);
  canvas.addEventListener("dblclick", fit);
  root.querySelector(".pl-fit").addEventListener("click", fit);
  const resize = new ResizeObserver(() => { theme = null; redraw(); });
  resize.observe(canvas);
  const scheme = window.matchMedia("(prefers-color-scheme: dark)");
  const rethemed = () => { theme = null; redraw(); };
  scheme.addEventListener("change", rethemed);
  draw();
  const cleanup = () => {
    resize.disconnect();
    scheme.removeEventListener("change", rethemed);
    root.remove();
    if (parentElement.__plTraceCleanup === cleanup) delete parentElement.__plTraceCleanup;
  };
  parentElement.__plTraceCleanup = cleanup;
  return cleanup;
}
