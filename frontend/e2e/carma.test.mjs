// The carma kind in the browser: a three-variant experiment (Original, FT, CARMA on a tiny GPT-2 with
// GPT-2's real tokenizer, WordNet IDM) submitted from the New experiment page with the kind's example,
// run by a real worker; then its CAP curves, synonym table and lambda-sweep views and a run's results.
// Screenshots in test-output/e2e/carma-*.png.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { launchBrowser, screenshot, startPlatform } from './harness.mjs';

const RUNS_TIMEOUT = 600_000;
let platform;
let browser;
let page;
let experimentId;

describe('carma views', { timeout: 900_000 }, () => {
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

  it('submits Original, FT and CARMA from the kind example and runs them', async () => {
    await page.goto(`${platform.url}/experiments/new`);
    await page.getByTestId('schema-form').waitFor();
    await page.locator('#kind').selectOption('carma');
    await page.getByLabel('Name').first().fill('e2e carma three variants');
    await page.getByLabel('Load example').selectOption('tiny-gpt2-three-variants');
    await page.getByTestId('example-description').filter({ hasText: 'tiny GPT-2' }).waitFor();
    assert.equal(await page.getByLabel('grid axis 1 parameter').inputValue(), 'variant');
    await page.getByRole('button', { name: 'Preview' }).click();
    await page.getByTestId('preview-count').filter({ hasText: '3 runs' }).waitFor();
    await page.getByTestId('submit-experiment').click();
    await page.waitForURL(/\/experiments\/\d+$/);
    experimentId = Number(new URL(page.url()).pathname.split('/').pop());
    await page.waitForFunction(
      () => document.querySelectorAll('[role="row"][data-status="succeeded"]').length === 3 || document.querySelector('[role="row"][data-status="failed"]'),
      null,
      { timeout: RUNS_TIMEOUT, polling: 1000 },
    );
    const detail = await platform.api(`/experiments/${experimentId}`);
    assert.deepEqual(detail.runs.map((r) => r.status), ['succeeded', 'succeeded', 'succeeded'], platform.log().slice(-3000));
  });

  it('draws the CAP curves, a line per variant, with the protocol toggle', async () => {
    await page.getByRole('tab', { name: 'CAP curves' }).click();
    const chart = page.getByTestId('cap-curves-chart');
    await chart.waitFor();
    await chart.locator('canvas').first().waitFor();
    const box = await chart.boundingBox();
    assert.ok(box && box.width > 300 && box.height > 300);
    await page.waitForTimeout(500);
    await screenshot(page, 'carma-cap-curves');
    await page.getByLabel('CAP protocol').getByText('max CAP').click();
    await page.waitForTimeout(300);
    await screenshot(page, 'carma-cap-curves-max');
  });

  it('shows the synonym table: 3 variants x 2 rates, CS as mean ± std', async () => {
    await page.getByRole('tab', { name: 'Synonym table' }).click();
    const table = page.getByTestId('synonym-table');
    await table.waitFor();
    assert.equal(await table.locator('tbody tr').count(), 6);
    assert.match(await table.locator('tbody tr').first().innerText(), /±/);
    assert.equal(await table.locator('tbody tr[data-variant="carma"]').count(), 2);
    await screenshot(page, 'carma-synonym-table');
  });

  it('plots accuracy and CV against lambda', async () => {
    await page.getByRole('tab', { name: 'Lambda sweep' }).click();
    await page.getByTestId('lambda-sweep-chart').locator('canvas').first().waitFor();
    await page.waitForTimeout(300);
    await screenshot(page, 'carma-lambda-sweep');
  });

  it("shows a run's accuracy, CAP curves and synonym rows on its Results tab", async () => {
    const detail = await platform.api(`/experiments/${experimentId}`);
    const carmaRun = detail.runs.find((r) => r.params.variant === 'carma');
    await page.goto(`${platform.url}/runs/${carmaRun.id}`);
    await page.getByRole('tab', { name: /Results/ }).click();
    await page.getByText('test accuracy').first().waitFor();
    await page.waitForTimeout(300);
    await screenshot(page, 'carma-run-results');
  });
});
