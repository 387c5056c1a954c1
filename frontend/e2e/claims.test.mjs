// Claims in the browser, in Debian's chromium against a real `reasonlab up` with one worker: a member states
// a claim on the diagnostic kind's seed groups (two learning rates, three seeds each) in the claims page's
// form, locks it before any of its runs exists (the card says "pre-registered"), then the runs are
// submitted and the card changes as they end (each arm's n grows, then the comparison's test, effect and
// p-value appear) and it stays "pre-registered". The card's numbers are the API's. Screenshots in
// test-output/e2e/claims-*.png.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { allowErrors, launchBrowser, openPage, screenshot, signIn, startPlatform } from './harness.mjs';

const MEG = { username: 'meg', password: 'tangerine-Orbit-4471' };
const SEEDS = [0, 1, 2];

let platform;
let browser;
let page;
let claimId;

/** Each arm's n as the card shows it. */
async function shownN(card) {
  return [Number(await card.getByTestId(`claim-${claimId}-n-0`).innerText()), Number(await card.getByTestId(`claim-${claimId}-n-1`).innerText())];
}

describe('claims', { timeout: 600_000 }, () => {
  before(async () => {
    platform = await startPlatform({ workers: 1 });
    platform.cli('user', 'create', MEG.username, '--password', MEG.password, '--role', 'member');
    browser = await launchBrowser();
    page = await openPage(browser);
  });

  after(async () => {
    await browser?.close();
    await platform?.stop();
  });

  it('a member states a claim on two seed groups; a bad query is a 422 under its field', async () => {
    await signIn(page, platform.url, MEG, { named: true });
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Claims' }).click();
    await page.waitForURL((u) => new URL(u).pathname === '/claims');
    await page.getByTestId('new-claim').click();
    await page.getByTestId('claim-name').fill('a larger learning rate lowers the loss');
    await page.getByTestId('claim-section').fill('diagnostic, self-test');
    await page.getByTestId('claim-arm-0-name').fill('lr 0.01');
    await page.getByTestId('claim-arm-0-query').fill('kind = "diagnostic" and params.train.lr = 0.01');
    await page.getByTestId('claim-arm-1-name').fill('lr 0.05');
    await page.getByTestId('claim-arm-1-query').fill('colour = 1');
    await page.getByTestId('claim-metric').fill('loss');
    await page.getByTestId('claim-direction').getByText('less than the reference').click();
    allowErrors(page, /status of 422/, 'the test states a claim with an unknown field on purpose: the API answers 422');
    await page.getByTestId('claim-submit').click();
    // the API names the second arm's query: the error sits under that field
    await page.getByText(/unknown field.*colour|colour/i).first().waitFor();
    assert.equal(await page.getByTestId('claim-arm-1-query').getAttribute('aria-invalid'), 'true');
    await page.getByTestId('claim-arm-1-query').fill('kind = "diagnostic" and params.train.lr = 0.05');
    await page.getByTestId('claim-submit').click();
    const card = page.locator('[data-testid^="claim-"][aria-label="claim a larger learning rate lowers the loss"]');
    await card.waitFor();
    claimId = Number((await card.getAttribute('data-testid')).slice('claim-'.length));
    assert.ok(claimId > 0);
    assert.equal(await card.getByTestId(`claim-${claimId}-verdict`).textContent(), 'inconclusive');
    assert.equal(await card.getByTestId(`claim-${claimId}-prereg`).textContent(), 'not locked');
    assert.deepEqual(await shownN(card), [0, 0]);
    await screenshot(page, 'claims-stated');
  });

  it('locks it before its runs start: the card says pre-registered', async () => {
    const card = page.getByTestId(`claim-${claimId}`);
    await card.getByTestId(`claim-${claimId}-lock`).click();
    await card.getByTestId(`claim-${claimId}-prereg`).filter({ hasText: 'pre-registered' }).waitFor();
    await card.getByTestId(`claim-${claimId}-lock`).filter({ hasText: 'Version 1 locked' }).waitFor();
    assert.match(await card.getByTestId(`claim-${claimId}-version`).innerText(), /version 1 decided .*version 1 locked by meg/);
    const stored = await platform.api(`/claims/${claimId}`);
    assert.equal(stored.evaluation.preregistration.status, 'pre-registered');
    assert.equal(stored.evaluation.preregistration.locked_hash, stored.hash);
    await screenshot(page, 'claims-locked');
  });

  it('the card changes as the runs end and stays pre-registered', async () => {
    await platform.api('/experiments', {
      method: 'POST',
      body: {
        name: 'lr seeds',
        kind: 'diagnostic',
        spec: { train: { steps: 60, step_delay: 0.05, checkpoint_every: 1000 } },
        sweep: { grid: { 'train.lr': [0.01, 0.05] }, seeds: SEEDS },
      },
    });
    const card = page.getByTestId(`claim-${claimId}`);
    const seen = [];
    const deadline = Date.now() + 480_000;
    for (;;) {
      const n = await shownN(card);
      if (!seen.length || seen[seen.length - 1].join() !== n.join()) seen.push(n);
      if (n[0] === SEEDS.length && n[1] === SEEDS.length) break;
      assert.ok(Date.now() < deadline, `the runs did not end in time; the card showed ${JSON.stringify(seen)}\n${platform.log()}`);
      await page.waitForTimeout(500);
    }
    // the card went through the runs' ends, never back: each arm's n only grows
    assert.ok(seen.length >= 3, `the card changed ${seen.length - 1} time(s): ${JSON.stringify(seen)}`);
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i][0] >= seen[i - 1][0] && seen[i][1] >= seen[i - 1][1], JSON.stringify(seen));
    // three shared seeds: a paired test, its effect and p-values on the card, as the API computed them
    const comparisons = card.getByTestId(`claim-${claimId}-comparisons`);
    await comparisons.getByText('paired (n 3)').waitFor();
    const api = await platform.api(`/claims/${claimId}`);
    const c = api.evaluation.comparisons[0];
    assert.equal(c.test, 'paired');
    assert.equal(c.n, 3);
    assert.ok(Number.isFinite(c.effect) && Number.isFinite(c.p_value));
    assert.ok(['supported', 'contradicted', 'inconclusive'].includes(api.evaluation.verdict));
    await card.getByTestId(`claim-${claimId}-verdict`).filter({ hasText: api.evaluation.verdict }).waitFor();
    assert.equal(await card.getByTestId(`claim-${claimId}-prereg`).textContent(), 'pre-registered');
    assert.equal(api.evaluation.preregistration.status, 'pre-registered');
    assert.ok(api.evaluation.preregistration.first_run_started_at >= api.evaluation.preregistration.locked_at);
    await screenshot(page, 'claims-decided');
    // the claim's story in the project's activity
    const feed = await platform.api(`/projects/${api.project_id}/activity`);
    assert.deepEqual(
      feed.filter((a) => a.claim_id === claimId).map((a) => a.type),
      ['locked', 'claimed'],
    );
  });
});
