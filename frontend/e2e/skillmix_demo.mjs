// The Skill-Mix CPU demo through the platform, from the browser (docs/experiments/skillmix.md): against a
// platform you started (`reasonlab up --home /tmp/demo11-home --port PORT`), log in, submit the kind's
// example "cpu-demo-k-sweep" (`{}` swept over k = 1, 2, 3: SmolLM2-135M-Instruct from the model store as
// the student, the rule-based grader) from the New experiment page, wait for its runs, screenshot the
// Skill-Mix table (Table 1's layout), its heatmap and a run's Results tab into docs/img/skillmix-demo-*.png,
// and write the runs and cells as JSON to test-output/skillmix-demo.json. Not a test (node --test skips
// this file name).
//
//   node e2e/skillmix_demo.mjs http://127.0.0.1:PORT admin PASSWORD [example] [experiment name] [cache dir]
//
// A cache dir (the spec's cache.dir, typed into the form) makes every reply new: without it the runs
// reuse the generations and gradings earlier runs left in <cache root>/skillmix, and time little.
// EXPERIMENT=ID takes the screenshots and the JSON of an experiment already run instead of submitting one.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { demoOutput, launchBrowser, openExample, openRunResults, pageApi, signedInPage, submitExperiment, waitUntilFinished } from './harness.mjs';

const [url, username, password, example = 'cpu-demo-k-sweep', name = 'Skill-Mix CPU demo', cacheDir] = process.argv.slice(2);
if (!url || !username || !password) {
  console.error('usage: node e2e/skillmix_demo.mjs URL USERNAME PASSWORD [example] [name] [cache dir]');
  process.exit(2);
}
const { IMG, OUT, log } = demoOutput();

const browser = await launchBrowser();
try {
  const page = await signedInPage(browser, url, { username, password }, { viewport: { width: 1440, height: 1000 } });
  const api = await pageApi(page, url);

  let experimentId = Number(process.env.EXPERIMENT ?? 0);
  if (experimentId) await page.goto(`${url}/experiments/${experimentId}`);
  else {
    await openExample(page, url, { kind: 'skillmix', name, example });
    if (cacheDir) await page.getByRole('group', { name: 'cache' }).getByLabel('dir', { exact: true }).fill(cacheDir);
    experimentId = await submitExperiment(page);
    log(`submitted experiment ${experimentId}`);
  }
  await waitUntilFinished(page);
  log('every run finished');
  await page.screenshot({ path: join(IMG, 'skillmix-demo-runs.png'), fullPage: true });

  await page.getByRole('tab', { name: 'Skill-Mix table' }).click();
  await page.getByTestId('skillmix-table').waitFor();
  await page.waitForTimeout(800);
  await page.screenshot({ path: join(IMG, 'skillmix-demo-table.png'), fullPage: true });
  await page.getByLabel('table or heatmap').getByText('Heatmap').click();
  await page.getByTestId('skillmix-heatmap').locator('canvas').first().waitFor();
  // the heatmap of the Rescaled Score (A.3.1's partial credit): at CPU scale Table 1's three metrics are mostly 0
  await page.getByRole('textbox', { name: 'metric' }).click();
  await page.getByRole('option', { name: 'Rescaled Score' }).click();
  await page.waitForTimeout(1500);
  await page.screenshot({ path: join(IMG, 'skillmix-demo-heatmap.png'), fullPage: true });

  const detail = await api(`/experiments/${experimentId}`);
  const cells = await api(`/experiments/${experimentId}/results?kind=skillmix_cell`);
  const last = detail.runs[detail.runs.length - 1];
  await openRunResults(page, url, last.id);
  await page.getByTestId('skillmix-samples').waitFor();
  await page.waitForTimeout(1000);
  await page.screenshot({ path: join(IMG, 'skillmix-demo-run-results.png'), fullPage: true });
  log('screenshots in docs/img/skillmix-demo-*.png');

  const runs = detail.runs.map((r) => ({
    id: r.id,
    status: r.status,
    params: r.params,
    started_at: r.started_at,
    finished_at: r.finished_at,
    minutes: r.started_at && r.finished_at ? (Date.parse(r.finished_at) - Date.parse(r.started_at)) / 60_000 : null,
  }));
  const out = { experiment: experimentId, runs, cells: cells.map((c) => ({ run_id: c.run_id, ...c.payload })) };
  writeFileSync(join(OUT, 'skillmix-demo.json'), JSON.stringify(out, null, 2));
  console.log(JSON.stringify({ runs, cells: cells.map((c) => ({ run_id: c.run_id, k: c.payload.k, ept: c.payload.ept, full_marks: c.payload.full_marks, all_skills: c.payload.all_skills, skill_fraction: c.payload.skill_fraction, cached: c.payload.cached_replies, new: c.payload.new_replies })) }, null, 2));
} finally {
  await browser.close();
}
