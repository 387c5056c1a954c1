// Seed groups on the compare page, in Debian's chromium against a real `reasonlab up`
// with no worker: six diagnostic runs, 2 learning rates x 3 seeds, get known loss curves through the API.
// "Group seeds" shows 2 groups of n = 3 with the mean ± 95% Student-t interval of the final loss that this
// test computes itself; the chart draws each group's mean line with a band (the CI, then the min/max
// envelope), or every member; the grouping and the chart mode live in the URL.
// Then three more seeds of a loss under 0.4 that spread widely, whose 95% interval runs far
// below 0: the band stops at 0 and the chart says so; the group chart has the chart options (log scale,
// smoothing), kept in the URL over a reload and in a saved view of the comparison; the worker's system
// metrics have tables of their own, apart from the results.
// Screenshots in test-output/e2e/group-charts-*.png.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertNoPageErrors, launchBrowser, openPage, screenshot, signIn, startPlatform } from './harness.mjs';

const KEY = 'loss';
const T975_DF2 = 4.302652729749462; // scipy.stats.t.ppf(0.975, 2): three seeds
const LRS = [0.01, 0.02];
const SEEDS = [1, 2, 3];
// the final loss of (lr, seed): the curve is 2 - 0.1 step + this - 1, steps 0..10
const FINAL = { 0.01: [1.0, 1.03, 1.09], 0.02: [1.2, 1.24, 1.25] };
// the near-zero group: a loss whose final values spread (mean 0.223, its 95% interval's lower end -0.59)
const NEAR_FINAL = [0.02, 0.05, 0.6];
const SYSTEM_KEY = 'system/cpu_percent';

let platform;
let browser;
let page;
let runs; // [{ id, lr, seed }]
let nearRuns; // the near-zero group's run ids
let projectId;

function meanCi(values) {
  const n = values.length;
  const mean = values.reduce((a, b) => a + b, 0) / n;
  const sd = Math.sqrt(values.reduce((a, v) => a + (v - mean) ** 2, 0) / (n - 1));
  const half = (T975_DF2 * sd) / Math.sqrt(n);
  return { mean, lo: mean - half, hi: mean + half, half };
}

