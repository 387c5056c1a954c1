// The carma kind in the browser, and reports built from its views, against one real `reasonlab up`: a
// three-variant experiment (Original, FT, CARMA on a tiny GPT-2 with GPT-2's real tokenizer, WordNet IDM)
// submitted from the New experiment page with the kind's example and run by a real worker; its CAP curves,
// synonym table and lambda-sweep views and a run's results. Then a report built from those views (the CAP
// curves and synonym table tabs, the compare page's grouped chart) of the same experiment; a comment on a
// block, publishing, a share link opened in a fresh browser context with names hidden, and the HTML export
// opened with the network off. Every text field of the report carries a stored XSS attempt: no script runs
// anywhere (alert() opens no dialog). One file, so the three CARMA runs are trained once for both.
// Screenshots in test-output/e2e/carma-*.png and reports-*.png.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ROOT, downloadedBytes, launchBrowser, openExample, openRunResults, runExperiment, screenshot, signedInPage, startPlatform } from './harness.mjs';

const RUNS_TIMEOUT = 600_000;
const XSS = `<img src=x onerror="alert('xss')"><script>alert('xss')</script>[link](javascript:alert('xss'))`;
// the same through LaTeX math (typeset in the markdown and callout blocks and in the HTML export)
const MATH_XSS = `$\\href{javascript:alert('xss')}{x}$ $\\text{<img src=x onerror="alert('xss')">}$ $\\htmlData{onclick=alert('xss')}{y}$ $<script>alert('xss')</script>$`;
let platform;
let browser;
let page;
let experimentId;
let reportId;
let shareUrl;
const dialogs = [];

function watch(p) {
  p.on('dialog', (d) => {
    dialogs.push(`${p.url()}: ${d.message()}`);
    void d.dismiss();
  });
  return p;
}

