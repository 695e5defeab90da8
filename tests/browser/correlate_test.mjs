// Browser test of the dashboard's correlation view (docs/dashboard.md,
// "Which release caused this?"): a simulated fleet of 6 nodes × 2 GPUs
// recorded offline for 700 s (`gpucanary sim --offline`: `stable` everywhere
// at 0 s, `fp8-kernel`, whose kernels trip the power brake, on node-2 and
// node-3 at 300 s, a harmless `tokenizer-fix` on node-5 at 360 s), loaded
// into a fresh store with `gpucanary backfill`, served by `gpucanary serve`
// with the recording's releases announced to it, and Debian's Chromium
// (playwright-core) on `/#correlate?from=...&to=...`. It checks that the
// deep link opens the view with that range and shows the power-brake
// regression on node-2 and node-3 with fp8-kernel as the suspect (its score,
// reason, parts and evidence as the API gives them) and tokenizer-fix not
// named; that the range picker's button asks for a range before any release
// and shows the empty state; that a range whose end is before its start
// shows the daemon's own error text; and that nothing else logs a console
// error or fails a request. Screenshots go to a new temp directory (paths
// printed).
//
// Usage: node correlate_test.mjs GPUCANARY_BIN WEB_DIR (harness.mjs).

import path from 'node:path';

import { Run, expect, postJson, watch } from './harness.mjs';

const START = 1764680000; // the simulator's clock starts here (2025-12-02T12:53:20Z)
const FULL = { from: START, to: START + 700 };
const BEFORE_RELEASES = { from: START, to: START + 290 };
const BAD = { from: START + 700, to: START }; // `to` before `from`

// seed 1: at 120 rps, the one regression is the power brake (other seeds
// also find p99-latency noise on a node, which no release explains).
const SCENARIO = `seed: 1
duration: 700s
fleet:
  - {nodes: "node-[1-6]", gpu: h100-sxm, gpus: 2, driver: "580.105.08"}
releases:
  stable: {profile: baseline}
  fp8-kernel: {profile: baseline, power_spikiness: 2.5}
  tokenizer-fix: {profile: baseline}
traffic: {rps: 120}
events:
  - {at: 0s, deploy: stable, nodes: all}
  - {at: 300s, deploy: fp8-kernel, nodes: [node-2, node-3]}
  - {at: 360s, deploy: tokenizer-fix, nodes: [node-5]}
`;

// No scraping: the store holds the backfilled recording, and 2025's samples
// must outlive the default 15 d retention.
const SERVE_CONFIG = `listen: 127.0.0.1:0
storage:
  path: data
  retention: 10y
`;

const hashOf = ({ from, to }) => `#correlate?from=${from}&to=${to}`;
const askedOf = ({ from, to }) => `from=${from}&to=${to}`;

// Runs `gpucanary ARGS` to its end; fails unless it exits 0.
async function runToEnd(run, name, args) {
  const child = run.start(name, args);
  const code = await new Promise((resolve) => child.on('exit', resolve));
  expect(code === 0, `gpucanary ${args[0]} exited ${code}:\n${run.read(`${name}.log`)}`);
  return run.read(`${name}.log`).trim();
}

// The view's state once it has answered `range`.
async function answered(page, range, state) {
  const asked = askedOf(range);
  await page.waitForFunction(([a]) => document.querySelector('#correlate').dataset.asked === a,
    [asked], { timeout: 10000 });
  const got = await page.evaluate(() => ({ ...document.querySelector('#correlate').dataset }));
  expect(got.state === state, `range ${asked}: state ${got.state}, expected ${state}`);
  return got;
}

// The range picker's inputs as Unix seconds (they hold local time).
const pickerRange = (page) =>
  page.evaluate(() => ['from', 'to'].map((k) =>
    Date.parse(document.querySelector(`#correlate-${k}`).value) / 1000));

async function screenshot(target, dir, name) {
  const file = path.join(dir, name);
  await target.screenshot({ path: file, ...(target.url ? { fullPage: true } : {}) });
  return file;
}

