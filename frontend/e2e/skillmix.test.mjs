// The skillmix kind in the browser: a tiny ept x k experiment submitted from the New experiment page (the
// kind's tiny example with a tiny random Mixtral as the student and an ept axis added; graded by the
// scripted rule-based grader), run by a real worker; then the Skill-Mix table in Table 1's layout, the
// heatmap toggle, the best ept per k and a run's cell. Screenshots in test-output/e2e/skillmix-*.png.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { launchBrowser, openExample, openRunResults, ROOT, runExperiment, screenshot, signedInPage, startPlatform } from './harness.mjs';

const RUNS_TIMEOUT = 600_000;
let platform;
let browser;
let page;
let experimentId;
let modelDir;

describe('skillmix views', { timeout: 900_000 }, () => {
  before(async () => {
    // the worker's cache root of this test: a spec names a model folder relative to its model store
    // (docs/spec-confinement.md), so the model goes to <cache root>/models/e2e/mixtral
    modelDir = mkdtempSync(join(tmpdir(), 'skillmix-e2e-'));
    // a random Mixtral (4 experts, top-2, d 32) with Llama 3's tokenizer, named by its folder in the spec
    execFileSync(join(ROOT, '.venv/bin/python'), ['-c', `from pathlib import Path; from tests.tiny_moe import tiny_moe; tiny_moe(Path(${JSON.stringify(join(modelDir, 'models', 'e2e', 'mixtral'))}), 'mixtral')`], { cwd: ROOT });
    platform = await startPlatform({ env: { REASONLAB_CACHE: modelDir } });
    browser = await launchBrowser();
    page = await signedInPage(browser, platform.url, platform.admin);
  });

  after(async () => {
    await browser?.close();
    await platform?.stop();
    if (modelDir) rmSync(modelDir, { recursive: true, force: true });
  });

  it('submits a tiny ept x k sweep from the kind example and runs it', async () => {
    await openExample(page, platform.url, { kind: 'skillmix', name: 'e2e skillmix ept x k', example: 'tiny-k-sweep', description: 'tiny Llama' });
    const student = page.getByRole('group', { name: 'student' });
    await student.getByLabel('name', { exact: true }).fill('e2e/mixtral');
    assert.equal(await page.getByLabel('grid axis 1 parameter').inputValue(), 'k');
    await page.getByRole('button', { name: '+ grid axis' }).click();
    await page.getByLabel('grid axis 2 parameter').fill('ept');
    await page.getByLabel('grid axis 2 values').fill('1, 2');
    experimentId = await runExperiment(page, platform, { runs: 4, timeoutMs: RUNS_TIMEOUT });
  });

  it("shows Table 1's layout: rows ept with the default labelled, columns k, three metrics with ±", async () => {
    await page.getByRole('tab', { name: 'Skill-Mix table' }).click();
    const table = page.getByTestId('skillmix-table');
    await table.waitFor();
    const rows = table.getByTestId('skillmix-row');
    assert.equal(await rows.count(), 2);
    assert.match(await rows.nth(0).innerText(), /^ept=1\b/);
    assert.match(await rows.nth(1).innerText(), /^ept=2 \(default\)/);
    const header = await table.locator('thead').innerText();
    assert.match(header, /k=1/);
    assert.match(header, /k=2/);
    assert.equal((await rows.nth(0).innerText()).match(/±/g)?.length, 6); // 2 cells x 3 metrics
    await page.getByTestId('skillmix-best-ept').filter({ hasText: 'k=1' }).waitFor();
    await screenshot(page, 'skillmix-table');
  });

  it('toggles to the heatmap', async () => {
    await page.getByLabel('table or heatmap').getByText('Heatmap').click();
    const chart = page.getByTestId('skillmix-heatmap');
    await chart.locator('canvas').first().waitFor();
    const box = await chart.boundingBox();
    assert.ok(box && box.width > 300 && box.height > 150);
    await page.waitForTimeout(300);
    await screenshot(page, 'skillmix-heatmap');
  });

  it("shows a run's cell, routing and texts on its Results tab", async () => {
    const detail = await platform.api(`/experiments/${experimentId}`);
    await openRunResults(page, platform.url, detail.runs[0].id);
    await page.getByText('renormalises top-k').first().waitFor();
    assert.ok((await page.getByTestId('skillmix-samples').locator('tbody tr').count()) === 2);
    await page.waitForTimeout(300);
    await screenshot(page, 'skillmix-run-results');
  });
});
