// The ReasonFormer kinds in the browser: a tiny pre-training sweep (shared and private) submitted from the
// New experiment page with the kind's example and run by a real worker; its Routing tab (the steps x skills
// heatmap with the stop gate beside it, case studies) and Comparison tab (Table 1's layout); a run's result
// views; then a fresh fine-tuning sweep with and without adapters (submitted through the API) whose
// Comparison tab offers Table 2's ablation layout. Screenshots in test-output/e2e/reasonformer-*.png.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { launchBrowser, screenshot, startPlatform } from './harness.mjs';

const RUNS_TIMEOUT = 600_000;
let platform;
let browser;
let page;
let experimentId;

async function waitAllSucceeded(count) {
  await page.waitForFunction(
    (n) => document.querySelectorAll('[role="row"][data-status="succeeded"]').length === n || document.querySelector('[role="row"][data-status="failed"]'),
    count,
    { timeout: RUNS_TIMEOUT, polling: 1000 },
  );
}

describe('reasonformer views', { timeout: 1_200_000 }, () => {
  before(async () => {
    platform = await startPlatform();
    browser = await launchBrowser();
    page = await browser.context.newPage();
    page.on('pageerror', (e) => console.error('page error:', e.message));
    await page.goto(`${platform.url}/login`);
    await page.getByLabel('Username').fill(platform.admin.username);
    await page.locator('input[name="password"]').fill(platform.admin.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByTestId('current-user').waitFor();
  });

  after(async () => {
    await browser?.close();
    await platform?.stop();
  });

  it('submits the tiny shared/private pre-training example and runs it', async () => {
    await page.goto(`${platform.url}/experiments/new`);
    await page.getByTestId('schema-form').waitFor();
    await page.locator('#kind').selectOption('reasonformer_pretrain');
    await page.getByLabel('Name').first().fill('e2e reasonformer shared vs private');
    await page.getByLabel('Load example').selectOption('tiny-shared-private');
    await page.getByTestId('example-description').filter({ hasText: 'shared and the private' }).waitFor();
    await page.getByRole('button', { name: 'Preview' }).click();
    await page.getByTestId('preview-count').filter({ hasText: '2 runs' }).waitFor();
    await page.getByTestId('submit-experiment').click();
    await page.waitForURL(/\/experiments\/\d+$/);
    experimentId = Number(new URL(page.url()).pathname.split('/').pop());
    await waitAllSucceeded(2);
    const detail = await platform.api(`/experiments/${experimentId}`);
    assert.deepEqual(detail.runs.map((r) => r.status), ['succeeded', 'succeeded'], platform.log().slice(-3000));
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
    await page.goto(`${platform.url}/runs/${detail.runs[0].id}`);
    await page.getByRole('tab', { name: /Results/ }).click();
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
    await waitAllSucceeded(2);
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
