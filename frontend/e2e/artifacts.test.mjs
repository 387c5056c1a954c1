// A run's artifacts in the dashboard, end to end against a real `reasonlab up`: the Artifacts tab of a
// finished run lists its checkpoints and final model as a tree with sizes and the total, folders
// collapse, and a file downloads through its link (streamed with a run read ticket) byte for byte.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { downloadedBytes, launchBrowser, openPage, screenshot, signIn, startPlatform } from './harness.mjs';

const RUN_TIMEOUT = 120_000;
let platform;
let browser;
let page;

describe('run artifacts', { timeout: 300_000 }, () => {
  before(async () => {
    platform = await startPlatform();
    browser = await launchBrowser();
    page = await openPage(browser);
  });

  after(async () => {
    await browser?.close();
    await platform?.stop();
  });

  it('lists a finished run’s checkpoints and final model with sizes, and downloads one', async () => {
    const exp = await platform.api('/experiments', {
      method: 'POST',
      body: { name: 'e2e artifacts', kind: 'diagnostic', spec: { train: { steps: 30, checkpoint_every: 10 } } },
    });
    const runId = exp.runs[0].id;
    for (let i = 0; ; i++) {
      const run = await platform.api(`/runs/${runId}`);
      if (run.status === 'succeeded') break;
      assert.ok(!['failed', 'cancelled'].includes(run.status), `run ${runId} ${run.status}: ${run.error}`);
      assert.ok(i < RUN_TIMEOUT / 500, `run ${runId} not finished in time`);
      await new Promise((r) => setTimeout(r, 500));
    }
    const listing = await platform.api(`/runs/${runId}/artifacts`);
    assert.deepEqual(
      listing.items.map((i) => i.path),
      ['checkpoints/step-20.pt', 'checkpoints/step-30.pt', 'model/step-30.pt'],
    );

    await signIn(page, platform.url, platform.admin);
    await page.goto(`${platform.url}/runs/${runId}`);
    await page.getByRole('tab', { name: 'Artifacts' }).click();
    await page.getByTestId('artifacts').waitFor();

    // the tree: folders before their files, each with the size of what is under it
    const files = page.getByTestId('artifact-file');
    assert.deepEqual(await files.evaluateAll((rows) => rows.map((r) => r.dataset.path)), listing.items.map((i) => i.path));
    const folders = page.getByTestId('artifact-folder');
    assert.deepEqual(await folders.evaluateAll((rows) => rows.map((r) => r.dataset.path)), ['checkpoints', 'model']);
    assert.match(await folders.first().innerText(), /2 files/);
    const total = await page.getByTestId('artifacts-total').innerText();
    assert.match(total, /^3 files, [\d.]+ KB in all$/);
    assert.ok(listing.total_size > 1024, `total ${listing.total_size} bytes`);
    await screenshot(page, 'artifacts-01-tab');

    // a folder collapses to its row and opens again
    await page.getByRole('button', { name: 'collapse checkpoints' }).click();
    assert.equal(await files.count(), 1);
    await page.getByRole('button', { name: 'expand checkpoints' }).click();
    assert.equal(await files.count(), 3);

    // the download: the browser saves the file the API stores, under its own name
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'download model/step-30.pt' }).click(),
    ]);
    assert.equal(download.suggestedFilename(), 'step-30.pt');
    const saved = await downloadedBytes(download);
    const model = listing.items.find((i) => i.path === 'model/step-30.pt');
    assert.equal(saved.length, model.size);
    const direct = await fetch(`${platform.url}/api/v1/runs/${runId}/artifacts/model/step-30.pt`, {
      headers: { Authorization: `Bearer ${platform.admin.token}` },
    });
    assert.ok(Buffer.from(await direct.arrayBuffer()).equals(saved));
  });
});
