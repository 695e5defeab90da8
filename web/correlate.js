// The dashboard's correlation view (docs/dashboard.md, "Which release caused
// this?"): a range picker, and the daemon's answer to
// `GET /api/v1/correlate?from=T&to=T` (docs/http-api.md, "Correlation";
// docs/contracts.md §7): per regression its sentence, headline change, onset,
// nodes and GPUs, cause and scope, the suspects with score and reason,
// every release scored with its time, space, dose and mechanism parts, and
// the evidence; then the releases considered and where each arrived.
//
// The address `#correlate?from=T&to=T` (Unix seconds or RFC 3339, as the API
// takes them; `resolution`, `min_score` and `source=prometheus` pass
// through too) opens the view
// with that range and asks at once; the button writes the range there. The
// correlation runs on the daemon's HTTP thread, so it is asked once per
// range, never on the page's 2 s refresh. A number the daemon leaves out
// (null: no data) shows as "—", never as 0.

import { $, clockTime, dateTime, el, getJson, isoTime, setText, vocabulary } from './common.js';

const DEFAULT_RANGE_S = 3600; // the last hour, as the API's own default
const DEFAULT_MIN_SCORE = 0.5; // the API's: a release is named a suspect from this score
const PASSED_ON = ['from', 'to', 'resolution', 'min_score', 'source'];
const KEPT = PASSED_ON.slice(2); // kept when the picker asks a new range
const MAX_LISTED = 8; // GPUs and arrivals listed before "and N more"
const DASH = '—';

const numberFormat = new Intl.NumberFormat(undefined, { maximumSignificantDigits: 4 });
const percentFormat = new Intl.NumberFormat(undefined, { maximumFractionDigits: 1 });
const isNumber = (x) => typeof x === 'number' && Number.isFinite(x);
const num = (x) => (isNumber(x) ? numberFormat.format(x) : DASH);
const score = (x) => (isNumber(x) ? x.toFixed(2) : DASH);
const sign = (x) => (x > 0 ? '+' : x < 0 ? '−' : '');
// The daemon's units as they read best ("C" is degrees Celsius).
const unitText = (unit) => (unit === 'C' ? '°C' : (unit ?? ''));

// A change as the report gives it: relative (a fraction: +0.42 is +42 %)
// or absolute (degrees, fractions of time) in the metric's unit.
function changeText(change, kind, unit) {
  if (!isNumber(change)) return DASH;
  if (kind === 'absolute') {
    return `${sign(change)}${num(Math.abs(change))}${unit ? ` ${unitText(unit)}` : ''}`;
  }
  return `${sign(change)}${percentFormat.format(Math.abs(change * 100))} %`;
}

function listText(items, noun) {
  if (!items?.length) return 'none';
  const shown = items.slice(0, MAX_LISTED).join(', ');
  return items.length > MAX_LISTED ? `${shown} and ${items.length - MAX_LISTED} more ${noun}` : shown;
}

const plural = (n, word) => `${n} ${word}${n === 1 ? '' : 's'}`;

// --- the range -------------------------------------------------------------------

// Unix seconds as a datetime-local value (local time, to the second).
function inputValue(seconds) {
  const d = new Date(seconds * 1000);
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}` +
    `T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

// A datetime-local value (local time) or an API time (Unix seconds, RFC
// 3339) as Unix seconds; null when it is neither.
function secondsOf(text) {
  if (text == null || text === '') return null;
  if (/^-?\d+(\.\d+)?$/.test(text)) return Number(text);
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? null : ms / 1000;
}

