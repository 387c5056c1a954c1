// External tracking, in Debian's chromium against a real `reasonlab up` (no worker): a Python script of the
// user's own, in a git work tree with an uncommitted change, logs a loss curve and params through the SDK
// (reasonlab_sdk.init, run with the project's venv and sdk/ on PYTHONPATH) with its system metrics sampled.
// The dashboard shows it as an external run: the badge on its page (and in the experiment's and project's
// runs tables), the loss chart and the system section, the tabs of a script's run (no Results, a
// Provenance tab), and on Provenance the command line, the commit with its "dirty" mark and the diff,
// which unfolds without widening the page. A NaN and an infinity the script logs are marked on their
// chart, not dropped. Then a tiny Transformers Trainer (a model from a config, no hub: offline) with
// report_to="mlflow", MLflow's client pointed at the platform's MLflow routes with an API token: its loss
// curve is on its run page with the points MLflow's client logged. A long curve's chart zooms (a dragged
// window, the wheel, a double click, "Show all") and shows a tooltip, on a run page that loads no ECharts.
// Screenshots in
// test-output/e2e/tracking-*.png (and, with SHOTS_DOCS=1, docs/img/tracking-external-run.png and
// tracking-provenance.png for docs/tracking.md).
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { launchBrowser, openPage, ROOT, screenshot, SHOTS, signIn, startPlatform } from './harness.mjs';

const PYTHON = process.env.REASONLAB_PYTHON ?? join(ROOT, '.venv/bin/python');
const STEPS = 60;
// a line far wider than the page, in the uncommitted diff: unfolded, it must wrap, not widen the page
const WIDE = `# ${'a_very_long_identifier_'.repeat(60)}`;

const SCRIPT = `
import math, sys, time
import reasonlab_sdk as rl

with rl.init(project="default", experiment="e2e tracking", name="mlp baseline",
             config={"lr": 0.1, "model": {"width": 64}, "seed": 1}, tags=["sdk"]) as run:
    for step in range(${STEPS}):
        run.log({"loss": 2.0 * math.exp(-step / 15) + 0.05 * math.sin(step), "eval": {"acc": 1 - math.exp(-step / 20)}})
        # a diverging gradient norm: NaN and inf among its values, stored and shown as such
        run.log({"grad_norm": math.nan if step == 20 else math.inf if step == 40 else 1.0 + step / 60}, step=step)
    run.log_params({"n_params": 12345})
    run.summary["best_acc"] = 0.95
    time.sleep(1.5)  # a few system samples (REASONLAB_SYSTEM_METRICS_INTERVAL below)
print("RUN", run.id)
`;

// Transformers' Trainer reporting to MLflow (tests/backend/test_mlflow_compat.py runs the same in process)
const TRAINER_STEPS = 6;
const TRAINER = `
import sys

import mlflow
import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments


class Tokens(torch.utils.data.Dataset):
    def __len__(self):
        return 24

    def __getitem__(self, i):
        ids = torch.randint(0, 64, (16,), generator=torch.Generator().manual_seed(i))
        return {"input_ids": ids, "labels": ids}


torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_positions=16, n_embd=32, n_layer=2, n_head=2))
args = TrainingArguments(
    output_dir=sys.argv[1], max_steps=${TRAINER_STEPS}, per_device_train_batch_size=4, logging_steps=2,
    report_to="mlflow", run_name="tiny-gpt2", save_strategy="no", use_cpu=True, disable_tqdm=True,
)
Trainer(model=model, args=args, train_dataset=Tokens()).train()
print("RUN", mlflow.last_active_run().info.run_id)
`;

/** The chart's x window (`data-window`, "lo-hi") within 1 of `shown` once the run grew (polled for up to
 *  5 s: the refetch that brings the new points may take a moment), and still there a second later. */
async function windowStays(chart, shown) {
  const near = (a) => a.split('-').every((x, i) => Math.abs(Number(x) - Number(shown.split('-')[i])) <= 1);
  let now = await chart.getAttribute('data-window');
  for (let waited = 0; !near(now) && waited < 5_000; waited += 100) {
    await new Promise((r) => setTimeout(r, 100));
    now = await chart.getAttribute('data-window');
  }
  assert.ok(near(now), `${shown} -> ${now}`);
  await new Promise((r) => setTimeout(r, 1_000));
  now = await chart.getAttribute('data-window');
  assert.ok(near(now), `${shown} -> ${now}, a second later`);
}

