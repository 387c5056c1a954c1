// Starts a real platform (`reasonlab up` on a temporary home and a free port) and a headless Debian
// chromium driven by playwright-core, for the e2e tests and the perf script. No browser is downloaded.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
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
  const proc = spawn(REASONLAB, args, {
    cwd: ROOT,
    env: { ...process.env, ...env },
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
    async stop() {
      try {
        process.kill(-proc.pid, 'SIGINT');
      } catch {
        /* already gone */
      }
      for (let i = 0; i < 200 && proc.exitCode === null; i++) await sleep(200);
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
    },
  };
}

export async function launchBrowser() {
  const userDataDir = mkdtempSync(join(tmpdir(), 'reasonlab-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1440, height: 900 },
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync',
    ],
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}

export async function screenshot(page, name) {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}
