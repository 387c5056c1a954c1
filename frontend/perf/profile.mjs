// Where a page's load spends its main thread, up to what it waits for (the run page's first chart, or the
// experiment page's rows): Chrome's sampling profiler over the load, against a real `reasonlab up` with
// seeded data. Prints, for the last of PERF_REPEAT loads, the main thread in 50 ms slices from the
// navigation's start (JavaScript by chunk, "(program)": V8's parse and compile and Blink's style, layout
// and paint; "(garbage collector)"; idle), then the functions with the most self time, and writes each
// load's profile to test-output/perf/<page>-<n>.cpuprofile (DevTools' Performance panel opens it).
//
//   npm run perf:profile                       the run page, 100,000 points
//   PERF_PAGE=experiment PERF_RUNS=2000 ...    the experiment page
//   PERF_CPU_SLOWDOWN=2 ...                    the browser's CPU slowed down 2x (as in perf/run.mjs)
//
// Function names are minified in the production build: `npx vite build --minify false` first to read them
// (then `npm run build` again). Not a test, and not the figures to report: the profiler slows the page
// (perf/run.mjs measures).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { launchBrowser, ROOT, startPlatform } from '../e2e/harness.mjs';
import { drawnMs, drawnTargets, seedBigMetric, seedManyRuns, signedInPage, SLOWDOWN } from './pages.mjs';

const PAGE = process.env.PERF_PAGE ?? 'run';
const POINTS = Number(process.env.PERF_POINTS ?? 100_000);
const RUNS = Number(process.env.PERF_RUNS ?? 2_000);
const REPEAT = Number(process.env.PERF_REPEAT ?? 3);
const SLICE_MS = 50;
const OUT = join(ROOT, 'test-output/perf');
// what the load waits for, by page: the run page's first chart, the experiment page's rows (pages.mjs)
const TARGET = PAGE === 'run' ? 'chart' : 'table';

async function seed(platform) {
  if (PAGE === 'run') return `/runs/${(await seedBigMetric(platform, POINTS)).runId}`;
  return `/experiments/${(await seedManyRuns(platform, RUNS)).experimentId}`;
}

/** A function the page runs as it starts (an init script), busy for 2 ms, at a time it notes on its own
 *  clock: its first sample in the profile ties the profile's clock to the page's. */
function markNavigation() {
  window.__markedAt = performance.now();
  (function reasonlabNavigationMarker() {
    while (performance.now() - window.__markedAt < 2);
  })();
}

/** The profile's samples as [ms since the navigation started, node id]. */
function samplesFromNavigation(profile, markedAtMs) {
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  let t = profile.startTime;
  const stamped = profile.samples.map((id, i) => [(t += profile.timeDeltas[i]), id]);
  const marker = stamped.find(([, id]) => nodes.get(id).callFrame.functionName === 'reasonlabNavigationMarker');
  if (!marker) throw new Error('the navigation marker is not in the profile');
  const navigationStartUs = marker[0] - markedAtMs * 1000;
  return stamped.map(([us, id]) => [(us - navigationStartUs) / 1000, id]);
}

/** What a sample is: a native bucket, or the chunk of its innermost JavaScript frame (file name without
 *  its content hash). */
function labeller(profile) {
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  return (id) => {
    const { functionName, url, lineNumber } = nodes.get(id).callFrame;
    if (['(idle)', '(program)', '(garbage collector)'].includes(functionName)) return { chunk: functionName };
    const file = url.split('/').pop() || '(no file)'; // built-ins (appendChild, fetch) and the harness's init scripts
    return { chunk: file.replace(/-[\w-]{8}\.js$/, ''), fn: `${functionName || '(anonymous)'} ${file}:${lineNumber + 1}` };
  };
}

function report(profile, markedAtMs, doneMs) {
  const label = labeller(profile);
  const slices = new Map();
  const self = new Map();
  let last = 0;
  const samples = samplesFromNavigation(profile, markedAtMs);
  for (const [i, [ms, id]] of samples.entries()) {
    const dt = i + 1 < samples.length ? samples[i + 1][0] - ms : 0;
    if (ms < 0 || ms > doneMs) continue;
    const { chunk, fn } = label(id);
    const slice = Math.floor(ms / SLICE_MS);
    const s = slices.get(slice) ?? new Map();
    s.set(chunk, (s.get(chunk) ?? 0) + dt);
    slices.set(slice, s);
    if (fn) self.set(fn, (self.get(fn) ?? 0) + dt);
    last = Math.max(last, slice);
  }
  const line = (m) =>
    [...m].sort((a, b) => b[1] - a[1]).filter(([, v]) => v >= 1).map(([k, v]) => `${k} ${v.toFixed(0)}`).join(', ');
  console.log(`\nmain thread from the navigation's start to the second frame after the page's content (${doneMs.toFixed(0)} ms), ms per ${SLICE_MS} ms slice:`);
  for (let s = 0; s <= last; s++) console.log(`${String(s * SLICE_MS).padStart(5)} ms  ${line(slices.get(s) ?? new Map()) || '- (no samples: the page not yet in its renderer)'}`);
  const total = new Map();
  for (const s of slices.values()) for (const [k, v] of s) total.set(k, (total.get(k) ?? 0) + v);
  console.log(`\nin all: ${line(total)}`);
  console.log('\nmost self time (JavaScript):');
  for (const [fn, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 20)) console.log(`${v.toFixed(1).padStart(8)} ms  ${fn}`);
}

mkdirSync(OUT, { recursive: true });
const platform = await startPlatform({ workers: 0 });
const browser = await launchBrowser();
try {
  const path = await seed(platform);
  const targets = { [TARGET]: drawnTargets(RUNS)[TARGET] };
  for (let n = 1; n <= REPEAT; n++) {
    const page = await signedInPage(browser, platform, targets);
    await page.addInitScript(markNavigation);
    const { cdp } = page;
    await cdp.send('Profiler.enable');
    await cdp.send('Profiler.setSamplingInterval', { interval: 200 });
    await cdp.send('Profiler.start');
    await page.goto(`${platform.url}${path}`);
    const doneMs = await drawnMs(page, TARGET);
    const markedAtMs = await page.evaluate(() => window.__markedAt);
    const { profile } = await cdp.send('Profiler.stop');
    writeFileSync(join(OUT, `${PAGE}-${n}.cpuprofile`), JSON.stringify(profile));
    console.log(`load ${n}: second frame after the page's content at ${doneMs.toFixed(0)} ms (profiled: slower than unprofiled)`);
    if (n === REPEAT) report(profile, markedAtMs, doneMs);
    await page.close();
  }
  console.log(`\nprofiles: ${OUT}/${PAGE}-1..${REPEAT}.cpuprofile; the browser's CPU slowed down ${SLOWDOWN}x`);
} finally {
  await browser.close();
  await platform.stop();
}
