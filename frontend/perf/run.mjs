// Browser timings of the dashboard on big data, against a real `reasonlab up` (no worker: the seeded
// runs stay put while we measure). Prints a table and writes test-output/perf/results.json.
//
//   run page, one metric of 1,000,000 points: time to first chart; time to a zoomed re-render
//     (wheel zoom -> debounce -> finer buckets of the zoomed steps from the API -> drawn); the JavaScript
//     the page fetched before its first API request and before its metrics request (bytes, as parsed)
//   experiment page, 10,000 runs: time to interactive (rows drawn), scroll smoothness (frame times while
//     scrolling the virtualised table end to end), time to re-sort by a metric
//   project runs page (/runs), the same runs: a filtered page sorted by a metric on the server, first row
//     drawn; the seed groups (group=*, the loss column's mean and CI), first group drawn
//
// Not a test: figures are reported, not asserted (goal: each under 1 s on this machine).
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { launchBrowser, ROOT, startPlatform } from '../e2e/harness.mjs';
import { drawnMs, drawnTargets, mainThreadMs, seedBigMetric, seedManyRuns, signedInPage, SLOWDOWN } from './pages.mjs';

const POINTS = Number(process.env.PERF_POINTS ?? 1_000_000);
const RUNS = Number(process.env.PERF_RUNS ?? 10_000);
const DRAWN = drawnTargets(RUNS);
const REPEAT = Number(process.env.PERF_REPEAT ?? 3);

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ms = (x) => `${x.toFixed(0)} ms`;
const kb = (x) => `${(x / 1024).toFixed(0)} KiB`;

async function measureRunPage(page, platform, runId) {
  const t0 = Date.now();
  await page.goto(`${platform.url}/runs/${runId}`);
  // the chart host carries its bucket count once data is in; two frames later the canvas is painted
  await page.waitForSelector('[data-testid="metric-chart-loss"][data-buckets] canvas', { timeout: 60_000 });
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  const firstChart = Date.now() - t0;
  const firstChartCpu = await mainThreadMs(page);
  const firstChartInPage = await drawnMs(page, 'chart');
  const canvas = page.locator('[data-testid="metric-chart-loss"] canvas').first();
  const box = await canvas.boundingBox();
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  const z0 = Date.now();
  for (let i = 0; i < 6; i++) await page.mouse.wheel(0, -400);
  await page.waitForSelector('[data-testid="metric-chart-loss"][data-refined="true"]', { timeout: 60_000 });
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  const zoomed = Date.now() - z0;
  const range = await page.getAttribute('[data-testid="metric-chart-loss"]', 'data-range');
  return { firstChart, firstChartCpu, firstChartInPage, zoomed, range, ...(await scriptBytes(page)) };
}

/** The JavaScript a page had downloaded (resource timing: decoded = as parsed, encoded = on the wire)
 *  when its first API request and its first metrics request started, and in all so far. */
