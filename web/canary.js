// The dashboard's canaries (docs/dashboard.md, "Canaries"): the list, and
// for the selected one (#canary=<id>, else the newest running, else the
// newest) its release, hosts, verdict, causes in words, the judge's metric
// table, notes, the actions taken, and live charts of the canary GPUs' mean
// against the baseline GPUs' mean per metric, from the daemon's raw samples.
//
// The daemon's query API answers selectors only (no avg(), no rate()), so
// the charts read the raw 1 s samples of the canary's and the baseline's
// hosts (`{__name__=~"...",Hostname=~"..."}[Ns]`, the label the canary
// manager matches hosts by) and average them here, second by second: a
// second without samples is a gap, never a zero. Each refresh reads only
// the seconds since the last read (and a few before, for late scrapes).

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
  isoTime,
  setText,
  timeAxes,
  vocabulary,
} from './common.js';

const BEFORE_S = 120; // telemetry shown before the release started
const AFTER_END_S = 3; // ... and after a finished canary ended
// A finished canary is read again until this long after it ended (the
// actions run after the verdict; the last scrapes land 2.5 s late), then no
// more: its view stays as last read.
const SETTLE_S = 8;
const OVERLAP_S = 10; // each read repeats this many seconds for late scrapes
const BLOCK_S = 10; // p99 over the trailing 10 s (the default policy's block)
const CHART_HEIGHT = 190;
// DCGM's blank sentinels (DCGM_FT_INT32_BLANK and up) are "no value".
const DCGM_BLANK = 0x7ffffff0;
// The labels the canary manager finds hosts by (src/canary/manager.cc).
const HOST_LABELS = ['Hostname', 'hostname'];

// Charted for every canary, before the policy's own metrics.
const CORE_CHARTS = [
  { name: 'DCGM_FI_DEV_SM_CLOCK', kind: 'gauge' },
  { name: 'DCGM_FI_DEV_POWER_USAGE', kind: 'gauge' },
  { name: 'DCGM_FI_DEV_GPU_TEMP', kind: 'gauge' },
  { name: 'DCGM_FI_PROF_DRAM_ACTIVE', kind: 'gauge' },
  { name: 'generated_tokens', kind: 'rate' },
  { name: 'per_token_latency', kind: 'mean' },
];
// Titles, units and scales of the metrics we know; others show their name.
const KNOWN = {
  DCGM_FI_DEV_SM_CLOCK: { title: 'SM clock', unit: 'MHz' },
  DCGM_FI_DEV_POWER_USAGE: { title: 'Power', unit: 'W' },
  DCGM_FI_DEV_GPU_TEMP: { title: 'GPU temperature', unit: '°C' },
  DCGM_FI_PROF_DRAM_ACTIVE: { title: 'DRAM active', unit: '%', scale: 100 },
  DCGM_FI_PROF_SM_ACTIVE: { title: 'SM active', unit: '%', scale: 100 },
  DCGM_FI_PROF_SM_OCCUPANCY: { title: 'SM occupancy', unit: '%', scale: 100 },
  DCGM_FI_PROF_PIPE_TENSOR_ACTIVE: { title: 'Tensor pipe active', unit: '%', scale: 100 },
  DCGM_FI_DEV_PCIE_REPLAY_COUNTER: { title: 'PCIe replays', unit: '/s per GPU' },
  DCGM_FI_DEV_ECC_SBE_VOL_TOTAL: { title: 'ECC single-bit errors', unit: '/s per GPU' },
  'vllm:generation_tokens_total': { title: 'Generated tokens', unit: 'tokens/s per node' },
  'vllm:time_per_output_token_seconds': { title: 'Time per output token', unit: 'ms', scale: 1e3 },
  'vllm:time_to_first_token_seconds': { title: 'Time to first token', unit: 'ms', scale: 1e3 },
  'vllm:e2e_request_latency_seconds': { title: 'End-to-end request latency', unit: 's' },
  // The service measures (docs/vocabulary.md): each server's series, in the
  // measure's unit once scaled by the vocabulary's factor.
  generated_tokens: { title: 'Generated tokens', unit: 'tokens/s per node' },
  per_token_latency: { title: 'Per-token latency', unit: 'ms', scale: 1e3 },
  time_to_first_token: { title: 'Time to first token', unit: 'ms', scale: 1e3 },
  e2e_latency: { title: 'End-to-end request latency', unit: 's' },
  queue_depth: { title: 'Queue depth', unit: 'requests' },
  kv_cache_usage: { title: 'KV-cache usage', unit: '%', scale: 100 },
};
// Which of a server's ways to expose a measure (the vocabulary's types) a
// chart of each kind can read.
const SOURCE_TYPES = { mean: 'histogram', p99: 'histogram', rate: 'counter', gauge: 'gauge' };
// What each kind of chart shows, per side (docs/analysis-method.md's kinds).
const KIND_WORDS = {
  gauge: 'mean over the GPUs',
  rate: 'increase per second, mean over the series',
  count: 'events per second, mean over the series',
  mean: 'mean observation: increase of _sum / of _count',
  p99: `99th percentile of the last ${BLOCK_S} s of observations`,
};

