// The project runs table with a query and seed groups, in Debian's chromium
// against a real `reasonlab up` with no worker: diagnostic runs of 2 learning rates x 3 seeds with known
// final losses, one run at a third learning rate (a group of one) and 3 runs at a fourth that the query
// leaves out. A member types the query in /runs, groups by every spec field but seed, and reads each
// group's n, mean and 95% Student-t interval of the loss column, compared with what this test computes;
// a bad query shows its 422 with the position while the table keeps its rows. The member saves the view;
// another member opens its URL and sees the same groups. Screenshots in test-output/e2e/query-groups-*.png
// (and docs/img/runs-groups.png with SHOTS_DOCS=1).
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { allowErrors, launchBrowser, openPage, ROOT, screenshot, SHOTS, signIn, startPlatform } from './harness.mjs';

const MEG = { username: 'meg', password: 'tangerine-Orbit-4471' };
const MAX = { username: 'max', password: 'marmalade-Comet-9083' };
const KEY = 'loss';
const T975_DF2 = 4.302652729749462; // scipy.stats.t.ppf(0.975, 2): three seeds
const SEEDS = [1, 2, 3];
// the final loss of (lr, seed); lr 0.05 is outside the query, lr 0.03 has one run (seed 1)
const FINAL = { 0.01: [1.0, 1.03, 1.09], 0.02: [1.2, 1.24, 1.25], 0.03: [1.5], 0.05: [0.5, 0.6, 0.7] };
const QUERY = 'kind = "diagnostic" and params.train.lr <= 0.03';

let platform;
let browser;
let page;
let viewId;
const finals = new Map(); // run id -> its final loss

function meanCi(values) {
  const n = values.length;
  const mean = values.reduce((a, b) => a + b, 0) / n;
  if (n < 2) return { n, mean, lo: null, hi: null };
  const sd = Math.sqrt(values.reduce((a, v) => a + (v - mean) ** 2, 0) / (n - 1));
  const half = (T975_DF2 * sd) / Math.sqrt(n);
  return { n, mean, lo: mean - half, hi: mean + half, half };
}

async function postFinals(experiment) {
  for (const r of experiment.runs) {
    const run = await platform.api(`/runs/${r.id}`);
    const final = FINAL[run.spec.train.lr][SEEDS.indexOf(run.spec.seed)];
    const points = Array.from({ length: 6 }, (_, step) => ({ key: KEY, step, value: final + 0.5 - 0.1 * step }));
    await platform.api(`/runs/${r.id}/metrics`, { method: 'POST', body: { points } });
    finals.set(r.id, final);
  }
}