async function scriptBytes(page) {
  return page.evaluate(() => {
    const res = performance.getEntriesByType('resource');
    const first = (re) => Math.min(...res.filter((e) => re.test(e.name)).map((e) => e.startTime));
    const firstApi = first(/\/api\/v1\//);
    const firstMetrics = first(/\/api\/v1\/runs\/\d+\/metrics\?/);
    const js = res.filter((e) => /\.js(\?|$)/.test(e.name));
    const sum = (xs, f) => xs.reduce((a, e) => a + e[f], 0);
    // downloaded before the request went out (a chunk fetched alongside it does not hold it up)
    const before = (t) => js.filter((e) => e.responseEnd <= t);
    return {
      jsBeforeFirstApi: sum(before(firstApi), 'decodedBodySize'),
      jsBeforeFirstApiWire: sum(before(firstApi), 'encodedBodySize'),
      jsBeforeMetrics: sum(before(firstMetrics), 'decodedBodySize'),
      jsTotal: sum(js, 'decodedBodySize'),
      jsTotalWire: sum(js, 'encodedBodySize'),
      firstApiAtMs: firstApi,
      firstMetricsAtMs: firstMetrics,
    };
  });
}

async function measureExperimentPage(page, platform, experimentId) {
  const t0 = Date.now();
  await page.goto(`${platform.url}/experiments/${experimentId}`);
  await page.waitForFunction((n) => document.querySelector('[data-testid="runs-shown"]')?.textContent?.replaceAll(',', '').startsWith(`${n} of ${n}`), RUNS, { timeout: 60_000 });
  await page.waitForSelector('[data-testid="runs-table"] [role="row"][data-run-id]');
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  const interactive = Date.now() - t0;
  const interactiveCpu = await mainThreadMs(page);
  const interactiveInPage = await drawnMs(page, 'table');
  const js = await scriptBytes(page);
  // the runs' request: when it started and ended after navigation, and its size (decoded / on the wire)
  const table = await page.evaluate(() => {
    const e = performance.getEntriesByType('resource').find((x) => /\/runs-table/.test(x.name));
    return e ? { start: e.startTime, end: e.responseEnd, bytes: e.decodedBodySize, wire: e.encodedBodySize } : null;
  });
  // scroll the table end to end over ~3 s, one step per frame, recording frame intervals
  const scroll = await page.evaluate(async () => {
    const el = document.querySelector('[data-testid="runs-table"]');
    const frames = [];
    const total = el.scrollHeight - el.clientHeight;
    const steps = 180;
    let last = performance.now();
    for (let i = 1; i <= steps; i++) {
      el.scrollTop = (total * i) / steps;
      const now = await new Promise((r) => requestAnimationFrame(r));
      frames.push(now - last);
      last = now;
    }
    const rows = el.querySelectorAll('[role="row"][data-run-id]').length;
    frames.sort((a, b) => a - b);
    const mean = frames.reduce((a, b) => a + b, 0) / frames.length;
    return { meanFrame: mean, p95Frame: frames[Math.floor(frames.length * 0.95)], maxFrame: frames.at(-1), longFrames: frames.filter((f) => f > 50).length, rowsInDom: rows };
  });
  const s0 = Date.now();
  const header = page.getByRole('button', { name: /^loss/ }).first();
  const before = await page.locator('[role="row"][data-run-id]').first().getAttribute('data-run-id');
  await header.click();
  await page.waitForFunction((b) => document.querySelector('[role="row"][data-run-id]')?.getAttribute('data-run-id') !== b, before);
  const sort = Date.now() - s0;
  return { interactive, interactiveCpu, interactiveInPage, sort, jsBeforeFirstApi: js.jsBeforeFirstApi, jsTotal: js.jsTotal, table, ...scroll };
}

/** /runs from its URL: a query sorted by a metric (a server page), then the seed groups; navigation to
 *  the second frame after the first row (group) with its data is drawn, in the page. */
async function measureRunsPage(page, platform) {
  const time = async (search, selector) => {
    const t0 = Date.now();
    await page.goto(`${platform.url}/runs?${search}`);
    await page.waitForSelector(selector, { timeout: 60_000 });
    const inPage = await page.evaluate(
      () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(performance.now())))),
    );
    return { harness: Date.now() - t0, inPage };
  };
  const filtered = await time(
    new URLSearchParams({ q: 'params.train.lr = 0.1 and metrics.loss < 0.5', cols: 'id,status,params.train.lr,metrics.loss', sort: '-metrics.loss' }).toString(),
    '[data-testid="project-runs"] [data-run-id] [data-value]:not([data-value=""])',
  );
  const grouped = await time(new URLSearchParams({ cols: 'metrics.loss,metrics.acc', group: '*' }).toString(), '[data-testid="group-metric"][data-mean]:not([data-mean=""])');
  return { filtered, grouped };
}