const numberFormat = new Intl.NumberFormat(undefined, { maximumSignificantDigits: 4 });
const fmt = (x) => (x == null || !Number.isFinite(x) ? '–' : numberFormat.format(x));
const sign = (x) => (x > 0 ? '+' : x < 0 ? '−' : '');
const pct = (x) => (x == null ? null : `${sign(x)}${fmt(Math.abs(x * 100))} %`);
const enc = encodeURIComponent;

// The canary the page shows, and what it has read of it.
const view = {
  id: null,
  detail: null, // GET api/v1/canaries/{id}
  release: null, // GET api/v1/releases/{release}, or null
  telemetry: null, // the sample cache (readTelemetry)
  settled: false, // finished and read for the last time
  charts: [], // [{ spec, figure, box, plot }]
  chartKey: '',
};

// --- small renderers ----------------------------------------------------------

export function stateBadge(state) {
  return el('span', { class: `badge state-${state}` }, state);
}

function verdictBadge(verdict) {
  return el('span', { class: `badge verdict-${verdict}` }, verdict);
}

const hostList = (hosts) => (hosts.length ? hosts.join(', ') : 'none');
const hostsText = (hosts, gpus) => `${hostList(hosts)} (${gpus} GPUs)`;

function selectedFromHash() {
  const m = location.hash.match(/^#canary=(.+)$/);
  if (!m) return null;
  try {
    return decodeURIComponent(m[1]);
  } catch {
    return null;
  }
}

function renderList(list, id) {
  $('canaries-note').textContent = list.length ? '' : 'No canaries yet.';
  const items = list.map((c) =>
    el(
      'li',
      { 'data-id': c.id, 'data-state': c.state },
      el(
        'a',
        id === c.id
          ? { href: `#canary=${enc(c.id)}`, 'aria-current': 'true' }
          : { href: `#canary=${enc(c.id)}` },
        stateBadge(c.state),
        ' ',
        el('strong', {}, c.id),
        el(
          'span',
          { class: 'detail' },
          ` · verdict ${c.verdict} · started `,
          el('time', { datetime: isoTime(c.started_at) }, dateTime(c.started_at)),
          ` · canary ${hostList(c.canary_hosts)} vs ${c.baseline_hosts.length} baseline hosts`,
        ),
      ),
    ),
  );
  $('canaries').replaceChildren(...items);
}

// The annotation's fields in docs/contracts.md §5's order, then any others it has.
const RELEASE_FIELDS = [
  'id', 'service', 'version', 'environment', 'model', 'checkpoint', 'quantization', 'framework',
  'framework_version', 'cuda_version', 'git_sha', 'previous', 'started_at', 'targets', 'selector',
];

function renderRelease(release, releaseId) {
  if (!release) return [el('dt', {}, 'release'), el('dd', {}, `${releaseId} (annotation not found)`)];
  const keys = [
    ...RELEASE_FIELDS.filter((k) => k in release),
    ...Object.keys(release).filter((k) => !RELEASE_FIELDS.includes(k)),
  ];
  return keys.flatMap((k) => {
    const v = release[k];
    let text;
    if (k === 'started_at' && typeof v === 'number') text = dateTime(v);
    else if (Array.isArray(v)) text = v.join(', ');
    else if (v !== null && typeof v === 'object') text = JSON.stringify(v);
    else text = String(v);
    return [el('dt', {}, k.replaceAll('_', ' ')), el('dd', { 'data-field': k }, text)];
  });
}

function renderCause(c) {
  const facts = [
    c.kind,
    `scope ${c.scope}`,
    c.nodes?.length ? `nodes ${c.nodes.join(', ')}` : null,
    c.gpus?.length ? `${c.gpus.length} GPU${c.gpus.length === 1 ? '' : 's'}` : null,
    c.since != null ? `since ${clockTime(c.since)}` : null,
    c.decided_at != null ? `decided ${clockTime(c.decided_at)}` : null,
    c.origin ? `found by ${c.origin}` : null,
    c.failing
      ? 'counts against the release'
      : c.scope === 'node'
        ? 'a fault of the node, not of the release'
        : 'does not count against the release',
  ].filter(Boolean);
  const evidence = (c.evidence ?? []).map((e) => {
    const unit = e.unit && e.unit !== 'ratio' ? ` ${e.unit}` : '';
    const text = `${e.metric}: baseline ${fmt(e.baseline)}${unit}, canary ${fmt(e.canary)}${unit}`;
    return el('li', {}, text);
  });
  return el(
    'li',
    { class: `cause ${c.failing ? 'failing' : 'not-failing'}`, 'data-kind': c.kind },
    el('p', { class: 'summary' }, c.summary),
    el('p', { class: 'detail' }, facts.join(' · ')),
    evidence.length ? el('ul', { class: 'evidence' }, ...evidence) : '',
  );
}

function intervalText([lo, hi]) {
  if (lo == null && hi == null) return '–';
  return `${pct(lo) ?? '−∞'} … ${pct(hi) ?? '+∞'}`;
}

function renderMetricRow(m) {
  return el(
    'tr',
    { 'data-metric': m.name },
    el(
      'td',
      {},
      el('code', {}, m.name),
      m.critical ? el('span', { class: 'detail' }, ' · critical') : '',
    ),
    el('td', {}, `${m.kind}, ${m.better} is better`),
    el('td', { class: 'num' }, fmt(m.baseline)),
    el('td', { class: 'num' }, fmt(m.canary)),
    el('td', { class: 'num' }, pct(m.change) ?? '–'),
    el('td', { class: 'num' }, intervalText(m.interval ?? [])),
    el('td', { class: `result-${m.result}` }, m.result.replace('_', ' ')),
  );
}

function renderAction(a) {
  const detail = a.detail ?? '';
  const skipped = /^skipped: /.test(detail);
  const outcome = skipped ? 'skipped' : a.ok ? 'ok' : 'failed';
  return el(
    'tr',
    { 'data-action': a.name, 'data-outcome': outcome },
    el('td', {}, el('time', { datetime: isoTime(a.at) }, clockTime(a.at))),
    el('td', {}, a.name),
    el('td', {}, a.kind),
    el('td', { class: `outcome-${outcome}` }, outcome),
    el('td', { class: 'num' }, String(a.attempts ?? '')),
    el('td', { class: 'num' }, a.duration_ms != null ? `${fmt(a.duration_ms)} ms` : ''),
    el('td', {}, detail.replace(/^(skipped: )+/, '')),
  );
}

// The verdict in words: what it is, how sure, since when. A live region:
// it changes when the verdict does, not on every refresh.
function verdictSentence(d) {
  const r = d.report;
  const parts = [`Verdict ${r.verdict}`];
  if (r.score) parts.push(`score ${fmt(r.score)} (−log10 of the error rate it holds at)`);
  parts.push(r.decided_at != null ? `decided at ${dateTime(r.decided_at)}` : 'not decided yet');
  if (d.ended_at != null) parts.push(`canary ended ${dateTime(d.ended_at)}`);
  return `${parts.join(', ')}.`;
}

function renderDetail(d, release) {
  const r = d.report;
  const v = $('canary-view');
  v.dataset.id = d.id;
  v.dataset.state = d.state;
  v.dataset.verdict = r.verdict;
  $('canary-title').replaceChildren(
    'Canary ',
    el('span', { class: 'canary-id' }, d.id),
    ' ',
    stateBadge(d.state),
    ' ',
    verdictBadge(r.verdict),
  );
  setText($('canary-verdict'), verdictSentence(d));
  setText($('canary-reason'), d.reason ?? '');
  $('canary-release').replaceChildren(...renderRelease(release, d.release));
  $('canary-hosts').replaceChildren(
    el('dt', {}, 'canary hosts'),
    el('dd', { 'data-field': 'canary_hosts' }, hostsText(d.canary_hosts, r.canary_gpus)),
    el('dt', {}, 'baseline hosts'),
    el('dd', { 'data-field': 'baseline_hosts' }, hostsText(d.baseline_hosts, r.baseline_gpus)),
    el('dt', {}, 'started'),
    el('dd', {}, dateTime(d.started_at)),
  );
  $('canary-causes').replaceChildren(...r.causes.map(renderCause));
  setText($('canary-causes-note'), r.causes.length ? '' : 'No causes found (yet).');
  $('canary-metrics').tBodies[0].replaceChildren(...r.metrics.map(renderMetricRow));
  $('canary-notes').replaceChildren(...r.notes.map((n) => el('li', {}, n)));
  setText($('canary-notes-note'), r.notes.length ? '' : 'None.');
  $('canary-actions').tBodies[0].replaceChildren(...d.actions.map(renderAction));
  setText(
    $('canary-actions-note'),
    d.actions.length
      ? ''
      : d.state === 'failed'
        ? 'No actions recorded (none configured, or still running).'
        : 'None: actions run when a canary fails.',
  );
}

// --- telemetry ------------------------------------------------------------------

// The series names one source of a chart reads.
function sourceNames(kind, name) {
  if (kind === 'mean') return [`${name}_sum`, `${name}_count`];
  if (kind === 'p99') return [`${name}_bucket`];
  return [name];
}

// The series names a chart reads: every server's, for a measure.
function inputNames(spec) {
  return spec.sources.flatMap((src) => sourceNames(spec.kind, src.name));
}

// The charts of a canary: the core set, then the policy's metrics (the
// judge's table) not already among them. A service measure reads the series
// of every server the vocabulary knows for it (`service_metrics` of
// GET api/v1/vocabulary; rows with a label selector are left out); any other
// name is its own series.
function chartSpecs(report, serviceMetrics) {
  const wanted = [...CORE_CHARTS];
  for (const m of report.metrics) {
    if (!KIND_WORDS[m.kind]) continue;
    if (!wanted.some((s) => s.name === m.name && s.kind === m.kind)) {
      wanted.push({ name: m.name, kind: m.kind });
    }
  }
  return wanted.map(({ name, kind }) => {
    const rows = serviceMetrics.filter(
      (r) => r.measure === name && r.type === SOURCE_TYPES[kind] && r.selector == null,
    );
    const sources = rows.length
      ? [...new Map(rows.map((r) => [r.metric, { name: r.metric, scale: r.scale }])).values()]
      : [{ name, scale: 1 }];
    return { name, kind, sources };
  });
}

const regexQuote = (s) => s.replace(/[\\.+*?()|[\]{}^$]/g, '\\$&');
const labelQuote = (s) => s.replace(/\\/g, '\\\\').replace(/"/g, '\\"');

// Inserts [t, v] into a series' sorted arrays (a repeated sample replaces).
function addSample(s, t, v) {
  const n = s.t.length;
  if (n === 0 || t > s.t[n - 1]) {
    s.t.push(t);
    s.v.push(v);
    return;
  }
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (s.t[mid] < t) lo = mid + 1;
    else hi = mid;
  }
  if (s.t[lo] === t) s.v[lo] = v;
  else {
    s.t.splice(lo, 0, t);
    s.v.splice(lo, 0, v);
  }
}

// Reads the samples of `names` on the canary's and baseline's hosts from
// the last read (less OVERLAP_S) through `end` into view.telemetry.
async function readTelemetry(d, names, end) {
  const from = Math.floor(d.started_at) - BEFORE_S;
  let cache = view.telemetry;
  const key = names.join('|');
  if (!cache || cache.key !== key) {
    cache = { key, from, readTo: null, series: new Map() };
    view.telemetry = cache;
  }
  const readFrom = cache.readTo == null ? from - 1 : Math.max(from - 1, cache.readTo - OVERLAP_S);
  const hosts = [...d.canary_hosts, ...d.baseline_hosts];
  if (end <= readFrom || !hosts.length) return cache;
  const side = new Map([
    ...d.baseline_hosts.map((h) => [h, 'baseline']),
    ...d.canary_hosts.map((h) => [h, 'canary']),
  ]);
  const nameRe = labelQuote(names.map(regexQuote).join('|'));
  const hostRe = labelQuote(hosts.map(regexQuote).join('|'));
  const answers = await Promise.all(
    HOST_LABELS.map((label) => {
      const query = `{__name__=~"${nameRe}",${label}=~"${hostRe}"}[${end - readFrom}s]`;
      return getJson(`api/v1/query?${new URLSearchParams({ query, time: end })}`);
    }),
  );
  answers.forEach((answer, k) => {
    for (const s of answer.result) {
      const id = JSON.stringify(s.metric);
      let entry = cache.series.get(id);
      if (!entry) {
        const host = s.metric[HOST_LABELS[k]];
        entry = { name: s.metric.__name__, labels: s.metric, side: side.get(host), t: [], v: [] };
        cache.series.set(id, entry);
      }
      for (const [t, v] of s.values) addSample(entry, t, Number(v));
    }
  });
  cache.readTo = end;
  return cache;
}

// Per second i from `from`, calls visit(i, value) for a gauge's samples
// (the last of a second wins) and returns how many seconds it visited.
function eachGauge(s, from, n, blankCheck, visit) {
  let last = -1;
  for (let k = 0; k < s.t.length; k++) {
    const i = Math.floor(s.t[k]) - from;
    const v = s.v[k];
    if (i < 0 || i >= n || !Number.isFinite(v) || (blankCheck && v >= DCGM_BLANK)) continue;
    visit(i, v, i === last);
    last = i;
  }
}

// A counter's increase per second at each second (Prometheus's reset rule: a
// drop means the counter restarted from 0), over each pair of samples.
function eachRate(s, from, n, visit) {
  for (let k = 1; k < s.t.length; k++) {
    const i = Math.floor(s.t[k]) - from;
    const dt = s.t[k] - s.t[k - 1];
    const a = s.v[k - 1];
    const b = s.v[k];
    if (i < 0 || i >= n || !(dt > 0) || !Number.isFinite(a) || !Number.isFinite(b)) continue;
    visit(i, b >= a ? b - a : b, dt);
  }
}

// The mean over series of a per-second value (gauge or rate); null where no
// series of the side has a sample.
function sideMean(series, from, n, kind, dcgm) {
  const sum = new Float64Array(n);
  const count = new Uint32Array(n);
  for (const s of series) {
    if (kind === 'gauge') {
      let prev = 0;
      eachGauge(s, from, n, dcgm, (i, v, again) => {
        if (again) sum[i] += v - prev;
        else {
          sum[i] += v;
          count[i] += 1;
        }
        prev = v;
      });
    } else {
      const inc = new Float64Array(n);
      const dts = new Float64Array(n);
      eachRate(s, from, n, (i, d, dt) => {
        inc[i] += d;
        dts[i] += dt;
      });
      for (let i = 0; i < n; i++) {
        if (dts[i] > 0) {
          sum[i] += inc[i] / dts[i];
          count[i] += 1;
        }
      }
    }
  }
  return Array.from(sum, (x, i) => (count[i] ? x / count[i] : null));
}

// A histogram's mean observation per second: sum of the _sum increases over
// sum of the _count increases of the side's series.
function sideHistogramMean(series, name, from, n) {
  const sums = new Float64Array(n);
  const counts = new Float64Array(n);
  const seen = new Uint8Array(n);
  for (const s of series) {
    const target = s.name === `${name}_sum` ? sums : counts;
    eachRate(s, from, n, (i, d) => {
      target[i] += d;
      seen[i] = 1;
    });
  }
  return Array.from(sums, (x, i) => (seen[i] && counts[i] > 0 ? x / counts[i] : null));
}

// Prometheus's histogram_quantile over cumulative [le, count] pairs sorted
// by le (the last +Inf): linear within the bucket the rank falls in.
function quantile(q, buckets) {
  const total = buckets.at(-1)[1];
  if (!(total > 0)) return null;
  const rank = q * total;
  let b = buckets.findIndex(([, c]) => c >= rank);
  if (b === buckets.length - 1) return buckets.length > 1 ? buckets.at(-2)[0] : null;
  const [upper, count] = buckets[b];
  const [lower, below] = b > 0 ? buckets[b - 1] : [0, 0];
  if (b === 0 && upper <= 0) return upper;
  return count > below ? lower + ((upper - lower) * (rank - below)) / (count - below) : upper;
}

// The side's p99 observation over the trailing BLOCK_S seconds at each
// second it has bucket samples.
function sideP99(series, from, n) {
  const byLe = new Map();
  const seen = new Uint8Array(n);
  for (const s of series) {
    const le = s.labels.le === '+Inf' ? Infinity : Number(s.labels.le);
    if (Number.isNaN(le)) continue;
    if (!byLe.has(le)) byLe.set(le, new Float64Array(n + 1));
    const prefix = byLe.get(le);
    eachRate(s, from, n, (i, d) => {
      prefix[i + 1] += d;
      seen[i] = 1;
    });
  }
  const les = [...byLe.keys()].sort((a, b) => a - b);
  if (!les.length || les.at(-1) !== Infinity) return new Array(n).fill(null);
  for (const le of les) {
    const p = byLe.get(le);
    for (let i = 1; i <= n; i++) p[i] += p[i - 1];
  }
  return Array.from(seen, (s, i) => {
    if (!s) return null;
    const lo = Math.max(0, i + 1 - BLOCK_S);
    return quantile(0.99, les.map((le) => [le, byLe.get(le)[i + 1] - byLe.get(le)[lo]]));
  });
}

// [canary, baseline] values of one chart on the grid from `from`.
// A measure's servers each chart their own series: the first source that has
// any (a fleet mid-upgrade shows the one most of it serves first in the table).
function chartSource(spec, byName) {
  return (
    spec.sources.find((src) =>
      sourceNames(spec.kind, src.name).some((name) => (byName.get(name) ?? []).length),
    ) ?? spec.sources[0]
  );
}

function chartValues(spec, byName, from, n) {
  const source = chartSource(spec, byName);
  const scale = (KNOWN[spec.name]?.scale ?? 1) * source.scale;
  const dcgm = spec.name.startsWith('DCGM_');
  return ['canary', 'baseline'].map((side) => {
    const series = sourceNames(spec.kind, source.name).flatMap((name) =>
      (byName.get(name) ?? []).filter((s) => s.side === side),
    );
    let values;
    if (spec.kind === 'gauge') values = sideMean(series, from, n, 'gauge', dcgm);
    else if (spec.kind === 'mean') values = sideHistogramMean(series, source.name, from, n);
    else if (spec.kind === 'p99') values = sideP99(series, from, n);
    else values = sideMean(series, from, n, 'rate', dcgm);
    return values.map((v) => (v == null ? null : v * scale));
  });
}

// Seconds in which a canary GPU reports a clock-event reason other than idle.
function throttledSeconds(byName, from, n) {
  const counts = new Uint16Array(n);
  for (const name of REASON_METRICS) {
    for (const s of byName.get(name) ?? []) {
      if (s.side !== 'canary') continue;
      eachGauge(s, from, n, true, (i, v) => {
        if ((v & ~IDLE_BIT) !== 0) counts[i] += 1;
      });
    }
  }
  return counts;
}

// --- charts ---------------------------------------------------------------------

// What the draw hooks of every canary chart read.
const overlay = { bands: [], marks: [] };

function chartTitle(spec) {
  const known = KNOWN[spec.name];
  const title = known?.title ?? spec.name;
  return spec.kind === 'p99' ? `p99 ${title.toLowerCase()}` : title;
}

function makeChart(spec) {
  const unit = KNOWN[spec.name]?.unit ?? (spec.kind === 'rate' || spec.kind === 'count' ? '/s' : '');
  const figure = el(
    'figure',
    { class: 'canary-chart', 'data-metric': spec.name, 'data-kind': spec.kind },
    el(
      'figcaption',
      {},
      el('strong', {}, chartTitle(spec)),
      unit ? ` (${unit})` : '',
      ' · ',
      el('code', {}, spec.name),
      el('span', { class: 'detail' }, ` · ${KIND_WORDS[spec.kind]}`),
      el('span', { class: 'judged' }),
    ),
  );
  const box = el('div', { class: 'chart' });
  const summary = el('p', { class: 'note summary' });
  figure.append(box, summary);
  $('canary-charts').append(figure);
  const value = (u, v) => (v == null ? '–' : fmt(v));
  const plot = new uPlot(
    {
      width: box.clientWidth,
      height: CHART_HEIGHT,
      scales: { x: { time: true } },
      axes: timeAxes(unit, { size: 60 }),
      series: [
        { label: 'time', value: (u, t) => (t == null ? '--' : clockTime(t)) },
        { label: 'canary', stroke: cssVar('--canary'), width: 1.75, points: { show: false }, value },
        { label: 'baseline', stroke: cssVar('--baseline'), width: 1.5, points: { show: false }, value },
      ],
      hooks: {
        drawClear: [(u) => drawBands(u, overlay.bands, cssVar('--throttle'))],
        draw: [(u) => drawMarks(u, overlay.marks)],
      },
    },
    [[], [], []],
    box,
  );
  return { spec, figure, box, summary, plot };
}

function destroyCharts() {
  for (const c of view.charts) c.plot.destroy();
  view.charts = [];
  view.chartKey = '';
  $('canary-charts').replaceChildren();
}

export function resizeCanaryCharts() {
  for (const c of view.charts) c.plot.setSize({ width: c.box.clientWidth, height: CHART_HEIGHT });
}

function renderCharts(d, specs, cache) {
  const key = specs.map((s) => `${s.kind}:${s.name}`).join('\n');
  if (key !== view.chartKey) {
    destroyCharts();
    view.charts = specs.map((spec) => makeChart(spec));
    view.chartKey = key;
  }
  // From the first second with data (a daemon younger than the window has
  // none before it started) to the last read.
  const byName = new Map();
  let first = Infinity;
  for (const s of cache.series.values()) {
    if (!s.side) continue;
    if (!byName.has(s.name)) byName.set(s.name, []);
    byName.get(s.name).push(s);
    if (s.t.length) first = Math.min(first, Math.floor(s.t[0]));
  }
  const from = Math.max(cache.from, Math.min(first, cache.readTo));
  const n = cache.readTo - from + 1;
  const xs = Array.from({ length: n }, (_, i) => from + i);
  const throttled = throttledSeconds(byName, from, n);
  overlay.bands = bandsOf(throttled, from);
  overlay.marks = [{ t: d.started_at, colour: cssVar('--release'), label: 'release' }];
  if (d.report.decided_at != null) {
    const label = `decided ${d.report.verdict}`;
    overlay.marks.push({ t: d.report.decided_at, colour: cssVar('--bad'), label });
  } else if (d.ended_at != null) {
    overlay.marks.push({ t: d.ended_at, colour: cssVar('--muted'), label: `ended (${d.state})` });
  }
  const judged = new Map(d.report.metrics.map((m) => [`${m.kind}:${m.name}`, m]));
  for (const c of view.charts) {
    const [canary, baseline] = chartValues(c.spec, byName, from, n);
    c.plot.setData([xs, canary, baseline]);
    const points = (vs) => vs.reduce((k, v) => k + (v === null ? 0 : 1), 0);
    c.figure.dataset.canaryPoints = String(points(canary));
    c.figure.dataset.baselinePoints = String(points(baseline));
    const m = judged.get(`${c.spec.kind}:${c.spec.name}`);
    c.figure.querySelector('.judged').textContent = m
      ? ` · judged ${m.result.replace('_', ' ')}${m.change != null ? ` (${pct(m.change)})` : ''}`
      : '';
    const last = (vs) => vs.findLast((v) => v !== null);
    const lc = last(canary);
    const lb = last(baseline);
    setText(
      c.summary,
      lc == null && lb == null
        ? 'No data for these hosts.'
        : `Latest: canary ${fmt(lc)}, baseline ${fmt(lb)}` +
            (lc != null && lb ? ` (${pct(lc / lb - 1)}).` : '.'),
    );
  }
  const throttledS = throttled.reduce((k, x) => k + (x ? 1 : 0), 0);
  $('canary-view').dataset.throttled = String(throttledS);
  setText(
    $('canary-charts-note'),
    `From ${clockTime(from)} to ${clockTime(cache.readTo)}; ` +
      (throttledS ? `a canary GPU was throttled in ${throttledS} s.` : 'no canary GPU throttled.'),
  );
}

// --- the refresh ----------------------------------------------------------------

// The canary to show: the hash's, else the newest running, else the newest.
function chooseCanary(list) {
  const wanted = selectedFromHash();
  if (wanted) return wanted;
  return (list.find((c) => c.state === 'running') ?? list[0])?.id ?? null;
}

async function update(list) {
  const id = chooseCanary(list);
  renderList(list, id);
  const section = $('canary-view');
  if (id !== view.id) {
    destroyCharts();
    Object.assign(view, { id, detail: null, release: null, telemetry: null, settled: false });
    for (const key of Object.keys(section.dataset)) delete section.dataset[key];
  }
  const summary = list.find((c) => c.id === id);
  if (!summary) {
    section.hidden = true;
    if (id && list.length) $('canaries-note').textContent = `No canary ${id}.`;
    return;
  }
  section.hidden = false;
  if (view.settled) return;
  const now = Date.now() / 1000;
  try {
    const [d, release] = await Promise.all([
      getJson(`api/v1/canaries/${enc(id)}`),
      view.release?.id === summary.release
        ? view.release
        : getJson(`api/v1/releases/${enc(summary.release)}`, { optional: true }),
    ]);
    if (view.id !== id) return; // another canary was selected meanwhile
    view.detail = d;
    view.release = release;
    renderDetail(d, release);
    const finished = d.state !== 'running' && d.ended_at != null;
    const end = finished
      ? Math.min(Math.floor(now), Math.ceil(d.ended_at) + AFTER_END_S)
      : Math.floor(now);
    const specs = chartSpecs(d.report, (await vocabulary()).service_metrics ?? []);
    if (view.id !== id) return;
    try {
      const names = [...new Set([...specs.flatMap(inputNames), ...REASON_METRICS])].sort();
      const cache = await readTelemetry(d, names, end);
      if (view.id !== id) return;
      if (cache.readTo != null) renderCharts(d, specs, cache);
      else setText($('canary-charts-note'), 'The canary names no hosts: nothing to chart.');
    } catch (e) {
      setText($('canary-charts-note'), `Could not load the telemetry: ${e.message}`);
      return;
    }
    if (finished && now >= d.ended_at + SETTLE_S) {
      view.settled = true;
      section.dataset.settled = 'true';
    } else {
      delete section.dataset.settled;
    }
    setText($('canary-view-note'), '');
  } catch (e) {
    setText($('canary-view-note'), `Could not load canary ${id}: ${e.message}`);
  }
}

// One update at a time (a selection can come while a refresh runs): a call
// during one makes it run once more with the newest list.
let running = null;
let pending = null;

export function renderCanaries(list) {
  pending = Array.isArray(list) ? list : [];
  if (!running) {
    running = (async () => {
      try {
        while (pending) {
          const next = pending;
          pending = null;
          await update(next);
        }
      } finally {
        running = null;
      }
    })();
  }
  return running;
}
