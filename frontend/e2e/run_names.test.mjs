// Run names and curves, in Debian's chromium against a real `reasonlab up`: (1) the Compare page's overlaid
// curves get the run page's chart options: log scale (values <= 0 left out and counted under the chart)
// and smoothing (each run's raw values drawn faint under its smoothed line), kept per metric; (2) a run is
// renamed inline on its page and its name shows in the runs table, the Compare headers and legend, and the
// activity feed; an empty name clears it. Screenshots in test-output/e2e/run-names-*.png.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { launchBrowser, openPage, screenshot, signIn, startPlatform } from './harness.mjs';

const RUN_TIMEOUT = 120_000;
const KEY = 'probe/score';
let platform;
let browser;
let page;
const state = {};

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A noisy decaying curve; run 0 also logs a 0 and a negative value (nothing a log axis can place). */
function curve(which) {
  const points = [];
  for (let step = 1; step <= 60; step++) {
    let value = (which ? 2 : 1) / step + 0.15 * Math.abs(Math.sin(step * 1.7 + which));
    if (which === 0 && step === 20) value = 0;
    if (which === 0 && step === 21) value = -0.2;
    points.push({ key: KEY, step, value });
  }
  return points;
}

/** The overlay's canvas as PNG bytes: what the chart draws. */
async function chartPixels() {
  await sleep(400); // ECharts renders on the next frame (lazyUpdate)
  return page.getByTestId('overlay-chart').screenshot();
}