const run = new Run('correlate_test.mjs');
run.limit(45);
let browser;
try {
  run.write('scenario.yaml', SCENARIO);
  const simmed = await runToEnd(run, 'sim', ['sim', '--scenario', 'scenario.yaml',
    '--offline', 'rec', '--scrape-interval', '5']);
  const loaded = await runToEnd(run, 'backfill', ['backfill', '--data', 'data', 'rec/telemetry.om']);
  const url = await run.startServe(SERVE_CONFIG);
  const releases = run.read('rec/releases.jsonl').trim().split('\n').map((l) => JSON.parse(l));
  expect(releases.map((r) => r.id).join() === 'stable,fp8-kernel,tokenizer-fix',
    `releases.jsonl: ${releases.map((r) => r.id)}`);
  for (const release of releases) {
    const posted = await postJson(`${url}/api/v1/releases`, release);
    expect(posted.status === 201, `POST ${release.id}: ${posted.status} ${posted.body}`);
    // Started a year ago: stored, but no live canary (its window is long past).
    const answer = JSON.parse(posted.body).data;
    expect(answer.canary === null && /past the canary's duration/.test(answer.canary_error ?? ''),
      `POST ${release.id}: ${posted.body}`);
  }

  // What the API answers, to compare the page with.
  const api = async ({ from, to }) => {
    const response = await fetch(`${url}/api/v1/correlate?from=${from}&to=${to}`);
    return { status: response.status, body: await response.json() };
  };
  const full = await api(FULL);
  expect(full.status === 200, `correlate ${askedOf(FULL)}: HTTP ${full.status}`);
  const brake = full.body.data.regressions.find((r) => r.causes.some((c) => c.kind === 'power_brake'));
  expect(brake, `no power_brake regression from the API: ${JSON.stringify(full.body.data)}`);
  const suspect = brake.suspects[0];
  expect(suspect?.release === 'fp8-kernel', `API suspect: ${JSON.stringify(brake.suspects)}`);
  const early = await api(BEFORE_RELEASES);
  expect(early.body.data?.regressions.length === 0,
    `the API finds regressions before any release: ${JSON.stringify(early.body.data?.regressions)}`);
  const bad = await api(BAD);
  expect(bad.status === 400 && bad.body.errorType === 'bad_data', `bad range: HTTP ${bad.status}`);

  browser = await run.launch();
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const { problems, requests } = watch(page);
  const shots = run.shotDir();

  // The deep link: the range in the picker, the regression and its suspect.
  await page.goto(`${url}/${hashOf(FULL)}`);
  const done = await answered(page, FULL, 'done');
  expect(Number(done.regressions) === full.body.data.regressions.length,
    `${done.regressions} regressions shown, the API has ${full.body.data.regressions.length}`);
  const picked = await pickerRange(page);
  expect(picked.join() === [FULL.from, FULL.to].join(), `picker range: ${picked}`);
  const card = page.locator('#correlate-regressions li.regression[data-kind="power_brake"]');
  expect(await card.count() === 1, `${await card.count()} power_brake cards`);
  expect(await card.getAttribute('data-scope') === 'release', 'power_brake card scope');
  const summary = await card.locator('.summary').textContent();
  expect(summary === brake.summary, `summary on the page: "${summary}", API: "${brake.summary}"`);
  const nodes = await card.locator('.nodes').textContent();
  expect(nodes === 'node-2, node-3', `nodes: ${nodes}`);
  const causeText = await card.locator('.regression-causes li[data-kind="power_brake"]').textContent();
  expect(causeText.includes('a release explains this'), `cause: ${causeText}`);
  const change = await card.locator('.change').textContent();
  expect(change === `+${(brake.change * 100).toFixed(1)} %`, `headline change: ${change}`);
  const suspectRow = card.locator('table.suspects tr[data-release="fp8-kernel"]');
  const score = await suspectRow.locator('.score').textContent();
  expect(score === suspect.score.toFixed(2), `fp8-kernel score: ${score}, API ${suspect.score}`);
  const reason = await suspectRow.locator('.reason').textContent();
  expect(reason === suspect.reason, `reason: ${reason}`);
  const suspectsShown = await page.$$eval('#correlate-regressions table.suspects tbody tr',
    (trs) => trs.map((tr) => tr.dataset.release));
  expect(!suspectsShown.includes('tokenizer-fix'), `suspects shown: ${suspectsShown}`);
  // Every release scored, with its parts, behind a disclosure.
  await card.locator('details.candidates summary').click();
  const parts = await card.locator('table.candidates tr[data-release="fp8-kernel"] td.num')
    .allTextContents();
  const expectedParts = ['score', 'time', 'space', 'dose', 'mechanism']
    .map((k) => suspect[k].toFixed(2));
  expect(parts.join() === expectedParts.join(), `fp8-kernel parts: ${parts}, API ${expectedParts}`);
  const clock = await card.locator('table.evidence tr[data-metric="DCGM_FI_DEV_SM_CLOCK"] td')
    .allTextContents();
  expect(clock[1] === '1,980 → 1,050' && clock[3] === 'MHz', `SM clock evidence: ${clock}`);
  // The releases considered and where they arrived.
  const considered = await page.$$eval('#correlate-releases tbody tr', (trs) =>
    trs.map((tr) => tr.dataset.release));
  expect(considered.join() === 'stable,fp8-kernel,tokenizer-fix', `considered: ${considered}`);
  const arrivals = await page.$$eval('#correlate-releases tr[data-release="fp8-kernel"] li',
    (lis) => lis.map((li) => `${li.dataset.nodes}:${li.className}`));
  expect(arrivals.join() === 'node-2:observed,node-3:observed', `fp8-kernel arrivals: ${arrivals}`);
  const stable = await page.$$eval('#correlate-releases tr[data-release="stable"] li',
    (lis) => lis.map((li) => `${li.dataset.nodes}:${li.className}`));
  expect(stable.join() === 'node-1 node-2 node-3 node-4 node-5 node-6:assumed',
    `stable arrivals: ${stable}`);
  const fullShot = await screenshot(page, shots, 'correlate-full-page.png');
  const viewShot = await screenshot(page.locator('#correlate'), shots, 'correlate-view.png');

  // The picker: a range before any release gives the empty state.
  const local = await page.evaluate((t) => {
    const d = new Date(t * 1000);
    const p = (n) => String(n).padStart(2, '0');
    return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}` +
      `T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
  }, BEFORE_RELEASES.to);
  await page.fill('#correlate-to', local);
  await page.click('#correlate-run');
  await answered(page, BEFORE_RELEASES, 'empty');
  expect(await page.evaluate(() => location.hash) === hashOf(BEFORE_RELEASES), 'hash after the button');
  const empty = page.locator('#correlate-empty');
  expect(await empty.isVisible() && await empty.textContent() === 'No regression in this range.',
    `empty state: ${await empty.textContent()}`);
  expect(await page.locator('#correlate-regressions li').count() === 0, 'cards in the empty state');
  const emptyShot = await screenshot(page.locator('#correlate'), shots, 'correlate-empty.png');

  // A range that ends before it starts: the daemon's reason, as it says it.
  await page.goto(`${url}/${hashOf(BAD)}`);
  await answered(page, BAD, 'error');
  const error = await page.textContent('#correlate-error');
  expect(error === `Could not correlate: ${bad.body.error}`, `error state: "${error}"`);
  expect(await page.locator('#correlate-error').isVisible(), 'error text hidden');
  expect(await empty.isHidden(), 'empty state shown with the error');
  const errorShot = await screenshot(page.locator('#correlate'), shots, 'correlate-error.png');

  // The one 400 asked for (and Chromium's console line about it), nothing else.
  const badUrl = `/api/v1/correlate?${askedOf(BAD)}`;
  const unexpected = problems.filter((p) =>
    !(p.startsWith('HTTP 400: ') && p.endsWith(badUrl)) &&
    !(p.startsWith('console: Failed to load resource: the server responded with a status of 400') &&
      p.endsWith(`${badUrl})`)));
  expect(unexpected.length === 0, `page problems:\n  ${unexpected.join('\n  ')}`);
  const asks = requests.filter((r) => r.includes('/api/v1/correlate')).length;
  expect(asks === 3, `${asks} correlate requests, expected 3 (one per range)`);

  console.log(`PASS in ${run.elapsed()} s: "${brake.summary}" (fp8-kernel ${score} on the page); ` +
    `empty before the releases; error "${bad.body.error}"\n  ${simmed}\n  ${loaded}`);
  console.log(`screenshots: ${fullShot} ${viewShot} ${emptyShot} ${errorShot}`);
  await run.pass(browser);
} catch (e) {
  await run.fail(e, browser);
}
