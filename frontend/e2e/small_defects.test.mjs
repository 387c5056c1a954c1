// Small defects as a user meets them in the browser, against a real `reasonlab up`: run numbers from 1
// (sweep preview, activity feed), the sweep chart green at the better end, system metrics over time since
// the run was created, a one-cell SRAVEN grid on a [0, 1] scale, and no React Router "No HydrateFallback"
// warning on any page load (every console line of the session is checked).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { launchBrowser, openPage, previewExperiment, newExperimentForm, screenshot, signIn, startPlatform, submitExperiment, waitForRuns } from './harness.mjs';

const RUN_TIMEOUT = 180_000;
let platform;
let browser;
let page;
const consoleLines = [];
const state = {};

describe('small defects in the browser', { timeout: 600_000 }, () => {
  before(async () => {
    // heartbeats each second: a few seconds of run give the system metrics several samples
    platform = await startPlatform({ env: { REASONLAB_HEARTBEAT_INTERVAL: '1' } });
    browser = await launchBrowser();
    page = await openPage(browser);
    page.on('console', (m) => consoleLines.push(`${m.type()}: ${m.text()}`));
  });

  after(async () => {
    await browser?.close();
    await platform?.stop();
  });

  it('numbers the runs of the sweep preview from 1', async () => {
    await signIn(page, platform.url, platform.admin);
    await newExperimentForm(page, platform.url);
    await page.getByLabel('Name').first().fill('small defects sweep');
    await page.locator('#spec-train-steps').fill('40');
    await page.locator('#spec-train-step_delay').fill('0.1');
    await page.getByRole('button', { name: '+ grid axis' }).click();
    await page.getByLabel('grid axis 1 parameter').fill('train.lr');
    await page.keyboard.press('Escape');
    await page.getByLabel('grid axis 1 values').fill('0.1, 0.01');
    await previewExperiment(page, 2);
    const numbers = await page.getByRole('table', { name: 'runs of the sweep' }).locator('tbody tr td:first-child').allInnerTexts();
    // the runs the later tests read, submitted before the check
    state.experimentId = await submitExperiment(page, { previewed: true });
    await waitForRuns(page, 2, RUN_TIMEOUT);
    state.runs = (await platform.api(`/experiments/${state.experimentId}`)).runs;
    assert.deepEqual(state.runs.map((r) => r.status), ['succeeded', 'succeeded'], platform.log().slice(-3000));
    assert.deepEqual(numbers, ['1', '2']);
  });

  it('numbers the first run #1 in the activity feed', async () => {
    await page.goto(`${platform.url}/activity`); // a first page load (the console is checked at the end)
    const feed = page.getByTestId('activity');
    const [first, second] = [...state.runs].sort((a, b) => a.index - b.index);
    await feed.getByText(`run ${first.id} (#1) succeeded`, { exact: false }).waitFor();
    await feed.getByText(`run ${second.id} (#2) succeeded`, { exact: false }).waitFor();
    assert.doesNotMatch(await feed.innerText(), /\(#0\)/);
    await screenshot(page, 'small-defects-activity');
  });

  it('colours the lowest loss green on the sweep chart', async () => {
    await page.goto(`${platform.url}/experiments/${state.experimentId}`);
    await page.getByRole('tab', { name: 'Sweep analysis' }).click();
    await page.getByLabel('Colour by final metric').selectOption('loss');
    const colours = page.locator('[data-testid="parallel-colours"][data-metric="loss"]');
    await colours.waitFor();
    assert.equal(await colours.getAttribute('data-better'), 'low');
    await page.getByTestId('parallel-chart').waitFor();
    await page.waitForTimeout(300);
    await screenshot(page, 'small-defects-sweep-loss');
  });

  it("draws system metrics against the time since the run was created, with the x axes that fit them", async () => {
    const runId = state.runs[0].id;
    const keys = await platform.api(`/runs/${runId}/metric-keys`);
    assert.ok(keys.includes('system/cpu_percent'), keys.join(', '));
    await page.goto(`${platform.url}/runs/${runId}`);
    const cpu = page.getByTestId('metric-chart-system/cpu_percent');
    await cpu.waitFor();
    if ((await cpu.getAttribute('data-points')) === '1') {
      await cpu.getByText(/^at \d+s after the run was created$/).waitFor(); // one sample: where it lies in time
    } else {
      assert.equal(await cpu.getAttribute('data-x-name'), 'time since the run was created');
      assert.equal(await cpu.locator('[aria-label]').first().getAttribute('aria-label'), 'system/cpu_percent over time');
    }
    assert.equal(await page.getByTestId('metric-chart-loss').getAttribute('data-x-name'), 'step');
    await page.getByTestId('chart-options-system/cpu_percent').click();
    const options = page.getByTestId('chart-options-panel-system/cpu_percent');
    await options.getByText('Since created', { exact: true }).waitFor();
    assert.equal(await options.getByText('Relative', { exact: true }).count(), 0);
    assert.equal(await options.getByText('Step', { exact: true }).count(), 0);
    await screenshot(page, 'small-defects-system-metrics');
  });

  it('gives a one-cell SRAVEN grid a colour scale of [0, 1]', async () => {
    const exp = await platform.api('/experiments', {
      method: 'POST',
      body: { name: 'one cell', kind: 'smoe_sraven', spec: { train: { steps: 1, eval_size: 64 } } },
    });
    const [run] = exp.runs;
    await platform.api(`/runs/${run.id}/cancel`, { method: 'POST' });
    await platform.api(`/runs/${run.id}/results`, {
      method: 'POST',
      body: { kind: 'sraven_cell', payload: { M: 2, top_k: 1, num_experts: 8, attention: 'softmax', test_acc: 0.3, ood_acc: 0.05, per_feature_acc: [0.3, 0.3], steps: 1 } },
    });
    await page.goto(`${platform.url}/experiments/${exp.id}`);
    await page.getByRole('tab', { name: 'SRAVEN grid' }).click();
    await page.getByTestId('sraven-heatmap').first().waitFor();
    const range = await page.locator('[data-colour-range]').getAttribute('data-colour-range');
    assert.equal(range, '0,1');
    await page.waitForTimeout(300);
    await screenshot(page, 'small-defects-sraven-one-cell');
  });

  it('logged no "No HydrateFallback" warning on any page load', () => {
    assert.deepEqual(consoleLines.filter((l) => /HydrateFallback/.test(l)), []);
  });
});