/** The API's share: the downsampled query alone, timed from node (median of REPEAT). */
async function measureApi(platform, runId, range) {
  const time = async (query) => {
    const xs = [];
    for (let i = 0; i < REPEAT; i++) {
      const t0 = performance.now();
      const r = await fetch(`${platform.url}/api/v1/runs/${runId}/metrics?${query}`, { headers: { Authorization: `Bearer ${platform.admin.token}` } });
      await r.arrayBuffer();
      xs.push(performance.now() - t0);
    }
    return median(xs);
  };
  const [lo, hi] = (range ?? '0-0').split('-');
  return { fullMs: await time('keys=loss&max_points=1000'), zoomedMs: await time(`keys=loss&max_points=1000&step_min=${lo}&step_max=${hi}`) };
}

/** A fixed piece of CPU work timed in node (sorting 2,000,000 seeded numbers, median of 5): the figures
 *  above move with the machine's speed (a shared VM's neighbours), and this says how fast it was. */
function cpuProbeMs() {
  const xs = [];
  for (let k = 0; k < 5; k++) {
    let rng = 7;
    const a = new Float64Array(2_000_000).map(() => (rng = (rng * 1103515245 + 12345) % 2 ** 31));
    const t0 = performance.now();
    a.sort();
    xs.push(performance.now() - t0);
  }
  return median(xs);
}

