// The gpucanary dashboard: every 2 s, reads the daemon's API (docs/http-api.md)
// and renders the fleet, the GPU telemetry chart (uPlot, loaded by index.html
// as the global `uPlot`), the releases and the canaries. Plain DOM, no
// framework; text goes in as text nodes, never as HTML.

const REFRESH_MS = 2000;
const WINDOW_S = 600;
const CHART_HEIGHT = 320;
// DCGM_CLOCKS_EVENT_REASON_GPU_IDLE: the clocks are low because there is no
// work, which is not a slowdown (docs/vocabulary.md).
const IDLE_BIT = 0x1;
const CLOCK_QUERY = 'DCGM_FI_DEV_SM_CLOCK';
// dcgm-exporter names the bitmask by DCGM version: "throttle" before 3.3,
// "clocks event" since.
const REASONS_QUERY =
  '{__name__=~"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS|DCGM_FI_DEV_CLOCKS_EVENT_REASONS"}';

const $ = (id) => document.getElementById(id);

// An element with attributes and children (strings become text nodes).
function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) e.setAttribute(name, value);
  e.append(...children);
  return e;
}

// The `data` of a Prometheus-style JSON answer at `path` (relative to the
// page, so the dashboard also works behind a path-prefixing proxy). With
// `optional`, a 404 (an endpoint this daemon does not have yet) gives null.
async function getJson(path, { optional = false } = {}) {
  const response = await fetch(path, { cache: 'no-store' });
  if (optional && response.status === 404) return null;
  if (!response.ok) throw new Error(`${path}: HTTP ${response.status}`);
  const body = await response.json();
  if (body.status !== 'success') throw new Error(`${path}: ${body.error ?? 'error'}`);
  return body.data;
}

async function getText(path) {
  const response = await fetch(path, { cache: 'no-store' });
  if (!response.ok) throw new Error(`${path}: HTTP ${response.status}`);
  return response.text();
}

const clockTime = (seconds) => new Date(seconds * 1000).toLocaleTimeString([], { hour12: false });
const dateTime = (seconds) => new Date(seconds * 1000).toLocaleString([], { hour12: false });

function ago(iso) {
  const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  return s < 120 ? `${s.toFixed(1)} s ago` : `${Math.round(s / 60)} min ago`;
}

// The value of an unlabelled sample `name` in Prometheus text, or null.
function metricValue(text, name) {
  const m = text.match(new RegExp(`^${name} (\\S+)$`, 'm'));
  return m ? Number(m[1]) : null;
}

// Sets the text only when it changes: the status is a live region, and
// screen readers would repeat an unchanged text set every 2 s.
function setText(element, text) {
  if (element.textContent !== text) element.textContent = text;
}

function renderStatus(targets, metrics) {
  const status = $('daemon-status');
  if (targets.status === 'rejected') {
    status.className = 'status error';
    setText(status, `Daemon unreachable (${targets.reason.message})`);
  } else {
    const active = targets.value.activeTargets;
    const up = active.filter((t) => t.health === 'up').length;
    status.className = 'status ok';
    setText(status, `Serving · ${up} of ${active.length} targets up`);
  }
  if (metrics.status === 'fulfilled') {
    const series = metricValue(metrics.value, 'gpucanary_store_head_series');
    const samples = metricValue(metrics.value, 'gpucanary_scrape_samples_total');
    $('daemon-stats').textContent =
      `${(series ?? 0).toLocaleString()} series · ${(samples ?? 0).toLocaleString()} samples scraped ·`;
  }
  $('updated').textContent = `updated ${clockTime(Date.now() / 1000)}`;
}

function renderFleet(data) {
  const targets = [...data.activeTargets].sort(
    (a, b) =>
      (a.labels.job ?? '').localeCompare(b.labels.job ?? '') ||
      (a.labels.instance ?? '').localeCompare(b.labels.instance ?? ''),
  );
  const rows = targets.map((t) =>
    el(
      'tr',
      {},
      el('td', {}, t.labels.job ?? t.scrapePool),
      el('td', {}, t.labels.instance ?? t.scrapeUrl),
      el('td', { class: `health-${t.health}` }, t.lastError ? `${t.health}: ${t.lastError}` : t.health),
      el('td', {}, t.lastScrape ? el('time', { datetime: t.lastScrape }, ago(t.lastScrape)) : 'never'),
      el('td', { class: 'num' }, t.lastScrape ? `${(t.lastScrapeDuration * 1000).toFixed(1)} ms` : '–'),
    ),
  );
  $('fleet').tBodies[0].replaceChildren(...rows);
  $('fleet-note').textContent = targets.length ? '' : 'No scrape targets configured.';
}

