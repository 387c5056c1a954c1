// The ReasonFormer CPU demo through the platform, from the browser (docs/experiments/reasonformer.md):
// against a platform you started (`reasonlab up --home /tmp/rf-home --port PORT`), log in, submit the
// pre-training kind's example "cpu-variants-sweep" (shared / private / single / MoRM x top-2 / full on the
// synthetic suite) from the New experiment page and wait for its runs; then fine-tune every one of them on
// the held-out compositions (one fine-tuning experiment whose grid sweeps init.run_id over the pre-training
// runs, submitted through the API); screenshot the Routing and Comparison views into docs/img/ and print
// the results as JSON. Not a test (node --test skips this file name).
//
//   node e2e/reasonformer_demo.mjs http://127.0.0.1:PORT admin PASSWORD
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { demoOutput, launchBrowser, openExample, pageApi, signedInPage, submitExperiment, waitUntilFinished } from './harness.mjs';

const [url, username, password] = process.argv.slice(2);
if (!url || !username || !password) {
  console.error('usage: node e2e/reasonformer_demo.mjs URL USERNAME PASSWORD');
  process.exit(2);
}
const { IMG, OUT, log } = demoOutput();

// the sweep's runs take longer than the other demos': two hours at most, looked at every 10 s
const waitRuns = (page) => waitUntilFinished(page, { timeoutMs: 7_200_000, pollMs: 10_000 });

const browser = await launchBrowser();
try {
  const page = await signedInPage(browser, url, { username, password }, { viewport: { width: 1440, height: 1000 } });
  const api = await pageApi(page, url);

  await openExample(page, url, { kind: 'reasonformer_pretrain', name: 'ReasonFormer CPU demo: pre-training variants', example: 'cpu-variants-sweep' });
  const preId = await submitExperiment(page);
  log(`submitted pre-training experiment ${preId}`);
  await waitRuns(page);
  log('pre-training runs finished');
  await page.screenshot({ path: join(IMG, 'reasonformer-demo-pretrain-runs.png'), fullPage: true });

  await page.getByRole('tab', { name: 'Routing' }).click();
  await page.getByTestId('routing-heatmap').locator('canvas').first().waitFor();
  await page.getByLabel('routing task').click();
  await page.getByRole('option', { name: /^sort>lookup \(/ }).click();
  await page.waitForTimeout(1500);
  await page.screenshot({ path: join(IMG, 'reasonformer-demo-routing.png'), fullPage: true });
  await page.getByRole('tab', { name: 'Comparison' }).click();
  await page.getByTestId('table1').waitFor();
  await page.waitForTimeout(800);
  await page.screenshot({ path: join(IMG, 'reasonformer-demo-pretrain-table1.png'), fullPage: true });

  const pre = await api(`/experiments/${preId}`);
  const ids = pre.runs.filter((r) => r.status === 'succeeded').map((r) => r.id);
  const fine = await api('/experiments', {
    method: 'POST',
    body: JSON.stringify({
      name: 'ReasonFormer CPU demo: fine-tuning each pre-trained variant',
      kind: 'reasonformer_finetune',
      spec: {},
      sweep: { grid: { 'init.run_id': ids } },
    }),
  });
  log(`submitted fine-tuning experiment ${fine.id} over runs ${ids.join(', ')}`);
  await page.goto(`${url}/experiments/${fine.id}`);
  await waitRuns(page);
  log('fine-tuning runs finished');
  await page.getByRole('tab', { name: 'Comparison' }).click();
  await page.getByTestId('table1').waitFor();
  await page.waitForTimeout(800);
  await page.screenshot({ path: join(IMG, 'reasonformer-demo-finetune-table1.png'), fullPage: true });
  await page.getByRole('tab', { name: 'Routing' }).click();
  await page.getByTestId('routing-heatmap').locator('canvas').first().waitFor();
  await page.waitForTimeout(1500);
  await page.screenshot({ path: join(IMG, 'reasonformer-demo-finetune-routing.png'), fullPage: true });

  const results = {
    pretrain: { experiment: pre, results: await api(`/experiments/${preId}/results`) },
    finetune: { experiment: await api(`/experiments/${fine.id}`), results: await api(`/experiments/${fine.id}/results`) },
  };
  writeFileSync(join(OUT, 'reasonformer-demo-results.json'), JSON.stringify(results, null, 1));
  log('screenshots in docs/img/reasonformer-demo-*.png, results in test-output/reasonformer-demo-results.json');
} finally {
  await browser.close();
}
