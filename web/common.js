// What the dashboard's modules share: DOM building, the daemon's JSON
// envelope, time formatting, and the two overlays every chart draws (shaded
// throttle bands and labelled vertical lines) as uPlot hooks. uPlot itself is
// the global `uPlot` (a classic script loaded by index.html).

// DCGM_CLOCKS_EVENT_REASON_GPU_IDLE: the clocks are low because there is no
// work, which is not a slowdown (docs/vocabulary.md).
export const IDLE_BIT = 0x1;
// dcgm-exporter names the clock-event bitmask by DCGM version: "throttle"
// before 3.3, "clocks event" since.
export const REASON_METRICS = [
  'DCGM_FI_DEV_CLOCK_THROTTLE_REASONS',
  'DCGM_FI_DEV_CLOCKS_EVENT_REASONS',
];

export const $ = (id) => document.getElementById(id);

// The API token (docs/dashboard.md, "Tokens"): once the daemon has tokens,
// every read needs one. The page asks for it when a read gets 401, keeps it
// in this tab's sessionStorage (gone when the tab closes, never sent
// anywhere but this daemon) and sends it as a Bearer token.
const TOKEN_KEY = 'gpucanary.token';

function storedToken() {
  try {
    return sessionStorage.getItem(TOKEN_KEY) ?? '';
  } catch {
    return ''; // storage disabled: no token
  }
}

function requestOptions() {
  const token = storedToken();
  return { cache: 'no-store', headers: token ? { Authorization: `Bearer ${token}` } : {} };
}

// Shows the token form after a 401, once per page load.
let tokenAsked = false;
function askForToken() {
  if (tokenAsked) return;
  tokenAsked = true;
  const form = $('token-form');
  if (!form) return;
  form.hidden = false;
  $('token-note').textContent = storedToken()
    ? 'The daemon refused the token this tab holds; enter another.'
    : 'This daemon needs an API token to read (a read token is enough).';
}

$('token-form')?.addEventListener('submit', (event) => {
  event.preventDefault();
  const token = $('token-input').value.trim();
  try {
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    $('token-note').textContent = 'This browser keeps no session storage: the token cannot be kept.';
    return;
  }
  window.location.reload();
});

// An element with attributes and children (strings become text nodes).
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) e.setAttribute(name, value);
  e.append(...children);
  return e;
}

// The `data` of a Prometheus-style JSON answer at `path` (relative to the
// page, so the dashboard also works behind a path-prefixing proxy). With
// `optional`, a 404 (an endpoint this daemon does not have) gives null.
// The `data` of a daemon API answer. A failure throws an Error whose
// `reason` is the daemon's own words when it sent them (a 400 says which
// parameter is wrong and why), for views that show them.
// Queries (`api/v1/query`, `query_range`, `series`, `labels`, `label/…`)
// go out at most QUERY_SLOTS at a time, as many as the daemon runs at once
// by default (`query.max_concurrency`): a view that draws ten charts queues
// its queries here rather than in the daemon's queue, which other clients
// share.
const QUERY_SLOTS = 2;
let queriesRunning = 0;
const queryQueue = [];
async function querySlot() {
  if (queriesRunning < QUERY_SLOTS) {
    queriesRunning += 1;
    return;
  }
  await new Promise((resolve) => queryQueue.push(resolve));  // the slot is handed over
}
function releaseQuerySlot() {
  const next = queryQueue.shift();
  if (next) next();
  else queriesRunning -= 1;
}
const isQuery = (path) => /^api\/v1\/(query|query_range|series|labels|label\/)/.test(path);

export async function getJson(path, { optional = false } = {}) {
  let response;
  if (isQuery(path)) {
    await querySlot();
    try {
      response = await fetch(path, requestOptions());
    } finally {
      releaseQuerySlot();
    }
  } else {
    response = await fetch(path, requestOptions());
  }
  if (response.status === 401) askForToken();
  if (optional && response.status === 404) return null;
  const where = path.split('?')[0];
  let body = null;
  try {
    body = await response.json();
  } catch {
    // not JSON: the status says what happened
  }
  if (response.ok && body?.status === 'success') return body.data;
  const error = new Error(
    response.ok ? `${where}: ${body?.error ?? 'error'}` : `${where}: HTTP ${response.status}`,
  );
  error.reason = body?.error ?? `HTTP ${response.status}`;
  error.status = response.status;
  throw error;
}