function renderReleases(releases) {
  $('releases-note').textContent = releases?.length ? '' : 'No releases yet.';
  const items = (releases ?? []).map((r) => {
    const detail = [
      r.model,
      r.quantization,
      r.git_sha && `git ${r.git_sha.slice(0, 10)}`,
      Array.isArray(r.targets) &&
        (r.targets.length > 4 ? `${r.targets.length} targets` : r.targets.join(', ')),
      r.selector,
    ].filter(Boolean);
    return el(
      'li',
      {},
      el('time', { datetime: new Date(r.started_at * 1000).toISOString() }, dateTime(r.started_at)),
      el('strong', {}, [r.service, r.version].filter(Boolean).join(' ')),
      detail.length ? el('span', { class: 'detail' }, ` · ${detail.join(' · ')}`) : '',
    );
  });
  $('releases').replaceChildren(...items);
}

function renderCanaries(canaries) {
  const list = Array.isArray(canaries) ? canaries : [];
  $('canaries-note').textContent = list.length ? '' : 'No canaries yet.';
  $('canaries').replaceChildren(
    ...list.map((c) => el('li', {}, [c.id, c.state, c.verdict].filter(Boolean).join(' · '))),
  );
}

// --- GPU telemetry ---------------------------------------------------------

const gpuName = (m) => `${m.Hostname ?? m.hostname ?? m.node ?? m.instance}/${m.gpu ?? '?'}`;

// `values` ([[t, "v"], ...] on the 1 s grid from `start`) as n numbers or nulls.
function onGrid(values, start, n) {
  const out = new Array(n).fill(null);
  for (const [t, v] of values) {
    const i = Math.round(t - start);
    const x = Number(v);
    if (i >= 0 && i < n && Number.isFinite(x)) out[i] = x;
  }
  return out;
}

// [from, to) second ranges where some GPU reports a non-idle throttle reason.
function throttleBands(result, start, n) {
  const throttled = new Uint16Array(n);
  for (const s of result) {
    for (const [t, v] of s.values) {
      const i = Math.round(t - start);
      if (i >= 0 && i < n && (Number(v) & ~IDLE_BIT) !== 0) throttled[i] += 1;
    }
  }
  const bands = [];
  for (let i = 0; i < n; i++) {
    if (!throttled[i]) continue;
    if (bands.length && bands.at(-1)[1] === start + i) bands.at(-1)[1] += 1;
    else bands.push([start + i, start + i + 1]);
  }
  return { bands, peak: Math.max(0, ...throttled) };
}

async function loadTelemetry() {
  const end = Math.floor(Date.now() / 1000);
  const start = end - WINDOW_S;
  const range = (query) =>
    getJson(`api/v1/query_range?${new URLSearchParams({ query, start, end, step: 1 })}`);
  const [clocks, reasons] = await Promise.all([range(CLOCK_QUERY), range(REASONS_QUERY)]);
  const n = WINDOW_S + 1;
  const series = clocks.result
    .map((s) => ({ label: gpuName(s.metric), values: onGrid(s.values, start, n) }))
    .sort((a, b) => a.label.localeCompare(b.label, undefined, { numeric: true }));
  const xs = Array.from({ length: n }, (_, i) => start + i);
  return { xs, series, ...throttleBands(reasons.result, start, n) };
}

const cssVar = (name) => getComputedStyle(document.documentElement).getPropertyValue(name).trim();

// What the draw hooks read: the latest bands and release start times.
const overlay = { bands: [], releases: [] };

// Shaded throttle bands, under the grid and the series.
function drawBands(u) {
  const { left, top, width, height } = u.bbox;
  u.ctx.save();
  u.ctx.fillStyle = cssVar('--throttle');
  for (const [from, to] of overlay.bands) {
    const x0 = Math.max(left, u.valToPos(from, 'x', true));
    const x1 = Math.min(left + width, u.valToPos(to, 'x', true));
    if (x1 > x0) u.ctx.fillRect(x0, top, x1 - x0, height);
  }
  u.ctx.restore();
}

