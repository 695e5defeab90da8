// Browser test of the dashboard (docs/dashboard.md): a real `gpucanary sim`
// fleet, a real `gpucanary serve` scraping it every second (file_sd), and
// Debian's Chromium, driven by playwright-core, loading `/`. Checks that the
// page loads without console errors or failed requests, lists every target
// as up, draws the SM clock chart with one series per GPU and the throttle
// band of the GPUs the scenario slows down, and saves a screenshot in a temp
// directory (its path is printed).
//
// Usage: node dashboard_test.mjs GPUCANARY_BIN WEB_DIR
// Exit status: 0 pass, 1 fail, 77 skipped (no Chromium; CTest SKIP_RETURN_CODE).
// GPUCANARY_CHROMIUM overrides the browser (default /usr/bin/chromium).

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

const SKIP = 77;
const CHROMIUM = process.env.GPUCANARY_CHROMIUM ?? '/usr/bin/chromium';
const NODES = 2; // 8 GPUs each, a dcgm-exporter and a vLLM endpoint each
const GPUS = NODES * 8;
// Endpoints a daemon may not have yet (they come with later issues): the
// page must read their 404 as "nothing yet", quietly.
const OPTIONAL = ['/api/v1/releases', '/api/v1/canaries'];

const [bin, webDir] = process.argv.slice(2).map((p) => path.resolve(p));
if (!bin || !webDir) {
  console.error('usage: node dashboard_test.mjs GPUCANARY_BIN WEB_DIR');
  process.exit(1);
}
if (!fs.existsSync(CHROMIUM)) {
  console.log(`SKIP: no Chromium at ${CHROMIUM} (Debian package chromium)`);
  process.exit(SKIP);
}
const { chromium } = createRequire(path.join(webDir, 'package.json'))('playwright-core');

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gpucanary-browser-'));
const children = [];
process.on('exit', () => children.forEach((c) => c.exitCode === null && c.kill('SIGTERM')));

function start(name, args) {
  const log = fs.openSync(path.join(dir, `${name}.log`), 'w');
  const child = spawn(bin, args, { cwd: dir, stdio: ['ignore', log, log] });
  children.push(child);
  return child;
}

const logs = () =>
  fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.log'))
    .map((f) => `--- ${f}\n${fs.readFileSync(path.join(dir, f), 'utf8').slice(-3000)}`)
    .join('\n');

