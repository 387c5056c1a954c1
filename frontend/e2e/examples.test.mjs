// Per-example tables in the browser, in Debian's chromium against a real `reasonlab up`
// with no worker process: the test is the worker, through the API (the worker token claims each run, the
// claim's run token posts the rows, as worker/executor.py does). Two runs grade the same examples; one
// example's prediction differs. The run page's Examples tab pages the rows, and its diff against the other
// run (picked in the select of the experiment's runs with the same table) lists only the changed item (and
// the one the other run lacks) with both outputs side by side.
// Two runs of a second experiment hold a ReasonFormer `predictions` table (the rows
// worker/kinds/reasonformer/common/prediction_rows.py writes: routing per step with the router's
// distribution, ~900 characters of JSON without a space), whose router probabilities differ in every row
// by under 1% and whose predictions differ in two rows. The diff folds the routing (a "more" toggle
// unfolds it as indented JSON) and never makes the page wider than the window; choosing the fields
// "prediction, correct" and a 1% tolerance leaves only the two truly changed rows changed, and the choice
// survives a reload (the URL) and a visit without it (localStorage, per table).
// Screenshots in test-output/e2e/examples-*.png (and docs/img/examples-diff-rule.png with SHOTS_DOCS=1).
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { allowErrors, launchBrowser, openPage, ROOT, screenshot, SHOTS, signIn, startPlatform } from './harness.mjs';

let platform;
let browser;
let page;
let runs;
let rf; // the ReasonFormer-shaped runs

const rows = (changedAt, count) =>
  Array.from({ length: count }, (_, i) => ({
    idx: i,
    key: `item-${String(i).padStart(3, '0')}`,
    data: { input: `question ${i}`, prediction: i === changedAt ? 'a penguin' : `answer ${i}`, gold: `answer ${i}` },
  }));

const SKILLS = ['sort', 'reverse', 'copy', 'count', 'max', 'min', 'sum', 'last'];
const TRULY_CHANGED = [3, 8]; // prediction (and, for 3, correct) differ
const REROUTED = 5; // prediction the same, the router's choice another

/** The routing of example i, 4 steps over 8 skills; ``nudge`` scales every probability (then rounded to 4
 * digits as prediction_rows does); ``reroute`` turns the distribution round. */
function routing(i, { nudge = 1, reroute = false } = {}) {
  return [1, 2, 3, 4].map((step) => {
    const weights = SKILLS.map((_, n) => 1 + ((n * 7 + step * 3 + i) % 8));
    const total = weights.reduce((a, b) => a + b, 0);
    const probs = Object.fromEntries(
      SKILLS.map((skill, n) => [skill, Math.round((weights[reroute ? SKILLS.length - 1 - n : n] / total) * nudge * 1e4) / 1e4]),
    );
    const chosen = [...SKILLS].sort((a, b) => probs[b] - probs[a]).slice(0, 2);
    return { step, skills: chosen, probs, stop_gate: Math.round((0.1 + step / 10) * nudge * 1e4) / 1e4 };
  });
}

const predictions = (other) =>
  Array.from({ length: 12 }, (_, i) => {
    const changed = other && TRULY_CHANGED.includes(i);
    return {
      idx: i,
      key: `sort/${i}`,
      data: {
        task: 'sort',
        input: `sort: ${i} 3 1 2`,
        prediction: changed ? `${i} 2 1 3` : `1 2 3 ${i}`,
        gold: `1 2 3 ${i}`,
        correct: changed && i === 3 ? false : i !== 8,
        routing: routing(i, other ? { nudge: 1.004, reroute: i === REROUTED } : {}),
      },
    };
  });

/** The page's width against the window's: nothing may run past its right edge. */
async function assertWithinWindow() {
  const [scroll, inner] = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
  assert.ok(scroll <= inner, `the page is ${scroll} px wide in a ${inner} px window`);
}

async function diffKeys(rule) {
  await page.locator(`[data-testid="example-diff-count"][data-rule="${rule}"]`).waitFor({ timeout: 20_000 });
  return page.locator('[data-testid="example-diff-item"][data-change="changed"]').evaluateAll((els) => els.map((e) => e.dataset.key));
}

async function openDiff(runId) {
  await page.goto(`${platform.url}/runs/${runId}`);
  await page.getByTestId('examples-tab').click();
  await page.getByTestId('example-rows').waitFor({ timeout: 20_000 });
  await page.getByText('Diff with another run').click();
  await page.getByTestId('example-peer').click();
  await page.getByRole('option').first().click();
}

