// The topk_eval kind in the browser: the kind's tiny example (two SMoEs trained in-run at k = 1 and 2,
// each evaluated at k' = 1..4) submitted from the New experiment page, run by a real worker; then the
// experiment's train-k x eval-k' matrix (diagonal marked) with the lines of score against k', and a
// point on the run's Results tab. Before that, the form's editor of `target` (a union by target.type): the
// variant's select and its fields. Screenshots in test-output/e2e/topk-*.png.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  launchBrowser, openExample, openRunResults, previewExperiment, runExperiment, screenshot, signedInPage, startPlatform,
} from './harness.mjs';

const RUNS_TIMEOUT = 600_000;
let platform;
let browser;
let page;
let experimentId;

describe('topk_eval views', { timeout: 900_000 }, () => {
  before(async () => {
    platform = await startPlatform();
    browser = await launchBrowser();
    page = await signedInPage(browser, platform.url, platform.admin);
  });

  after(async () => {
    await browser?.close();
    await platform?.stop();
  });

  it("edits target in the form: a select of its type above that type's fields", async () => {
    await openExample(page, platform.url, { kind: 'topk_eval', name: 'e2e topk form', example: 'tiny-olmoe-choices', description: 'OLMoE' });
    const target = page.getByRole('group', { name: 'target' });
    const type = target.getByLabel('target type');
    assert.equal(await type.inputValue(), '"hf"');
    assert.equal(await target.getByLabel('model', { exact: true }).inputValue(), 'tiny-olmoe');
    assert.equal(await target.getByLabel('score', { exact: true }).inputValue(), '"multiple_choice"');
    assert.equal(await target.getByLabel('run_id', { exact: true }).count(), 0);
    // the example's hf target alone (no field of the default smoe_sraven target): the server takes it
    await previewExperiment(page, 1);
    await screenshot(page, 'topk-form-target');
    // another type: its fields and defaults, the hf ones gone
    await type.selectOption({ label: 'reasonformer' });
    await target.getByLabel('pretrain_run_id', { exact: true }).fill('5');
    assert.equal(await target.getByLabel('model', { exact: true }).count(), 0);
    await page.getByLabel('spec editor').getByText('JSON').click();
    const spec = JSON.parse(await page.getByLabel('spec as json').inputValue());
    assert.deepEqual(spec.target, {
      type: 'reasonformer', pretrain_run_id: 5, finetune_run_id: null, path: null, examples: 'auto', tasks: null,
      eval_per_task: 16, max_source_length: 64, eval_batch_size: 64,
    });
  });

  it('submits the tiny in-run example from the New experiment page and runs it', async () => {
    await openExample(page, platform.url, { kind: 'topk_eval', name: 'e2e topk matrix', example: 'tiny-in-run', description: 'two tiny SMoEs' });
    // a field of the smoe_sraven target, typed in the form, reaches the run's spec
    const target = page.getByRole('group', { name: 'target' });
    assert.equal(await target.getByLabel('target type').inputValue(), '"smoe_sraven"');
    // (its own, not the in-run training's target.demo.train.eval_batch_size)
    await target.locator('#spec-target-eval_batch_size').fill('32');
    experimentId = await runExperiment(page, platform, { runs: 1, timeoutMs: RUNS_TIMEOUT });
    const { spec } = await platform.api(`/experiments/${experimentId}`);
    assert.equal(spec.target.type, 'smoe_sraven');
    assert.equal(spec.target.eval_batch_size, 32);
    assert.deepEqual(spec.target.train_k, [1, 2]);
    const results = await platform.api(`/experiments/${experimentId}/results?kind=topk_eval_point`);
    const cells = results.map((r) => [r.payload.train_k, r.payload.eval_k]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    assert.deepEqual(cells, [1, 2].flatMap((k) => [1, 2, 3, 4].map((kp) => [k, kp])));
  });

  it('draws the train-k x eval-k matrix and the lines of score against k', async () => {
    await page.getByRole('tab', { name: 'Top-k matrix' }).click();
    const matrix = page.getByTestId('topk-matrix');
    await matrix.waitFor();
    await matrix.locator('canvas').first().waitFor();
    const box = await matrix.boundingBox();
    assert.ok(box && box.width > 300 && box.height > 200);
    assert.match(await page.getByText('◆ trained k (diagonal)').innerText(), /best k/);
    // the worker records each point's test-set size (eval_size 64): the cells' 95% interval is named under the matrix
    assert.equal(await page.getByTestId('ci-caption').first().innerText(), '[lo, hi]: 95% Wilson score interval over n = 64 problems');
    await page.getByTestId('topk-lines').locator('canvas').first().waitFor();
    await page.getByLabel('matrix colour').getByText('OOD accuracy').click();
    await page.waitForTimeout(300);
    await page.getByLabel('matrix colour').getByText('score').click();
    await page.waitForTimeout(500);
    await screenshot(page, 'topk-matrix');
  });

  it("shows a point's train k, k' and router facts on the run's Results tab", async () => {
    const detail = await platform.api(`/experiments/${experimentId}`);
    await openRunResults(page, platform.url, detail.runs[0].id);
    await page.getByText('renormalises').first().waitFor();
    await page.waitForTimeout(300);
    await screenshot(page, 'topk-run-results');
  });
});