const probeBefore = cpuProbeMs();
const platform = await startPlatform({ workers: 0 });
const browser = await launchBrowser();
try {
  console.log(`seeding: one run with ${POINTS.toLocaleString()} points, one experiment with ${RUNS.toLocaleString()} runs…`);
  const big = await seedBigMetric(platform, POINTS);
  const many = await seedManyRuns(platform, RUNS);
  console.log(`seeded (metric ingest ${big.ingestSeconds.toFixed(1)} s)`);
  const runTimes = [];
  const expTimes = [];
  const runsTimes = [];
  for (let i = 0; i < REPEAT; i++) {
    const page = await signedInPage(browser, platform, DRAWN);
    runTimes.push(await measureRunPage(page, platform, big.runId));
    await page.close();
    const page2 = await signedInPage(browser, platform, DRAWN);
    expTimes.push(await measureExperimentPage(page2, platform, many.experimentId));
    await page2.close();
    const page3 = await signedInPage(browser, platform, DRAWN);
    runsTimes.push(await measureRunsPage(page3, platform));
    await page3.close();
  }
  const apiTimes = await measureApi(platform, big.runId, runTimes[0].range);
  const results = {
    loadAverage: loadavg().map((x) => Number(x.toFixed(2))),
    cpuProbeMs: { before: Math.round(probeBefore), after: Math.round(cpuProbeMs()) },
    api: apiTimes,
    points: POINTS,
    runs: RUNS,
    repeat: REPEAT,
    cpuSlowdown: SLOWDOWN,
    runPage: {
      firstChartMs: median(runTimes.map((r) => r.firstChart)),
      firstChartMainThreadMs: median(runTimes.map((r) => r.firstChartCpu)),
      firstChartInPageMs: median(runTimes.map((r) => r.firstChartInPage)),
      zoomedRerenderMs: median(runTimes.map((r) => r.zoomed)),
      zoomRange: runTimes[0].range,
      jsBeforeFirstApi: runTimes[0].jsBeforeFirstApi,
      jsBeforeFirstApiWire: runTimes[0].jsBeforeFirstApiWire,
      jsBeforeMetrics: runTimes[0].jsBeforeMetrics,
      jsTotal: runTimes[0].jsTotal,
      jsTotalWire: runTimes[0].jsTotalWire,
      all: runTimes,
    },
    experimentPage: {
      interactiveMs: median(expTimes.map((r) => r.interactive)),
      interactiveMainThreadMs: median(expTimes.map((r) => r.interactiveCpu)),
      interactiveInPageMs: median(expTimes.map((r) => r.interactiveInPage)),
      sortMs: median(expTimes.map((r) => r.sort)),
      meanFrameMs: median(expTimes.map((r) => r.meanFrame)),
      p95FrameMs: median(expTimes.map((r) => r.p95Frame)),
      longFrames: median(expTimes.map((r) => r.longFrames)),
      rowsInDom: expTimes[0].rowsInDom,
      all: expTimes,
    },
    runsPage: {
      filteredSortedInPageMs: median(runsTimes.map((r) => r.filtered.inPage)),
      filteredSortedMs: median(runsTimes.map((r) => r.filtered.harness)),
      groupedInPageMs: median(runsTimes.map((r) => r.grouped.inPage)),
      groupedMs: median(runsTimes.map((r) => r.grouped.harness)),
      all: runsTimes,
    },
  };
  const t = expTimes.map((r) => r.table).filter(Boolean);
  const tableAt = t.length ? `${ms(median(t.map((x) => x.start)))} / ${ms(median(t.map((x) => x.end)))} (${kb(t[0].bytes)}, ${kb(t[0].wire)} on the wire)` : 'not seen';
  mkdirSync(join(ROOT, 'test-output/perf'), { recursive: true });
  writeFileSync(join(ROOT, 'test-output/perf/results.json'), JSON.stringify(results, null, 2));
  console.log(`
| measurement (median of ${REPEAT}) | time |
| --- | --- |
| run page, ${POINTS.toLocaleString()} points: first chart, in the page (navigation start to the second frame after it is drawn) | ${ms(results.runPage.firstChartInPageMs)} |
| the same from the harness (goto to its two-frame wait answered, polling included) | ${ms(results.runPage.firstChartMs)} |
| of which the page's main-thread CPU (thread ticks) | ${ms(results.runPage.firstChartMainThreadMs)} |
| run page: zoomed re-render (incl. ${200} ms debounce) | ${ms(results.runPage.zoomedRerenderMs)} |
| of which the API: full-range query / zoomed query | ${ms(apiTimes.fullMs)} / ${ms(apiTimes.zoomedMs)} |
| run page: JavaScript before its first API request / before its metrics request / by the first chart | ${kb(results.runPage.jsBeforeFirstApi)} / ${kb(results.runPage.jsBeforeMetrics)} / ${kb(results.runPage.jsTotal)} (wire: ${kb(results.runPage.jsBeforeFirstApiWire)} / - / ${kb(results.runPage.jsTotalWire)}) |
| experiment page, ${RUNS.toLocaleString()} runs: interactive, in the page (navigation start to the second frame after a row is drawn) | ${ms(results.experimentPage.interactiveInPageMs)} |
| the same from the harness (goto to its two-frame wait answered, polling included) | ${ms(results.experimentPage.interactiveMs)} |
| of which the page's main-thread CPU (thread ticks) | ${ms(results.experimentPage.interactiveMainThreadMs)} |
| of which the runs' request (GET .../runs-table): started / answered after navigation | ${tableAt} |
| experiment page, each load in order, in the page / runs table answered (the first builds the runs table; later loads get it kept, unchanged) | ${expTimes.map((r) => `${ms(r.interactiveInPage)} / ${r.table ? ms(r.table.end) : '-'}`).join(', ')} |
| experiment page: re-sort by a metric | ${ms(results.experimentPage.sortMs)} |
| runs page (/runs, ${RUNS.toLocaleString()} runs): a query sorted by loss (descending, on the server), first row drawn, in the page / from the harness | ${ms(results.runsPage.filteredSortedInPageMs)} / ${ms(results.runsPage.filteredSortedMs)} |
| runs page: seed groups (every spec field but seed; loss and acc mean and CI), first group drawn, in the page / from the harness | ${ms(results.runsPage.groupedInPageMs)} / ${ms(results.runsPage.groupedMs)} |
| experiment page: scroll, mean / p95 frame | ${results.experimentPage.meanFrameMs.toFixed(1)} / ${results.experimentPage.p95FrameMs.toFixed(1)} ms (${results.experimentPage.longFrames} frames > 50 ms; ${results.experimentPage.rowsInDom} rows in the DOM) |

the browser's CPU slowed down ${SLOWDOWN}x (PERF_CPU_SLOWDOWN; 1: not slowed)
machine load average (1, 5, 15 min) at the end: ${results.loadAverage.join(', ')}
machine speed probe (node sorting 2,000,000 numbers, lower is faster): ${results.cpuProbeMs.before} ms before, ${results.cpuProbeMs.after} ms after
`);
} finally {
  await browser.close();
  await platform.stop();
}
