// The carma kind in the browser: a three-variant experiment (Original, FT, CARMA on a tiny GPT-2 with
// GPT-2's real tokenizer, WordNet IDM) submitted from the New experiment page with the kind's example,
// run by a real worker; then its CAP curves, synonym table and lambda-sweep views and a run's results.
// Screenshots in test-output/e2e/carma-*.png.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { launchBrowser, openExample, openRunResults, runExperiment, screenshot, signedInPage, startPlatform } from './harness.mjs';

const RUNS_TIMEOUT = 600_000;
let platform;
let browser;
let page;
let experimentId;

describe('carma views', { timeout: 900_000 }, () => {
  before(async () => {
    platform = await startPlatform();
    browser = await launchBrowser();
    page = await signedInPage(browser, platform.url, platform.admin);
  });

  after(async () => {
    await browser?.close();
    await platform?.stop();
  });

  it('submits Original, FT and CARMA from the kind example and runs them', async () => {
    await openExample(page, platform.url, { kind: 'carma', name: 'e2e carma three variants', example: 'tiny-gpt2-three-variants', description: 'tiny GPT-2' });
    assert.equal(await page.getByLabel('grid axis 1 parameter').inputValue(), 'variant');
    experimentId = await runExperiment(page, platform, { runs: 3, timeoutMs: RUNS_TIMEOUT });
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
    await openRunResults(page, platform.url, carmaRun.id);
    await page.getByText('test accuracy').first().waitFor();
    await page.waitForTimeout(300);
    await screenshot(page, 'carma-run-results');
  });
});