// Polls `check` (sync or async, truthy when done) every 100 ms.
async function waitFor(what, seconds, check) {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const value = await Promise.resolve()
      .then(check)
      .catch(() => null);
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${seconds} s waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function expect(condition, message) {
  if (!condition) throw new Error(message);
}

async function getJson(url) {
  const response = await fetch(url);
  return response.ok ? response.json() : null;
}

// Two nodes; node-2's GPUs held down by the HW slowdown from the start.
const SCENARIO = `seed: 5
duration: 600s
fleet:
  - {nodes: "node-[1-${NODES}]", gpu: h100-sxm, driver: "580.105.08"}
releases:
  stable: {profile: baseline}
traffic: {rps: 80}
events:
  - {at: 0s, deploy: stable, nodes: all}
  - {at: 0s, fault: hw_slowdown, nodes: [node-2]}
`;

const SERVE = `listen: 127.0.0.1:0
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
`;

async function startFleet() {
  fs.writeFileSync(path.join(dir, 'scenario.yaml'), SCENARIO);
  fs.writeFileSync(path.join(dir, 'serve.yaml'), SERVE);
  const targetsFile = path.join(dir, 'targets.json');
  start('sim', ['sim', '--scenario', 'scenario.yaml', '--base-port', '0', '--control-port', '0',
    '--targets-file', targetsFile]);
  const groups = await waitFor('the simulator', 20, () =>
    JSON.parse(fs.readFileSync(targetsFile, 'utf8')));
  const instances = groups.flatMap((g) => g.targets).sort();
  expect(instances.length === 2 * NODES, `sim lists ${instances.length} targets`);

  const readyFile = path.join(dir, 'url.txt');
  start('serve', ['serve', '--config', 'serve.yaml', '--ready-file', readyFile]);
  const url = await waitFor('gpucanary serve', 20, () =>
    fs.readFileSync(readyFile, 'utf8').trim());
  // Every target up, and a few seconds of SM clocks for every GPU.
  await waitFor('scraped data', 20, async () => {
    const targets = await getJson(`${url}/api/v1/targets`);
    if (targets?.data.activeTargets.filter((t) => t.health === 'up').length !== 2 * NODES) return false;
    const q = encodeURIComponent('DCGM_FI_DEV_SM_CLOCK[1m]');
    const clocks = await getJson(`${url}/api/v1/query?query=${q}`);
    const series = clocks?.data.result ?? [];
    return series.length === GPUS && series.every((s) => s.values.length >= 3);
  });
  return { url, instances };
}

// Announces a release that started 3 s ago; false when this daemon has no
// release API yet (404).
async function postRelease(url) {
  const release = {
    id: 'browser-test-1', service: 'chat-api', version: '2026.12.03-1', git_sha: '9f1c2e7',
    model: 'llama-3-70b-instruct', quantization: 'fp8', started_at: Date.now() / 1000 - 3,
    targets: ['node-2'],
  };
  const response = await fetch(`${url}/api/v1/releases`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(release),
  });
  if (response.status === 404) return null;
  expect(response.status === 201, `POST /api/v1/releases: ${response.status} ${await response.text()}`);
  return release;
}

