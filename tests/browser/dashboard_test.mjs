// Browser test of the dashboard (docs/dashboard.md): a real `gpucanary sim`
// fleet, a real `gpucanary serve` scraping it every second (file_sd), and
// Debian's Chromium, driven by playwright-core, loading `/`. Checks that the
// page loads without console errors or failed requests, lists every target
// as up, draws the SM clock chart with one series per GPU and the throttle
// band of the GPUs the scenario slows down, shows the release on the
// timeline and as a marker, and saves a screenshot in a temp directory (its
// path is printed). canary_test.mjs covers the canary view.
//
// Usage: node dashboard_test.mjs GPUCANARY_BIN WEB_DIR (harness.mjs).

import path from 'node:path';

import { Run, expect, postJson, waitForData, watch } from './harness.mjs';

const NODES = 2; // 8 GPUs each, a dcgm-exporter and a vLLM endpoint each
const GPUS = NODES * 8;

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
`;

async function startFleet(run) {
  const { instances } = await run.startSim(SCENARIO);
  expect(instances.length === 2 * NODES, `sim lists ${instances.length} targets`);
  const url = await run.startServe(serveConfig(run.dir));
  // Every target up, and a few seconds of SM clocks for every GPU.
  await waitForData(url, instances.length, 'DCGM_FI_DEV_SM_CLOCK', GPUS);
  return { url, instances };
}

// Announces a release that started 3 s ago.
async function postRelease(url) {
  const release = {
    id: 'browser-test-1', service: 'chat-api', version: '2026.12.03-1', git_sha: '9f1c2e7',
    model: 'llama-3-70b-instruct', quantization: 'fp8', started_at: Date.now() / 1000 - 3,
    targets: ['node-2'],
  };
  const r = await postJson(`${url}/api/v1/releases`, release);
  expect(r.status === 201, `POST /api/v1/releases: ${r.status} ${r.body}`);
  return release;
}

async function checkPage(run, browser, url, instances, release) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const { problems } = watch(page);

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

  // The release in the timeline and as a marker on the chart.
  const releases = await page.$$eval('#releases li', (li) => li.map((e) => e.textContent));
  expect(releases.length === 1 && releases[0].includes(`${release.service} ${release.version}`) &&
    releases[0].includes('fp8'), `releases: ${releases}`);
  expect(chart.marker >= over.height / 2, `release marker: ${chart.marker} px`);

  // A refresh (every 2 s) keeps the page clean.
  const updated = await page.textContent('#updated');
  await page.waitForFunction((u) => document.querySelector('#updated').textContent !== u, updated,
    { timeout: 5000 });
  const shot = path.join(run.shotDir(), 'dashboard.png');
  await page.screenshot({ path: shot, fullPage: true });
  expect(problems.length === 0, `page problems:\n  ${problems.join('\n  ')}`);
  page.removeAllListeners();
  return { shot, chart };
}

const run = new Run('dashboard_test.mjs');
run.limit(60);
let browser;
try {
  const { url, instances } = await startFleet(run);
  const release = await postRelease(url);
  browser = await run.launch();
  const { shot, chart } = await checkPage(run, browser, url, instances, release);
  console.log(`PASS in ${run.elapsed()} s: ${instances.length} targets up, ` +
    `${GPUS} GPU series (${chart.painted} px drawn), ${chart.summary} ` +
    `release ${release.version} listed and marked`);
  console.log(`screenshot: ${shot}`);
  await run.pass(browser);
} catch (e) {
  await run.fail(e, browser);
}
