// Browser test of the dashboard's canary view (docs/dashboard.md,
// "Canaries"): a real `gpucanary sim` fleet of 3 nodes, a real `gpucanary
// serve` with live canaries and actions, and Debian's Chromium (playwright-
// core) on `/`. With the page open it deploys a release whose kernels trip
// the power brake (power_spikiness 2.5, scenarios/power-brake.yaml) to
// node-3 through the simulator's control API and announces it to the daemon
// with `targets: [node-3]`. Then it checks that the page shows the canary
// running with its comparison charts drawn (canary vs baseline, data on the
// canvas), then failed: verdict fail, the power-brake cause in the words the
// API gives, the actions taken, the decision marker and the throttle band;
// that a finished canary stops being re-read; that #canary=<id> deep-links
// to it; and that no page logs a console error or has a failed request.
// Screenshots go to a new temp directory (paths printed).
//
// Usage: node canary_test.mjs GPUCANARY_BIN WEB_DIR (harness.mjs).

import path from 'node:path';

import { Run, expect, getJson, postJson, waitFor, waitForData, watch } from './harness.mjs';

const NODES = 3;
const GPUS_PER_NODE = 4;
const CANARY_NODE = 'node-3';

const SCENARIO = `seed: 7
duration: 600s
fleet:
  - {nodes: "node-[1-${NODES}]", gpu: h100-sxm, gpus: ${GPUS_PER_NODE}, driver: "580.105.08"}
releases:
  stable: {profile: baseline}
  fp8-kernel: {profile: baseline, power_spikiness: 2.5}
traffic: {rps: 120}
events:
  - {at: 0s, deploy: stable, nodes: all}
`;

// The default policy; actions that need no network: one that runs, one
// skipped (no node-scoped cause), and a diagnostic bundle.
const serveConfig = (dir) => `listen: 127.0.0.1:0
storage:
  path: ${path.join(dir, 'data')}
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: fleet
    file_sd_configs:
      - files: [targets.json]
        refresh_interval: 1s
canary:
  history: 30s
actions:
  - kind: command
    name: notify
    command: ["true"]
  - kind: isolate_node
    command: ["true"]
  - kind: diagnostic_bundle
    dir: ${path.join(dir, 'bundles')}
`;

const RELEASE = {
  id: 'chat-2026.12.03-2', service: 'chat-api', version: '2026.12.03-2', git_sha: '4b8d0a1',
  model: 'llama-3-70b-instruct', quantization: 'fp8', framework: 'vllm', previous: 'stable',
  targets: [CANARY_NODE],
};
// Charted for every canary (web/canary.js CORE_CHARTS) and drawn with data
// on both sides in this scenario.
const CHARTS = [
  'DCGM_FI_DEV_SM_CLOCK', 'DCGM_FI_DEV_POWER_USAGE', 'DCGM_FI_PROF_DRAM_ACTIVE',
  'generated_tokens', 'per_token_latency',
];

// The page's view of the selected canary.
const viewState = (page) =>
  page.evaluate(() => {
    const v = document.querySelector('#canary-view');
    return { hidden: v.hidden, ...v.dataset };
  });

// Per chart of `metrics`: uPlot's series (x included), the points it holds
// per side, and pixels in the canary's and the baseline's colours, the
// decision line's (opaque --bad) and the throttle band's (translucent
// --bad) on its canvas.
const chartFacts = (page, metrics) =>
  page.evaluate((names) => {
    const css = getComputedStyle(document.documentElement);
    const rgb = (name) => css.getPropertyValue(name).trim().match(/[0-9a-f]{2}/gi)
      .map((h) => parseInt(h, 16));
    const [canary, baseline, bad] = ['--canary', '--baseline', '--bad'].map(rgb);
    const near = (p, c) => Math.abs(p[0] - c[0]) + Math.abs(p[1] - c[1]) + Math.abs(p[2] - c[2]) < 60;
    return names.map((name) => {
      const figure = document.querySelector(`.canary-chart[data-metric="${name}"]`);
      if (!figure) return { name, missing: true };
      const canvas = figure.querySelector('canvas');
      const { data } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
      const px = { canary: 0, baseline: 0, decided: 0, band: 0 };
      for (let i = 0; i < data.length; i += 4) {
        const p = data.subarray(i, i + 4);
        if (p[3] === 255 && p[0] === bad[0] && p[1] === bad[1] && p[2] === bad[2]) px.decided += 1;
        else if (p[3] > 200 && near(p, canary)) px.canary += 1;
        else if (p[3] > 200 && near(p, baseline)) px.baseline += 1;
        else if (p[3] > 10 && p[3] < 80 && near(p, bad)) px.band += 1;
      }
      return {
        name,
        series: figure.querySelectorAll('.u-legend .u-series').length,
        canaryPoints: Number(figure.dataset.canaryPoints),
        baselinePoints: Number(figure.dataset.baselinePoints),
        height: canvas.height,
        ...px,
      };
    });
  }, metrics);

