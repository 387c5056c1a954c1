// Per-example tables in the browser (issue 25, item 5), in Debian's chromium against a real `reasonlab up`
// with no worker process: the test is the worker, through the API (the worker token claims each run, the
// claim's run token posts the rows, as worker/executor.py does). Two runs grade the same examples; one
// example's prediction differs. The run page's Examples tab pages the rows, and its diff against the other
// run (picked in the select of the experiment's runs with the same table) lists only the changed item (and
// the one the other run lacks) with both outputs side by side.
// Screenshots in test-output/e2e/examples-*.png.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { allowErrors, launchBrowser, openPage, screenshot, signIn, startPlatform } from './harness.mjs';

let platform;
let browser;
let page;
let runs;

const rows = (changedAt, count) =>
  Array.from({ length: count }, (_, i) => ({
    idx: i,
    key: `item-${String(i).padStart(3, '0')}`,
    data: { input: `question ${i}`, prediction: i === changedAt ? 'a penguin' : `answer ${i}`, gold: `answer ${i}` },
  }));

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
});