// The daemon's vocabulary (`GET api/v1/vocabulary`, docs/http-api.md): per
// list (`cause_kinds`, `scopes`, `verdicts`, `canary_states`,
// `service_measures`) an object from each word's name to its description,
// the words the page shows for them; `service_metrics` as the daemon sends it.
// Asked once, when the page starts (app.js); every caller shares the answer.
// A failed request gives empty lists: the views then show the bare names.
let vocabularyAnswer = null;
export function vocabulary() {
  vocabularyAnswer ??= getJson('api/v1/vocabulary').then(
    (data) =>
      Object.fromEntries(
        Object.entries(data).map(([list, words]) =>
          // service_metrics stays a list of rows (server, measure, metric,
          // type, scale, selector): the canary charts read a measure by it.
          list === 'service_metrics'
            ? [list, words]
            : [list, Object.fromEntries(words.map((w) => [w.name, w.description]))],
        ),
      ),
    () => ({
      cause_kinds: {},
      scopes: {},
      verdicts: {},
      canary_states: {},
      service_measures: {},
      service_metrics: [],
    }),
  );
  return vocabularyAnswer;
}

export async function getText(path) {
  const response = await fetch(path, requestOptions());
  if (response.status === 401) askForToken();
  if (!response.ok) throw new Error(`${path}: HTTP ${response.status}`);
  return response.text();
}

export const clockTime = (seconds) =>
  new Date(seconds * 1000).toLocaleTimeString([], { hour12: false });
export const dateTime = (seconds) =>
  new Date(seconds * 1000).toLocaleString([], { hour12: false });
export const isoTime = (seconds) => new Date(seconds * 1000).toISOString();

// Sets the text only when it changes: live regions would repeat an
// unchanged text set on every refresh.
export function setText(element, text) {
  if (element.textContent !== text) element.textContent = text;
}

export const cssVar = (name) =>
  getComputedStyle(document.documentElement).getPropertyValue(name).trim();

// [from, to) second ranges over the seconds i (from `start`) with
// counts[i] > 0.
export function bandsOf(counts, start) {
  const bands = [];
  for (let i = 0; i < counts.length; i++) {
    if (!counts[i]) continue;
    if (bands.length && bands.at(-1)[1] === start + i) bands.at(-1)[1] += 1;
    else bands.push([start + i, start + i + 1]);
  }
  return bands;
}

// Shades [from, to) x ranges across the plot; for a drawClear hook, so the
// bands lie under the grid and the series.
export function drawBands(u, bands, fill) {
  const { left, top, width, height } = u.bbox;
  u.ctx.save();
  u.ctx.fillStyle = fill;
  for (const [from, to] of bands) {
    const x0 = Math.max(left, u.valToPos(from, 'x', true));
    const x1 = Math.min(left + width, u.valToPos(to, 'x', true));
    if (x1 > x0) u.ctx.fillRect(x0, top, x1 - x0, height);
  }
  u.ctx.restore();
}

// A vertical line 2 px wide at each mark's time `t` in its `colour`, with
// its `label` at the top (right of the line where it fits, else left; a
// label that would overlap an earlier one goes a line lower); for a draw hook.
export function drawMarks(u, marks) {
  const { left, top, width, height } = u.bbox;
  const px = uPlot.pxRatio;
  const rows = []; // per text line, the [x0, x1] of the labels on it
  u.ctx.save();
  u.ctx.lineWidth = 2 * px;
  u.ctx.font = `${11 * px}px system-ui, sans-serif`;
  u.ctx.textAlign = 'left'; // uPlot leaves its axes' alignment set
  u.ctx.textBaseline = 'top';
  for (const { t, colour, label } of [...marks].sort((a, b) => a.t - b.t)) {
    const x = Math.round(u.valToPos(t, 'x', true));
    if (x < left || x > left + width) continue;
    u.ctx.strokeStyle = u.ctx.fillStyle = colour;
    u.ctx.beginPath();
    u.ctx.moveTo(x, top);
    u.ctx.lineTo(x, top + height);
    u.ctx.stroke();
    const w = u.ctx.measureText(label).width;
    const lx = x + 4 * px + w <= left + width ? x + 4 * px : x - 4 * px - w;
    const clear = (row) => row.every(([x0, x1]) => lx + w + 4 * px < x0 || lx > x1 + 4 * px);
    let r = rows.findIndex(clear);
    if (r < 0) r = rows.push([]) - 1;
    rows[r].push([lx, lx + w]);
    u.ctx.fillText(label, lx, top + (2 + 13 * r) * px);
  }
  u.ctx.restore();
}

// uPlot's axis settings in the page's colours, time on x.
export function timeAxes(unit, extra = {}) {
  const axis = { stroke: cssVar('--muted'), grid: { stroke: cssVar('--line'), width: 1 } };
  return [
    { ...axis, space: 70, values: (u, ticks) => ticks.map(clockTime) },
    { ...axis, label: unit, ...extra },
  ];
}
