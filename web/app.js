// The gpucanary dashboard: every 2 s, reads the daemon's API (docs/http-api.md)
// and renders the fleet, the GPU telemetry chart (uPlot, loaded by index.html
// as the global `uPlot`), the releases and the canaries (canary.js); the
// correlation view (correlate.js) asks only when a range is chosen. Plain
// DOM, no framework; text goes in as text nodes, never as HTML.

import { renderCanaries, resizeCanaryCharts, stateBadge } from './canary.js';
import { initCorrelate } from './correlate.js';
import {
  $,
  IDLE_BIT,
  REASON_METRICS,
  bandsOf,
  clockTime,
  cssVar,
  dateTime,
  drawBands,
  drawMarks,
  el,
  getJson,
  getText,
  isoTime,
  setText,
  timeAxes,
  vocabulary,
} from './common.js';

const REFRESH_MS = 2000;
const WINDOW_S = 600;
const CHART_HEIGHT = 320;
const CLOCK_QUERY = 'DCGM_FI_DEV_SM_CLOCK';
const REASONS_QUERY = `{__name__=~"${REASON_METRICS.join('|')}"}`;

function ago(iso) {
  const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  return s < 120 ? `${s.toFixed(1)} s ago` : `${Math.round(s / 60)} min ago`;
}

// The value of an unlabelled sample `name` in Prometheus text, or null.
function metricValue(text, name) {
  const m = text.match(new RegExp(`^${name} (\\S+)$`, 'm'));
  return m ? Number(m[1]) : null;
}

function renderStatus(targets, metrics) {
  const status = $('daemon-status');
  if (targets.status === 'rejected') {
    status.className = 'status error';
    // 401 and 403 come from a daemon that answers: it wants a token.
    const refused = targets.reason.status === 401 || targets.reason.status === 403;
    setText(
      status,
      refused
        ? `Daemon answering, but it needs an API token (${targets.reason.message})`
        : `Daemon unreachable (${targets.reason.message})`,
    );
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

// The timeline: each release with its canary's state, linked to the canary
// view, when it started one.
function renderReleases(releases, canaries) {
  $('releases-note').textContent = releases?.length ? '' : 'No releases yet.';
  const canaryOf = new Map((canaries ?? []).map((c) => [c.release, c]));
  const items = (releases ?? []).map((r) => {
    const detail = [
      r.model,
      r.quantization,
      r.git_sha && `git ${r.git_sha.slice(0, 10)}`,
      Array.isArray(r.targets) &&
        (r.targets.length > 4 ? `${r.targets.length} targets` : r.targets.join(', ')),
      r.selector,
    ].filter(Boolean);
    const canary = canaryOf.get(r.id);
    return el(
      'li',
      { 'data-release': r.id },
      el('time', { datetime: isoTime(r.started_at) }, dateTime(r.started_at)),
      el('strong', {}, [r.service, r.version].filter(Boolean).join(' ') || r.id),
      detail.length ? el('span', { class: 'detail' }, ` · ${detail.join(' · ')}`) : '',
      canary
        ? el(
            'a',
            { class: 'canary-link', href: `#canary=${encodeURIComponent(canary.id)}` },
            'canary ',
            stateBadge(canary.state),
          )
        : '',
    );
  });
  $('releases').replaceChildren(...items);
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
  return { bands: bandsOf(throttled, start), peak: Math.max(0, ...throttled) };
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

// What the draw hooks read: the latest bands and release start times.
const overlay = { bands: [], releases: [] };

let plot = null;
let plotLabels = '';

function chartOptions(labels, width) {
  return {
    width,
    height: CHART_HEIGHT,
    scales: { x: { time: true } },
    axes: timeAxes('MHz'),
    series: [
      { label: 'time', value: (u, t) => (t == null ? '--' : clockTime(t)) },
      ...labels.map((label, i) => ({
        label,
        stroke: `hsl(${(i * 137.5) % 360} 65% 48%)`,
        width: 1.25,
        points: { show: false },
      })),
    ],
    hooks: {
      drawClear: [(u) => drawBands(u, overlay.bands, cssVar('--throttle'))],
      // A vertical line and the version at each release's start.
      draw: [
        (u) => {
          const colour = cssVar('--release');
          const marks = overlay.releases.map((r) => ({
            t: r.started_at,
            colour,
            label: r.version ?? r.id ?? '',
          }));
          drawMarks(u, marks);
        },
      ],
    },
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
  const canaryList = canaries.status === 'fulfilled' ? canaries.value : [];
  show(releases, renderReleases, 'releases-note', canaryList);
  const markers = releases.status === 'fulfilled' ? releases.value : [];
  show(telemetry, renderTelemetry, 'telemetry-summary', markers);
  if (canaries.status === 'fulfilled') await renderCanaries(canaries.value);
  else $('canaries-note').textContent = `Could not load: ${canaries.reason.message}`;
}

async function loop() {
  try {
    if (!document.hidden) await refresh();
  } finally {
    setTimeout(loop, REFRESH_MS);
  }
}

window.addEventListener('resize', () => {
  plot?.setSize({ width: $('telemetry-chart').clientWidth, height: CHART_HEIGHT });
  resizeCanaryCharts();
});
// Selecting a canary (a link to #canary=<id>) shows it at once, not at the
// next refresh.
window.addEventListener('hashchange', () => {
  if (!document.hidden) refresh();
});
vocabulary();
initCorrelate();
loop();