// A vertical line and the version at each release's start.
function drawReleases(u) {
  const { left, top, width, height } = u.bbox;
  const px = uPlot.pxRatio;
  u.ctx.save();
  u.ctx.strokeStyle = u.ctx.fillStyle = cssVar('--release');
  u.ctx.lineWidth = 2 * px;
  u.ctx.font = `${11 * px}px system-ui, sans-serif`;
  u.ctx.textAlign = 'left'; // uPlot leaves its axes' alignment set
  u.ctx.textBaseline = 'top';
  for (const r of overlay.releases) {
    const x = Math.round(u.valToPos(r.started_at, 'x', true));
    if (x < left || x > left + width) continue;
    u.ctx.beginPath();
    u.ctx.moveTo(x, top);
    u.ctx.lineTo(x, top + height);
    u.ctx.stroke();
    const label = r.version ?? r.id ?? '';
    const w = u.ctx.measureText(label).width;
    const lx = x + 4 * px + w <= left + width ? x + 4 * px : x - 4 * px - w;
    u.ctx.fillText(label, lx, top + 2 * px);
  }
  u.ctx.restore();
}

let plot = null;
let plotLabels = '';

function chartOptions(labels, width) {
  const axis = { stroke: cssVar('--muted'), grid: { stroke: cssVar('--line'), width: 1 } };
  return {
    width,
    height: CHART_HEIGHT,
    scales: { x: { time: true } },
    axes: [
      { ...axis, space: 70, values: (u, ticks) => ticks.map(clockTime) },
      { ...axis, label: 'MHz' },
    ],
    series: [
      { label: 'time', value: (u, t) => (t == null ? '--' : clockTime(t)) },
      ...labels.map((label, i) => ({
        label,
        stroke: `hsl(${(i * 137.5) % 360} 65% 48%)`,
        width: 1.25,
        points: { show: false },
      })),
    ],
    hooks: { drawClear: [drawBands], draw: [drawReleases] },
  };
}

function renderTelemetry(t, releases) {
  overlay.bands = t.bands;
  overlay.releases = releases ?? [];
  const data = [t.xs, ...t.series.map((s) => s.values)];
  const labels = t.series.map((s) => s.label);
  const box = $('telemetry-chart');
  if (!plot || plotLabels !== labels.join('\n')) {
    plot?.destroy();
    plot = new uPlot(chartOptions(labels, box.clientWidth), data, box);
    plotLabels = labels.join('\n');
  } else {
    plot.setData(data);
  }

  const latest = t.series.map((s) => s.values.findLast((v) => v !== null)).filter((v) => v != null);
  const points = t.series.reduce((n, s) => n + s.values.filter((v) => v !== null).length, 0);
  const throttledS = t.bands.reduce((n, [from, to]) => n + to - from, 0);
  const figure = $('telemetry');
  figure.dataset.series = String(t.series.length);
  figure.dataset.points = String(points);
  $('telemetry-summary').textContent = t.series.length
    ? `${t.series.length} GPUs; SM clock now ${Math.min(...latest)}–${Math.max(...latest)} MHz; ` +
      `throttled ${throttledS} s of the last ${WINDOW_S / 60} min` +
      (t.peak ? ` (at most ${t.peak} GPUs at once).` : '.')
    : 'No SM clock data in the last 10 minutes.';
}

// --- refresh loop ------------------------------------------------------------

function show(result, render, noteId, ...extra) {
  if (result.status === 'fulfilled') render(result.value, ...extra);
  else $(noteId).textContent = `Could not load: ${result.reason.message}`;
}

async function refresh() {
  const [targets, metrics, releases, canaries, telemetry] = await Promise.allSettled([
    getJson('api/v1/targets'),
    getText('metrics'),
    getJson('api/v1/releases?limit=50', { optional: true }),
    getJson('api/v1/canaries', { optional: true }),
    loadTelemetry(),
  ]);
  renderStatus(targets, metrics);
  show(targets, renderFleet, 'fleet-note');
  show(releases, renderReleases, 'releases-note');
  show(canaries, renderCanaries, 'canaries-note');
  const markers = releases.status === 'fulfilled' ? releases.value : [];
  show(telemetry, renderTelemetry, 'telemetry-summary', markers);
}

async function loop() {
  try {
    if (!document.hidden) await refresh();
  } finally {
    setTimeout(loop, REFRESH_MS);
  }
}

window.addEventListener('resize', () =>
  plot?.setSize({ width: $('telemetry-chart').clientWidth, height: CHART_HEIGHT }),
);
loop();
