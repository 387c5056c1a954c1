// 95% intervals on the result views in the browser: a SRAVEN grid and a top-k matrix
// whose results are posted as a worker would post them (256 problems per accuracy; one SRAVEN cell written
// before sizes were recorded), on a platform with no worker (the runs are cancelled first). The grid's and
// the matrix's tooltips give value [lo, hi], their captions name the interval and n, the lines' tooltip the
// same, and the run's Results tab shows value [lo, hi] in the cell. Expected intervals: Wilson by hand in
// Python (lib/interval.test.ts). Screenshots in test-output/e2e/ci-*.png.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { launchBrowser, openRunResults, screenshot, signedInPage, startPlatform } from './harness.mjs';

let platform;
let browser;
let page;

/** Creates an experiment of `kind` through the API and cancels its runs (no worker here); returns it. */
async function cancelledExperiment(body) {
  const exp = await platform.api('/experiments', { method: 'POST', body });
  for (const run of exp.runs) await platform.api(`/runs/${run.id}/cancel`, { method: 'POST' });
  return exp;
}

const postResult = (runId, kind, payload) => platform.api(`/runs/${runId}/results`, { method: 'POST', body: { kind, payload } });

/** The centre of cell (col, row) of an ECharts heatmap drawn in `box` with the given grid margins. */
function cellCentre(box, { left, right, top, bottom }, cols, rows, col, row) {
  const w = (box.width - left - right) / cols;
  const h = (box.height - top - bottom) / rows;
  return [box.x + left + w * (col + 0.5), box.y + top + h * (row + 0.5)];
}

describe('95% intervals on result views', { timeout: 300_000 }, () => {
  before(async () => {
    platform = await startPlatform({ workers: 0 });
    browser = await launchBrowser();
    page = await signedInPage(browser, platform.url, platform.admin);
  });

  after(async () => {
    await browser?.close();
    await platform?.stop();
  });

  it('shows the Wilson interval in the SRAVEN grid tooltip, names it in the caption and in the cell view', async () => {
    const exp = await cancelledExperiment({
      name: 'e2e sraven intervals',
      kind: 'smoe_sraven',
      spec: { data: { num_features: 2 }, train: { steps: 1, eval_size: 64 } },
      sweep: { grid: { 'moe.top_k': [1, 2] } },
    });
    const byK = Object.fromEntries(exp.runs.map((r) => [r.params['moe.top_k'], r]));
    const common = { M: 2, num_experts: 8, attention: 'softmax', per_feature_acc: [0.9, 0.9], steps: 1 };
    // top-k 1: 205 of 256 in-distribution, 128 of 256 OOD; top-k 2: an old result, no sizes
    await postResult(byK[1].id, 'sraven_cell', { ...common, top_k: 1, test_acc: 205 / 256, ood_acc: 0.5, test_size: 256, ood_size: 256 });
    await postResult(byK[2].id, 'sraven_cell', { ...common, top_k: 2, test_acc: 0.7, ood_acc: 0.4 });

    await page.goto(`${platform.url}/experiments/${exp.id}`);
    await page.getByRole('tab', { name: 'SRAVEN grid' }).click();
    const caption = page.getByTestId('ci-caption');
    await caption.waitFor();
    const text = await caption.innerText();
    assert.match(text, /95% Wilson score interval over n = 256 problems/);
    assert.match(text, /no interval where the result does not record its n/);
    const heatmap = page.getByTestId('sraven-heatmap');
    await heatmap.locator('canvas').first().waitFor();
    await page.waitForTimeout(300);
    const [x, y] = cellCentre(await heatmap.boundingBox(), { left: 56, right: 12, top: 30, bottom: 70 }, 2, 1, 0, 0);
    await page.mouse.move(x, y);
    await page.getByText('ood_acc=0.500 [0.439, 0.561] (95% Wilson)').waitFor();
    await screenshot(page, 'ci-sraven-grid');
    // the old cell: its value alone
    const [x2, y2] = cellCentre(await heatmap.boundingBox(), { left: 56, right: 12, top: 30, bottom: 70 }, 2, 1, 1, 0);
    await page.mouse.move(x2, y2);
    const oldTip = page.getByText('ood_acc=0.400').first();
    await oldTip.waitFor();
    const oldLine = (await oldTip.innerText()).split('\n').find((l) => l.includes('ood_acc='));
    assert.equal(oldLine, 'ood_acc=0.400');

    await openRunResults(page, platform.url, byK[1].id);
    const view = page.getByTestId('result-sraven_cell');
    await view.getByText('0.801 [0.748, 0.845]').waitFor(); // ID accuracy
    await view.getByText('0.500 [0.439, 0.561]').waitFor(); // OOD accuracy
    assert.equal(await view.getByTestId('ci-caption').innerText(), '[lo, hi]: 95% Wilson score interval over n = 256 problems');
    await screenshot(page, 'ci-sraven-cell');
  });

  it('shows the interval in the top-k matrix, its caption and lines, and on the point view', async () => {
    const exp = await cancelledExperiment({ name: 'e2e topk intervals', kind: 'topk_eval', spec: {} });
    const runId = exp.runs[0].id;
    const point = (train_k, eval_k, value) => ({
      target: 'smoe_sraven', model: `in-run k=${train_k}`, family: 'smoe', train_k, eval_k, num_experts: 4, routers: 1,
      renormalises: true, score: 'test_acc', value, higher_is_better: true, ood_value: 0.5, M: 2, n: 256, ood_n: 256,
    });
    const values = { '1,1': 205 / 256, '1,2': 0.6, '2,1': 0.55, '2,2': 0.75 };
    for (const [key, value] of Object.entries(values)) {
      const [k, kp] = key.split(',').map(Number);
      await postResult(runId, 'topk_eval_point', point(k, kp, value));
    }

    await page.goto(`${platform.url}/experiments/${exp.id}`);
    await page.getByRole('tab', { name: 'Top-k matrix' }).click();
    const caption = page.getByTestId('ci-caption').first();
    await caption.waitFor();
    assert.equal(await caption.innerText(), '[lo, hi]: 95% Wilson score interval over n = 256 problems');
    const matrix = page.getByTestId('topk-matrix');
    await matrix.locator('canvas').first().waitFor();
    await page.waitForTimeout(300);
    // train k=1 (top row), k'=1 (left column)
    const [x, y] = cellCentre(await matrix.boundingBox(), { left: 60, right: 12, top: 30, bottom: 70 }, 2, 2, 0, 0);
    await page.mouse.move(x, y);
    await page.getByText(/test_acc=0\.801 \[0\.748, 0\.845\] \(95% Wilson\)/).first().waitFor();
    await screenshot(page, 'ci-topk-matrix');

    const lines = page.getByTestId('topk-lines');
    await lines.locator('canvas').first().waitFor();
    const box = await lines.boundingBox();
    await page.mouse.move(box.x + 56 + 4, box.y + box.height / 2); // k'=1, the left edge of the plot
    await page.getByText(/train k=1: 0\.8008 \[0\.7476, 0\.8451\]/).first().waitFor();
    await screenshot(page, 'ci-topk-lines');

    await openRunResults(page, platform.url, runId);
    const first = page.getByTestId('result-topk_eval_point').first();
    await first.waitFor();
    await page.getByText('0.8008 [0.7476, 0.8451]').first().waitFor();
    assert.match(await first.getByTestId('ci-caption').innerText(), /95% Wilson score interval over n = 256 problems/);
    await screenshot(page, 'ci-topk-point');
  });
});
