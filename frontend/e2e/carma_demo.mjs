// The CARMA CPU demo through the platform, from the browser (docs/experiments/carma.md): against a
// platform you started (`reasonlab up --home /tmp/carma-home --port PORT`), log in, submit the kind's
// example "cpu-demo-three-variants" (SmolLM2-135M on WordNet IDM: Original, FT, CARMA) from the New
// experiment page, wait for its runs, and screenshot the CAP curves, the synonym table, the lambda
// sweep and the last run's results (the sweep's CARMA run) into docs/img/. Not a test (node --test skips this file name).
//
//   node e2e/carma_demo.mjs http://127.0.0.1:PORT admin PASSWORD [example] [experiment name]
import { join } from 'node:path';
import { demoOutput, launchBrowser, openExample, openRunResults, signedInPage, submitExperiment, waitUntilFinished } from './harness.mjs';

const [url, username, password, example = 'cpu-demo-three-variants', name = 'CARMA CPU demo'] = process.argv.slice(2);
if (!url || !username || !password) {
  console.error('usage: node e2e/carma_demo.mjs URL USERNAME PASSWORD [example] [name]');
  process.exit(2);
}
const { IMG, log } = demoOutput();

const browser = await launchBrowser();
try {
  const page = await signedInPage(browser, url, { username, password });
  await openExample(page, url, { kind: 'carma', name, example });
  await submitExperiment(page);
  log(`submitted ${page.url()}`);
  await waitUntilFinished(page);
  log('every run finished');
  await page.screenshot({ path: join(IMG, 'carma-demo-runs.png'), fullPage: true });
  const runId = await page.locator('[role="row"][data-run-id]').last().getAttribute('data-run-id');
  for (const [tab, file] of [['CAP curves', 'carma-demo-cap-curves.png'], ['Synonym table', 'carma-demo-synonym-table.png'], ['Lambda sweep', 'carma-demo-lambda-sweep.png']]) {
    await page.getByRole('tab', { name: tab }).click();
    await page.waitForTimeout(1500);
    await page.screenshot({ path: join(IMG, file), fullPage: true });
  }
  await openRunResults(page, url, runId);
  await page.waitForTimeout(1500);
  await page.screenshot({ path: join(IMG, 'carma-demo-run-results.png'), fullPage: true });
  log('screenshots in docs/img/carma-demo-*.png');
} finally {
  await browser.close();
}