async function postAs(run, body) {
  const workerToken = readFileSync(join(platform.home, 'worker.token'), 'utf8').trim();
  const claimed = await platform.api(`/runs/${run.id}/claim`, { method: 'POST', body: { attempt: 1, worker: 'e2e' }, token: workerToken });
  return platform.api(`/runs/${run.id}/examples`, { method: 'POST', body: { ...body, attempt: 1 }, token: claimed.run_token });
}

describe('per-example tables', { timeout: 300_000 }, () => {
  before(async () => {
    platform = await startPlatform({ workers: 0 });
    const experiment = await platform.api('/experiments', {
      method: 'POST',
      body: { name: 'examples', kind: 'diagnostic', spec: {}, sweep: { grid: { seed: [1, 2] } } },
    });
    runs = experiment.runs;
    assert.equal(runs.length, 2);
    // run A: 60 rows (more than a page); run B: the same examples, item 7 answered differently, one more item
    const a = await postAs(runs[0], { table: 'predictions', rows: rows(-1, 60) });
    assert.equal(a.rows, 60);
    const b = await postAs(runs[1], { table: 'predictions', rows: rows(7, 61) });
    assert.equal(b.rows, 61);
    const second = await platform.api('/experiments', {
      method: 'POST',
      body: { name: 'reasonformer predictions', kind: 'diagnostic', spec: {}, sweep: { grid: { seed: [1, 2] } } },
    });
    rf = second.runs;
    assert.equal((await postAs(rf[0], { table: 'predictions', rows: predictions(false) })).rows, 12);
    assert.equal((await postAs(rf[1], { table: 'predictions', rows: predictions(true) })).rows, 12);
    browser = await launchBrowser();
    page = await openPage(browser);
    await signIn(page, platform.url, platform.admin);
  });

  after(async () => {
    await browser?.close();
    await platform?.stop();
  });

  it("pages a run's table from the server", async () => {
    await page.goto(`${platform.url}/runs/${runs[0].id}`);
    await page.getByTestId('examples-tab').click();
    await page.getByTestId('example-rows').waitFor({ timeout: 20_000 });
    assert.equal(await page.getByTestId('example-row').count(), 50);
    assert.match(await page.getByTestId('example-count').innerText(), /50 of 60 rows/);
    await page.getByTestId('example-more').click();
    await page.getByTestId('example-row').nth(59).waitFor({ timeout: 20_000 });
    assert.match(await page.getByTestId('example-count').innerText(), /60 of 60 rows/);
    assert.equal(await page.getByTestId('example-more').count(), 0);
    await screenshot(page, 'examples-rows');
  });

  it("filters a table's rows with the query language on the server", async () => {
    allowErrors(page, /status of 422/, 'the test sends a filter that does not parse (idx >=) on purpose: the API answers 422');
    const filter = page.getByTestId('example-filter');
    await filter.fill('idx >= 55 or key = "item-003"');
    await filter.press('Enter');
    await page.getByText('6 matching rows of 60').waitFor({ timeout: 20_000 });
    const keys = await page.getByTestId('example-row').evaluateAll((els) => els.map((e) => e.dataset.key));
    assert.deepEqual(keys, ['item-003', 'item-055', 'item-056', 'item-057', 'item-058', 'item-059']);
    await filter.fill('idx >=');
    await filter.press('Enter');
    await page.getByText(/position 6/).first().waitFor({ timeout: 20_000 });
    await filter.fill('');
    await filter.press('Enter');
    await page.getByText(/^(50|60) of 60 rows$/).waitFor({ timeout: 20_000 }); // the unfiltered pages, from the cache
  });

  it('diffs two runs: the changed item with both outputs side by side', async () => {
    await page.getByText('Diff with another run').click();
    // the other run is picked among the experiment's runs that hold the table: name, id, number, status
    await page.getByTestId('example-peer').click();
    const options = page.getByRole('option');
    await options.first().waitFor({ timeout: 20_000 });
    assert.deepEqual(await options.allInnerTexts(), [`run ${runs[1].id} · #2 · running · 61 rows`]);
    await options.first().click();
    const changed = page.locator('[data-testid="example-diff-item"][data-key="item-007"]');
    await changed.waitFor({ timeout: 20_000 });
    assert.equal(await page.getByTestId('example-diff-item').count(), 2); // item 7 changed, item 60 only in B
    const mine = await changed.getByTestId('diff-run').innerText();
    const theirs = await changed.getByTestId('diff-other').innerText();
    assert.match(mine, new RegExp(`run ${runs[0].id}`));
    assert.match(mine, /prediction: answer 7/);
    assert.match(theirs, new RegExp(`run ${runs[1].id}`));
    assert.match(theirs, /prediction: a penguin/);
    const onlyOther = page.locator('[data-testid="example-diff-item"][data-key="item-060"]');
    assert.match(await onlyOther.innerText(), /only in the other run/i) // the badge's text is upper-cased by CSS;
    assert.match(await page.getByTestId('example-diff-count').innerText(), /2 items differ/);
    await screenshot(page, 'examples-diff');
  });

  it("folds a ReasonFormer run's routing in the diff, and the page stays within the window", async () => {
    await openDiff(rf[0].id);
    await assertWithinWindow(); // the rows table too, before the diff
    // every field counts, numbers within 1e-6: the router's last digits make every row changed
    assert.deepEqual((await diffKeys('every field; numbers within 0.000001 relative')).length, 12);
    await assertWithinWindow();
    const routing = page.locator('[data-testid="example-diff-item"][data-key="sort/3"] [data-testid="diff-run"] [data-field="routing"]');
    const folded = await routing.getByTestId('value-folded').innerText();
    assert.ok(folded.length < 260 && /more$/.test(folded), folded);
    await routing.getByTestId('value-more').click();
    const full = await routing.getByTestId('value-full').innerText();
    assert.match(full, /^\[\n {2}\{\n {4}"step": 1,/); // the whole routing, indented
    assert.equal(JSON.parse(full).length, 4);
    await assertWithinWindow();
    // the two sides stay in their columns: the run's side ends before the other's begins
    const item = page.locator('[data-testid="example-diff-item"][data-key="sort/3"]');
    const mine = await item.getByTestId('diff-run').boundingBox();
    const theirs = await item.getByTestId('diff-other').boundingBox();
    const fullBox = await routing.getByTestId('value-full').boundingBox();
    assert.ok(fullBox.x + fullBox.width <= theirs.x, `${JSON.stringify(fullBox)} runs into ${JSON.stringify(theirs)}`);
    assert.ok(mine.x + mine.width <= theirs.x + 1);
    await screenshot(page, 'examples-diff-routing');
    await routing.getByTestId('value-less').click();
  });

  it('counts only the chosen fields within a tolerance, and keeps the choice over a reload', async () => {
    const fields = page.getByTestId('diff-fields');
    await fields.getByLabel('prediction', { exact: true }).check();
    await fields.getByLabel('correct', { exact: true }).check();
    await page.getByTestId('diff-rtol').fill('0.01');
    await page.getByTestId('diff-rtol').press('Enter');
    const rule = 'prediction, correct; numbers within 0.01 relative';
    assert.deepEqual(await diffKeys(rule), ['sort/3', 'sort/8']);
    assert.equal(await page.getByTestId('example-diff-item').count(), 2);
    // the routing still differs in both: marked apart, not as what made them changed
    const routing = page.locator('[data-key="sort/8"] [data-testid="diff-run"] [data-field="routing"]');
    assert.equal(await routing.getAttribute('data-changed'), null);
    const prediction = page.locator('[data-key="sort/8"] [data-testid="diff-run"] [data-field="prediction"]');
    assert.equal(await prediction.getAttribute('data-changed'), 'true');
    const url = new URL(page.url());
    assert.equal(url.searchParams.get('fields'), 'prediction,correct');
    assert.equal(url.searchParams.get('rtol'), '0.01');
    await assertWithinWindow();
    await screenshot(page, 'examples-diff-rule');
    if (process.env.SHOTS_DOCS) {
      mkdirSync(join(ROOT, 'docs/img'), { recursive: true });
      copyFileSync(join(SHOTS, 'examples-diff-rule.png'), join(ROOT, 'docs/img/examples-diff-rule.png'));
    }

    await page.reload();
    assert.deepEqual(await diffKeys(rule), ['sort/3', 'sort/8']);
    assert.equal(await fields.getByLabel('prediction', { exact: true }).isChecked(), true);
    assert.equal(await fields.getByLabel('routing', { exact: true }).isChecked(), false);
    assert.equal(await page.getByTestId('diff-rtol').inputValue(), '0.01');

    // a visit without the rule in the URL finds it stored for the table
    await openDiff(rf[0].id);
    assert.deepEqual(await diffKeys(rule), ['sort/3', 'sort/8']);

    // the tolerance alone (every field): the rerouted row differs by more than 1%, the nudged ones do not
    await fields.getByLabel('prediction', { exact: true }).uncheck();
    await page.locator('[data-testid="example-diff-count"][data-rule="correct; numbers within 0.01 relative"]').waitFor({ timeout: 20_000 });
    await fields.getByLabel('correct', { exact: true }).uncheck();
    assert.deepEqual(await diffKeys('every field; numbers within 0.01 relative'), ['sort/3', 'sort/5', 'sort/8']);
  });
});
