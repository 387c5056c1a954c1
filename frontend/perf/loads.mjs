// The two page loads of `make perf` (the run page's first chart of 1,000,000 points, the experiment page's
// rows of PERF_RUNS runs), for one build or several side by side (not part of `make test`): per round,
// each build in turn is served (pages.mjs stageBuilds: its assets copied beside the current build's under
// a prefix of their own, index.html swapped) and
// each page loaded once, so that the builds meet the same machine load; prints every load and the
// medians per build, in the page's own figures (navigation start to the second frame after the target is
// drawn) and the page's main-thread CPU.
//
//   AB=/tmp/static_old,/tmp/static_new   builds (`npx vite build --outDir DIR`); the first is the
//                                        baseline of the ratios; the current build's index.html is put
//                                        back after
//   ROUNDS=5                             rounds; PERF_CPU_SLOWDOWN=4 slows the page's CPU (pages.mjs)
//   PERF_PAGES=run,experiment            which pages
// `npm run perf:loads`, e.g. `PERF_CPU_SLOWDOWN=4 ROUNDS=6 AB=/tmp/a,/tmp/b npm run perf:loads`.
import { launchBrowser, startPlatform } from '../e2e/harness.mjs';
import { drawnMs, drawnTargets, mainThreadMs, seedBigMetric, seedManyRuns, signedInPage, SLOWDOWN, stageBuilds } from './pages.mjs';

const POINTS = Number(process.env.PERF_POINTS ?? 1_000_000);
const RUNS = Number(process.env.PERF_RUNS ?? 10_000);
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const PAGES = (process.env.PERF_PAGES ?? 'run,experiment').split(',');
const TARGET = { run: 'chart', experiment: 'table' };

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const platform = await startPlatform({ workers: 0 });
const browser = await launchBrowser();
const builds = (process.env.AB ?? '').split(',').filter(Boolean);
const staged = stageBuilds(builds);
try {
  const paths = {};
  if (PAGES.includes('run')) paths.run = `/runs/${(await seedBigMetric(platform, POINTS)).runId}`;
  if (PAGES.includes('experiment')) paths.experiment = `/experiments/${(await seedManyRuns(platform, RUNS)).experimentId}`;
  const results = new Map((builds.length ? builds : ['current']).map((b) => [b, Object.fromEntries(PAGES.map((p) => [p, []]))]));
  for (let round = 1; round <= ROUNDS; round++) {
    for (const build of results.keys()) {
      if (build !== 'current') staged.serve(build);
      for (const name of PAGES) {
        const page = await signedInPage(browser, platform, drawnTargets(RUNS));
        await page.goto(`${platform.url}${paths[name]}`);
        const inPage = await drawnMs(page, TARGET[name]);
        const cpu = await mainThreadMs(page);
        results.get(build)[name].push({ inPage, cpu });
        console.log(`round ${round} ${build} ${name}: ${inPage} ms in the page, ${cpu} ms main-thread CPU`);
        await page.close();
      }
    }
  }
  console.log(`\nmedians of ${ROUNDS} loads, the browser's CPU slowed down ${SLOWDOWN}x (ratios against the first build, the baseline):`);
  const [baseline] = results.keys();
  for (const [build, pages] of results) {
    for (const [name, loads] of Object.entries(pages)) {
      const inPage = median(loads.map((l) => l.inPage));
      const cpu = median(loads.map((l) => l.cpu));
      const base = results.get(baseline)[name];
      const ratio = build === baseline ? '' : ` (x${(inPage / median(base.map((l) => l.inPage))).toFixed(3)} in the page, x${(cpu / median(base.map((l) => l.cpu))).toFixed(3)} CPU)`;
      console.log(`${build} ${name}: ${inPage} ms in the page, ${cpu} ms CPU${ratio}`);
    }
  }
} finally {
  staged.restore();
  await browser.close();
  await platform.stop();
}
