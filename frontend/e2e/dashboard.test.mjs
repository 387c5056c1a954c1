// The dashboard end to end, against a real `reasonlab up` (API + worker) on a temporary home, driven in
// Debian's chromium. Screenshots of every page land in test-output/e2e/.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { allowErrors, launchBrowser, loadExample, newExperimentForm, openExample, hoverUntil, openPage, previewExperiment, screenshot, signIn, startPlatform, submitExperiment } from './harness.mjs';

const RUN_TIMEOUT = 120_000;
let platform;
let browser;
let page;
const state = {};

async function logout() {
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByRole('button', { name: 'Sign in' }).waitFor();
}

describe('dashboard', { timeout: 600_000 }, () => {
  before(async () => {
    platform = await startPlatform({ mlflowUi: true });
    browser = await launchBrowser();
    page = await openPage(browser);
  });

  after(async () => {
    await browser?.close();
    await platform?.stop();
  });

  it('logs in', async () => {
    await page.goto(`${platform.url}/`);
    await page.waitForURL(/\/login/);
    await screenshot(page, '01-login');
    await signIn(page, platform.url, platform.admin, { named: true });
    await page.getByRole('heading', { name: /Experiments in default/ }).waitFor();
    await screenshot(page, '02-experiments-empty');
  });

  it('creates a diagnostic sweep of 3 runs from the form, with a preview', async () => {
    await page.getByTestId('new-experiment').click();
    await page.getByTestId('schema-form').waitFor();
    await page.getByLabel('Name').first().fill('e2e lr sweep');
    // short, visibly live runs: 40 steps at 0.05 s
    await page.locator('#spec-train-steps').fill('40');
    await page.locator('#spec-train-step_delay').fill('0.05');
    await page.locator('#spec-train-checkpoint_every').fill('10');
    await page.getByRole('button', { name: '+ grid axis' }).click();
    await page.getByLabel('grid axis 1 parameter').fill('train.lr');
    await page.keyboard.press('Escape');
    await page.getByLabel('grid axis 1 values').fill('0.1, 0.03, 0.01');
    await previewExperiment(page, 3);
    await screenshot(page, '03-new-experiment-preview');
    state.experimentId = await submitExperiment(page, { previewed: true });
    await page.getByTestId('experiment-name').filter({ hasText: 'e2e lr sweep' }).waitFor();
    const detail = await platform.api(`/experiments/${state.experimentId}`);
    assert.equal(detail.runs.length, 3);
    assert.deepEqual(detail.runs.map((r) => r.params['train.lr']).sort(), [0.01, 0.03, 0.1]);
  });

  it('shows the runs turn running, then succeeded, without reloading', async () => {
    const navigations = [];
    page.on('framenavigated', (f) => f === page.mainFrame() && navigations.push(f.url()));
    const rows = page.locator('[data-testid="runs-table"] [role="row"][data-run-id]');
    await rows.first().waitFor();
    assert.equal(await rows.count(), 3);
    await page.locator('[role="row"][data-status="running"]').first().waitFor({ timeout: RUN_TIMEOUT });
    await screenshot(page, '04-experiment-running');
    await page.waitForFunction(
      () => document.querySelectorAll('[role="row"][data-status="succeeded"]').length === 3,
      null,
      { timeout: RUN_TIMEOUT, polling: 250 },
    );
    assert.deepEqual(navigations, [], 'the page never reloaded');
    await page.getByTestId('overlay-chart').waitFor();
    await page.waitForTimeout(500);
    await screenshot(page, '05-experiment-succeeded');
    await page.getByRole('tab', { name: 'Sweep analysis' }).click();
    await page.getByTestId('parallel-chart').waitFor();
    await page.waitForTimeout(300);
    await screenshot(page, '05b-experiment-parallel-coordinates');
    // diagnostic declares no experiment tabs (src/kinds/diagnostic): the generic ones only
    assert.equal(await page.locator('[data-testid^="kind-tab-"]').count(), 0);
    await page.getByRole('tab', { name: 'Runs' }).click();
  });

  it('opens a run and shows a non-empty loss chart', async () => {
    await page.getByTestId('run-link').first().click();
    await page.waitForURL(/\/runs\/\d+$/);
    const chart = page.getByTestId('metric-chart-loss');
    await chart.waitFor();
    const points = Number(await chart.getAttribute('data-points'));
    assert.ok(points > 0, `loss chart has ${points} points`);
    const canvas = chart.locator('canvas').first();
    await canvas.waitFor();
    const box = await canvas.boundingBox();
    assert.ok(box && box.width > 100 && box.height > 100);
    // the header names the experiment and the run's place in it
    await page.getByTestId('run-experiment').filter({ hasText: 'e2e lr sweep' }).waitFor();
    await page.getByText(/#\d of 3/).waitFor();
    // a tag is shown as typed, not upper-cased
    await page.getByLabel('add tag').fill('baseLine');
    await page.keyboard.press('Enter');
    const tag = page.getByTestId('tags').getByText('baseLine', { exact: true });
    await tag.waitFor();
    assert.equal(await tag.evaluate((el) => getComputedStyle(el).textTransform), 'none');
    await page.waitForTimeout(300);
    await screenshot(page, '06-run');
    await page.getByRole('tab', { name: /Results/ }).click();
    await page.getByTestId('result-diagnostic').waitFor();
    await screenshot(page, '07-run-results');
    // what the run logged itself (ctx.log_params: the diagnostic kind logs its whole spec, flattened)
    await page.getByRole('tab', { name: 'Spec & params' }).click();
    const logged = page.getByTestId('logged-params');
    await logged.getByText('seed', { exact: true }).waitFor();
    await logged.getByText('train.steps', { exact: true }).waitFor();
  });

  it('follows a running run live: progress, ETA, status from the event stream', async () => {
    const exp = await platform.api('/experiments', {
      method: 'POST',
      body: { name: 'e2e live run', kind: 'diagnostic', spec: { train: { steps: 120, step_delay: 0.1, checkpoint_every: 20 } } },
    });
    const runId = exp.runs[0].id;
    await page.goto(`${platform.url}/runs/${runId}`);
    await page.getByTestId('eta').waitFor({ timeout: RUN_TIMEOUT });
    await page.getByText('● live').waitFor();
    await page.waitForTimeout(2500); // a few progress events: the ETA has a pace to go by
    await screenshot(page, '07b-run-live');
    await page.locator('[data-status="succeeded"]').first().waitFor({ timeout: RUN_TIMEOUT });
    assert.equal(new URL(page.url()).pathname, `/runs/${runId}`);
    await page.getByRole('tab', { name: 'Logs' }).click();
    await page.waitForTimeout(500);
    await screenshot(page, '07c-run-logs');
    state.liveRunId = runId;
  });

  it('groups the run page metrics by prefix, searches keys, and sets each chart to log, smoothed, over time', async () => {
    const runId = state.liveRunId;
    // the keys of an SMoE run beside the diagnostic's own: a section per prefix, each key once
    const t0 = Date.now() - 60_000;
    const points = [];
    for (let step = 1; step <= 40; step++) {
      const time = new Date(t0 + step * 1000).toISOString();
      for (let e = 0; e < 4; e++) points.push({ key: `moe/load/e${e}`, step, value: 0.25 + 0.01 * Math.sin(step + e), time });
      points.push({ key: 'moe/entropy', step, value: 1.3 - step / 100, time });
    }
    await platform.api(`/runs/${runId}/metrics`, { method: 'POST', body: { points } });
    const keys = await platform.api(`/runs/${runId}/metric-keys`);
    // the worker sampled the run's CPU and memory at its heartbeats
    assert.ok(keys.includes('system/cpu_percent') && keys.includes('system/process_memory_mb'), keys.join(', '));
    await page.goto(`${platform.url}/runs/${runId}`);
    try {
      for (const name of ['general', 'moe', 'system']) await page.getByTestId(`metric-section-${name}`).waitFor();
    } catch (e) {
      await screenshot(page, '07d-run-metric-sections-missing');
      throw new Error(`${e.message}\n${await page.locator('main').innerText().catch(() => '')}`);
    }
    const sections = await page.locator('[data-testid^="metric-section-"][data-open]').evaluateAll((els) => els.map((e) => e.dataset.testid));
    assert.equal(sections.at(-1), 'metric-section-system', `system last: ${sections}`);
    const panels = page.locator('[data-testid^="metric-panel-"]');
    await page.getByTestId('metric-chart-system/cpu_percent').waitFor();
    assert.equal(await panels.count(), new Set(keys).size, 'one panel per key');
    await page.getByTestId('metric-chart-moe/load/e3').waitFor();
    await screenshot(page, '07d-run-metric-sections');

    // collapse and reopen a section
    await page.getByTestId('metric-section-toggle-moe').click();
    await page.getByTestId('metric-panel-moe/load/e0').waitFor({ state: 'detached' });
    await page.getByTestId('metric-section-toggle-moe').click();
    await page.getByTestId('metric-panel-moe/load/e0').waitFor();

    // search: every term must occur in the key
    await page.getByTestId('metric-search').fill('load e1');
    await page.waitForFunction(() => document.querySelectorAll('[data-testid^="metric-panel-"]').length === 1);
    await page.getByTestId('metric-panel-moe/load/e1').waitFor();
    await page.getByTestId('metric-search').fill('');
    await page.getByTestId('metric-panel-loss').waitFor();

    // one chart's options: log scale, smoothing, x axis; the other charts keep theirs
    const loss = page.getByTestId('metric-chart-loss');
    await page.getByTestId('chart-options-loss').click();
    const panel = page.getByTestId('chart-options-panel-loss');
    await panel.getByRole('switch', { name: 'Log scale' }).check();
    await page.locator('[data-testid="metric-chart-loss"][data-y-scale="log"]').waitFor();
    await panel.getByRole('slider', { name: 'smoothing' }).focus();
    for (let i = 0; i < 60; i++) await page.keyboard.press('ArrowRight');
    // the slider writes its value (the URL's `charts`, then the chart) once it rests
    await page.waitForFunction(() => Number(document.querySelector('[data-testid="metric-chart-loss"]')?.getAttribute('data-smoothing')) >= 0.5);
    await panel.getByText('Relative', { exact: true }).click();
    await page.locator('[data-testid="metric-chart-loss"][data-x-axis="relative"]').waitFor();
    assert.ok(Number(await page.getByTestId('metric-chart-loss').getAttribute('data-points')) > 0);
    await page.waitForTimeout(300);
    await screenshot(page, '07e-run-chart-options');
    await panel.getByText('Wall time', { exact: true }).click();
    await page.locator('[data-testid="metric-chart-loss"][data-x-axis="time"]').waitFor();
    assert.equal(await page.getByTestId('metric-chart-moe/entropy').getAttribute('data-x-axis'), 'step'); // the other charts keep theirs
    await page.getByTestId('chart-options-loss').click(); // hides the options, keeps them
    await page.getByTestId('chart-options-panel-loss').waitFor({ state: 'detached' });
    assert.equal(await page.getByTestId('metric-chart-loss').getAttribute('data-x-axis'), 'time');
  });

  it("opens the run in MLflow's UI that reasonlab up serves, and hides the link where there is none", async () => {
    const server = await platform.api('/server');
    assert.match(server.mlflow_ui_url ?? '', /^http:\/\/127\.0\.0\.1:\d+$/);
    const run = await platform.api(`/runs/${state.liveRunId}`);
    assert.ok(run.mlflow_run_id, 'the worker mirrored the run to MLflow');
    await page.goto(`${platform.url}/runs/${run.id}`);
    const link = page.getByTestId('open-in-mlflow');
    await link.waitFor();
    assert.equal(await link.getAttribute('href'), `${server.mlflow_ui_url}/#/runs/${run.mlflow_run_id}`);
    // the link's target answers: MLflow's UI page, and its API knows the run
    const ui = await page.request.get(server.mlflow_ui_url);
    assert.equal(ui.status(), 200);
    const known = await page.request.get(`${server.mlflow_ui_url}/api/2.0/mlflow/runs/get?run_id=${run.mlflow_run_id}`);
    assert.equal(known.status(), 200);
    // an API that names no MLflow UI (reasonlab up --no-mlflow-ui, reasonlab api on a sqlite store)
    await page.route('**/api/v1/server', (route) => route.fulfill({ json: { version: server.version, mlflow_ui_url: null } }));
    await page.reload();
    await page.getByTestId('run-experiment').waitFor();
    await page.getByTestId('metric-section-general').waitFor();
    assert.equal(await page.getByTestId('open-in-mlflow').count(), 0);
    await page.unroute('**/api/v1/server');
  });

  it('shows the error and traceback of a failed run, and retries it', async () => {
    const exp = await platform.api('/experiments', {
      method: 'POST',
      body: { name: 'e2e failing run', kind: 'diagnostic', spec: { train: { steps: 30, fail_at_step: 5 } } },
    });
    const runId = exp.runs[0].id;
    await page.goto(`${platform.url}/runs/${runId}`);
    await page.getByTestId('run-error').waitFor({ timeout: RUN_TIMEOUT });
    assert.match(await page.getByTestId('run-error').textContent(), /Traceback|Error/);
    // the failed run's last progress message is not shown as what it is doing now
    const note = page.getByTestId('progress-message');
    if (await note.count()) assert.match(await note.textContent(), /^last message: /);
    await screenshot(page, '07d-run-failed');
    await page.getByTestId('retry-run').click();
    await page.locator('[data-status="queued"], [data-status="running"], [data-status="failed"]').first().waitFor();
    await page.getByText(/attempt 2\//).waitFor({ timeout: RUN_TIMEOUT });
  });

  it('compares two runs with the param diff highlighted', async () => {
    await page.goto(`${platform.url}/experiments/${state.experimentId}`);
    await page.getByLabel(/select run \d+/).first().waitFor();
    const boxes = page.getByLabel(/select run \d+/);
    await boxes.nth(0).check();
    await boxes.nth(1).check();
    await page.getByRole('link', { name: /Compare 2 runs/ }).click();
    await page.waitForURL(/\/compare\?runs=/);
    const diff = page.getByTestId('param-diff');
    await diff.waitFor();
    const differing = await diff.locator('tr[data-differs="true"] td:first-child').allTextContents();
    assert.deepEqual(differing, ['train.lr']);
    await page.getByTestId('overlay-chart').waitFor();
    await page.waitForTimeout(500);
    await screenshot(page, '08-compare');
  });

  it('reports a missing run once', async () => {
    allowErrors(page, /status of 404/, 'the test opens a run that does not exist on purpose: its requests answer 404');
    await page.goto(`${platform.url}/runs/99999999`);
    await page.locator('.mantine-Notification-root').first().waitFor();
    await page.waitForTimeout(1000); // the metric keys' request fails too: still one notification
    assert.equal(await page.locator('.mantine-Notification-root').count(), 1);
  });

  it('comments in markdown and approves the experiment', async () => {
    await page.goto(`${platform.url}/experiments/${state.experimentId}`);
    await page.getByRole('tab', { name: 'Review' }).click();
    await page.getByLabel('Comment (markdown)').fill('Loss falls for **every** lr; `0.1` is fastest.');
    await page.getByRole('button', { name: 'Comment', exact: true }).click();
    await page.getByTestId('comment').locator('strong', { hasText: 'every' }).waitFor();
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.getByTestId('review-state').filter({ hasText: 'approved' }).first().waitFor();
    await screenshot(page, '09-review');
    const reviews = await platform.api(`/experiments/${state.experimentId}/reviews`);
    assert.equal(reviews.at(-1).state, 'approved');
    await page.getByRole('link', { name: 'Activity' }).click();
    await page.getByTestId('activity').waitFor();
    await page.getByText('reviewed', { exact: true }).first().waitFor();
    const feed = await page.getByTestId('activity').textContent();
    const who = platform.admin.username;
    assert.ok(!feed.includes(`${who}${who} commented`) && !feed.includes(`${who} ${who} commented`), 'the actor is written once');
    await screenshot(page, '10-activity');
  });

  it('shows the field error of a bad value and creates nothing', async () => {
    allowErrors(page, /status of 422/, 'the test submits lr = -1 on purpose: the API answers 422');
    const before = (await platform.api('/experiments?limit=200')).items.length;
    await newExperimentForm(page, platform.url);
    // every control of the form is labelled, and the keyboard walks the fields in order
    const unlabelled = await page.evaluate(() =>
      [...document.querySelectorAll('form[aria-label="new experiment"] input, form[aria-label="new experiment"] select, form[aria-label="new experiment"] textarea')]
        .filter((el) => el.type !== 'hidden' && !el.getAttribute('aria-label') && !el.getAttribute('aria-labelledby') && !(el.labels && el.labels.length))
        .map((el) => el.outerHTML.slice(0, 120)),
    );
    assert.deepEqual(unlabelled, []);
    // fields are labelled by their names as the spec writes them, with the description as help
    await page.getByLabel('lr', { exact: true }).waitFor();
    await page.locator('#experiment-name').focus();
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'experiment-description');
    await page.locator('#spec-train-lr').focus();
    await page.keyboard.press('Control+A');
    await page.keyboard.type('-1');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'spec-train-checkpoint_every');
    await page.getByTestId('submit-experiment').click();
    // the server's 422 lands on the field: the input is marked invalid and its message shows
    await page.locator('#spec-train-lr[aria-invalid="true"]').waitFor();
    await page.getByText('Input should be greater than 0').first().waitFor();
    await screenshot(page, '11-new-experiment-field-error');
    assert.match(page.url(), /\/experiments\/new$/);
    const afterCount = (await platform.api('/experiments?limit=200')).items.length;
    assert.equal(afterCount, before, 'nothing was created');
  });

  it('loads a kind example into the spec and the sweep, and previews it', async () => {
    await openExample(page, platform.url, { kind: 'diagnostic', example: 'watch-live', description: 'watch progress' });
    assert.equal(await page.locator('#spec-train-step_delay').inputValue(), '0.2');
    // the next example lays its spec over the defaults, not over the previous example
    await loadExample(page, 'seed-sweep', 'three seeds');
    assert.equal(await page.locator('#spec-train-step_delay').inputValue(), '0');
    assert.equal(await page.getByLabel('grid axis 1 parameter').inputValue(), 'seed');
    assert.equal(await page.getByLabel('grid axis 1 values').inputValue(), '1, 2, 3');
    await previewExperiment(page, 3);
    await screenshot(page, '11b-new-experiment-example');
    // back to the defaults, no sweep
    await page.getByLabel('Load example').selectOption('');
    assert.equal(await page.getByLabel('grid axis 1 parameter').count(), 0);
  });

  it('bulk-cancels a grid sweep and draws its SRAVEN heatmap, hover names the run, click opens it', async () => {
    const grid = { 'data.num_features': [1, 2, 3], 'moe.top_k': [1, 2, 4], 'model.attention': ['softmax', 'hyla'] };
    const exp = await platform.api('/experiments', {
      method: 'POST',
      body: { name: 'e2e sraven grid', kind: 'smoe_sraven', spec: { train: { steps: 1, eval_size: 64 } }, sweep: { grid } },
    });
    await page.goto(`${platform.url}/experiments/${exp.id}`);
    // the tab smoe_sraven declares (src/kinds/smoe/smoe_sraven) is there before any result
    await page.getByRole('tab', { name: 'SRAVEN grid' }).waitFor();
    // a one-step cell the platform's worker ends before the bulk cancel reaches it answers 409 to its cancel
    allowErrors(page, /status of 409/, 'a run the worker ended before the bulk cancel reached it cannot be cancelled');
    await page.getByLabel('select all shown runs').check();
    await page.getByTestId('bulk-cancel').click();
    await page.waitForFunction(() => document.querySelectorAll('[role="row"][data-status="queued"]').length === 0, null, { timeout: RUN_TIMEOUT });
    // the cells' results, as a worker would post them: accuracy falls with M, best k depends on M
    for (const run of exp.runs) {
      const M = run.params['data.num_features'];
      const k = run.params['moe.top_k'];
      const attention = run.params['model.attention'];
      const ood = Math.max(0, 1 - 0.2 * M - 0.05 * Math.abs(k - M) - (attention === 'hyla' ? 0.05 : 0));
      await platform.api(`/runs/${run.id}/results`, {
        method: 'POST',
        body: { kind: 'sraven_cell', payload: { M, top_k: k, num_experts: 8, attention, test_acc: Math.min(1, ood + 0.2), ood_acc: ood, per_feature_acc: Array(M).fill(0.9), steps: 1 } },
      });
    }
    await page.reload();
    await page.getByRole('tab', { name: 'SRAVEN grid' }).click();
    const panels = page.getByTestId('sraven-heatmap');
    // both panels drawn (a canvas each) before the screenshot and the hover: the panel's box is there
    // before ECharts (a chunk of its own) has loaded and drawn into it
    await panels.nth(0).locator('canvas').first().waitFor();
    await panels.nth(1).locator('canvas').first().waitFor();
    assert.equal(await panels.count(), 2);
    await page.waitForTimeout(300);
    await screenshot(page, '12-experiment-sraven-heatmap');
    // the bottom-left cell of the first panel (M = 1, k = 1)
    const box = await panels.first().boundingBox();
    const plotW = box.width - 56 - 12;
    const plotH = box.height - 30 - 70;
    const x = box.x + 56 + plotW / 6;
    const y = box.y + 30 + plotH * (5 / 6);
    await hoverUntil(page, [x, y], page.getByText(/run \d+ \(click to open\)/).first());
    await screenshot(page, '13-heatmap-hover');
    await page.getByText('ID accuracy', { exact: true }).click();
    // the panels drawn again for the ID accuracy: the cell's tooltip names it
    await page.mouse.move(x + 40, y + 40);
    await hoverUntil(page, [x, y], page.getByText(/test_acc=/).first());
    await screenshot(page, '13b-heatmap-id-accuracy');
    await page.mouse.click(x, y);
    await page.waitForURL(/\/runs\/\d+$/);
    const runId = Number(new URL(page.url()).pathname.split('/').pop());
    const opened = exp.runs.find((r) => r.id === runId);
    assert.ok(opened, `opened run ${runId} belongs to the grid experiment`);
    assert.equal(opened.params['data.num_features'], 1);
    assert.equal(opened.params['moe.top_k'], 1);
    await page.getByRole('tab', { name: /Results/ }).click();
    // the platform's worker may have run a one-step cell before the bulk cancel reached it (a 409 for that
    // run): its own result is then beside the one posted above
    await page.getByTestId('result-sraven_cell').first().waitFor();
    await screenshot(page, '14-run-sraven-cell');
  });

  it('searches and filters the experiments list, which shows ids', async () => {
    await page.goto(`${platform.url}/`);
    const rows = page.locator('table[aria-label="experiments"] tbody tr');
    await rows.first().waitFor();
    const all = await rows.count();
    await page.getByTestId('experiments-search').fill('e2e lr sweep');
    await page.waitForFunction(() => document.querySelectorAll('table[aria-label="experiments"] tbody tr').length === 1);
    assert.equal(await rows.first().getAttribute('data-experiment-id'), String(state.experimentId));
    assert.equal((await rows.first().locator('td').nth(1).textContent()).trim(), String(state.experimentId));
    await page.getByTestId('experiments-search').fill(`#${state.experimentId}`);
    await page.waitForFunction(() => document.querySelectorAll('table[aria-label="experiments"] tbody tr').length === 1);
    // the search box is the query language's q, answered by the server
    await page.getByTestId('experiments-search').fill(`id != ${state.experimentId}`);
    await page.getByTestId('experiments-shown').filter({ hasText: `${all - 1} shown` }).waitFor();
    assert.equal(await page.locator(`tr[data-experiment-id="${state.experimentId}"]`).count(), 0);
    await screenshot(page, '12-experiments-filtered');
  });

  it("switches the project from the header's switcher, whose list is built when it opens", async () => {
    await platform.api('/projects', { method: 'POST', body: { name: 'e2e-other', description: 'an empty project' } });
    // the run page has no select but the switcher's, and no dropdown until it opens (a hidden one kept
    // mounted was placed by Floating UI at every page's load: a forced style and layout pass)
    const { runs } = await platform.api(`/experiments/${state.experimentId}`);
    await page.goto(`${platform.url}/runs/${runs[0].id}`);
    await page.getByTestId('metric-chart-loss').waitFor();
    assert.equal(await page.locator('.mantine-Select-dropdown').count(), 0);
    await page.goto(`${platform.url}/`);
    await page.getByRole('heading', { name: /Experiments in default/ }).waitFor();
    const switcher = page.getByRole('textbox', { name: 'Project' });
    await switcher.click();
    await page.getByRole('option', { name: 'e2e-other', exact: true }).click();
    await page.getByRole('heading', { name: /Experiments in e2e-other/ }).waitFor();
    assert.equal(await page.locator('table[aria-label="experiments"] tbody tr[data-experiment-id]').count(), 0);
    await switcher.click();
    await page.getByRole('option', { name: 'default', exact: true }).click();
    await page.getByRole('heading', { name: /Experiments in default/ }).waitFor();
    await page.locator('table[aria-label="experiments"] tbody tr[data-experiment-id]').first().waitFor();
  });

  it('renders the API docs with every request to another origin refused (offline)', async () => {
    const foreign = [];
    const origin = new URL(platform.url).origin;
    await page.route('**/*', (route) => {
      if (new URL(route.request().url()).origin === origin) return route.continue();
      foreign.push(route.request().url());
      return route.abort();
    });
    await page.goto(`${platform.url}/api/v1/docs`);
    await page.locator('.opblock').first().waitFor();
    assert.deepEqual(foreign, []);
    await page.unroute('**/*');
  });

  it('shows a viewer no submit, cancel or retry buttons', async () => {
    platform.cli('user', 'create', 'vera', '--password', 'viewer-pass-123', '--role', 'viewer');
    await page.goto(`${platform.url}/`); // back to the dashboard (the test before left the page on the API docs)
    await logout();
    await signIn(page, platform.url, { username: 'vera', password: 'viewer-pass-123' }, { named: true });
    await page.getByRole('heading', { name: /Experiments in default/ }).waitFor();
    assert.equal(await page.getByTestId('new-experiment').count(), 0);
    assert.equal(await page.getByRole('link', { name: 'New experiment' }).count(), 0);
    await screenshot(page, '15-viewer-experiments');
    await newExperimentForm(page, platform.url);
    assert.equal(await page.getByTestId('submit-experiment').count(), 0);
    await screenshot(page, '16-viewer-new-experiment');
    await page.goto(`${platform.url}/experiments/${state.experimentId}`);
    await page.getByTestId('runs-table').waitFor();
    assert.equal(await page.getByTestId('bulk-cancel').count(), 0);
    assert.equal(await page.getByTestId('bulk-retry').count(), 0);
  });
});
