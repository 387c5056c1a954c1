// What the perf scripts share (run.mjs times the pages, profile.mjs profiles one): the seeded data, the
// signed-in page with its CPU slowed as asked, the page's own note of when its content is drawn, and
// builds staged side by side (loads.mjs, scroll.mjs).

// The renderer's CPU slowed down this many times (Chrome's CPU throttling, as DevTools' "4x slowdown"):
// the same figures as on a slower machine or in a shared VM's slow spell (the API is not slowed).
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../e2e/harness.mjs';

export const SLOWDOWN = Number(process.env.PERF_CPU_SLOWDOWN ?? 1);

const BATCH = 10_000;

/** One run with `points` steps of `loss`, posted in batches of 10,000. */
export async function seedBigMetric(platform, points) {
  const exp = await platform.api('/experiments', { method: 'POST', body: { name: `perf ${points} points`, kind: 'diagnostic', spec: {} } });
  const runId = exp.runs[0].id;
  const t0 = performance.now();
  let rng = 1;
  const rand = () => ((rng = (rng * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  for (let start = 0; start < points; start += BATCH) {
    const batch = [];
    for (let step = start; step < Math.min(points, start + BATCH); step++) {
      // a decaying loss with noise and a rare spike, so the band has something to show
      const value = 2 * Math.exp(-step / (points / 5)) + 0.05 * rand() + (rand() < 1e-4 ? 5 : 0);
      batch.push({ key: 'loss', step, value });
    }
    await platform.api(`/runs/${runId}/metrics`, { method: 'POST', body: { points: batch } });
  }
  return { runId, ingestSeconds: (performance.now() - t0) / 1000 };
}

/** One experiment of `runs` runs (a 2 x runs/2 grid), each with two final metrics. */
export async function seedManyRuns(platform, runs) {
  const seeds = Array.from({ length: runs / 2 }, (_, i) => i);
  const exp = await platform.api('/experiments', {
    method: 'POST',
    body: { name: `perf ${runs} runs`, kind: 'diagnostic', spec: {}, sweep: { grid: { 'train.lr': [0.1, 0.01] }, seeds } },
  });
  // one final metric per run so the table has metric columns to sort by
  const queue = [...exp.runs];
  const worker = async () => {
    for (let r = queue.shift(); r; r = queue.shift())
      await platform.api(`/runs/${r.id}/metrics`, { method: 'POST', body: { points: [{ key: 'loss', step: 10, value: Math.random() }, { key: 'acc', step: 10, value: Math.random() }] } });
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  return { experimentId: exp.id };
}

/** What each page is waiting for: the first chart with its data, every one of `runs` runs listed and a
 *  row drawn. */
export function drawnTargets(runs) {
  return {
    chart: { selector: '[data-testid="metric-chart-loss"][data-buckets] canvas' },
    table: { selector: '[data-testid="runs-table"] [role="row"][data-run-id]', text: ['[data-testid="runs-shown"]', `${runs} of ${runs}`] },
  };
}

/** In the page, from its start: when each of `targets` is first in the DOM, and the second frame after it
 *  (the first is the one that paints it; the second starts once the work that followed is done), in ms
 *  from the navigation's start. The figure the page itself gives, without the polling of the harness
 *  (a CDP round trip per check, and the evaluate that waits for two frames, ~0.2 s on this machine). */
function watchDrawn(targets) {
  const drawn = (window.__drawn = {});
  const check = () => {
    for (const [name, { selector, text }] of Object.entries(targets)) {
      if (drawn[name] || !document.querySelector(selector)) continue;
      if (text && !document.querySelector(text[0])?.textContent?.replaceAll(',', '').startsWith(text[1])) continue; // counts print as 10,000
      const mark = (drawn[name] = { inDom: performance.now() });
      requestAnimationFrame(() => requestAnimationFrame((t) => (mark.secondFrame = t)));
    }
  };
  new MutationObserver(check).observe(document, { childList: true, subtree: true, attributes: true, characterData: true });
}

/**
 * Builds served side by side by one platform (`AB=dirA,dirB`: `npx vite build --outDir DIR` each): every
 * build's scripts and stylesheets are copied into backend/static/assets under a prefix of their own
 * (`ab0-`, `ab1-`, ...) with the references to them rewritten, since two builds name a chunk alike
 * when only its contents differ (a compile hint is added after the hash). `serve(build)` puts that
 * build's index.html in place; `restore()` puts the current build's back and removes the copies.
 */
export function stageBuilds(builds) {
  const static_ = join(ROOT, 'backend/static');
  const served = join(static_, 'index.html');
  const current = readFileSync(served);
  const pages = new Map();
  const copies = [];
  builds.forEach((dir, i) => {
    const prefix = `ab${i}-`;
    const names = readdirSync(join(dir, 'assets')).filter((f) => /\.(js|css)$/.test(f));
    const rename = (text) => names.reduce((t, n) => t.split(`/${n}`).join(`/${prefix}${n}`).split(`"./${n}"`).join(`"./${prefix}${n}"`), text);
    for (const n of names) {
      copies.push(join(static_, 'assets', prefix + n));
      writeFileSync(copies.at(-1), rename(readFileSync(join(dir, 'assets', n), 'utf8')));
    }
    pages.set(dir, rename(readFileSync(join(dir, 'index.html'), 'utf8')));
  });
  return {
    serve: (build) => writeFileSync(served, pages.get(build)),
    restore: () => {
      writeFileSync(served, current);
      for (const f of copies) rmSync(f, { force: true });
    },
  };
}

/** Main-thread CPU ms of the page so far. */
export async function mainThreadMs(page) {
  const { metrics } = await page.cdp.send('Performance.getMetrics');
  return Math.round(metrics.find((m) => m.name === 'TaskDuration').value * 1000);
}

/** The page's own figure for `name` (watchDrawn), once its second frame has run. */
export async function drawnMs(page, name) {
  const t = await page.waitForFunction((n) => window.__drawn?.[n]?.secondFrame, name, { timeout: 60_000 });
  return Math.round(await t.jsonValue());
}

/** A page signed in as the admin with a JWT from the login route (what the login page stores), noting
 *  when `targets` are drawn, its CPU slowed down SLOWDOWN times; `page.cdp` is its DevTools session. */
export async function signedInPage(browser, platform, targets) {
  const r = await fetch(`${platform.url}/api/v1/auth/login`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ username: platform.admin.username, password: platform.admin.password }),
  });
  const { access_token: jwt } = await r.json();
  const page = await browser.context.newPage();
  await page.addInitScript((token) => localStorage.setItem('reasonlab.token', token), jwt);
  await page.addInitScript(watchDrawn, targets);
  // the renderer's main-thread CPU time (thread ticks): what the page itself cost, less sensitive to the
  // machine's load than the wall clock (on two shared cores the wall clock waits for a core)
  page.cdp = await browser.context.newCDPSession(page);
  await page.cdp.send('Performance.enable', { timeDomain: 'threadTicks' });
  if (SLOWDOWN !== 1) await page.cdp.send('Emulation.setCPUThrottlingRate', { rate: SLOWDOWN });
  return page;
}