function checkCharts(charts, { decided }) {
  for (const c of charts) {
    expect(!c.missing, `no chart of ${c.name}`);
    expect(c.series === 3, `${c.name}: uPlot has ${c.series} series, expected time, canary, baseline`);
    expect(c.canaryPoints > 0 && c.baselinePoints > 0,
      `${c.name}: ${c.canaryPoints} canary and ${c.baselinePoints} baseline points`);
  }
  const clock = charts.find((c) => c.name === 'DCGM_FI_DEV_SM_CLOCK');
  expect(clock.canary > 0 && clock.baseline > 0,
    `SM clock canvas: ${clock.canary} canary and ${clock.baseline} baseline pixels`);
  if (decided) {
    // A vertical line 2 px wide from top to bottom of the plot, and a band.
    expect(clock.decided >= clock.height / 2, `decision marker: ${clock.decided} px`);
    expect(clock.band > 0, 'no throttle band on the SM clock chart');
  }
}

async function screenshot(page, dir, name) {
  const file = path.join(dir, name);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

const run = new Run('canary_test.mjs');
run.limit(80);
let browser;
try {
  const { instances, control } = await run.startSim(SCENARIO);
  expect(instances.length === 2 * NODES, `sim lists ${instances.length} targets`);
  const url = await run.startServe(serveConfig(run.dir));
  await waitForData(url, instances.length, 'DCGM_FI_DEV_SM_CLOCK', NODES * GPUS_PER_NODE);

  browser = await run.launch();
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const { problems, requests } = watch(page);
  await page.goto(`${url}/`);
  await page.waitForFunction(
    () => document.querySelector('#canaries-note').textContent === 'No canaries yet.',
    null, { timeout: 10000 });

  // The faulty release to node-3 (a rolling restart, then the brake under
  // load), announced to the daemon as it starts.
  const deploy = await postJson(`${control}/deploy`, { release: 'fp8-kernel', nodes: [CANARY_NODE] });
  expect(deploy.status === 200, `sim /deploy: ${deploy.status} ${deploy.body}`);
  const release = { ...RELEASE, started_at: Date.now() / 1000 };
  const posted = await postJson(`${url}/api/v1/releases`, release);
  expect(posted.status === 201, `POST /api/v1/releases: ${posted.status} ${posted.body}`);
  const id = JSON.parse(posted.body).data.canary;
  expect(id === release.id, `the release started canary ${id}`);
  const announced = Date.now();

  // Running: listed, selected by a click, its facts and charts shown.
  const item = page.locator(`#canaries li[data-id="${id}"] a`);
  await item.waitFor({ timeout: 10000 });
  await item.click();
  await page.waitForFunction((i) => location.hash === `#canary=${i}`, id, { timeout: 2000 });
  const running = await waitFor('the running canary shown', 10, async () => {
    const v = await viewState(page);
    return v.id === id && !v.hidden && v.state === 'running' ? v : null;
  });
  const field = (name) => page.textContent(`#canary-view [data-field="${name}"]`);
  expect(await field('version') === release.version, `version: ${await field('version')}`);
  expect(await field('quantization') === 'fp8', `quantization: ${await field('quantization')}`);
  expect((await field('canary_hosts')).startsWith(`${CANARY_NODE} (${GPUS_PER_NODE} GPUs)`),
    `canary hosts: ${await field('canary_hosts')}`);
  expect((await field('baseline_hosts')).startsWith('node-1, node-2'),
    `baseline hosts: ${await field('baseline_hosts')}`);
  expect(await page.textContent('#canaries li[data-id] .badge') === 'running', 'list badge');
  const live = await waitFor('the comparison charts drawn', 10, async () => {
    const charts = await chartFacts(page, CHARTS);
    try {
      checkCharts(charts, { decided: false });
      return charts;
    } catch {
      return null;
    }
  }).catch(async (e) => {
    checkCharts(await chartFacts(page, CHARTS), { decided: false }); // says which check failed
    throw e;
  });
  const shots = run.shotDir();
  const runningShot = await screenshot(page, shots, 'canary-running.png');

  // Failed: the verdict, the cause in the API's words, the actions.
  await waitFor('the canary failed on the page', 45,
    async () => (await viewState(page)).state === 'failed');
  const failedAfter = ((Date.now() - announced) / 1000).toFixed(1);
  const detail = (await getJson(`${url}/api/v1/canaries/${id}`)).data;
  expect(detail.state === 'failed' && detail.report.verdict === 'fail', `API: ${detail.state}`);
  const brake = detail.report.causes.find((c) => c.kind === 'power_brake' && c.scope === 'release');
  expect(brake, `API causes: ${JSON.stringify(detail.report.causes)}`);
  const failed = await viewState(page);
  expect(failed.verdict === 'fail', `page verdict: ${failed.verdict}`);
  const verdict = await page.textContent('#canary-verdict');
  expect(verdict.startsWith('Verdict fail, score ') && verdict.includes('decided at'),
    `verdict: ${verdict}`);
  const badges = await page.$$eval('#canary-title .badge', (b) => b.map((e) => e.textContent));
  expect(badges.join() === 'failed,fail', `title badges: ${badges}`);
  const cause = await page.textContent('#canary-causes li[data-kind="power_brake"] .summary');
  expect(cause === brake.summary, `cause on the page: "${cause}", API: "${brake.summary}"`);
  expect(/power brake/i.test(cause) && cause.includes(CANARY_NODE), `cause: ${cause}`);
  const causeFacts = await page.textContent('#canary-causes li[data-kind="power_brake"] .detail');
  expect(causeFacts.includes('scope release') && causeFacts.includes(`nodes ${CANARY_NODE}`) &&
    causeFacts.includes('counts against the release'), `cause facts: ${causeFacts}`);
  expect(await page.textContent('#canary-reason') === detail.reason, 'reason');
  const listBadge = await page.textContent(`#canaries li[data-id="${id}"] .badge`);
  expect(listBadge === 'failed', `list badge: ${listBadge}`);
  const timeline = await page.textContent(`#releases li[data-release="${id}"] .canary-link`);
  expect(timeline === 'canary failed', `timeline: ${timeline}`);
  // Actions run after the verdict: the page shows them once recorded.
  const expected = { notify: 'ok', isolate_node: 'skipped', diagnostic_bundle: 'ok' };
  const actions = await waitFor('the actions taken', 15, async () => {
    const rows = await page.$$eval('#canary-actions tbody tr', (trs) =>
      trs.map((tr) => [tr.dataset.action, tr.dataset.outcome, tr.cells[2].textContent]));
    return rows.length === Object.keys(expected).length ? rows : null;
  });
  for (const [name, outcome] of actions) {
    expect(expected[name] === outcome, `action ${name}: ${outcome}, expected ${expected[name]}`);
  }
  const decided = await waitFor('the decision and throttle band drawn', 15, async () => {
    const charts = await chartFacts(page, CHARTS);
    try {
      checkCharts(charts, { decided: true });
      return charts;
    } catch {
      return null;
    }
  }).catch(async (e) => {
    checkCharts(await chartFacts(page, CHARTS), { decided: true });
    throw e;
  });
  expect(Number((await viewState(page)).throttled) > 0, 'no throttled seconds');
  const metricRows = await page.$$eval('#canary-metrics tbody tr', (trs) => trs.length);
  expect(metricRows === detail.report.metrics.length, `metric rows: ${metricRows}`);
  const failedShot = await screenshot(page, shots, 'canary-failed.png');

  // A finished canary is read one last time, then no more.
  await waitFor('the finished canary settled', 15,
    async () => (await viewState(page)).settled === 'true');
  const mine = () => requests.filter((r) =>
    r.includes(`/api/v1/canaries/${id}`) || r.includes('/api/v1/query?')).length;
  const settledAt = mine();

  // #canary=<id> opens the canary directly.
  const linked = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const linkedWatch = watch(linked);
  await linked.goto(`${url}/#canary=${encodeURIComponent(id)}`);
  await waitFor('the deep-linked canary', 10, async () => {
    const v = await viewState(linked);
    const summary = await linked.textContent('#canary-causes li[data-kind="power_brake"] .summary')
      .catch(() => null);
    return v.id === id && v.state === 'failed' && summary === brake.summary;
  });
  // Its charts come after the summary (their queries take a moment more).
  await waitFor('the deep-linked charts', 15, async () => {
    try {
      checkCharts(await chartFacts(linked, CHARTS), { decided: true });
      return true;
    } catch {
      return null;
    }
  }).catch(async (e) => {
    checkCharts(await chartFacts(linked, CHARTS), { decided: true });
    throw e;
  });
  const linkedShot = await screenshot(linked, shots, 'canary-deep-link.png');
  expect(linkedWatch.problems.length === 0,
    `deep-linked page problems:\n  ${linkedWatch.problems.join('\n  ')}`);

  // Two more refreshes of the first page, and nothing more read of the canary.
  for (let k = 0; k < 2; k++) {
    const updated = await page.textContent('#updated');
    await page.waitForFunction((u) => document.querySelector('#updated').textContent !== u,
      updated, { timeout: 5000 });
  }
  expect(mine() === settledAt, `${mine() - settledAt} canary requests after it settled`);
  expect(problems.length === 0, `page problems:\n  ${problems.join('\n  ')}`);

  const clock = decided.find((c) => c.name === 'DCGM_FI_DEV_SM_CLOCK');
  console.log(`PASS in ${run.elapsed()} s: canary ${id} on ${CANARY_NODE} shown ${running.state} ` +
    `with ${live.length} charts (SM clock: ${clock.canaryPoints} canary / ${clock.baselinePoints} ` +
    `baseline points), failed ${failedAfter} s after the announcement ("${brake.summary}"), ` +
    `${actions.length} actions, ${requests.length} requests, no console errors`);
  console.log(`screenshots: ${runningShot} ${failedShot} ${linkedShot}`);
  await run.pass(browser);
} catch (e) {
  await run.fail(e, browser);
}
