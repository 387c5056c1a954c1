// CSV export in the dashboard, end to end against a real `reasonlab up`: the runs
// table's Export menu downloads the experiment's runs table (numbers, names, params, latest metrics; a
// name that a spreadsheet would run as a formula written as text), with the status chips as its filter;
// a chart's "⤓ data" downloads what it draws as CSV (the points of the overlay chart, the same as the
// API's buckets) and as Parquet.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { downloadedBytes, launchBrowser, openPage, screenshot, signIn, startPlatform } from './harness.mjs';

const RUN_TIMEOUT = 180_000;
const HOSTILE_NAME = '=HYPERLINK("http://evil.example","open")';
let platform;
let browser;
let page;
let experiment;

/** RFC 4180 CSV (quotes, doubled quotes, \r\n) as rows of cells. */
function parseCsv(text) {
  const rows = [];
  let row = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') (cell += '"'), i++;
      else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') row.push(cell), (cell = '');
    else if (c === '\r' && text[i + 1] === '\n') row.push(cell), rows.push(row), (row = []), (cell = ''), i++;
    else cell += c;
  }
  if (cell || row.length) row.push(cell), rows.push(row);
  return rows;
}

const records = (rows) => rows.slice(1).map((r) => Object.fromEntries(rows[0].map((h, j) => [h, r[j]])));

async function download(click) {
  const [file] = await Promise.all([page.waitForEvent('download'), click()]);
  return { name: file.suggestedFilename(), bytes: await downloadedBytes(file) };
}

describe('CSV export', { timeout: 420_000 }, () => {
  before(async () => {
    platform = await startPlatform();
    browser = await launchBrowser();
    page = await openPage(browser);
    experiment = await platform.api('/experiments', {
      method: 'POST',
      body: { name: 'e2e export', kind: 'diagnostic', spec: { train: { steps: 20 } }, sweep: { grid: { 'train.lr': [0.1, 0.01] } } },
    });
    for (let i = 0; ; i++) {
      const detail = await platform.api(`/experiments/${experiment.id}`);
      if (detail.runs.every((r) => r.status === 'succeeded')) break;
      assert.ok(!detail.runs.some((r) => ['failed', 'cancelled'].includes(r.status)), platform.log().slice(-3000));
      assert.ok(i < RUN_TIMEOUT / 500, 'runs not finished in time');
      await new Promise((r) => setTimeout(r, 500));
    }
    const first = experiment.runs.find((r) => r.index === 0);
    await platform.api(`/runs/${first.id}`, { method: 'PATCH', body: { name: HOSTILE_NAME } });
  });

  after(async () => {
    await browser?.close();
    await platform?.stop();
  });

  it('downloads the runs table as CSV, formula-safe, with the status filter', async () => {
    await signIn(page, platform.url, platform.admin);
    await page.goto(`${platform.url}/experiments/${experiment.id}`);
    await page.waitForFunction(() => document.querySelectorAll('[role="row"][data-status="succeeded"]').length === 2);

    await page.getByTestId('runs-export').click();
    assert.equal(await page.getByTestId('runs-export-scope').innerText(), 'all runs');
    await screenshot(page, 'export-01-runs-menu');
    const all = await download(() => page.getByTestId('runs-export-csv').click());
    assert.equal(all.name, `experiment-${experiment.id}-e2e_export-runs.csv`);
    const rows = parseCsv(all.bytes.toString('utf8'));
    assert.deepEqual(rows[0].slice(0, 10), ['run_id', 'number', 'name', 'status', 'attempt', 'released', 'created_at', 'started_at', 'finished_at', 'duration_s']);
    assert.ok(rows[0].includes('params.train.lr') && rows[0].includes('metrics.loss'), rows[0].join(','));
    const table = records(rows);
    const detail = await platform.api(`/experiments/${experiment.id}`);
    const runs = [...detail.runs].sort((a, b) => a.index - b.index);
    assert.deepEqual(table.map((r) => r.number), ['1', '2']);
    assert.deepEqual(table.map((r) => Number(r.run_id)), runs.map((r) => r.id));
    // the name is the text the member typed, behind a ' a spreadsheet does not run
    assert.equal(table[0].name, `'${HOSTILE_NAME}`);
    assert.equal(table[1].name, '');
    assert.deepEqual(table.map((r) => r.status), ['succeeded', 'succeeded']);
    assert.deepEqual(table.map((r) => Number(r['params.train.lr'])), [0.1, 0.01]);
    assert.deepEqual(table.map((r) => Number(r['metrics.loss'])), runs.map((r) => r.summary.loss));

    // the status chips are the file's filter: no run failed, so the file holds the header alone
    await page.keyboard.press('Escape');
    await page.locator('.mantine-Chip-label', { hasText: /^failed/ }).click();
    await page.getByTestId('runs-export').click();
    assert.equal(await page.getByTestId('runs-export-scope').innerText(), 'runs with status failed');
    const failed = await download(() => page.getByTestId('runs-export-csv').click());
    assert.deepEqual(parseCsv(failed.bytes.toString('utf8')).length, 1);
    await page.keyboard.press('Escape');
    await page.locator('.mantine-Chip-label', { hasText: /^failed/ }).click();
  });

  it('downloads what a chart draws as CSV and as Parquet', async () => {
    const chart = page.getByTestId('overlay-chart');
    await chart.waitFor();
    const label = await chart.getAttribute('aria-label'); // "<metric> of <n> runs"
    const key = label.replace(/ of \d+ runs$/, '');
    const host = chart.locator('xpath=..');
    await host.getByTestId('chart-download').click();
    await screenshot(page, 'export-02-chart-menu');
    const csv = await download(() => page.getByTestId('chart-download-csv').click());
    assert.match(csv.name, /\.csv$/);
    const rows = parseCsv(csv.bytes.toString('utf8'));
    assert.deepEqual(rows[0], ['series', 'step', key]);
    // the points drawn are the API's buckets of each run: [step, last]
    const want = [];
    for (const run of experiment.runs) {
      const m = await platform.api(`/runs/${run.id}/metrics?keys=${encodeURIComponent(key)}`);
      for (const b of m.series[key].buckets) if (b.last !== null) want.push(`${b.step_end},${b.last}`);
    }
    const got = records(rows).map((r) => `${Number(r.step)},${Number(r[key])}`);
    assert.deepEqual(got.sort(), want.sort());
    assert.equal(new Set(records(rows).map((r) => r.series)).size, 2);

    await host.getByTestId('chart-download').click();
    const parquet = await download(() => page.getByTestId('chart-download-parquet').click());
    assert.match(parquet.name, /\.parquet$/);
    assert.equal(parquet.bytes.subarray(0, 4).toString(), 'PAR1');
    assert.equal(parquet.bytes.subarray(-4).toString(), 'PAR1');
  });
});
