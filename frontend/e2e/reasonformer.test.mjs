// The ReasonFormer kinds in the browser: a tiny pre-training sweep (shared and private) submitted from the
// New experiment page with the kind's example and run by a real worker; its Routing tab (the steps x skills
// heatmap with the stop gate beside it, case studies) and Comparison tab (Table 1's layout); a run's result
// views; then a fresh fine-tuning sweep with and without adapters (submitted through the API) whose
// Comparison tab offers Table 2's ablation layout. Screenshots in test-output/e2e/reasonformer-*.png.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { launchBrowser, openExample, openRunResults, runExperiment, screenshot, signedInPage, startPlatform, waitForRuns } from './harness.mjs';

const RUNS_TIMEOUT = 600_000;
let platform;
let browser;
let page;
let experimentId;

describe('reasonformer views', { timeout: 1_200_000 }, () => {
  before(async () => {
    platform = await startPlatform();
    browser = await launchBrowser();
    page = await signedInPage(browser, platform.url, platform.admin);
  });

  after(async () => {
    await browser?.close();
    await platform?.stop();
  });

  it('submits the tiny shared/private pre-training example and runs it', async () => {
    await openExample(page, platform.url, {
      kind: 'reasonformer_pretrain',
      name: 'e2e reasonformer shared vs private',
      example: 'tiny-shared-private',
      description: 'shared and the private',
    });
    experimentId = await runExperiment(page, platform, { runs: 2, timeoutMs: RUNS_TIMEOUT });
  });

  it('draws the routing heatmap per task with the stop gate and case studies', async () => {
    await page.getByRole('tab', { name: 'Routing' }).click();
    const heatmap = page.getByTestId('routing-heatmap');
    await heatmap.locator('canvas').first().waitFor();
    const box = await heatmap.boundingBox();
    assert.ok(box && box.width > 300 && box.height > 150);
    assert.ok((await page.getByTestId('routing-cases').locator('tbody tr').count()) >= 1);
    await page.getByLabel('routing task').click();
    await page.getByRole('option', { name: /^sort>reverse \(/ }).click();
    await page.getByText(/expected: sort → reverse/).waitFor();
    await page.waitForTimeout(400);
    await screenshot(page, 'reasonformer-routing');
  });

  it("lays the variants out as Table 1, the best of each task starred", async () => {
    await page.getByRole('tab', { name: 'Comparison' }).click();
    const table = page.getByTestId('table1');
    await table.waitFor();
    const header = await table.locator('thead').innerText();
    assert.match(header, /Private \(S\)/);
    assert.match(header, /Shared \(S\)/);
    assert.match(header, /Activated Parameters/);
    assert.ok((await table.locator('tbody tr').count()) > 5); // a row per skill and program, and Avg.
    assert.match(await table.innerText(), /★/);
    await screenshot(page, 'reasonformer-table1');
  });

  it("shows a run's routing and scores on its Results tab", async () => {
    const detail = await platform.api(`/experiments/${experimentId}`);
    await openRunResults(page, platform.url, detail.runs[0].id);
    await page.getByTestId('routing-panel').waitFor();
    await page.getByTestId('reasonformer-eval-tasks').waitFor();
    await screenshot(page, 'reasonformer-run-results');
  });

  it('offers Table 2 when a fine-tuning sweep toggles an ablation switch', async () => {
    const kinds = await platform.api('/kinds');
    const example = kinds.find((k) => k.name === 'reasonformer_finetune').examples.find((e) => e.name === 'tiny-adapter-ablation');
    const exp = await platform.api('/experiments', {
      method: 'POST',
      body: { name: 'e2e reasonformer adapter ablation', kind: 'reasonformer_finetune', spec: example.spec, sweep: example.sweep },
    });
    await page.goto(`${platform.url}/experiments/${exp.id}`);
    await waitForRuns(page, 2, RUNS_TIMEOUT);
    await page.getByRole('tab', { name: 'Comparison' }).click();
    await page.getByLabel('comparison layout').getByText('Table 2: ablations').click();
    const table = page.getByTestId('table2');
    await table.waitFor();
    const text = await table.innerText();
    assert.match(text, /Shared\(S\)/);
    assert.match(text, /w\/o pre-train, w\/o adapter/);
    await screenshot(page, 'reasonformer-table2');
  });
});