let platform;
let browser;
let page;
let work;
const state = {};

const git = (...args) => execFileSync('git', args, { cwd: work, encoding: 'utf8' }).trim();

describe('an external run in the dashboard', { timeout: 600_000 }, () => {
  before(async () => {
    platform = await startPlatform({ workers: 0 });
    work = mkdtempSync(join(tmpdir(), 'reasonlab-script-'));
    writeFileSync(join(work, 'train.py'), SCRIPT);
    git('init', '-q');
    git('-c', 'user.name=e2e', '-c', 'user.email=e2e@localhost', 'add', 'train.py');
    git('-c', 'user.name=e2e', '-c', 'user.email=e2e@localhost', 'commit', '-q', '-m', 'a training script');
    state.commit = git('rev-parse', 'HEAD');
    writeFileSync(join(work, 'train.py'), `${SCRIPT}\n${WIDE}\n`); // uncommitted: the work tree is dirty
    // asynchronously: the platform's output pipes are read by this process meanwhile
    const { stdout: out } = await promisify(execFile)(PYTHON, ['train.py', '--lr', '0.1'], {
      cwd: work,
      encoding: 'utf8',
      timeout: 120_000,
      env: {
        ...process.env,
        PYTHONPATH: join(ROOT, 'sdk'),
        REASONLAB_API_URL: platform.url,
        REASONLAB_TOKEN: platform.admin.token,
        REASONLAB_DIR: join(work, 'runs'),
        REASONLAB_SYSTEM_METRICS_INTERVAL: '0.4',
      },
    });
    state.runId = Number(/RUN (\d+)/.exec(out)?.[1]);
    assert.ok(state.runId > 0, out);
    const run = await platform.api(`/runs/${state.runId}`).catch((e) => assert.fail(`${e.message}\n${platform.log().slice(-4000)}`));
    assert.equal(run.kind, 'external');
    assert.equal(run.status, 'succeeded');
    state.experimentId = run.experiment_id;
    browser = await launchBrowser();
    page = await openPage(browser);
    await signIn(page, platform.url, platform.admin);
  });

  after(async () => {
    await browser?.close();
    await platform?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('shows the external badge, the loss chart, the system metrics and the tabs of a script', async () => {
    await page.goto(`${platform.url}/runs/${state.runId}`);
    await page.getByTestId('run-title').filter({ hasText: 'mlp baseline' }).waitFor();
    const badge = page.getByTestId('external-badge');
    await badge.waitFor();
    assert.equal((await badge.textContent()).trim(), 'external');
    const chart = page.getByTestId('metric-chart-loss');
    await chart.waitFor();
    await chart.locator('canvas').first().waitFor();
    assert.equal(Number(await chart.getAttribute('data-points')), STEPS);
    // NaN at step 20 and inf at step 40: counted on the chart (a labelled mark each), not dropped
    const odd = page.getByTestId('metric-chart-grad_norm');
    await odd.locator('canvas').first().waitFor();
    assert.equal(Number(await odd.getAttribute('data-points')), STEPS);
    assert.equal(Number(await odd.getAttribute('data-nonfinite')), 2);
    const { series } = await platform.api(`/runs/${state.runId}/metrics?keys=grad_norm&max_points=1000`);
    const marked = series.grad_norm.buckets.filter((b) => b.last_nonfinite).map((b) => [b.step_end, b.last_nonfinite]);
    assert.deepEqual(marked, [[20, 'NaN'], [40, 'Infinity']]);
    await page.getByTestId('metric-section-system').waitFor();
    await page.getByTestId('metric-chart-system/process_memory_mb').waitFor();
    const tabs = (await page.getByRole('tab').allTextContents()).map((t) => t.replace(/\(\d+\)/, '').trim()); // "Attempts (1)"
    assert.deepEqual(tabs, ['Metrics', 'Config & params', 'Logs', 'Attempts', 'Artifacts', 'Provenance', 'Comments']);
    await screenshot(page, 'tracking-external-run');

    await page.getByRole('tab', { name: 'Config & params' }).click();
    await page.getByTestId('logged-params').filter({ hasText: '12345' }).waitFor();
    await page.getByText('Config, as the script passed it to init').waitFor();
  });

  it("shows the provenance: the command line, the dirty commit and the diff, folded, within the page's width", async () => {
    await page.getByRole('tab', { name: 'Provenance' }).click();
    const command = page.getByTestId('provenance-command');
    await command.waitFor();
    assert.match(await command.textContent(), /train\.py --lr 0\.1$/);
    const commit = page.getByTestId('provenance-commit');
    assert.equal(await commit.getAttribute('data-commit'), state.commit);
    assert.equal((await commit.textContent()).trim(), state.commit.slice(0, 12));
    await page.getByTestId('provenance-dirty').waitFor();
    assert.equal(await page.getByTestId('provenance-diff').count(), 0, 'the diff starts folded');
    assert.equal((await page.getByTestId('provenance-diff-summary').textContent()).trim(), '1 file, +2 −0');
    await page.getByTestId('provenance-diff-toggle').click();
    const diff = page.getByTestId('provenance-diff');
    await diff.waitFor();
    assert.ok((await diff.textContent()).includes(WIDE), 'the uncommitted line is in the diff');
    const widths = await page.evaluate(() => ({ page: document.documentElement.scrollWidth, window: window.innerWidth }));
    assert.ok(widths.page <= widths.window, `the page widened to ${widths.page}px in a ${widths.window}px window`);
    const box = await diff.boundingBox();
    assert.ok(box && box.width < widths.window, `the diff is ${box?.width}px wide`);
    await page.getByTestId('provenance-packages-toggle').click();
    await page.getByTestId('provenance-packages-search').fill('httpx');
    assert.match(await page.getByTestId('provenance-packages').textContent(), /^httpx==/m);
    await page.evaluate(() => window.scrollTo(0, 0)); // the header sticks: scrolled, it would cover the title
    await screenshot(page, 'tracking-provenance');
    if (process.env.SHOTS_DOCS) {
      mkdirSync(join(ROOT, 'docs/img'), { recursive: true });
      copyFileSync(join(SHOTS, 'tracking-external-run.png'), join(ROOT, 'docs/img/tracking-external-run.png'));
      copyFileSync(join(SHOTS, 'tracking-provenance.png'), join(ROOT, 'docs/img/tracking-provenance.png'));
    }
  });

  it("badges the run in its experiment's runs table and in the project's runs", async () => {
    await page.goto(`${platform.url}/experiments/${state.experimentId}`);
    await page.getByTestId('experiment-name').filter({ hasText: 'e2e tracking' }).waitFor();
    await page.locator(`[role="row"][data-run-id="${state.runId}"] [data-testid="external-badge"]`).waitFor();
    await page.getByRole('tab', { name: 'Spec' }).click();
    await page.getByTestId('external-spec-note').waitFor();
    await page.goto(`${platform.url}/runs`);
    await page.locator(`[data-testid="project-runs"] [data-run-id="${state.runId}"] [data-testid="external-badge"]`).waitFor();
  });

  it('zooms a long curve by a dragged window, the wheel and a double click, with a tooltip, and loads no ECharts', async () => {
    // 20,000 points of a run on this worker-less platform: 1,000 buckets drawn, finer ones asked for a zoom
    const exp = await platform.api('/experiments', { method: 'POST', body: { name: 'long curve', kind: 'diagnostic', spec: {} } });
    const id = exp.runs[0].id;
    for (let start = 0; start < 20_000; start += 5_000) {
      const points = Array.from({ length: 5_000 }, (_, i) => ({ key: 'loss', step: start + i, value: 2 * Math.exp(-(start + i) / 4_000) + 0.01 * Math.sin(start + i) }));
      await platform.api(`/runs/${id}/metrics`, { method: 'POST', body: { points } });
    }
    const scripts = [];
    const onRequest = (r) => r.resourceType() === 'script' && scripts.push(new URL(r.url()).pathname);
    page.on('request', onRequest);
    await page.goto(`${platform.url}/runs/${id}`);
    const chart = page.locator('[data-testid="metric-chart-loss"][data-buckets]');
    await chart.locator('canvas').first().waitFor();
    assert.equal(Number(await chart.getAttribute('data-points')), 20_000);
    assert.equal(await chart.getAttribute('data-range'), '');
    page.off('request', onRequest);
    // a run's metric charts are uPlot's: the run page loads no ECharts (0.54 MB before its first chart)
    assert.ok(scripts.some((p) => /\/uplot-[\w-]+\.js$/.test(p)), scripts.join(' '));
    assert.deepEqual(scripts.filter((p) => /echarts/i.test(p)), []);

    const over = await chart.locator('.u-over').boundingBox();
    const at = (fx) => [over.x + over.width * fx, over.y + over.height / 2];
    // the tooltip: the bucket under the pointer, its step and value
    await page.mouse.move(...at(0.5));
    const tip = chart.getByTestId('chart-tooltip');
    await tip.waitFor();
    assert.match(await tip.textContent(), /^step [\d,]+loss: [\d.]+/);

    // a dragged window over 25-50% of the steps: the chart asks for the finer buckets of those steps
    await page.mouse.move(...at(0.25));
    await page.mouse.down();
    await page.mouse.move(...at(0.5), { steps: 5 });
    await page.mouse.up();
    await page.locator('[data-testid="metric-chart-loss"][data-refined="true"]').waitFor();
    const [lo, hi] = (await chart.getAttribute('data-range')).split('-').map(Number);
    assert.ok(lo > 4_000 && lo < 6_000 && hi > 9_000 && hi < 11_000, `zoomed to steps ${lo}-${hi}`);
    // the run grows to 40,000 steps under the zoom: the chart stays on the steps chosen
    const shown = await chart.getAttribute('data-window');
    for (let start = 20_000; start < 40_000; start += 5_000) {
      const points = Array.from({ length: 5_000 }, (_, i) => ({ key: 'loss', step: start + i, value: 0.1 }));
      await platform.api(`/runs/${id}/metrics`, { method: 'POST', body: { points } });
    }
    await page.locator('[data-testid="metric-chart-loss"][data-points="40000"]').waitFor();
    await windowStays(chart, shown);

    // the wheel out about the pointer widens the window; a double click shows all of the run again
    for (let i = 0; i < 3; i++) await page.mouse.wheel(0, 200);
    await page.waitForFunction(
      (w) => { const [a, b] = (document.querySelector('[data-testid="metric-chart-loss"]')?.getAttribute('data-range') ?? '').split('-').map(Number); return b - a > w; },
      hi - lo,
    );
    await page.mouse.dblclick(...at(0.5));
    await page.locator('[data-testid="metric-chart-loss"][data-range=""]').waitFor();
    // and "Show all" after another drag
    await page.mouse.move(...at(0.6));
    await page.mouse.down();
    await page.mouse.move(...at(0.8), { steps: 5 });
    await page.mouse.up();
    await page.locator('[data-testid="metric-chart-loss"][data-refined="true"]').waitFor();
    await chart.getByRole('button', { name: 'Show all' }).click();
    await page.locator('[data-testid="metric-chart-loss"][data-range=""]').waitFor();
  });

  it('keeps a zoom over wall-clock time on the times chosen while the run grows', async () => {
    // a point a second, its time given: the chart over wall-clock time
    const exp = await platform.api('/experiments', { method: 'POST', body: { name: 'long curve over time', kind: 'diagnostic', spec: {} } });
    const id = exp.runs[0].id;
    const t0 = Date.parse('2026-01-01T00:00:00Z');
    const post = async (from, to) => {
      for (let start = from; start < to; start += 5_000) {
        const points = Array.from({ length: 5_000 }, (_, i) => ({ key: 'loss', step: start + i, value: 1 / (1 + start + i), time: new Date(t0 + (start + i) * 1000).toISOString() }));
        await platform.api(`/runs/${id}/metrics`, { method: 'POST', body: { points } });
      }
    };
    await post(0, 10_000);
    await page.goto(`${platform.url}/runs/${id}?charts=loss:time`);
    const chart = page.locator('[data-testid="metric-chart-loss"][data-buckets]');
    await chart.locator('canvas').first().waitFor();
    const seconds = (w) => w.split('-').map((x) => (Number(x) - t0) / 1000);
    const [first, last] = seconds(await chart.getAttribute('data-window'));
    assert.ok(first >= 0 && first < 20 && last > 9_980 && last < 10_000, `the whole run: ${first}-${last} s`);
    const over = await chart.locator('.u-over').boundingBox();
    const at = (fx) => [over.x + over.width * fx, over.y + over.height / 2];
    await page.mouse.move(...at(0.25));
    await page.mouse.down();
    await page.mouse.move(...at(0.5), { steps: 5 });
    await page.mouse.up();
    await page.locator('[data-testid="metric-chart-loss"][data-refined="true"]').waitFor();
    const shown = await chart.getAttribute('data-window');
    const [lo, hi] = seconds(shown);
    assert.ok(lo > 2_000 && lo < 3_000 && hi > 4_500 && hi < 5_500, `zoomed to ${lo}-${hi} s`);
    // twice the seconds: the window stays on the times chosen (a zoom in percent of the drawn times would
    // move to ~5,000-10,000 s)
    await post(10_000, 20_000);
    await page.locator('[data-testid="metric-chart-loss"][data-points="20000"]').waitFor();
    await windowStays(chart, shown);
  });

  it('shows the loss curve of a Transformers Trainer that reported to MLflow', async () => {
    const mlflowUri = `${platform.url}/api/v1/mlflow/default`;
    writeFileSync(join(work, 'trainer.py'), TRAINER);
    const { stdout: out } = await promisify(execFile)(PYTHON, ['trainer.py', join(work, 'trainer-out')], {
      cwd: work,
      encoding: 'utf8',
      timeout: 300_000,
      env: {
        ...process.env,
        MLFLOW_TRACKING_URI: mlflowUri,
        MLFLOW_TRACKING_TOKEN: platform.admin.token,
        MLFLOW_EXPERIMENT_NAME: 'e2e trainer',
        HF_HUB_OFFLINE: '1',
        TRANSFORMERS_OFFLINE: '1',
        OMP_NUM_THREADS: '1',
      },
    }).catch((e) => assert.fail(`the trainer failed: ${e.message}\n${e.stderr ?? ''}`.slice(-6000)));
    const runId = Number(/RUN (\d+)/.exec(out)?.[1]);
    assert.ok(runId > 0, out);
    // what MLflow's client logged, read back through MLflow's API
    const history = await fetch(`${mlflowUri}/api/2.0/mlflow/metrics/get-history?run_id=${runId}&metric_key=loss`, {
      headers: { Authorization: `Bearer ${platform.admin.token}` },
    }).then((r) => r.json());
    const logged = history.metrics.map((m) => [Number(m.step), m.value]);
    assert.deepEqual(logged.map(([s]) => s), [2, 4, 6]); // logging_steps=2 of max_steps=6
    assert.ok(logged.every(([, v]) => typeof v === 'number' && v > 0), JSON.stringify(logged));

    await page.goto(`${platform.url}/runs/${runId}`);
    await page.getByTestId('run-title').filter({ hasText: 'tiny-gpt2' }).waitFor();
    await page.getByTestId('external-badge').waitFor();
    const chart = page.getByTestId('metric-chart-loss');
    await chart.locator('canvas').first().waitFor();
    assert.equal(Number(await chart.getAttribute('data-points')), TRAINER_STEPS / 2);
    assert.equal(await chart.getAttribute('data-buckets'), String(TRAINER_STEPS / 2));
    // the chart's series is MLflow's points: the same steps and values
    const { series } = await platform.api(`/runs/${runId}/metrics?keys=loss&max_points=1000`);
    assert.deepEqual(series.loss.buckets.map((b) => [b.step_end, b.last]), logged);
    await chart.scrollIntoViewIfNeeded();
    await screenshot(page, 'tracking-trainer-mlflow');
  });
});
