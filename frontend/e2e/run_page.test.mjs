// The run page of a smoe_sraven run, in Debian's chromium against a real
// `reasonlab up` with one worker: one SRAVEN cell of a few steps (its ~50 metric keys: losses, accuracies
// per feature, the experts' load per layer, the worker's system metrics).
// - Leaving the Metrics tab once its charts drew threw React's "Maximum update depth exceeded" (6 times
//   of 6 to Results, 4 of 6 to Logs): here Metrics, Results, Logs and back, several times over, with no
//   page error and no console error (the harness fails a test on either).
// - The open tab is the URL's `tab`: a reload keeps it, a link opens it.
// - A chart's log scale and smoothing are the URL's `charts`: a reload keeps them.
// Screenshots in test-output/e2e/run-page-*.png.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertNoPageErrors, launchBrowser, screenshot, signedInPage, startPlatform } from './harness.mjs';

const RUN_TIMEOUT = 300_000;
// one SRAVEN cell, small and short: every metric key of a real run (4 layers of 8 experts), in seconds
const SPEC = {
  data: { num_features: 2 },
  model: { d_model: 32, num_layers: 4, num_heads: 4, qk_dim: 16, v_dim: 16 },
  moe: { num_experts: 8, top_k: 2, expert_hidden: 32 },
  train: { batch_size: 32, steps: 30, warmup_steps: 5, eval_interval: 10, eval_size: 64, eval_batch_size: 64, checkpoint_every: 30, log_every: 2 },
};

let platform;
let browser;
let page;
let runId;
let keys;

/** The run page's panels: every key's, each drawn (a canvas) or shown as a number (a single point). */
async function chartsDrawn() {
  await page.waitForFunction(
    (n) => {
      const panels = [...document.querySelectorAll('[data-testid^="metric-panel-"]')];
      return panels.length === n && panels.every((p) => p.querySelector('canvas') || p.querySelector('[data-points="1"]'));
    },
    keys.length,
    { timeout: 60_000 },
  );
}

/** Clicks the tab named `name`, then waits for what it shows (`ready`); a page error is the failure to report. */
async function openTab(name, ready) {
  await page.getByRole('tab', { name }).click();
  try {
    await ready();
  } finally {
    assertNoPageErrors(browser);
  }
  assert.equal(await page.getByRole('tab', { name }).getAttribute('aria-selected'), 'true');
}

const resultsShown = () => page.getByTestId('result-sraven_cell').waitFor({ timeout: 30_000 });
const logsShown = () => page.getByTestId('logs').waitFor({ timeout: 30_000 });

describe('the run page of a SRAVEN run', { timeout: 900_000 }, () => {
  before(async () => {
    // heartbeats each second: the run's few seconds give the system metrics their points
    platform = await startPlatform({ env: { REASONLAB_HEARTBEAT_INTERVAL: '1' } });
    const experiment = await platform.api('/experiments', { method: 'POST', body: { name: 'e2e run page', kind: 'smoe_sraven', spec: SPEC } });
    runId = experiment.runs[0].id;
    const deadline = Date.now() + RUN_TIMEOUT;
    let run;
    for (;;) {
      run = await platform.api(`/runs/${runId}`);
      if (['succeeded', 'failed', 'cancelled'].includes(run.status) || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 1000));
    }
    assert.equal(run.status, 'succeeded', platform.log().slice(-3000));
    keys = await platform.api(`/runs/${runId}/metric-keys`);
    browser = await launchBrowser();
    page = await signedInPage(browser, platform.url, platform.admin);
  });

  after(async () => {
    await browser?.close();
    await platform?.stop();
  });

  it('draws every chart of the Metrics tab, then goes to Results, Logs and back, with no error', async () => {
    assert.ok(keys.length >= 40, `a SRAVEN run's keys: ${keys.length}`);
    assert.ok(keys.some((k) => k.startsWith('system/')), 'the system metrics are among them');
    await page.goto(`${platform.url}/runs/${runId}`);
    await chartsDrawn();
    await screenshot(page, 'run-page-metrics');
    for (let round = 0; round < 3; round++) {
      await openTab(/^Results/, resultsShown);
      await openTab('Metrics', chartsDrawn);
      await openTab('Logs', logsShown);
      await openTab('Metrics', chartsDrawn);
    }
    await openTab(/^Results/, resultsShown);
    await screenshot(page, 'run-page-results');
  });

  it('keeps the open tab in the URL: a reload keeps it, a link opens it', async () => {
    await page.goto(`${platform.url}/runs/${runId}`);
    await chartsDrawn();
    assert.equal(new URL(page.url()).searchParams.get('tab'), null);
    await openTab(/^Results/, resultsShown);
    await page.waitForURL((u) => new URL(u).searchParams.get('tab') === 'results');
    await page.reload();
    await resultsShown();
    assert.equal(await page.getByRole('tab', { name: /^Results/ }).getAttribute('aria-selected'), 'true');

    await page.goto(`${platform.url}/runs/${runId}?tab=logs`);
    await logsShown();
    assert.equal(await page.getByRole('tab', { name: 'Logs' }).getAttribute('aria-selected'), 'true');
    // back to the default tab: no `tab` in the URL
    await openTab('Metrics', chartsDrawn);
    await page.waitForURL((u) => !new URL(u).searchParams.has('tab'));
    // a tab the page does not have: the default one
    await page.goto(`${platform.url}/runs/${runId}?tab=nonsense`);
    await chartsDrawn();
    assert.equal(await page.getByRole('tab', { name: 'Metrics' }).getAttribute('aria-selected'), 'true');
  });

  it("keeps a chart's log scale and smoothing over a reload", async () => {
    await page.goto(`${platform.url}/runs/${runId}`);
    await chartsDrawn();
    const loss = page.getByTestId('metric-chart-loss');
    assert.equal(await loss.getAttribute('data-y-scale'), 'linear');
    await page.getByTestId('chart-options-loss').click();
    const panel = page.getByTestId('chart-options-panel-loss');
    await panel.getByRole('switch', { name: 'Log scale' }).check();
    await page.locator('[data-testid="metric-chart-loss"][data-y-scale="log"]').waitFor();
    await panel.getByRole('slider', { name: 'smoothing' }).focus();
    for (let i = 0; i < 30; i++) await page.keyboard.press('ArrowRight');
    await page.waitForURL((u) => new URL(u).searchParams.get('charts') === 'loss:log:s0.3');
    await page.locator('[data-testid="metric-chart-loss"][data-smoothing="0.3"]').waitFor();

    await page.reload();
    await chartsDrawn();
    const after = page.getByTestId('metric-chart-loss');
    assert.equal(await after.getAttribute('data-y-scale'), 'log');
    assert.equal(await after.getAttribute('data-smoothing'), '0.3');
    // the other charts keep the defaults
    const other = keys.find((k) => k !== 'loss' && !k.startsWith('system/'));
    const otherChart = page.locator(`[data-testid="metric-chart-${other}"]`);
    if ((await otherChart.getAttribute('data-points')) !== '1') {
      assert.equal(await otherChart.getAttribute('data-y-scale'), 'linear');
      assert.equal(await otherChart.getAttribute('data-smoothing'), '0');
    }
    await page.getByTestId('chart-options-loss').click();
    assert.match(await page.getByTestId('chart-options-panel-loss').textContent(), /Smoothing 0\.30/);
    await screenshot(page, 'run-page-chart-options');
  });
});
