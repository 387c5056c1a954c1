// The CARMA CPU demo through the platform, from the browser (docs/experiments/carma.md): against a
// platform you started (`reasonlab up --home /tmp/carma-home --port PORT`), log in, submit the kind's
// example "cpu-demo-three-variants" (SmolLM2-135M on WordNet IDM: Original, FT, CARMA) from the New
// experiment page, wait for its runs, and screenshot the CAP curves, the synonym table, the lambda
// sweep and the last run's results (the sweep's CARMA run) into docs/img/. Not a test (node --test skips this file name).
//
//   node e2e/carma_demo.mjs http://127.0.0.1:PORT admin PASSWORD [example] [experiment name]
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, launchBrowser } from './harness.mjs';

const [url, username, password, example = 'cpu-demo-three-variants', name = 'CARMA CPU demo'] = process.argv.slice(2);
if (!url || !username || !password) {
  console.error('usage: node e2e/carma_demo.mjs URL USERNAME PASSWORD [example] [name]');
  process.exit(2);
}
const IMG = join(ROOT, 'docs/img');
mkdirSync(IMG, { recursive: true });
const started = Date.now();
const log = (m) => console.log(`${((Date.now() - started) / 1000).toFixed(0).padStart(5)}s ${m}`);

const browser = await launchBrowser();
try {
  const page = await browser.context.newPage();
  await page.goto(`${url}/login`);
  await page.getByLabel('Username').fill(username);
  await page.locator('input[name="password"]').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByTestId('current-user').waitFor();
  await page.goto(`${url}/experiments/new`);
  await page.getByTestId('schema-form').waitFor();
  await page.locator('#kind').selectOption('carma');
  await page.getByLabel('Name').first().fill(name);
  await page.getByLabel('Load example').selectOption(example);
  await page.getByTestId('example-description').waitFor();
  await page.getByRole('button', { name: 'Preview' }).click();
  await page.getByTestId('preview-count').waitFor();
  await page.getByTestId('submit-experiment').click();
  await page.waitForURL(/\/experiments\/\d+$/);
  log(`submitted ${page.url()}`);
  await page.waitForFunction(
    () => {
      const rows = [...document.querySelectorAll('[role="row"][data-run-id]')];
      return rows.length > 0 && rows.every((r) => ['succeeded', 'failed', 'cancelled'].includes(r.getAttribute('data-status')));
    },
    null,
    { timeout: 3_600_000, polling: 5000 },
  );
  log('every run finished');
  await page.screenshot({ path: join(IMG, 'carma-demo-runs.png'), fullPage: true });
  const runId = await page.locator('[role="row"][data-run-id]').last().getAttribute('data-run-id');
  for (const [tab, file] of [['CAP curves', 'carma-demo-cap-curves.png'], ['Synonym table', 'carma-demo-synonym-table.png'], ['Lambda sweep', 'carma-demo-lambda-sweep.png']]) {
    await page.getByRole('tab', { name: tab }).click();
    await page.waitForTimeout(1500);
    await page.screenshot({ path: join(IMG, file), fullPage: true });
  }
  await page.goto(`${url}/runs/${runId}`);
  await page.getByRole('tab', { name: /Results/ }).click();
  await page.waitForTimeout(1500);
  await page.screenshot({ path: join(IMG, 'carma-demo-run-results.png'), fullPage: true });
  log('screenshots in docs/img/carma-demo-*.png');
} finally {
  await browser.close();
}