async function until(check, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function addTo(report, title) {
  await page.getByTestId('add-to-report').first().click();
  const target = page.getByTestId('add-to-report-target');
  await target.waitFor();
  if (report === 'new') await page.getByTestId('add-to-report-title').fill(title);
  else await target.selectOption({ label: report });
  await page.getByTestId('add-to-report-confirm').click();
  await page.waitForURL(/\/reports\/\d+$/);
  await page.getByTestId('save-state').filter({ hasText: 'saved' }).waitFor();
}

before(async () => {
  // the worktree's own backend, whichever checkout the venv's console script was installed from
  platform = await startPlatform({ env: { PYTHONPATH: `${ROOT}:${ROOT}/sdk` } });
  browser = await launchBrowser();
  page = watch(await signedInPage(browser, platform.url, platform.admin));
});

after(async () => {
  await browser?.close();
  await platform?.stop();
});

describe('carma views', { timeout: 900_000 }, () => {
  it('submits Original, FT and CARMA from the kind example and runs them', async () => {
    await openExample(page, platform.url, { kind: 'carma', name: 'e2e carma three variants', example: 'tiny-gpt2-three-variants', description: 'tiny GPT-2' });
    assert.equal(await page.getByLabel('grid axis 1 parameter').inputValue(), 'variant');
    experimentId = await runExperiment(page, platform, { runs: 3, timeoutMs: RUNS_TIMEOUT });
  });

  it('draws the CAP curves, a line per variant, with the protocol toggle', async () => {
    await page.getByRole('tab', { name: 'CAP curves' }).click();
    const chart = page.getByTestId('cap-curves-chart');
    await chart.waitFor();
    await chart.locator('canvas').first().waitFor();
    const box = await chart.boundingBox();
    assert.ok(box && box.width > 300 && box.height > 300);
    await page.waitForTimeout(500);
    await screenshot(page, 'carma-cap-curves');
    await page.getByLabel('CAP protocol').getByText('max CAP').click();
    await page.waitForTimeout(300);
    await screenshot(page, 'carma-cap-curves-max');
  });

  it('shows the synonym table: 3 variants x 2 rates, CS as mean ± std', async () => {
    await page.getByRole('tab', { name: 'Synonym table' }).click();
    const table = page.getByTestId('synonym-table');
    await table.waitFor();
    assert.equal(await table.locator('tbody tr').count(), 6);
    assert.match(await table.locator('tbody tr').first().innerText(), /±/);
    assert.equal(await table.locator('tbody tr[data-variant="carma"]').count(), 2);
    await screenshot(page, 'carma-synonym-table');
  });

  it('plots accuracy and CV against lambda', async () => {
    await page.getByRole('tab', { name: 'Lambda sweep' }).click();
    await page.getByTestId('lambda-sweep-chart').locator('canvas').first().waitFor();
    await page.waitForTimeout(300);
    await screenshot(page, 'carma-lambda-sweep');
  });

  it("shows a run's accuracy, CAP curves and synonym rows on its Results tab", async () => {
    const detail = await platform.api(`/experiments/${experimentId}`);
    const carmaRun = detail.runs.find((r) => r.params.variant === 'carma');
    await openRunResults(page, platform.url, carmaRun.id);
    await page.getByText('test accuracy').first().waitFor();
    await page.waitForTimeout(300);
    await screenshot(page, 'carma-run-results');
  });
});

describe('reports', { timeout: 1_200_000 }, () => {
  it('builds a report from the CAP curves, the synonym table and a grouped chart', async () => {
    const title = 'CARMA on tiny GPT-2: synonym consistency';
    await page.goto(`${platform.url}/experiments/${experimentId}`);
    await page.getByRole('tab', { name: 'CAP curves' }).click();
    await addTo('new', title);
    reportId = Number(/\/reports\/(\d+)$/.exec(page.url())[1]);
    await page.goto(`${platform.url}/experiments/${experimentId}`);
    await page.getByRole('tab', { name: 'Synonym table' }).click();
    await addTo(title);
    const detail = await platform.api(`/experiments/${experimentId}`);
    const ids = detail.runs.map((r) => r.id).join(',');
    await page.goto(`${platform.url}/compare?runs=${ids}&group=params.variant`);
    await page.getByRole('heading', { name: 'Curves' }).waitFor();
    await addTo(title);
    const blocks = page.getByTestId('report-block');
    assert.equal(await blocks.count(), 3);
    // the figure's lines say which run and steps they show
    const line = page.getByTestId('figure-line').first();
    await line.waitFor();
    assert.match(await line.locator('title').textContent(), /run \d+, .+, steps \d+-\d+ \(\d+ points\)/);
    assert.match(await blocks.nth(2).getByTestId('block-caption').innerText(), /^frozen at /);
    await page.getByTestId('add-block').click();
    await page.getByRole('menuitem', { name: 'Markdown' }).click();
    await page
      .getByTestId('block-text')
      .last()
      .fill('**Finding.** On the tiny model every variant sits at chance: the CAP curves are flat and the consistency score $CS$ is the same for Original, FT and CARMA. A real model is needed to see the paper\'s gap.');
    await page.getByRole('button', { name: 'Done' }).click();
    await until(async () => (await platform.api(`/reports/${reportId}`)).blocks.some((b) => b.text?.startsWith('**Finding.**')));
    await page.getByTestId('save-state').filter({ hasText: 'saved' }).waitFor();
    await screenshot(page, 'reports-report');
  });

  it("says a frozen block is not exact when its cut-off came from the client, not from the server's freezing", async () => {
    // the report's frozen blocks copied into a new report through the API: the cut-offs come with them,
    // the data the server kept when it froze them does not, so the draft reads them again and says so
    const report = await platform.api(`/reports/${reportId}`);
    const frozen = report.blocks.filter((b) => b.mode === 'frozen' && b.cutoff);
    assert.ok(frozen.length > 0, 'the report has frozen blocks');
    const copy = await platform.api(`/projects/${report.project_id}/reports`, {
      method: 'POST',
      body: { title: 'a copy made through the API', blocks: frozen.map((b) => ({ ...b, id: `copy-${b.id}` })) },
    });
    await page.goto(`${platform.url}/reports/${copy.id}`);
    const captions = page.getByTestId('block-caption');
    await until(async () => (await captions.count()) === frozen.length);
    for (const caption of await captions.all()) {
      assert.match(await caption.innerText(), /^frozen at .*; not exact: .+/);
    }
    // the report made in the dashboard, frozen by the server, is exact: no such note
    await page.goto(`${platform.url}/reports/${reportId}`);
    await page.getByTestId('report-block').first().waitFor();
    await until(async () => (await page.getByTestId('block-caption').count()) >= frozen.length);
    for (const caption of await page.getByTestId('block-caption').all()) {
      assert.doesNotMatch(await caption.innerText(), /not exact/);
    }
  });

  it('edits with a stored XSS attempt in every text field, and comments on a block', async () => {
    await page.getByLabel('Report title').fill(`CARMA finding ${XSS}`);
    for (const label of ['Heading', 'Markdown', 'Callout']) {
      await page.getByTestId('add-block').click();
      await page.getByRole('menuitem', { name: label }).click();
      // a heading is plain text of at most 200 characters: the math payloads go to the markdown and callout
      await page.getByTestId('block-text').last().fill(`${label} ${XSS} $x^2$${label === 'Heading' ? '' : ` ${MATH_XSS}`}`);
    }
    await until(async () => (await platform.api(`/reports/${reportId}`)).blocks.length === 7);
    await until(async () => (await platform.api(`/reports/${reportId}`)).blocks[6].text.includes('$x^2$'));
    await page.getByTestId('save-state').filter({ hasText: 'saved' }).waitFor();
    const saved = await platform.api(`/reports/${reportId}`);
    assert.equal(saved.blocks.length, 7);
    assert.ok(saved.title.includes('onerror'));
    assert.ok(saved.blocks.slice(4).every((b) => b.text.includes('onerror')));
    await page.getByRole('button', { name: 'Comment on this block' }).first().click();
    await page.getByLabel('Comment (markdown)').fill(`why this curve? ${XSS}`);
    await page.getByRole('button', { name: 'Comment', exact: true }).click();
    await page.getByTestId('report-comment').first().waitFor();
    // the text is text: no element made of it (the dashboard's own inline scripts aside)
    assert.equal(await page.locator('script', { hasText: 'xss' }).count(), 0);
    assert.equal(await page.locator('img[src="x"]').count(), 0);
    await screenshot(page, 'reports-editor');
  });

  it('publishes, approves and shares the revision; the link opens it in a fresh browser with names hidden', async () => {
    await page.getByRole('button', { name: 'Publish' }).click();
    await page.waitForURL(/\/revisions\/1$/);
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.getByTestId('report-review').waitFor();
    await page.getByLabel('Hide author names (double-blind)').check();
    await page.getByTestId('create-share').click();
    shareUrl = (await page.getByTestId('share-url').innerText()).trim();
    assert.match(shareUrl, /\/shared\/reports\/rlshare_/);
    await screenshot(page, 'reports-revision');
    const feed = await platform.api(`/projects/${(await platform.api(`/reports/${reportId}`)).project_id}/activity`);
    assert.ok(['report_commented', 'report_published', 'report_reviewed'].every((t) => feed.some((a) => a.type === t)));

    const reader = await launchBrowser(); // a fresh context: no login, no storage
    try {
      const shared = watch(await reader.context.newPage());
      await shared.goto(shareUrl);
      await shared.getByTestId('shared-meta').waitFor();
      assert.doesNotMatch(await shared.getByTestId('shared-meta').innerText(), /admin/);
      assert.equal(await shared.getByTestId('report-block').count(), 7);
      await shared.getByTestId('figure-line').first().waitFor();
      assert.equal(await shared.locator('script', { hasText: 'xss' }).count(), 0);
      assert.equal(await shared.locator('img[src="x"]').count(), 0);
      // the markdown and callout blocks' math is typeset, as MathML, and none of it is a link
      await shared.locator('math msup').first().waitFor();
      assert.equal(await shared.locator('math [href], a[href^="javascript"]').count(), 0);
      await screenshot(shared, 'reports-shared');
      // the link opens nothing else: the dashboard's pages want a login
      await shared.goto(`${platform.url}/reports/${reportId}`);
      await shared.waitForURL(/\/login/);
    } finally {
      await reader.close();
    }
  });

  it('exports HTML that opens with the network off, every figure drawn', async () => {
    await page.goto(`${platform.url}/reports/${reportId}/revisions/1`);
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-html').click()]);
    const html = (await downloadedBytes(download)).toString('utf8');
    const offline = await launchBrowser();
    try {
      await offline.context.setOffline(true);
      const requests = [];
      const view = watch(await offline.context.newPage());
      view.on('request', (r) => requests.push(r.url()));
      await view.setContent(html, { waitUntil: 'load' });
      assert.equal(await view.locator('figure svg path[stroke]').count() > 0, true);
      assert.match(await view.locator('figure svg g title').first().textContent(), /run \d+, .+, steps/);
      assert.equal(await view.locator('table').count() >= 2, true);
      assert.equal(await view.locator('math msup').count() >= 2, true); // $x^2$ in the markdown and callout blocks
      assert.equal(await view.locator('math [href], a[href^="javascript"], img, script').count(), 0);
      assert.deepEqual(requests.filter((u) => !u.startsWith('data:') && u !== 'about:blank'), []);
      await screenshot(view, 'reports-export-offline');
    } finally {
      await offline.close();
    }
  });

  it('ran no script of the stored XSS attempts anywhere', () => {
    assert.deepEqual(dialogs, []);
  });
});
