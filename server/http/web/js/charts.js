// SVG charts drawn by hand: axes with round ticks, line, bar and stacked-area (memory) charts.
// Every chart's container carries data-points="<points drawn>" (tests read it) and data-chart.

// Nominal sizes (the SVG scales to its column): narrow for the four training charts in a row,
// wide for memory and checkpoints, two in a row.
const NARROW = {w: 400, h: 230};
const WIDE = {w: 640, h: 230};
const MARGIN = {left: 62, right: 14, top: 12, bottom: 34};
const PALETTE = ['#2563eb', '#dc2626', '#059669', '#d97706', '#7c3aed', '#0891b2',
                 '#db2777', '#65a30d', '#4b5563', '#ea580c', '#0d9488', '#9333ea'];

// About `count` round numbers covering [min, max].
function niceTicks(min, max, count = 5) {
  if (!(max > min)) return [min];
  const rawStep = (max - min) / count;
  const magnitude = Math.pow(10, Math.floor(Math.log10(rawStep)));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((s) => s >= rawStep);
  const ticks = [];
  for (let t = Math.ceil(min / step) * step; t <= max + step * 1e-9; t += step) {
    ticks.push(Math.abs(t) < step * 1e-9 ? 0 : t);
  }
  return ticks;
}

// Round ticks in the binary unit (KiB, MiB, ...) of the range's top, for byte axes.
function byteTicks(min, max, count = 5) {
  const unit = Math.pow(1024, Math.max(0, Math.floor(Math.log(Math.max(max, 1)) / Math.log(1024))));
  return niceTicks(min / unit, max / unit, count).map((t) => t * unit);
}

// [lo, hi] of the values, widened a little so lines do not sit on the frame.
function paddedRange(values, {zero = false} = {}) {
  let lo = Math.min(...values);
  let hi = Math.max(...values);
  if (zero) lo = Math.min(lo, 0);
  if (lo === hi) {
    const pad = Math.abs(lo) > 0 ? Math.abs(lo) * 0.1 : 1;
    return [zero ? lo : lo - pad, hi + pad];
  }
  const pad = (hi - lo) * 0.05;
  return [zero && lo === 0 ? 0 : lo - pad, hi + pad];
}

// Scales and the frame (grid, tick labels, axis titles) for data ranges xr and yr.
function chartFrame(xr, yr, {xLabel = '', yFormat = fmtNumber, xFormat = fmtNumber,
                             size = NARROW, yTicks = niceTicks} = {}) {
  const {w: width, h: height} = size;
  const plotW = width - MARGIN.left - MARGIN.right;
  const plotH = height - MARGIN.top - MARGIN.bottom;
  const sx = (x) => MARGIN.left + (xr[1] > xr[0] ? (x - xr[0]) / (xr[1] - xr[0]) : 0.5) * plotW;
  const sy = (y) => MARGIN.top + (1 - (y - yr[0]) / (yr[1] - yr[0])) * plotH;
  const root = svg('svg', {viewBox: `0 0 ${width} ${height}`, class: 'chart-svg',
                           preserveAspectRatio: 'xMidYMid meet'});
  const grid = svg('g', {class: 'grid'});
  for (const t of yTicks(yr[0], yr[1], 4)) {
    grid.append(svg('line', {x1: MARGIN.left, x2: width - MARGIN.right, y1: sy(t), y2: sy(t)}));
    grid.append(svg('text', {x: MARGIN.left - 6, y: sy(t) + 4, class: 'tick y', text: yFormat(t)}));
  }
  for (const t of niceTicks(xr[0], xr[1], 6)) {
    grid.append(svg('line', {x1: sx(t), x2: sx(t), y1: MARGIN.top, y2: height - MARGIN.bottom,
                             class: 'vertical'}));
    grid.append(svg('text', {x: sx(t), y: height - MARGIN.bottom + 14, class: 'tick x',
                             text: xFormat(t)}));
  }
  grid.append(svg('text', {x: width - MARGIN.right, y: height - 4, class: 'axis-title',
                           text: xLabel}));
  root.append(grid);
  root.append(svg('rect', {x: MARGIN.left, y: MARGIN.top, width: plotW, height: plotH,
                           class: 'frame'}));
  return {root, sx, sy, plotW};
}