describe('run names and the Compare chart options', { timeout: 600_000 }, () => {
  before(async () => {
    platform = await startPlatform();
    browser = await launchBrowser();
    page = await openPage(browser);
    await signIn(page, platform.url, platform.admin);
    const exp = await platform.api('/experiments', {
      method: 'POST',
      body: { name: 'e2e names', kind: 'diagnostic', spec: { train: { steps: 10, step_delay: 0 } }, sweep: { grid: { 'train.lr': [0.1, 0.01] } } },
    });
    state.experimentId = exp.id;
    state.runs = exp.runs.map((r) => r.id).sort((a, b) => a - b);
    // finished runs: the overlay's charts no longer refresh under the test
    const deadline = Date.now() + RUN_TIMEOUT;
    for (;;) {
      const runs = await Promise.all(state.runs.map((id) => platform.api(`/runs/${id}`)));
      if (runs.every((r) => r.status === 'succeeded')) break;
      assert.ok(!runs.some((r) => ['failed', 'cancelled'].includes(r.status)), JSON.stringify(runs.map((r) => [r.id, r.status, r.error])));
      assert.ok(Date.now() < deadline, `runs did not finish: ${runs.map((r) => r.status)}`);
      await sleep(500);
    }
    for (const [i, id] of state.runs.entries()) await platform.api(`/runs/${id}/metrics`, { method: 'POST', body: { points: curve(i) } });
  });

  after(async () => {
    await browser?.close();
    await platform?.stop();
  });

  it('sets log scale and smoothing on the Compare chart, per metric', async () => {
    const [a, b] = state.runs;
    await page.goto(`${platform.url}/compare?runs=${a},${b}`);
    await page.getByTestId('overlay-chart').waitFor();
    await page.getByLabel('Metric').selectOption(KEY);
    const overlay = page.getByTestId('overlay');
    await page.locator('[data-testid="overlay"][data-y-scale="linear"][data-lines="2"][data-runs="2"]').waitFor();
    const linear = await chartPixels();

    await page.getByTestId(`chart-options-${KEY}`).click();
    const panel = page.getByTestId(`chart-options-panel-${KEY}`);
    await panel.waitFor();
    assert.equal(await panel.getByTestId('option-x-axis').count(), 0, 'the overlay draws steps: no x axis choice');
    await panel.getByRole('switch', { name: 'Log scale' }).check();
    await page.locator('[data-testid="overlay"][data-y-scale="log"]').waitFor();
    // run 0's 0 and -0.2 have no place on a log axis: left out, and said so
    assert.equal(await overlay.getAttribute('data-dropped'), '2');
    assert.equal((await page.getByTestId('overlay-log-dropped').textContent()).trim(), '2 values ≤ 0 not drawn on the log scale');
    const log = await chartPixels();
    assert.notDeepEqual(log, linear, 'the log scale redrew the chart');

    await panel.getByRole('slider', { name: 'smoothing' }).focus();
    for (let i = 0; i < 60; i++) await page.keyboard.press('ArrowRight');
    await page.locator('[data-testid="overlay"][data-lines="4"]').waitFor(); // a faint raw line under each smoothed one
    // the slider writes the chart once it rests (SMOOTHING_SETTLE_MS): on a loaded machine key presses come
    // further apart than that, so the chart can take an earlier step first; wait until it holds the slider's last value
    await page.waitForFunction(() => {
      const slider = document.querySelector('[role="slider"][aria-label="smoothing"]');
      const drawn = document.querySelector('[data-testid="overlay"]')?.getAttribute('data-smoothing');
      return slider && drawn != null && Math.abs(Number(drawn) - Number(slider.getAttribute('aria-valuenow'))) < 0.005 && Number(drawn) >= 0.5;
    });
    const smoothing = Number(await overlay.getAttribute('data-smoothing'));
    assert.ok(smoothing >= 0.5, `smoothing ${smoothing}`);
    assert.match(await panel.textContent(), new RegExp(`Smoothing ${smoothing.toFixed(2)}`));
    const smoothed = await chartPixels();
    assert.notDeepEqual(smoothed, log, 'smoothing redrew the chart');
    await screenshot(page, 'run-names-compare-log-smoothed');

    // another metric has its own options; coming back finds these again
    await page.getByLabel('Metric').selectOption('loss');
    await page.locator('[data-testid="overlay"][data-y-scale="linear"][data-smoothing="0"][data-lines="2"]').waitFor();
    await page.getByLabel('Metric').selectOption(KEY);
    await page.locator(`[data-testid="overlay"][data-y-scale="log"][data-smoothing="${smoothing}"][data-lines="4"]`).waitFor();
    await page.getByRole('switch', { name: 'Log scale' }).uncheck();
    await page.locator('[data-testid="overlay"][data-y-scale="linear"][data-dropped="0"]').waitFor();
    assert.equal(await page.getByTestId('overlay-log-dropped').count(), 0);
  });

  it('renames a run on its page and shows the name in the runs table, Compare and the feed', async () => {
    const [a, b] = state.runs;
    await page.goto(`${platform.url}/runs/${a}`);
    await page.getByTestId('run-title').filter({ hasText: `Run ${a}` }).waitFor();
    // Escape leaves the name as it was
    await page.getByTestId('rename-run').click();
    await page.getByTestId('run-name-input').fill('not kept');
    await page.getByTestId('run-name-input').press('Escape');
    await page.getByTestId('run-title').filter({ hasText: `Run ${a}` }).waitFor();

    await page.getByTestId('rename-run').click();
    await page.getByTestId('run-name-input').fill('  baseline lr 0.1  ');
    await page.getByTestId('run-name-input').press('Enter');
    await page.getByTestId('run-title').filter({ hasText: 'baseline lr 0.1' }).waitFor();
    assert.equal((await page.getByTestId('run-title').textContent()).trim(), 'baseline lr 0.1'); // trimmed
    assert.equal((await platform.api(`/runs/${a}`)).name, 'baseline lr 0.1');
    await screenshot(page, 'run-names-run-page');

    await page.getByTestId('run-experiment').click();
    await page.waitForURL(new RegExp(`/experiments/${state.experimentId}$`));
    const cell = page.locator(`[role="row"][data-run-id="${a}"] [data-testid="run-name-cell"]`);
    await cell.waitFor();
    assert.equal(await cell.textContent(), 'baseline lr 0.1');
    assert.equal(await page.locator(`[role="row"][data-run-id="${b}"] [data-testid="run-name-cell"]`).count(), 0);
    await screenshot(page, 'run-names-runs-table');

    await page.goto(`${platform.url}/compare?runs=${a},${b}`);
    await page.getByTestId(`compare-run-${a}`).filter({ hasText: `baseline lr 0.1 (run ${a})` }).waitFor();
    assert.equal((await page.getByTestId(`compare-run-${b}`).textContent()).trim(), `run ${b}`);

    await page.goto(`${platform.url}/activity`);
    const feedRow = page.getByTestId('activity').locator('.mantine-Timeline-item').filter({ hasText: 'renamed' }).first();
    await feedRow.waitFor();
    assert.match(await feedRow.textContent(), new RegExp(`named 'baseline lr 0.1'.*baseline lr 0\\.1 \\(run ${a}\\)`));

    // an empty name clears it
    await page.goto(`${platform.url}/runs/${a}`);
    await page.getByTestId('rename-run').click();
    await page.getByTestId('run-name-input').fill('');
    await page.getByTestId('run-name-save').click();
    await page.getByTestId('run-title').filter({ hasText: `Run ${a}` }).waitFor();
    assert.equal((await platform.api(`/runs/${a}`)).name, null);
  });
});