async function checkPage(browser, url, instances, release) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const problems = [];
  // Chrome logs every 4xx as a console error, the expected 404s included.
  const expected404 = (m) =>
    m.text().includes('status of 404') && OPTIONAL.includes(new URL(m.location().url).pathname);
  page.on('console', (m) => {
    if (m.type() === 'error' && !expected404(m)) {
      problems.push(`console: ${m.text()} (${m.location().url})`);
    }
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`failed: ${r.url()} ${r.failure()?.errorText}`));
  page.on('response', (r) => {
    const optional = OPTIONAL.some((p) => new URL(r.url()).pathname === p);
    if (r.status() >= 400 && !(optional && r.status() === 404)) {
      problems.push(`HTTP ${r.status()}: ${r.url()}`);
    }
  });

  await page.goto(`${url}/`);
  await page.waitForFunction(
    (n) => document.querySelectorAll('#fleet tbody tr').length === n,
    instances.length,
    { timeout: 10000 },
  );
  const rows = await page.$$eval('#fleet tbody tr', (trs) =>
    trs.map((tr) => [...tr.cells].map((td) => td.textContent)),
  );
  const shown = rows.map((r) => r[1]).sort();
  expect(JSON.stringify(shown) === JSON.stringify(instances),
    `fleet table lists ${shown}, expected ${instances}`);
  for (const [job, instance, health] of rows) {
    expect(job === 'fleet' && health === 'up', `${instance}: job ${job}, health ${health}`);
  }
  const status = await page.textContent('#daemon-status');
  expect(status.includes(`${instances.length} of ${instances.length} targets up`), `status: ${status}`);

  // The chart: one uPlot series per GPU (plus x), data on the canvas, and
  // node-2's slowdown as a throttle band.
  await page.waitForFunction((n) => {
    const figure = document.querySelector('#telemetry');
    return figure.dataset.series === String(n) && Number(figure.dataset.points) >= 3 * n;
  }, GPUS, { timeout: 10000 });
  const chart = await page.evaluate(() => {
    const canvas = document.querySelector('#telemetry-chart canvas');
    const { data } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
    // The release marker is opaque --release; series strokes are saturated
    // and opaque; the grid is grey and the throttle band translucent.
    const release = getComputedStyle(document.documentElement).getPropertyValue('--release');
    const [mr, mg, mb] = release.match(/[0-9a-f]{2}/gi).map((h) => parseInt(h, 16));
    let painted = 0;
    let marker = 0;
    for (let i = 0; i < data.length; i += 4) {
      const [r, g, b, a] = data.subarray(i, i + 4);
      if (a === 255 && r === mr && g === mg && b === mb) marker += 1;
      else if (a > 200 && Math.max(r, g, b) - Math.min(r, g, b) > 80) painted += 1;
    }
    return {
      legend: document.querySelectorAll('#telemetry-chart .u-legend .u-series').length,
      points: Number(document.querySelector('#telemetry').dataset.points),
      painted,
      marker: marker / 2 / devicePixelRatio, // a line 2 px wide, in CSS pixels
      pixels: canvas.width * canvas.height,
      summary: document.querySelector('#telemetry-summary').textContent,
    };
  });
  expect(chart.legend === GPUS + 1, `uPlot has ${chart.legend} series, expected ${GPUS + 1}`);
  expect(chart.points >= 3 * GPUS, `chart holds ${chart.points} points`);
  expect(chart.painted > 0, `canvas: no pixel of ${chart.pixels} in a series colour`);
  // Hovering the newest seconds shows every GPU's clock in the legend.
  const over = await page.locator('#telemetry-chart .u-over').boundingBox();
  await page.mouse.move(over.x + over.width - 3, over.y + over.height / 2);
  const values = await page.$$eval('#telemetry-chart .u-legend .u-series .u-value', (v) =>
    v.slice(1).map((e) => e.textContent));
  expect(values.length === GPUS && values.every((v) => /^\d[\d,.]*$/.test(v)),
    `legend at the newest second: ${values}`);
  expect(/throttled [1-9]\d* s/.test(chart.summary), `summary: ${chart.summary}`);

  // The release in the timeline and as a marker on the chart; endpoints
  // that do not exist yet read as empty, not as errors.
  const releases = await page.$$eval('#releases li', (li) => li.map((e) => e.textContent));
  if (release) {
    expect(releases.length === 1 && releases[0].includes(`${release.service} ${release.version}`) &&
      releases[0].includes('fp8'), `releases: ${releases}`);
    expect(chart.marker >= over.height / 2, `release marker: ${chart.marker} px`);
  } else {
    expect(await page.textContent('#releases-note') === 'No releases yet.', 'releases note');
  }
  const canaries = await page.textContent('#canaries-note');
  expect(canaries === 'No canaries yet.' || canaries === '', `canaries: "${canaries}"`);

  // A refresh (every 2 s) keeps the page clean.
  await page.waitForTimeout(2500);
  const shotDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gpucanary-dashboard-'));
  const shot = path.join(shotDir, 'dashboard.png');
  await page.screenshot({ path: shot, fullPage: true });
  expect(problems.length === 0, `page problems:\n  ${problems.join('\n  ')}`);
  page.removeAllListeners();
  return { shot, chart };
}

const began = Date.now();
setTimeout(() => {
  console.error(`FAIL: over 60 s\n${logs()}`);
  process.exit(1);
}, 60000).unref();

let browser;
try {
  const { url, instances } = await startFleet();
  const release = await postRelease(url);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
  });
  const { shot, chart } = await checkPage(browser, url, instances, release);
  console.log(`PASS in ${((Date.now() - began) / 1000).toFixed(1)} s: ${instances.length} targets up, ` +
    `${GPUS} GPU series (${chart.painted} px drawn), ${chart.summary} ` +
    (release ? `release ${release.version} listed and marked` : '(no release API: markers unchecked)'));
  console.log(`screenshot: ${shot}`);
  await browser.close();
  children.forEach((c) => c.kill('SIGTERM'));
  fs.rmSync(dir, { recursive: true, force: true });
  process.exit(0);
} catch (e) {
  console.error(`FAIL: ${e.message}\nlogs in ${dir}\n${logs()}`);
  await browser?.close().catch(() => {});
  process.exit(1);
}