function chartContainer(name, title, count, subtitle) {
  return el('figure', {class: 'chart', 'data-chart': name, 'data-points': count},
            el('figcaption', {}, el('span', {class: 'chart-title', text: title}),
               subtitle ? el('span', {class: 'chart-subtitle muted', text: subtitle}) : null));
}

function emptyNote(text) {
  return el('div', {class: 'chart-empty muted', text});
}

// points: [{x, y}] in x order. Non-finite y values are left out (and not counted).
function lineChart(name, title, points, {xLabel = 'step', yFormat = fmtNumber, color = PALETTE[0],
                                         zero = false} = {}) {
  const drawn = points.filter((p) => Number.isFinite(p.x) && Number.isFinite(p.y));
  const latest = drawn.length ? yFormat(drawn[drawn.length - 1].y) : '';
  const box = chartContainer(name, title, drawn.length, latest && `latest ${latest}`);
  if (!drawn.length) {
    box.append(emptyNote('no data yet'));
    return box;
  }
  const {root, sx, sy} = chartFrame(paddedRange(drawn.map((p) => p.x)),
                                    paddedRange(drawn.map((p) => p.y), {zero}),
                                    {xLabel, yFormat});
  const d = drawn.map((p, i) => `${i ? 'L' : 'M'}${sx(p.x).toFixed(1)},${sy(p.y).toFixed(1)}`);
  root.append(svg('path', {d: d.join(''), class: 'line', stroke: color}));
  if (drawn.length <= 80) {
    for (const p of drawn) {
      root.append(svg('circle', {cx: sx(p.x), cy: sy(p.y), r: 2.5, fill: color, class: 'dot'},
                      svg('title', {text: `${xLabel} ${fmtNumber(p.x)}: ${yFormat(p.y)}`})));
    }
  }
  box.append(root);
  return box;
}

// bars: [{x, y, label}] drawn as thin bars at x with height y.
function barChart(name, title, bars, {xLabel = 'step', yFormat = fmtNumber, color = PALETTE[2],
                                      size = WIDE} = {}) {
  const box = chartContainer(name, title, bars.length, bars.length ? `${bars.length} saved` : '');
  if (!bars.length) {
    box.append(emptyNote('no checkpoints yet'));
    return box;
  }
  const xs = bars.map((b) => b.x);
  const xr = paddedRange(xs);
  const {root, sx, sy, plotW} = chartFrame(xr, paddedRange(bars.map((b) => b.y), {zero: true}),
                                           {xLabel, yFormat, size});
  const width = Math.max(3, Math.min(24, plotW / (bars.length * 2)));
  for (const b of bars) {
    const top = sy(b.y);
    root.append(svg('rect', {x: sx(b.x) - width / 2, y: top, width,
                             height: Math.max(1, sy(0) - top), fill: color, class: 'bar'},
                    svg('title', {text: b.label})));
  }
  box.append(root);
  return box;
}

// A legend: [{name, color}].
function legend(items) {
  return el('div', {class: 'legend'},
            items.map((item) => el('span', {class: 'legend-item'},
                                   el('span', {class: 'swatch', style: `background:${item.color}`}),
                                   item.name)));
}

// ---- memory: per rank over time, stacked by pool and category, from the typed ledgers of
// memory events (MemoryEvent.pools: [{pool: "MEMORY_POOL_COMPUTE", categories: [{category:
// "MEMORY_CATEGORY_PARAMS", current: "B", peak: "B"}, ...], total_current, total_peak}, ...];
// proto JSON writes int64 as strings and leaves zeros out). acceld reads records stored with
// the old ledger JSON into the same fields.

// The ledger's name of a proto enum value: "MEMORY_POOL_COMPUTE" -> "compute",
// "MEMORY_CATEGORY_OPTIMIZER_STATE" -> "optimizer_state".
function ledgerName(value, prefix) {
  const text = String(value || '');
  return (text.startsWith(prefix) ? text.slice(prefix.length) : text).toLowerCase();
}