// The parameters of a `#correlate?...` address, or null for another address.
function paramsFromHash() {
  const m = location.hash.match(/^#correlate(?:\?(.*))?$/);
  if (!m) return null;
  const all = new URLSearchParams(m[1] ?? '');
  const params = new URLSearchParams();
  for (const key of PASSED_ON) if (all.has(key)) params.set(key, all.get(key));
  return params;
}

function showRange(params) {
  const now = Math.floor(Date.now() / 1000);
  const to = secondsOf(params?.get('to')) ?? now;
  const from = secondsOf(params?.get('from')) ?? to - DEFAULT_RANGE_S;
  $('correlate-from').value = inputValue(from);
  $('correlate-to').value = inputValue(to);
}

// --- the answer ----------------------------------------------------------------

// What each scope means for the question the view answers: the
// vocabulary's scope descriptions (set before an answer is rendered).
let scopeWords = {};

function causeItem(c) {
  return el(
    'li',
    { 'data-kind': c.kind ?? '', 'data-scope': c.scope },
    el('span', { class: `badge scope-${c.scope}` }, c.scope),
    ' ',
    el('strong', {}, c.kind ?? 'change (no mechanism named)'),
    ` — ${scopeWords[c.scope] ?? `scope ${c.scope}`}`,
    c.detail ? el('span', { class: 'detail' }, ` · ${c.detail}`) : '',
  );
}

function factRow(term, ...value) {
  return [el('dt', {}, term), el('dd', {}, ...value)];
}

// The parts of a score (each 0 to 1; the score is their product).
const PARTS = ['time', 'space', 'dose', 'mechanism'];

// A release's score, and with `parts` its parts, as a table row.
function scoredRow(s, parts) {
  return el(
    'tr',
    { 'data-release': s.release },
    el('td', { class: 'release' }, el('strong', {}, s.release)),
    el('td', { class: 'num score' }, score(s.score)),
    ...(parts ? PARTS.map((k) => el('td', { class: 'num' }, score(s[k]))) : []),
    el('td', { class: 'reason' }, s.reason ?? ''),
  );
}

function scoredTable(rows, parts, caption) {
  const partHeads = parts ? PARTS.map((k) => k[0].toUpperCase() + k.slice(1)) : [];
  const heads = ['Release', 'Score', ...partHeads, 'Why'];
  return el(
    'table',
    { class: parts ? 'candidates' : 'suspects' },
    el('caption', { class: 'visually-hidden' }, caption),
    el(
      'thead',
      {},
      el('tr', {}, ...heads.map((h, i) =>
        el('th', { scope: 'col', ...(i > 0 && i < heads.length - 1 ? { class: 'num' } : {}) }, h))),
    ),
    el('tbody', {}, ...rows.map((s) => scoredRow(s, parts))),
  );
}

function evidenceTable(evidence) {
  return el(
    'table',
    { class: 'evidence' },
    el('caption', { class: 'visually-hidden' }, 'The metrics that moved'),
    el(
      'thead',
      {},
      el(
        'tr',
        {},
        el('th', { scope: 'col' }, 'Metric'),
        el('th', { scope: 'col', class: 'num' }, 'Before → after'),
        el('th', { scope: 'col', class: 'num' }, 'Change'),
        el('th', { scope: 'col' }, 'Unit'),
        el('th', { scope: 'col', class: 'num', title: 'GPUs, or nodes for service metrics' },
          'Changed on'),
      ),
    ),
    el(
      'tbody',
      {},
      ...evidence.map((e) =>
        el(
          'tr',
          { 'data-metric': e.metric },
          el('td', {}, el('code', {}, e.metric)),
          el('td', { class: 'num' }, `${num(e.before)} → ${num(e.after)}`),
          el('td', { class: 'num' }, changeText(e.change, e.change_kind, e.unit)),
          el('td', {}, unitText(e.unit)),
          el('td', { class: 'num' }, isNumber(e.entities) ? String(e.entities) : DASH),
        ),
      ),
    ),
  );
}

function regressionItem(r, minScore) {
  const causes = r.causes ?? [];
  const suspects = r.suspects ?? [];
  const candidates = r.candidates ?? [];
  const evidence = r.evidence ?? [];
  const scope = causes[0]?.scope ?? (suspects.length ? 'release' : 'none');
  const headline = evidence.find((e) => e.metric === r.metric);
  const gpus = r.gpus ?? [];
  const card = el(
    'li',
    {
      class: `regression scope-${scope}`,
      'data-metric': r.metric,
      'data-kind': causes[0]?.kind ?? '',
      'data-scope': scope,
    },
    el('p', { class: 'summary' }, r.summary ?? r.metric),
    el(
      'dl',
      { class: 'regression-facts' },
      ...factRow(
        'Headline',
        el('code', {}, r.metric),
        ' ',
        el('strong', { class: 'change' }, changeText(r.change, r.change_kind, headline?.unit)),
      ),
      ...factRow(
        'Onset',
        isNumber(r.at) ? el('time', { datetime: isoTime(r.at) }, dateTime(r.at)) : DASH,
      ),
      ...factRow('Nodes', el('span', { class: 'nodes' }, listText(r.nodes, 'nodes'))),
      ...factRow(plural(gpus.length, 'GPU'), listText(gpus, 'GPUs')),
    ),
    el('ul', { class: 'regression-causes' }, ...causes.map(causeItem)),
  );

  if (suspects.length) {
    card.append(el('h4', {}, 'Suspects'), scoredTable(suspects, false, 'The releases named suspects'));
  } else {
    const text = `No suspect: no release scores ${minScore} or more.`;
    card.append(el('p', { class: 'no-suspect' }, text));
  }
  if (candidates.length) {
    card.append(
      el(
        'details',
        { class: 'candidates' },
        el('summary', {}, `Every release scored (${candidates.length}): time, space, dose, mechanism`),
        scoredTable(candidates, true, 'Every release scored, with the parts of its score'),
      ),
    );
  }
  if (evidence.length) card.append(el('h4', {}, 'Evidence'), evidenceTable(evidence));
  return card;
}

// When the release served on each node, and how that is known: a restart
// seen in the telemetry, else its start time (the nodes dated so in a row
// are one item).
function arrivalItems(arrivals, started) {
  const after = (at) => (isNumber(started) && at !== started ? ` (+${num(at - started)} s)` : '');
  const groups = [];
  for (const a of arrivals) {
    const last = groups.at(-1);
    if (!a.observed && isNumber(a.at) && last && !last.observed && last.at === a.at) {
      last.nodes.push(a.node);
    } else {
      groups.push({ at: a.at, observed: a.observed, nodes: [a.node] });
    }
  }
  return groups.map((g) => {
    const when = isNumber(g.at) ? `at ${clockTime(g.at)}${after(g.at)}` : DASH;
    const how = g.observed ? 'restart seen' : 'its start time (no restart seen)';
    return el(
      'li',
      { class: g.observed ? 'observed' : 'assumed', 'data-nodes': g.nodes.join(' ') },
      `${listText(g.nodes, 'nodes')} ${when}, ${how}`,
    );
  });
}

function releaseRow(r) {
  const arrivals = r.arrivals ?? [];
  const items = arrivalItems(arrivals, r.started_at);
  let reached = items.length ? el('ul', { class: 'arrivals' }, ...items) : 'no node';
  if (items.length > MAX_LISTED) {
    reached = el('details', {}, el('summary', {}, plural(arrivals.length, 'node')), reached);
  }
  return el(
    'tr',
    { 'data-release': r.id },
    el('td', { class: 'release' }, el('strong', {}, r.id)),
    el(
      'td',
      {},
      isNumber(r.started_at)
        ? el('time', { datetime: isoTime(r.started_at) }, dateTime(r.started_at))
        : DASH,
    ),
    el('td', {}, reached),
  );
}

function rangeText(from, to) {
  return isNumber(from) && isNumber(to) && from > 0 ? `${dateTime(from)} – ${dateTime(to)}` : DASH;
}

function render(data, params) {
  const regressions = data.regressions ?? [];
  const releases = data.releases ?? [];
  const section = $('correlate');
  section.dataset.regressions = String(regressions.length);
  const nodes = isNumber(data.nodes) ? plural(data.nodes, 'node') : `${DASH} nodes`;
  const facts = [
    data.gpus ? `${plural(data.gpus, 'GPU')} on ${nodes}` : null,
    isNumber(data.resolution_s) ? `${data.resolution_s} s buckets` : null,
    `${plural(releases.length, 'release')} considered`,
  ].filter(Boolean);
  const range = rangeText(data.from, data.to);
  setText(
    $('correlate-status'),
    `${plural(regressions.length, 'regression')} in the telemetry of ${range} · ${facts.join(' · ')}.`,
  );
  const empty = $('correlate-empty');
  empty.hidden = regressions.length > 0;
  setText(
    empty,
    data.gpus
      ? 'No regression in this range.'
      : 'No regression in this range: the daemon has no GPU telemetry in it.',
  );
  const minScore = params.get('min_score') ?? DEFAULT_MIN_SCORE;
  $('correlate-regressions').replaceChildren(...regressions.map((r) => regressionItem(r, minScore)));
  $('correlate-releases').tBodies[0].replaceChildren(...releases.map(releaseRow));
  setText(
    $('correlate-releases-note'),
    releases.length
      ? ''
      : 'No release was announced from 30 minutes before the range to its end.',
  );
  $('correlate-considered').hidden = false;
  section.dataset.state = regressions.length ? 'done' : 'empty';
  section.dataset.asked = params.toString();
}

function renderError(message, params) {
  const section = $('correlate');
  section.dataset.state = 'error';
  section.dataset.asked = params.toString();
  delete section.dataset.regressions;
  setText($('correlate-status'), '');
  const error = $('correlate-error');
  error.hidden = false;
  setText(error, `Could not correlate: ${message}`);
}

// Only the newest question's answer is shown.
let asked = 0;

async function correlate(params) {
  const n = ++asked;
  const section = $('correlate');
  section.dataset.state = 'loading';
  delete section.dataset.asked;
  $('correlate-run').disabled = true;
  $('correlate-error').hidden = true;
  $('correlate-empty').hidden = true;
  $('correlate-considered').hidden = true;
  $('correlate-regressions').replaceChildren();
  setText($('correlate-status'), 'Correlating…');
  try {
    const [data, words] = await Promise.all([getJson(`api/v1/correlate?${params}`), vocabulary()]);
    scopeWords = words.scopes;
    if (n === asked) render(data, params);
  } catch (e) {
    if (n === asked) renderError(e.reason ?? e.message, params);
  } finally {
    if (n === asked) $('correlate-run').disabled = false;
  }
}

function openFromHash() {
  const params = paramsFromHash();
  if (!params) return false;
  showRange(params);
  correlate(params);
  return true;
}

// Sets up the range picker and answers `#correlate?...` now and whenever
// the address changes to one.
export function initCorrelate() {
  $('correlate-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const from = secondsOf($('correlate-from').value);
    const to = secondsOf($('correlate-to').value);
    const params = new URLSearchParams({ from: String(Math.floor(from)), to: String(Math.floor(to)) });
    for (const key of KEPT) {
      const kept = paramsFromHash()?.get(key);
      if (kept != null) params.set(key, kept);
    }
    const hash = `#correlate?${params}`;
    if (location.hash === hash) correlate(params);
    else location.hash = hash; // the hashchange asks
  });
  window.addEventListener('hashchange', openFromHash);
  if (openFromHash()) $('correlate').scrollIntoView();
  else showRange(null);
}
