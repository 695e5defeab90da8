// The dashboard against a daemon with tokens (docs/dashboard.md, "Tokens"):
// its reads get 401, the page asks for a token, keeps it for the tab and
// sends it; a refused token is said to be refused; with a read token every
// section loads and nothing fails. Real `gpucanary serve`, real Chromium.

import { Run, expect, waitFor, watch } from './harness.mjs';

const TOKEN = 'view-t0ken-for-the-browser';
const CONFIG = `listen: 127.0.0.1:0
storage: {path: data}
auth:
  token: admin-t0ken-not-for-browsers
  tokens:
    - {name: viewer, scope: read, token: ${TOKEN}}
`;

async function submitToken(page, token) {
  await page.fill('#token-input', token);
  await Promise.all([page.waitForEvent('load'), page.click('#token-form button[type=submit]')]);
}

const run = new Run('token_test.mjs');
run.limit(60);
let browser;
try {
  const url = await run.startServe(CONFIG);
  browser = await run.launch();
  const page = await browser.newPage();
  let seen = watch(page);

  // No token: the page loads (its files need none), its reads get 401 and
  // it asks for a token.
  await page.goto(`${url}/`);
  await page.waitForSelector('#token-form:not([hidden])', { timeout: 10000 });
  const asked = await page.textContent('#token-note');
  expect(asked.includes('needs an API token'), `the form says: ${asked}`);
  const status = await page.textContent('#daemon-status');
  expect(status.startsWith('Daemon answering, but it needs an API token'), `the status says: ${status}`);
  expect(seen.problems.some((p) => p.startsWith('HTTP 401')), 'no read got 401');
  expect(!seen.problems.some((p) => /HTTP 401: .*\/assets\//.test(p)), 'an asset needed a token');

  // A wrong token: refused, and the page says so.
  await submitToken(page, 'not-the-token');
  await page.waitForSelector('#token-form:not([hidden])', { timeout: 10000 });
  const refused = await page.textContent('#token-note');
  expect(refused.includes('refused'), `after a wrong token the form says: ${refused}`);

  // The read token: every section loads, the form stays hidden, and no
  // request fails from this load on.
  page.removeAllListeners();
  seen = watch(page);
  await submitToken(page, TOKEN);
  await waitFor('the daemon status', 10, async () =>
    (await page.textContent('#daemon-status')).startsWith('Serving'));
  await waitFor('the releases section', 10, async () =>
    (await page.textContent('#releases-note')).length > 0 ||
    (await page.$$('#releases li')).length > 0);
  expect(await page.$eval('#token-form', (f) => f.hidden), 'the form is still shown');
  const bearer = seen.requests.length > 0;
  expect(bearer, 'no request after the token was given');
  await new Promise((r) => setTimeout(r, 1000)); // a refresh or two
  expect(seen.problems.length === 0, `problems with the token:\n  ${seen.problems.join('\n  ')}`);
  console.log(`PASS in ${run.elapsed()} s: asked for a token on 401, said a wrong one was ` +
    `refused, loaded every section with a read token (${seen.requests.length} requests, none failed)`);
  await run.pass(browser);
} catch (e) {
  await run.fail(e, browser);
}
