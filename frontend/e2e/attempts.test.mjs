// A run's attempts in the browser, in Debian's chromium against a real `reasonlab up`
// with no worker process: the test is the worker, through the API with the worker token (claim, release)
// and the run's own token (heartbeat, resumed), as worker/executor.py is. Attempt 1 is released at a
// worker's shutdown; attempt 2 resumes from a checkpoint, then its worker goes silent: the page stops
// saying "live" as soon as its heartbeat is older than the API's timeout (the run is still running, the
// reaper has not come by) and says no worker holds it; the reaper then requeues it as attempt 3. The run
// page's Attempts tab lists both attempts (worker, outcome), its log has the system's lines, the activity
// page the released, resumed and requeued rows. The run header counts the attempts as the allowance does:
// "attempt 1/3, resumed 1×" after the release, "attempt 2/3, resumed 1×" after the loss.
// Screenshots in test-output/e2e/attempts-*.png.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { launchBrowser, openPage, screenshot, signIn, startPlatform } from './harness.mjs';

// the API reaps a run whose heartbeat is older than this (seconds): its reaper looks first that long after
// the API started, then every REAPER_INTERVAL, so the page sees the heartbeat go stale well before the
// reaper's second look requeues the run (the window a lost worker's run spends running with no holder)
const HEARTBEAT_TIMEOUT = 6;
const REAPER_INTERVAL = 60;

let platform;
let browser;
let page;
let workerToken;
let run;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The worker's side: claim with the worker token, the attempt's calls with the run token it hands out. */
async function claim(attempt, worker) {
  const claimed = await platform.api(`/runs/${run.id}/claim`, { method: 'POST', body: { attempt, worker }, token: workerToken });
  return claimed.run_token;
}

async function heartbeat(runToken, attempt, progress) {
  await platform.api(`/runs/${run.id}/heartbeat`, { method: 'POST', body: { attempt, progress }, token: runToken });
}