// {pool/category: current bytes} of one record's pools, leaving out each pool's total.
function ledgerSeries(pools) {
  const out = {};
  for (const pool of pools || []) {
    const poolName = ledgerName(pool.pool, 'MEMORY_POOL_');
    for (const c of pool.categories || []) {
      const key = `${poolName}/${ledgerName(c.category, 'MEMORY_CATEGORY_')}`;
      out[key] = (out[key] || 0) + num(c.current);
    }
  }
  return out;
}

// Memory records of one job: [{rank, timeS, step, series}] from its memory events.
function memoryRecords(events) {
  return events
    .filter((e) => e.memory !== undefined)
    .map((e) => ({rank: num(e.rank), timeUs: num(e.time_us), step: num(e.memory.step),
                  series: ledgerSeries(e.memory.pools),
                  peakRss: num(e.memory.process_peak_rss)}));
}

// One stacked area chart per rank, in a container whose data-points is the number of memory
// records drawn over all ranks.
function memoryCharts(records) {
  const box = el('section', {class: 'memory-charts', 'data-chart': 'memory',
                             'data-points': records.length});
  if (!records.length) {
    box.append(emptyNote('no memory records yet'));
    return box;
  }
  const t0 = Math.min(...records.map((r) => r.timeUs));
  // Series that are ever non-zero, in a stable order, with one color each for every rank.
  const keys = [...new Set(records.flatMap((r) => Object.keys(r.series)
                                                  .filter((k) => r.series[k] > 0)))].sort();
  const colors = Object.fromEntries(keys.map((k, i) => [k, PALETTE[i % PALETTE.length]]));
  box.append(legend(keys.map((k) => ({name: k, color: colors[k]}))));
  const grid = el('div', {class: 'chart-grid'});
  const ranks = [...new Set(records.map((r) => r.rank))].sort((a, b) => a - b);
  for (const rank of ranks) {
    const mine = records.filter((r) => r.rank === rank).sort((a, b) => a.timeUs - b.timeUs);
    grid.append(stackedChart(rank, mine, keys, colors, t0));
  }
  box.append(grid);
  return box;
}

function stackedChart(rank, records, keys, colors, t0) {
  const xs = records.map((r) => (r.timeUs - t0) / 1e6);
  const totals = records.map((r) => keys.reduce((sum, k) => sum + (r.series[k] || 0), 0));
  const peak = Math.max(...totals);
  const name = rank < 0 ? 'job' : `rank ${rank}`;
  const box = chartContainer(`memory-rank-${rank}`, `Memory, ${name}`, records.length,
                             `peak ${fmtBytes(peak)}`);
  const {root, sx, sy} = chartFrame(paddedRange(xs), paddedRange(totals.concat([0]), {zero: true}),
                                    {xLabel: 'seconds', yFormat: fmtBytes, size: WIDE,
                                     yTicks: byteTicks});
  // Areas from the top of the stack down, each from the running sum to the sum below it.
  const below = records.map(() => 0);
  const layers = [];
  for (const key of keys) {
    const lower = below.slice();
    records.forEach((r, i) => { below[i] += r.series[key] || 0; });
    if (below.every((v, i) => v === lower[i])) continue;
    layers.push({key, lower, upper: below.slice()});
  }
  for (const layer of layers) {
    let d = '';
    xs.forEach((x, i) => { d += `${i ? 'L' : 'M'}${sx(x).toFixed(1)},${sy(layer.upper[i]).toFixed(1)}`; });
    for (let i = xs.length - 1; i >= 0; i--) d += `L${sx(xs[i]).toFixed(1)},${sy(layer.lower[i]).toFixed(1)}`;
    root.append(svg('path', {d: d + 'Z', fill: colors[layer.key], class: 'area'},
                    svg('title', {text: layer.key})));
  }
  if (records.length === 1) {
    // One record has no width: mark it so it still shows.
    root.append(svg('circle', {cx: sx(xs[0]), cy: sy(totals[0]), r: 3, class: 'dot'}));
  }
  box.append(root);
  return box;
}
