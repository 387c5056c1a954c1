// Starts a real platform (`reasonlab up` on a temporary home and a free port) and a headless Debian
// chromium driven by playwright-core, for the e2e tests and the perf script. No browser is downloaded.
// Below them, the steps the tests and the demo scripts share: sign in, fill the New experiment page from a
// kind's example, submit it, wait for its runs.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach } from 'node:test';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));
export const ROOT = resolve(here, '../..');
export const REASONLAB = process.env.REASONLAB_BIN ?? join(ROOT, '.venv/bin/reasonlab');
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const SHOTS = join(ROOT, 'test-output/e2e');

export function freePort() {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', rej);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => res(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** `reasonlab up` on a fresh home; resolves once /api/v1/health answers, with the admin's login. */
export async function startPlatform({ timeoutMs = 120_000, env = {}, workers = 1, mlflowUi = false } = {}) {
  const home = mkdtempSync(join(tmpdir(), 'reasonlab-e2e-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  let out = '';
  // --stop-timeout: `up` stops its workers, then the API, each in a process group of its own; stop() below
  // waits for that before it kills `up`'s group (a kill too early would orphan the API and the workers)
  const args = ['up', '--home', home, '--port', String(port), '--workers', String(workers), '--stop-timeout', '20'];
  // MLflow's UI only for the suites that open it: it is one more server to start on a shared machine
  args.push(...(mlflowUi ? ['--mlflow-port', String(await freePort())] : ['--no-mlflow-ui']));
  // the API's MLflow mirror only with MLflow's UI (the one suite that checks MLflow): it imports mlflow and
  // migrates a new MLflow store, ~2.6 s of CPU per platform; `env` may still turn it on
  // likewise the worker's preload of every kind (a real worker's default) only there: elsewhere a worker
  // starts on ~3 CPU-s instead of ~7 and each of the file's few runs imports its own kind
  const defaults = mlflowUi ? 'true' : 'false';
  const mirror = { REASONLAB_MLFLOW_MIRROR: defaults, REASONLAB_WORKER_PRELOAD: defaults };
  // argon2id at its cheapest for the admin's password and the files' logins (~0.17 CPU-s each at the
  // deployment's default cost); the cost itself is tested in tests/backend/test_password_cost.py
  const cost = {
    REASONLAB_PASSWORD_HASH_TIME_COST: '1',
    REASONLAB_PASSWORD_HASH_MEMORY_KIB: '64',
    REASONLAB_PASSWORD_HASH_PARALLELISM: '1',
  };
  const proc = spawn(REASONLAB, args, {
    cwd: ROOT,
    env: { ...process.env, ...mirror, ...cost, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true, // its own process group: stop() ends the API and the worker together
  });
  proc.stdout.on('data', (d) => (out += d));
  proc.stderr.on('data', (d) => (out += d));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`reasonlab up exited ${proc.exitCode}:\n${out}`);
    try {
      const r = await fetch(`${url}/api/v1/health`);
      if (r.ok) break;
    } catch {
      /* not up yet */
    }
    if (Date.now() > deadline) throw new Error(`reasonlab up did not answer in ${timeoutMs} ms:\n${out}`);
    await sleep(300);
  }
  // the banner (login, password) may follow the first healthy answer by a moment
  while (!/Ctrl-C stops/.test(out) && Date.now() < deadline && proc.exitCode === null) await sleep(200);
  const password = /password:\s*(\S+)/.exec(out)?.[1];
  const username = /login:\s*(\S+)/.exec(out)?.[1] ?? 'admin';
  const token = readFileSync(join(home, 'admin.token'), 'utf8').trim();
  if (!password) throw new Error(`no admin password in the output of reasonlab up:\n${out}`);
  return {
    url,
    home,
    port,
    admin: { username, password, token },
    /** what `up` printed, then the tail of each service's log (HOME/logs/) */
    log: () => {
      const logs = join(home, 'logs');
      const tails = existsSync(logs)
        ? readdirSync(logs).map((f) => `--- ${f} ---\n${readFileSync(join(logs, f), 'utf8').slice(-4000)}`)
        : [];
      return [out, ...tails].join('\n');
    },
    /** a server-side CLI command against this platform's home */
    cli: (...args) => execFileSync(REASONLAB, args, { cwd: ROOT, env: { ...process.env, REASONLAB_HOME: home }, encoding: 'utf8' }),
    async api(path, { method = 'GET', body, token: t = token } = {}) {
      const r = await fetch(`${url}/api/v1${path}`, {
        method,
        headers: { Authorization: `Bearer ${t}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      const text = await r.text();
      if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${text}`);
      return text ? JSON.parse(text) : null;
    },
    stop: () => stopPlatform(proc, home),
  };
}

/** Stop a `reasonlab up` started in its own process group (SIGINT: the workers give their runs back; SIGKILL
 *  after `waitMs`), then remove its home. */
export async function stopPlatform(proc, home, waitMs = 40_000) {
  try {
    process.kill(-proc.pid, 'SIGINT');
  } catch {
    /* already gone */
  }
  for (let i = 0; i < waitMs / 200 && proc.exitCode === null; i++) await sleep(200);
  if (proc.exitCode === null) {
    try {
      process.kill(-proc.pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  proc.stdout.destroy();
  proc.stderr.destroy();
  rmSync(home, { recursive: true, force: true });
}

/** Chromium's command line for every launch (a browser of its own, or the shared server of e2e/run.mjs). */
export const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync',
];
const VIEWPORT = { width: 1440, height: 900 };

// -- errors a page reports -------------------------------------------------------------------------
// Every page of a browser from launchBrowser is watched: an uncaught exception (`pageerror`) or a
// console.error message (the app's, React's, or chromium's own "Failed to load resource: ... 404") is an
// error of the test. Under node's test runner each test ends with a check (the afterEach hook below) that
// fails it when its pages reported one; `assertNoPageErrors(browser)` fails a test at a point of its
// choosing; and an error reported after a file's last check (while it closes) still fails the file
// (`browser.close()` sets the exit code). An error a test provokes on purpose (a 4xx it asks for) is let
// through by `allowErrors(page, pattern, why)`, called in that test (it holds until the test ends), `why`
// saying why.

let ALLOWED = new WeakMap(); // page or browser -> [{ pattern, why }], for the test that is running
const BROWSERS = new Set(); // the browsers launched and not yet closed

/** The errors of `browser` not yet reported by a check; marks them reported. */
function takeNew(browser) {
  const fresh = browser.errors.slice(browser.reported);
  browser.reported = browser.errors.length;
  return fresh;
}

// NODE_TEST_CONTEXT: set in the process of a file that node's test runner runs (`node --test`, e2e/run.mjs);
// a demo or perf script imports this file outside it and gets no hook (its close() still reports)
if (process.env.NODE_TEST_CONTEXT) {
  afterEach(() => {
    ALLOWED = new WeakMap(); // an allowance holds for the test that made it
    const fresh = [...BROWSERS].flatMap(takeNew);
    if (fresh.length) throw new Error(`the pages reported ${fresh.length} error(s):\n${fresh.join('\n')}`);
  });
}

/**
 * Lets console errors whose text matches `pattern` (a RegExp) pass on `target`: a page, or a browser (every
 * page of it). `why`: what the test does on purpose that makes them, printed beside each error let through.
 */
export function allowErrors(target, pattern, why) {
  if (!(pattern instanceof RegExp) || !why) throw new Error('allowErrors(target, /pattern/, why): a RegExp and a reason');
  const list = ALLOWED.get(target) ?? [];
  list.push({ pattern, why });
  ALLOWED.set(target, list);
}

function watchPage(page, browser) {
  const allowance = (text) => [...(ALLOWED.get(page) ?? []), ...(ALLOWED.get(browser) ?? [])].find((a) => a.pattern.test(text));
  page.on('pageerror', (e) => {
    const text = `page error on ${page.url()}: ${e.stack || e.message}`;
    console.error(text);
    browser.errors.push(text); // an uncaught exception is never allowed
  });
  page.on('console', (msg) => {
    if (msg.type() !== 'error') return;
    const where = msg.location()?.url ? ` (${msg.location().url}:${msg.location().lineNumber})` : '';
    const text = `console.error on ${page.url()}: ${msg.text()}${where}`;
    const allowed = allowance(msg.text());
    if (allowed) {
      console.log(`${text} [allowed: ${allowed.why}]`);
      return;
    }
    console.error(text);
    browser.errors.push(text);
  });
}

/** The errors `browser`'s pages reported so far and no allowance let through. */
export const pageErrors = (browser) => [...browser.errors];

/** Fails (an AssertionError listing them) when `browser`'s pages reported errors no allowance let through. */
export function assertNoPageErrors(browser) {
  assert.deepEqual(takeNew(browser), [], 'the pages reported errors');
}

/** Watches every page of `context` (those open now and those to come) for `browser`. */
function watchContext(context, browser) {
  for (const page of context.pages()) watchPage(page, browser);
  context.on('page', (page) => watchPage(page, browser));
}

/**
 * A browser context of its own: a fresh profile (no cookies, no localStorage). Under `npm run e2e`
 * (e2e/run.mjs) it is a new context of the one chromium that the runner started for every test file
 * (E2E_BROWSER_WS); a file run alone, or a perf script, launches a chromium of its own. Its pages' errors
 * fail the test (above); those reported after the last test's check fail the file when `close()` runs.
 */
export async function launchBrowser() {
  const shared = process.env.E2E_BROWSER_WS;
  const browser = { errors: [], reported: 0 };
  BROWSERS.add(browser);
  // errors no test's check saw (reported while the file closes): the file fails. Not a throw: the file's
  // `after` hook goes on to stop its platform.
  const check = () => {
    BROWSERS.delete(browser);
    const fresh = takeNew(browser);
    if (!fresh.length) return;
    console.error(`the pages reported ${fresh.length} error(s) after the last test:\n${fresh.join('\n')}`);
    process.exitCode = 1;
  };
  if (shared) {
    const server = await chromium.connect(shared);
    const context = await server.newContext({ viewport: VIEWPORT });
    watchContext(context, browser);
    return Object.assign(browser, {
      context,
      async close() {
        await context.close();
        await server.close(); // a connected browser's close() disconnects; the runner closes chromium
        check();
      },
    });
  }
  const userDataDir = mkdtempSync(join(tmpdir(), 'reasonlab-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: VIEWPORT,
    args: CHROMIUM_ARGS,
  });
  watchContext(context, browser);
  return Object.assign(browser, {
    context,
    async close() {
      await context.close();
      rmSync(userDataDir, { recursive: true, force: true });
      check();
    },
  });
}

/** The bytes of a finished download: saved through playwright (a browser shared over its server keeps
 *  the file on its side, so `download.path()` is not available there), read, then removed. */
export async function downloadedBytes(download) {
  const dir = mkdtempSync(join(tmpdir(), 'reasonlab-download-'));
  try {
    const file = join(dir, 'file');
    await download.saveAs(file);
    return readFileSync(file);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function screenshot(page, name) {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

/**
 * Moves the mouse to (x, y) until `shown` (a locator: a chart's tooltip) appears. A chart draws its tooltip
 * on a mouse move over a drawn item, so a move made before the chart drew is lost: this moves off and back
 * again (at most `tries` times, `perTryMs` apart) before the last wait, which fails as waitFor does.
 */
export async function hoverUntil(page, [x, y], shown, { tries = 5, perTryMs = 2000 } = {}) {
  for (let i = 0; i < tries; i++) {
    await page.mouse.move(x, y);
    try {
      await shown.waitFor({ timeout: perTryMs });
      return;
    } catch {
      await page.mouse.move(x + 40, y + 40);
    }
  }
  await page.mouse.move(x, y);
  await shown.waitFor();
}

/** A new page of the browser (its errors fail the test: launchBrowser); `viewport` ({width, height}) replaces the default. */
export async function openPage(browser, { viewport } = {}) {
  const page = await browser.context.newPage();
  if (viewport) await page.setViewportSize(viewport);
  return page;
}

/**
 * Signs in on `url`/login as `user` ({username, password}); resolves once the header shows a signed-in user,
 * with `named` that user by name (after signing out and in as someone else).
 */
export async function signIn(page, url, { username, password }, { named = false } = {}) {
  await page.goto(`${url}/login`);
  await page.getByLabel('Username').fill(username);
  await page.locator('input[name="password"]').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  const current = page.getByTestId('current-user');
  await (named ? current.filter({ hasText: username }) : current).waitFor();
}

/** openPage, then signIn as `user` (a platform's admin, or the user a demo script is given). */
export async function signedInPage(browser, url, user, options) {
  const page = await openPage(browser, options);
  await signIn(page, url, user);
  return page;
}

/**
 * The API as the page's signed-in user (the token the dashboard keeps in localStorage): api(path, init)
 * resolves to the answer's JSON; a body given in `init` (a JSON string) is sent as JSON.
 */
export async function pageApi(page, url) {
  const token = await page.evaluate(() => Object.values(localStorage).find((v) => typeof v === 'string' && v.split('.').length === 3));
  return async (path, init = {}) => {
    const r = await fetch(`${url}/api/v1${path}`, {
      ...init,
      headers: { Authorization: `Bearer ${token}`, ...(init.body ? { 'Content-Type': 'application/json' } : {}) },
    });
    if (!r.ok) throw new Error(`${path}: ${r.status} ${await r.text()}`);
    return r.json();
  };
}

/** The New experiment page, once its form is there. */
export async function newExperimentForm(page, url) {
  await page.goto(`${url}/experiments/new`);
  await page.getByTestId('schema-form').waitFor();
}

/** Loads a kind example into the form; waits for its description (with `description`, one showing that text). */
export async function loadExample(page, example, description) {
  await page.getByLabel('Load example').selectOption(example);
  const shown = page.getByTestId('example-description');
  await (description ? shown.filter({ hasText: description }) : shown).waitFor();
}

/** The New experiment page with `kind` picked, then (each where given) the experiment's name and a kind example. */
export async function openExample(page, url, { kind, name, example, description }) {
  await newExperimentForm(page, url);
  await page.locator('#kind').selectOption(kind);
  if (name !== undefined) await page.getByLabel('Name').first().fill(name);
  if (example) await loadExample(page, example, description);
}

/** Previews the form's experiment; waits for the count of runs (with `runs`, that count: '1 run', '3 runs'). */
export async function previewExperiment(page, runs) {
  await page.getByRole('button', { name: 'Preview' }).click();
  const count = page.getByTestId('preview-count');
  await (runs === undefined ? count : count.filter({ hasText: `${runs} run${runs === 1 ? '' : 's'}` })).waitFor();
}

/**
 * Submits the form's experiment, previewed first (see previewExperiment) unless `previewed`; resolves to
 * the experiment's id, read from the URL of its page that the dashboard opens.
 */
export async function submitExperiment(page, { runs, previewed = false } = {}) {
  if (!previewed) await previewExperiment(page, runs);
  await page.getByTestId('submit-experiment').click();
  await page.waitForURL(/\/experiments\/\d+$/);
  return Number(new URL(page.url()).pathname.split('/').pop());
}

/** On an experiment's page: waits until `count` runs show succeeded or one shows failed (polled each second). */
export async function waitForRuns(page, count, timeoutMs) {
  await page.waitForFunction(
    (n) => document.querySelectorAll('[role="row"][data-status="succeeded"]').length === n || document.querySelector('[role="row"][data-status="failed"]'),
    count,
    { timeout: timeoutMs, polling: 1000 },
  );
}

/** Asserts that the experiment's runs are `count` runs that all succeeded (the platform log's tail as the message); returns the experiment. */
export async function assertRunsSucceeded(platform, experimentId, count) {
  const detail = await platform.api(`/experiments/${experimentId}`);
  assert.deepEqual(detail.runs.map((r) => r.status), Array(count).fill('succeeded'), platform.log().slice(-3000));
  return detail;
}

/** submitExperiment, waitForRuns and assertRunsSucceeded for an experiment of `runs` runs; resolves to its id. */
export async function runExperiment(page, platform, { runs, timeoutMs }) {
  const experimentId = await submitExperiment(page, { runs });
  await waitForRuns(page, runs, timeoutMs);
  await assertRunsSucceeded(platform, experimentId, runs);
  return experimentId;
}

/** A run's page with its Results tab open. */
export async function openRunResults(page, url, runId) {
  await page.goto(`${url}/runs/${runId}`);
  await page.getByRole('tab', { name: /Results/ }).click();
}

/** For the demo scripts' long runs: waits until the experiment's page lists runs and every one has finished, however it ended. */
export async function waitUntilFinished(page, { timeoutMs = 3_600_000, pollMs = 5000 } = {}) {
  await page.waitForFunction(
    () => {
      const rows = [...document.querySelectorAll('[role="row"][data-run-id]')];
      return rows.length > 0 && rows.every((r) => ['succeeded', 'failed', 'cancelled'].includes(r.getAttribute('data-status')));
    },
    null,
    { timeout: timeoutMs, polling: pollMs },
  );
}

/**
 * For the demo scripts: where their screenshots (docs/img) and JSON (test-output) go, both made if missing,
 * and a log whose lines start with the seconds since this call.
 */
export function demoOutput() {
  const IMG = join(ROOT, 'docs/img');
  const OUT = join(ROOT, 'test-output');
  mkdirSync(IMG, { recursive: true });
  mkdirSync(OUT, { recursive: true });
  const started = Date.now();
  return { IMG, OUT, log: (m) => console.log(`${((Date.now() - started) / 1000).toFixed(0).padStart(5)}s ${m}`) };
}
