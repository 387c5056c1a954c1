// The experiment page's scroll alone, for one build or several side by side (not part of `make test`):
// seeds PERF_RUNS runs (default 2,000) on a `reasonlab up` without workers, then per load scrolls the runs
// table end to end in 180 steps, one a frame (as perf/run.mjs does), and prints the mean and p95 frame.
//
//   AB=/tmp/static_old,/tmp/static_new   builds (`npx vite build --outDir DIR`) served in turn, one per
//                                        load (pages.mjs stageBuilds); the current build's index.html is
//                                        put back after
//   REP=6                                loads; PERF_CPU_SLOWDOWN=4 slows the page's CPU (pages.mjs)
//   PROFILE=1 / TRACE=1 / RAF=1          where the frames go: the sampling profiler's self time by
//                                        function, the trace's events by name, rAF callbacks' time
// `npm run perf:scroll`, e.g. `PERF_RUNS=10000 PERF_CPU_SLOWDOWN=4 REP=6 AB=... npm run perf:scroll`.
import { launchBrowser, startPlatform } from '../e2e/harness.mjs';
import { drawnTargets, seedManyRuns, signedInPage, stageBuilds } from './pages.mjs';
const RUNS = Number(process.env.PERF_RUNS ?? 2000);
const platform = await startPlatform({ workers: 0 });
const browser = await launchBrowser();
const builds = (process.env.AB ?? '').split(',').filter(Boolean);
const staged = stageBuilds(builds);
try {
  const many = await seedManyRuns(platform, RUNS);
  for (let rep = 0; rep < Number(process.env.REP ?? 2); rep++) {
  const build = builds.length ? builds[rep % builds.length] : 'current';
  if (builds.length) staged.serve(build);
  const page = await signedInPage(browser, platform, drawnTargets(RUNS));
  await page.goto(`${platform.url}/experiments/${many.experimentId}`);
  await page.waitForSelector('[data-testid="runs-table"] [role="row"][data-run-id]');
  await page.waitForTimeout(1500);
  const events = [];
  if (process.env.TRACE) { page.cdp.on('Tracing.dataCollected', (d) => events.push(...d.value)); await page.cdp.send('Tracing.start', { categories: 'devtools.timeline,disabled-by-default-devtools.timeline', transferMode: 'ReportEvents' }); }
  if (process.env.PROFILE) { await page.cdp.send('Profiler.enable'); await page.cdp.send('Profiler.setSamplingInterval', { interval: 200 }); await page.cdp.send('Profiler.start'); }
  if (process.env.RAF) await page.evaluate(() => {
    const orig = window.requestAnimationFrame.bind(window); window.__raf = new Map();
    window.requestAnimationFrame = (cb) => orig((t) => { const t0 = performance.now(); try { cb(t); } finally { const k = (cb.name || '') + ' ' + cb.toString().slice(0, 120); window.__raf.set(k, (window.__raf.get(k) ?? 0) + performance.now() - t0); } });
  });
  const scroll = await page.evaluate(async () => {
    const el = document.querySelector('[data-testid="runs-table"]');
    const frames = []; const total = el.scrollHeight - el.clientHeight; const steps = 180;
    let last = performance.now();
    for (let i = 1; i <= steps; i++) { el.scrollTop = (total * i) / steps; const now = await new Promise((r) => requestAnimationFrame(r)); frames.push(now - last); last = now; }
    frames.sort((a, b) => a - b);
    return { mean: frames.reduce((a, b) => a + b, 0) / frames.length, p95: frames[Math.floor(frames.length * 0.95)], rows: el.querySelectorAll('[role="row"][data-run-id]').length };
  });
  console.log('scroll', build, JSON.stringify(scroll));
  if (process.env.RAF) console.log(await page.evaluate(() => [...window.__raf].sort((a, b) => b[1] - a[1]).slice(0, 8).map(([k, v]) => `${v.toFixed(0)} ms ${k}`).join('\n')));
  if (process.env.TRACE) {
    await new Promise((r) => { page.cdp.once('Tracing.tracingComplete', r); page.cdp.send('Tracing.end'); });
    const main = new Map();
    for (const e of events) if (e.ph === 'X' && e.dur) { const k = e.name; main.set(k, (main.get(k) ?? 0) + e.dur); }
    for (const [k, t] of [...main].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log((t / 1000).toFixed(0).padStart(8), k);
  }
  if (process.env.PROFILE) {
    const { profile } = await page.cdp.send('Profiler.stop');
    const self = new Map(); const dt = profile.timeDeltas; const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const counts = new Map(); profile.samples.forEach((s, i) => counts.set(s, (counts.get(s) ?? 0) + (dt[i] ?? 0)));
    for (const [id, t] of counts) { const n = byId.get(id); const k = `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url.split('/').pop()}:${n.callFrame.lineNumber}`; self.set(k, (self.get(k) ?? 0) + t); }
    const tot = [...self.values()].reduce((a, b) => a + b, 0);
    console.log('total ms', (tot / 1000).toFixed(0));
    for (const [k, t] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 40)) console.log((t / 1000).toFixed(1).padStart(8), k);
  }
  await page.close();
  }
} finally { staged.restore(); await browser.close(); await platform.stop(); }