/** Checks the groups the page shows against the test's own numbers. */
async function assertGroups() {
  const rows = page.locator('[data-group-row]');
  await page.locator('[data-group-row="train.lr=0.03"]').waitFor({ timeout: 20_000 });
  assert.equal(await rows.count(), 3);
  for (const lr of [0.01, 0.02, 0.03]) {
    const want = meanCi(FINAL[lr]);
    const row = page.locator(`[data-group-row="train.lr=${lr}"]`);
    assert.equal(await row.getAttribute('data-n'), String(want.n));
    const cell = row.locator(`[data-testid="group-metric"][data-column="metrics.${KEY}"]`);
    assert.ok(Math.abs(Number(await cell.getAttribute('data-mean')) - want.mean) < 1e-9, `lr ${lr} mean`);
    const text = await cell.innerText();
    if (want.lo === null) {
      // a group of one: its value, no interval
      assert.equal(await cell.getAttribute('data-ci-low'), '');
      assert.ok(!text.includes('±'), text);
      assert.ok(Math.abs(Number(text) - want.mean) < 1e-4, text);
      continue;
    }
    assert.ok(Math.abs(Number(await cell.getAttribute('data-ci-low')) - want.lo) < 1e-9, `lr ${lr} ci low`);
    assert.ok(Math.abs(Number(await cell.getAttribute('data-ci-high')) - want.hi) < 1e-9, `lr ${lr} ci high`);
    const [mean, half] = text.split('±').map((s) => Number(s.trim()));
    assert.ok(Math.abs(mean - want.mean) < 1e-4 && Math.abs(half - want.half) < 1e-4, `lr ${lr}: ${text} vs ${want.mean} ± ${want.half}`);
    assert.match(await cell.getAttribute('title'), /95% CI \[/);
  }
}

describe('query and seed groups in the project runs table', { timeout: 300_000 }, () => {
  before(async () => {
    platform = await startPlatform({ workers: 0 });
    const grid = await platform.api('/experiments', {
      method: 'POST',
      body: { name: 'lr x seed', kind: 'diagnostic', spec: {}, sweep: { grid: { 'train.lr': [0.01, 0.02, 0.05], seed: SEEDS } } },
    });
    assert.equal(grid.runs.length, 9);
    await postFinals(grid);
    const single = await platform.api('/experiments', { method: 'POST', body: { name: 'lr 0.03', kind: 'diagnostic', spec: { train: { lr: 0.03 }, seed: 1 } } });
    await postFinals(single);
    platform.cli('user', 'create', MEG.username, '--password', MEG.password, '--role', 'member');
    platform.cli('user', 'create', MAX.username, '--password', MAX.password, '--role', 'member');
    browser = await launchBrowser();
    page = await openPage(browser, { viewport: { width: 1400, height: 900 } });
  });

  after(async () => {
    await browser?.close();
    await platform?.stop();
  });

  it('types a query: the table pages from the server; a bad query shows its 422 and keeps the rows', async () => {
    allowErrors(page, /status of 422/, 'the test types a query that does not parse on purpose: the API answers 422');
    await signIn(page, platform.url, MEG, { named: true });
    await page.goto(`${platform.url}/runs`);
    await page.locator('[data-testid="project-runs"] [data-run-id]').first().waitFor({ timeout: 20_000 });
    assert.equal(await page.locator('[data-testid="project-runs"] [data-run-id]').count(), 10);

    const bad = 'kind = "diagnostic" and params.train.lr <=';
    await page.getByTestId('runs-query').fill(bad);
    const error = page.getByTestId('runs-query-error');
    await error.waitFor({ timeout: 20_000 });
    assert.match(await error.innerText(), new RegExp(`position ${bad.length}: expected a value`));
    assert.match(await page.getByTestId('runs-query-caret').innerText(), new RegExp(`\\n {${bad.length}}\\^$`));
    assert.equal(await page.locator('[data-testid="project-runs"] [data-run-id]').count(), 10);

    await page.getByTestId('runs-query').fill(QUERY);
    await page.waitForURL((u) => new URL(u).searchParams.get('q') === QUERY);
    await page.getByTestId('runs-loaded').filter({ hasText: '7 runs' }).waitFor({ timeout: 20_000 });
    assert.equal(await error.count(), 0);

    // a max column: each run's own largest loss (its first point, final + 0.5), and a server sort on it
    const url = new URL(page.url());
    url.searchParams.set('cols', 'id,metrics.loss:max');
    url.searchParams.set('sort', '-metrics.loss:max');
    await page.goto(url.toString());
    const cells = page.locator('[data-testid="project-runs"] [data-run-id] [data-value]');
    await page.waitForFunction(() => [...document.querySelectorAll('[data-testid="project-runs"] [data-run-id] [data-value]')].filter((c) => c.getAttribute('data-value') !== '').length === 7, null, { timeout: 20_000 });
    const shown = await page.locator('[data-testid="project-runs"] [data-run-id]').evaluateAll((rows) =>
      rows.map((r) => [Number(r.getAttribute('data-run-id')), Number(r.querySelector('[data-value]').getAttribute('data-value'))]),
    );
    assert.equal(await cells.count(), 7);
    for (const [id, value] of shown) assert.ok(Math.abs(value - (finals.get(id) + 0.5)) < 1e-9, `run ${id}: ${value}`);
    const values = shown.map(([, v]) => v);
    assert.deepEqual(values, [...values].sort((a, b) => b - a), 'sorted by max(loss), descending');
    await page.goto(`${platform.url}/runs?${new URLSearchParams({ q: QUERY })}`);
  });

  it('groups by every spec field but seed: n, mean and Student-t CI as the test computes them', async () => {
    await page.getByTestId('runs-columns').click();
    await page.getByTestId('runs-columns').fill(`metrics.${KEY}`);
    await page.getByRole('option', { name: `metrics.${KEY}`, exact: true }).click();
    await page.keyboard.press('Escape');
    await page.waitForURL((u) => (new URL(u).searchParams.get('cols') ?? '').includes(`metrics.${KEY}`));
    await page.getByTestId('runs-group').click();
    await page.getByRole('option', { name: 'every spec field but seed' }).click();
    await page.waitForURL((u) => new URL(u).searchParams.get('group') === '*');
    await assertGroups();

    // a group expands to its runs
    await page.locator('[data-group-row="train.lr=0.01"] [data-testid="group-toggle"]').click();
    await page.getByTestId('member-link').nth(2).waitFor({ timeout: 20_000 });
    assert.equal(await page.getByTestId('member-link').count(), 3);
    await screenshot(page, 'query-groups-grouped');
    if (process.env.SHOTS_DOCS) {
      mkdirSync(join(ROOT, 'docs/img'), { recursive: true });
      copyFileSync(join(SHOTS, 'query-groups-grouped.png'), join(ROOT, 'docs/img/runs-groups.png'));
    }
  });

  it('saves the view; another member opens its URL and sees the same groups', async () => {
    const url = new URL(page.url());
    await page.getByTestId('save-view').click();
    await page.getByTestId('view-name').fill('lr seeds');
    await page.getByTestId('view-name-submit').click();
    await page.getByTestId('view-saved').filter({ hasText: 'Saved as lr seeds' }).waitFor();
    const link = page.getByRole('navigation', { name: 'Saved views' }).getByRole('link', { name: 'lr seeds' });
    viewId = Number(/^\/views\/(\d+)$/.exec(await link.getAttribute('href'))[1]);

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/login/);
    await signIn(page, platform.url, MAX, { named: true });
    await page.goto(`${platform.url}/views/${viewId}`);
    await page.waitForURL((u) => new URL(u).pathname === '/runs');
    const opened = new URL(page.url());
    for (const p of ['q', 'cols', 'group']) assert.equal(opened.searchParams.get(p), url.searchParams.get(p), p);
    assert.equal(await page.getByTestId('runs-query').inputValue(), QUERY);
    await assertGroups();
    await screenshot(page, 'query-groups-other-member');
  });
});
