// What the browser tests share (docs/dashboard.md, "Tests"): the command
// line, a run directory with each child's log, starting `gpucanary sim` and
// `gpucanary serve`, polling with deadlines, Chromium via playwright-core
// (from web/node_modules), and a watch on a page for console errors, page
// errors, failed requests and HTTP errors.
//
// Usage of a test: node TEST.mjs GPUCANARY_BIN WEB_DIR
// Exit status: 0 pass, 1 fail, 77 skipped (no Chromium; CTest SKIP_RETURN_CODE).
// GPUCANARY_CHROMIUM overrides the browser (default /usr/bin/chromium).

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

const SKIP = 77;
const CHROMIUM = process.env.GPUCANARY_CHROMIUM ?? '/usr/bin/chromium';

// The test's binary, web directory, playwright's chromium and a fresh run
// directory (children's logs and files); exits 77 without Chromium. Every
// child started is sent SIGTERM when the process exits.
function setup(name) {
  const [bin, webDir] = process.argv.slice(2).map((p) => path.resolve(p));
  if (!bin || !webDir) {
    console.error(`usage: node ${name} GPUCANARY_BIN WEB_DIR`);
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
  return { bin, dir, chromium, children };
}

export class Run {
  constructor(name) {
    Object.assign(this, setup(name));
    this.began = Date.now();
  }

  elapsed() {
    return ((Date.now() - this.began) / 1000).toFixed(1);
  }

  // Starts `gpucanary ARGS` in the run directory, stdout and stderr to NAME.log.
  start(name, args) {
    const log = fs.openSync(path.join(this.dir, `${name}.log`), 'w');
    const child = spawn(this.bin, args, { cwd: this.dir, stdio: ['ignore', log, log] });
    this.children.push(child);
    return child;
  }

  write(name, text) {
    fs.writeFileSync(path.join(this.dir, name), text);
    return path.join(this.dir, name);
  }

  read(name) {
    return fs.readFileSync(path.join(this.dir, name), 'utf8');
  }

  // The tail of every child's log.
  logs() {
    return fs
      .readdirSync(this.dir)
      .filter((f) => f.endsWith('.log'))
      .map((f) => `--- ${f}\n${this.read(f).slice(-3000)}`)
      .join('\n');
  }

  // Fails the run (with the logs) when it takes more than `seconds`.
  limit(seconds) {
    setTimeout(() => {
      console.error(`FAIL: over ${seconds} s\n${this.logs()}`);
      process.exit(1);
    }, seconds * 1000).unref();
  }

  // `gpucanary sim` on any free ports, its targets as file_sd JSON in
  // targets.json. Returns the sorted target addresses and the control API's
  // URL (from the line the simulator prints once it listens).
  async startSim(scenario) {
    this.write('scenario.yaml', scenario);
    const targetsFile = path.join(this.dir, 'targets.json');
    this.start('sim', ['sim', '--scenario', 'scenario.yaml', '--base-port', '0',
      '--control-port', '0', '--targets-file', targetsFile]);
    const groups = await waitFor('the simulator', 20, () => JSON.parse(this.read('targets.json')));
    const control = await waitFor('the control API', 5, () =>
      this.read('sim.log').match(/control API (http:\/\/\S+)\/state/)?.[1]);
    return { instances: groups.flatMap((g) => g.targets).sort(), control };
  }

  // `gpucanary serve --config CONFIG`; returns its URL once it answers.
  async startServe(config) {
    this.write('serve.yaml', config);
    const readyFile = path.join(this.dir, 'url.txt');
    this.start('serve', ['serve', '--config', 'serve.yaml', '--ready-file', readyFile]);
    return waitFor('gpucanary serve', 20, () => fs.readFileSync(readyFile, 'utf8').trim());
  }

  // Headless Chromium (no sandbox as root, where it cannot have one).
  launch() {
    return this.chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
    });
  }

  // A new temp directory for screenshots (kept, outside the repository).
  shotDir() {
    return fs.mkdtempSync(path.join(os.tmpdir(), 'gpucanary-dashboard-'));
  }

  // Ends the run: browser closed, children stopped, run directory removed.
  async pass(browser) {
    await browser?.close();
    this.children.forEach((c) => c.kill('SIGTERM'));
    fs.rmSync(this.dir, { recursive: true, force: true });
    process.exit(0);
  }

  async fail(error, browser) {
    console.error(`FAIL after ${this.elapsed()} s: ${error.stack ?? error}\n` +
      `logs in ${this.dir}\n${this.logs()}`);
    await browser?.close().catch(() => {});
    process.exit(1);
  }
}

// Polls `check` (sync or async, truthy when done) every 100 ms; its value.
export async function waitFor(what, seconds, check) {
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

export function expect(condition, message) {
  if (!condition) throw new Error(message);
}

export async function getJson(url) {
  const response = await fetch(url);
  return response.ok ? response.json() : null;
}

export async function postJson(url, body) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.text() };
}

// Every target up and `series` series of `metric` with 3 samples or more.
export async function waitForData(url, targets, metric, series) {
  await waitFor('scraped data', 20, async () => {
    const t = await getJson(`${url}/api/v1/targets`);
    if (t?.data.activeTargets.filter((x) => x.health === 'up').length !== targets) return false;
    const q = encodeURIComponent(`${metric}[1m]`);
    const answer = await getJson(`${url}/api/v1/query?query=${q}`);
    const result = answer?.data.result ?? [];
    return result.length === series && result.every((s) => s.values.length >= 3);
  });
}

// Collects into `problems` every console error, page error, failed request
// and HTTP status of 400 or more on `page`; `requests` gets every request URL.
export function watch(page) {
  const problems = [];
  const requests = [];
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()} (${m.location().url})`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`failed: ${r.url()} ${r.failure()?.errorText}`));
  page.on('request', (r) => requests.push(r.url()));
  page.on('response', (r) => {
    if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.url()}`);
  });
  return { problems, requests };
}