describe('attempt history', { timeout: 400_000 }, () => {
  before(async () => {
    platform = await startPlatform({
      workers: 0,
      env: { REASONLAB_HEARTBEAT_TIMEOUT: String(HEARTBEAT_TIMEOUT), REASONLAB_REAPER_INTERVAL: String(REAPER_INTERVAL) },
    });
    workerToken = readFileSync(join(platform.home, 'worker.token'), 'utf8').trim();
    const experiment = await platform.api('/experiments', { method: 'POST', body: { name: 'attempts', kind: 'diagnostic', spec: {} } });
    run = experiment.runs[0];
    browser = await launchBrowser();
    page = await openPage(browser);
    await signIn(page, platform.url, platform.admin);
  });

  after(async () => {
    await browser?.close();
    await platform?.stop();
  });

  it('is live while a worker holds the run, and shows no old progress once it is released', async () => {
    const token1 = await claim(1, 'gpu-host-a');
    await heartbeat(token1, 1, { done: 30, total: 100, message: 'epoch 1' });
    await page.goto(`${platform.url}/runs/${run.id}`);
    await page.getByTestId('live').waitFor({ timeout: 20_000 });
    assert.match(await page.getByTestId('run-progress').innerText(), /30 \/ 100/);
    await screenshot(page, 'attempts-live');
    await platform.api(`/runs/${run.id}/release`, { method: 'POST', body: { attempt: 1 }, token: workerToken });
    // queued again: the progress of attempt 1 is gone from the page (the stream's progress event), no "live"
    await page.getByTestId('run-progress').waitFor({ state: 'detached', timeout: 20_000 });
    assert.equal(await page.getByTestId('live').count(), 0);
    // the released attempt is shown apart and not counted: not "attempt 2/4"
    await page.getByTestId('run-attempt').filter({ hasText: 'resumed 1×' }).waitFor({ timeout: 20_000 });
    assert.equal(await page.getByTestId('run-attempt').innerText(), 'attempt 1/3, resumed 1×');
  });

  it('stops saying live as soon as the heartbeat is stale, before the reaper requeues the run', async () => {
    const token2 = await claim(2, 'gpu-host-b');
    await platform.api(`/runs/${run.id}/resumed`, { method: 'POST', body: { attempt: 2, step: 30 }, token: token2 });
    await heartbeat(token2, 2, { done: 35, total: 100, message: 'epoch 2' });
    await page.getByTestId('live').waitFor({ timeout: 20_000 });
    assert.match(await page.getByTestId('run-progress').innerText(), /35 \/ 100/);
    // the worker goes silent: no more heartbeats
    const silentAt = Date.now();
    await page.getByTestId('holder-note').waitFor({ timeout: (HEARTBEAT_TIMEOUT + 10) * 1000 });
    const got = await platform.api(`/runs/${run.id}`);
    assert.equal(got.status, 'running'); // not yet requeued: the page said it before the reaper acted
    assert.equal(got.held, false);
    assert.equal(await page.getByTestId('live').count(), 0);
    assert.match(await page.getByTestId('holder-note').innerText(), /no worker holds this run/);
    assert.ok(Date.now() - silentAt >= (HEARTBEAT_TIMEOUT - 1) * 1000, 'not before the heartbeat went stale');
    await screenshot(page, 'attempts-no-holder');
    // the reaper requeues it as attempt 3
    for (let i = 0; i < 2 * (REAPER_INTERVAL + 15); i++) {
      const r = await platform.api(`/runs/${run.id}`);
      if (r.status === 'queued' && r.attempt === 3) break;
      await sleep(500);
    }
    const requeued = await platform.api(`/runs/${run.id}`);
    assert.deepEqual([requeued.status, requeued.attempt, requeued.held], ['queued', 3, false]);
    // the lost attempt counts, the released one still does not
    assert.deepEqual([requeued.released, requeued.max_attempts], [1, 3]);
    await page.getByTestId('run-attempt').filter({ hasText: 'attempt 2/3' }).waitFor({ timeout: 20_000 });
    assert.equal(await page.getByTestId('run-attempt').innerText(), 'attempt 2/3, resumed 1×');
  });

  it('lists every attempt on the run page, with the log lines and the activity rows', async () => {
    await page.getByTestId('attempts-tab').click();
    // the page learns of the requeue from its event stream (polled every 0.5 s): wait for attempt 2's end
    await page.getByTestId('attempt-2').filter({ hasText: 'lost' }).waitFor({ timeout: 20_000 });
    const rows = await page.getByTestId('attempts').locator('tbody tr').evaluateAll((trs) =>
      trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent.trim())),
    );
    assert.deepEqual(
      rows.map((r) => [r[0], r[1], r[5]]),
      [
        ['1', 'gpu-host-a', 'released'],
        ['2', 'gpu-host-b', 'lost · resumed from step 30'],
      ],
    );
    assert.match(await page.getByTestId('attempts-tab').innerText(), /Attempts \(2\)/);
    await screenshot(page, 'attempts-history');

    await page.getByRole('tab', { name: 'Logs' }).click();
    const log = page.getByTestId('logs');
    await log.waitFor();
    const text = await log.innerText();
    assert.match(text, /\[reasonlab\] attempt 1 of 3 claimed by worker gpu-host-a/);
    assert.match(text, /\[reasonlab\] attempt 1 released by worker gpu-host-a at shutdown: requeued as attempt 2 \(counted: 1 of 3; 1 released before it\)/);
    assert.match(text, /\[reasonlab\] attempt 2 \(counted: 1 of 3; 1 released before it\) claimed by worker gpu-host-b/);
    assert.match(text, /\[reasonlab\] attempt 2 resumed from the checkpoint at step 30/);
    assert.match(text, /\[reasonlab\] attempt 2 lost: worker gpu-host-b lost \(no heartbeat since .*\); requeued as attempt 3 \(counted: 2 of 3; 1 released before it\)/);

    await page.goto(`${platform.url}/activity`);
    const feed = page.getByTestId('activity');
    await feed.getByText('requeued', { exact: true }).waitFor({ timeout: 20_000 });
    const feedText = await feed.innerText();
    assert.match(feedText, /released by worker gpu-host-a at shutdown/);
    assert.match(feedText, /resumed from its checkpoint at step 30/);
    assert.match(feedText, /attempt 2 lost \(gpu-host-b/);
    await screenshot(page, 'attempts-activity');
  });
});