describe('seed groups on the compare page', { timeout: 300_000 }, () => {
  before(async () => {
    platform = await startPlatform({ workers: 0 });
    const experiment = await platform.api('/experiments', {
      method: 'POST',
      body: { name: 'groups', kind: 'diagnostic', spec: {}, sweep: { grid: { 'train.lr': LRS, seed: SEEDS } } },
    });
    assert.equal(experiment.runs.length, 6);
    runs = [];
    for (const r of experiment.runs) {
      const run = await platform.api(`/runs/${r.id}`);
      const lr = run.spec.train.lr;
      const seed = run.spec.seed;
      const final = FINAL[lr][SEEDS.indexOf(seed)];
      const points = Array.from({ length: 11 }, (_, step) => ({ key: KEY, step, value: final + 1 - 0.1 * step }));
      await platform.api(`/runs/${r.id}/metrics`, { method: 'POST', body: { points } });
      runs.push({ id: r.id, lr, seed });
    }
    const near = await platform.api('/experiments', {
      method: 'POST',
      body: { name: 'near zero', kind: 'diagnostic', spec: { train: { lr: 0.05 } }, sweep: { grid: { seed: SEEDS } } },
    });
    nearRuns = near.runs.map((r) => r.id);
    for (const [i, id] of nearRuns.entries()) {
      const loss = Array.from({ length: 11 }, (_, step) => ({ key: KEY, step, value: NEAR_FINAL[i] + 0.3 - 0.03 * step }));
      const cpu = [0, 5, 10].map((step) => ({ key: SYSTEM_KEY, step, value: 40 + 10 * i + step }));
      await platform.api(`/runs/${id}/metrics`, { method: 'POST', body: { points: [...loss, ...cpu] } });
    }
    projectId = (await platform.api('/projects')).find((p) => p.name === 'default').id;
    browser = await launchBrowser();
    page = await openPage(browser);
    await signIn(page, platform.url, platform.admin);
  });

  after(async () => {
    await browser?.close();
    await platform?.stop();
  });

  it('keeps the per-run compare view while grouping is off', async () => {
    await page.goto(`${platform.url}/compare?runs=${runs.map((r) => r.id).join(',')}`);
    await page.locator('[data-testid="overlay"][data-runs="6"]').waitFor({ timeout: 20_000 });
    assert.equal(await page.getByTestId('compare-groups').count(), 0);
    assert.equal(await page.getByTestId('group-chart').count(), 0);
  });

  it('groups the seeds: 2 groups of n = 3 with the mean and 95% CI of the final loss', async () => {
    // the checkbox is controlled by the URL (group=*): the click navigates, and the box turns checked once
    // the new URL renders (check() would fail when that render lands after its immediate re-read)
    await page.getByLabel('Group seeds').click();
    await page.waitForURL((u) => new URL(u).searchParams.get('group') === '*');
    await page.locator('input[data-testid="group-seeds"]:checked').waitFor();
    await page.getByTestId('group-count').filter({ hasText: '2 groups of 6 runs' }).waitFor();
    const rows = page.getByTestId('group-row');
    assert.equal(await rows.count(), 2);
    for (const lr of LRS) {
      const row = page.locator(`[data-testid="group-row"][data-group="train.lr=${lr}"]`);
      assert.equal(await row.getAttribute('data-n'), '3');
      const cell = row.locator(`[data-testid="group-metric"][data-metric="${KEY}"]`);
      const want = meanCi(FINAL[lr]);
      assert.equal(await cell.getAttribute('data-n'), '3');
      for (const [attr, value] of [['data-mean', want.mean], ['data-lo', want.lo], ['data-hi', want.hi]]) {
        const shown = Number(await cell.getAttribute(attr));
        assert.ok(Math.abs(shown - value) < 1e-9, `${lr} ${attr}: ${shown} vs ${value}`);
      }
      assert.equal((await cell.innerText()).trim(), `${want.mean.toFixed(3)} ± ${want.half.toFixed(3)}`);
    }
  });

  it('draws each group as its mean line with a CI band, then the envelope, then every member', async () => {
    const chart = page.getByTestId('group-chart');
    await page.locator('[data-testid="group-chart"][data-groups="2"][data-group-n="3,3"]').waitFor({ timeout: 20_000 });
    await page.getByTestId('group-chart-canvas').locator('canvas').waitFor();
    assert.equal(await chart.getAttribute('data-mode'), 'mean_ci');
    assert.equal(await chart.getAttribute('data-bands'), 'ci:0,ci:1');
    await screenshot(page, 'group-charts-ci');

    await page.getByTestId('group-chart-mode').getByText('min/max envelope').click();
    await page.locator('[data-testid="group-chart"][data-mode="envelope"]').waitFor();
    assert.equal(await chart.getAttribute('data-bands'), 'env:0,env:1');
    assert.equal(new URL(page.url()).searchParams.get('chart'), `${KEY}:envelope:step`);

    await page.getByTestId('group-chart-mode').getByText('every member').click();
    await page.locator('[data-testid="group-chart"][data-mode="members"][data-members="6"]').waitFor();
    assert.equal(await chart.getAttribute('data-bands'), '');
    await screenshot(page, 'group-charts-members');
  });

  it('reproduces the grouped view from its URL', async () => {
    const url = page.url();
    const fresh = await openPage(browser);
    await fresh.goto(url);
    await fresh.locator('[data-testid="group-chart"][data-mode="members"][data-groups="2"]').waitFor({ timeout: 20_000 });
    assert.equal(await fresh.getByTestId('group-row').count(), 2);
    assert.equal(await fresh.getByLabel('Group seeds').isChecked(), true);
    await fresh.close();
  });

  it('stops the band of a loss at 0 and says so', async () => {
    await page.goto(`${platform.url}/compare?runs=${nearRuns.join(',')}&group=*`);
    const chart = page.locator('[data-testid="group-chart"][data-groups="1"][data-group-n="3"]');
    await chart.waitFor({ timeout: 20_000 });
    await page.getByTestId('group-chart-canvas').locator('canvas').waitFor();
    // the interval itself crosses 0 (the table's cell holds it as computed)
    const cell = page.locator(`[data-testid="group-metric"][data-metric="${KEY}"]`);
    assert.ok(Number(await cell.getAttribute('data-lo')) < -0.5, await cell.getAttribute('data-lo'));
    // the band drawn does not
    assert.equal(await chart.getAttribute('data-band-min'), '0');
    assert.equal(await chart.getAttribute('data-clipped'), 'true');
    assert.match(await page.getByTestId('group-chart-clipped').innerText(), /^band clipped at 0: no value is below 0/);
    await screenshot(page, 'group-charts-clipped');
    // the envelope (the members' own min and max) needs no clipping
    await page.getByTestId('group-chart-mode').getByText('min/max envelope').click();
    await page.locator('[data-testid="group-chart"][data-mode="envelope"][data-clipped="false"]').waitFor();
    assert.ok(Number(await page.getByTestId('group-chart').getAttribute('data-band-min')) >= 0);
    await page.getByTestId('group-chart-mode').getByText('mean ± 95% CI').click();
    await page.locator('[data-testid="group-chart"][data-mode="mean_ci"]').waitFor();
  });

  it('keeps the system metrics apart from the results', async () => {
    await page.getByTestId('compare-system').waitFor();
    const resultHeads = await page.getByTestId('compare-groups').locator('th').allInnerTexts();
    assert.ok(resultHeads.some((h) => h.startsWith(`${KEY} `)), resultHeads.join(' | '));
    assert.ok(!resultHeads.some((h) => h.startsWith(SYSTEM_KEY)), resultHeads.join(' | '));
    assert.equal(await page.locator(`[data-testid="compare-metric-row"][data-metric="${SYSTEM_KEY}"]`).count(), 0);
    assert.equal(await page.locator(`[data-testid="compare-system-row"][data-metric="${SYSTEM_KEY}"]`).count(), 1);
    const systemHeads = await page.getByTestId('compare-groups-system').locator('th').allInnerTexts();
    assert.ok(systemHeads.some((h) => h.startsWith(SYSTEM_KEY)), systemHeads.join(' | '));
  });

  it('has the chart options; its log scale and smoothing are in the URL and survive a reload', async () => {
    const chart = page.getByTestId('group-chart');
    assert.equal(await chart.getAttribute('data-y-scale'), 'linear');
    await page.getByTestId(`chart-options-${KEY}`).click();
    const panel = page.getByTestId(`chart-options-panel-${KEY}`);
    assert.equal(await panel.getByTestId('option-x-axis').count(), 0, 'the group chart draws steps: no x axis choice');
    await panel.getByRole('switch', { name: 'Log scale' }).check();
    await page.locator('[data-testid="group-chart"][data-y-scale="log"]').waitFor();
    await panel.getByRole('slider', { name: 'smoothing' }).focus();
    for (let i = 0; i < 30; i++) await page.keyboard.press('ArrowRight');
    await page.waitForURL((u) => new URL(u).searchParams.get('charts') === `${KEY}:log:s0.3`);
    await page.locator('[data-testid="group-chart"][data-smoothing="0.3"]').waitFor();
    // on the log axis the band stops at the smallest value drawn, above 0
    assert.ok(Number(await chart.getAttribute('data-band-min')) > 0);
    await screenshot(page, 'group-charts-log-smoothed');

    await page.reload();
    await page.locator('[data-testid="group-chart"][data-y-scale="log"][data-smoothing="0.3"][data-group-n="3"]').waitFor({ timeout: 20_000 });
    assert.equal(await page.getByLabel('Group seeds').isChecked(), true);
    assertNoPageErrors(browser);
  });

  it('restores the comparison with its chart options from a saved view', async () => {
    await page.getByTestId('save-view').click();
    await page.getByTestId('view-name').fill('near zero seeds');
    await page.getByTestId('view-name-submit').click();
    await page.getByTestId('view-saved').filter({ hasText: 'Saved as near zero seeds' }).waitFor();
    const href = await page.getByTestId('view-saved').getByRole('link').getAttribute('href');
    const viewId = Number(/^\/views\/(\d+)$/.exec(href)[1]);
    const stored = await platform.api(`/projects/${projectId}/views/${viewId}`);
    assert.equal(stored.page, 'compare');
    assert.deepEqual(stored.state.runs, nearRuns);
    assert.equal(stored.state.group_by, 'all spec fields but seed');
    assert.deepEqual(stored.state.charts, [{ metric: KEY, log_scale: true, smoothing: 0.3, x_axis: 'step' }]);

    const fresh = await openPage(browser); // the same profile: signed in
    await fresh.goto(`${platform.url}/views/${viewId}`);
    await fresh.waitForURL((u) => new URL(u).pathname === '/compare');
    const chart = fresh.locator('[data-testid="group-chart"][data-y-scale="log"][data-smoothing="0.3"][data-groups="1"][data-group-n="3"]');
    await chart.waitFor({ timeout: 20_000 });
    assert.equal(new URL(fresh.url()).searchParams.get('charts'), `${KEY}:log:s0.3`);
    await fresh.close();
  });
});
