// The README's screenshots (docs/img/readme-*.png), from a real platform and real runs: starts
// `reasonlab up` on a temporary home, submits a small SMoE-on-SRAVEN grid (top-k x M, tiny models, CPU),
// waits for it, and screenshots the experiment's SRAVEN grid and one run's page (metric sections with
// the worker's system metrics, a chart smoothed over relative time). Not a test (node --test skips this
// file name); takes a few minutes on a 2-core machine.
//
//   node e2e/readme_screenshots.mjs
import { join } from 'node:path';
import { demoOutput, launchBrowser, signedInPage, startPlatform } from './harness.mjs';

const { IMG, log } = demoOutput();

// the reference architecture shrunk to run in seconds per cell on a CPU (docs/experiments/smoe_sraven.md)
const SPEC = {
  seed: 0,
  data: { ood_fraction: 0.25 },
  model: { d_model: 32, num_layers: 2, num_heads: 4, qk_dim: 16, v_dim: 16, mlp_hidden: 64 },
  moe: { num_experts: 4, expert_hidden: 32 },
  train: { batch_size: 64, steps: 100, lr: 0.003, warmup_steps: 10, eval_interval: 25, eval_size: 128, log_every: 2, checkpoint_every: 50 },
};
const GRID = { 'moe.top_k': [1, 2, 4], 'data.num_features': [1, 2] };

// one worker: on a small shared machine parallel trainings only fight over the cores
// a heartbeat (and system metrics sample) a second: the tiny runs end in seconds, before the default's first
const platform = await startPlatform({ timeoutMs: 180_000, env: { REASONLAB_HEARTBEAT_INTERVAL: '1' } });
let browser;
try {
  const exp = await platform.api('/experiments', {
    method: 'POST',
    body: { name: 'SMoE on SRAVEN: top-k x M (tiny, CPU)', kind: 'smoe_sraven', spec: SPEC, sweep: { grid: GRID } },
  });
  log(`experiment ${exp.id}: ${exp.runs.length} runs`);
  for (;;) {
    const detail = await platform.api(`/experiments/${exp.id}`);
    const done = detail.runs.filter((r) => ['succeeded', 'failed', 'cancelled'].includes(r.status));
    if (done.length === detail.runs.length) {
      const failed = detail.runs.filter((r) => r.status !== 'succeeded');
      if (failed.length) throw new Error(`runs ${failed.map((r) => r.id)} did not succeed:\n${platform.log().slice(-4000)}`);
      break;
    }
    await new Promise((r) => setTimeout(r, 5000));
  }
  log('every run finished');

  browser = await launchBrowser();
  const page = await signedInPage(browser, platform.url, platform.admin, { viewport: { width: 1440, height: 1000 } });

  await page.goto(`${platform.url}/experiments/${exp.id}`);
  await page.getByRole('tab', { name: 'SRAVEN grid' }).click();
  await page.getByTestId('sraven-heatmap').first().waitFor();
  await page.waitForTimeout(1500);
  await page.screenshot({ path: join(IMG, 'readme-sraven-grid.png'), fullPage: true });
  log('readme-sraven-grid.png');

  // the run at M = 2, k = 2: its loss smoothed over relative time, the MoE section, the system section
  const run = exp.runs.find((r) => r.params['moe.top_k'] === 2 && r.params['data.num_features'] === 2);
  await page.goto(`${platform.url}/runs/${run.id}`);
  await page.getByTestId('metric-chart-loss').waitFor();
  await page.getByTestId('metric-section-system').waitFor();
  await page.getByTestId('chart-options-loss').click();
  const options = page.getByTestId('chart-options-panel-loss');
  await options.getByRole('slider', { name: 'smoothing' }).focus();
  for (let i = 0; i < 80; i++) await page.keyboard.press('ArrowRight');
  await options.getByText('Relative', { exact: true }).click();
  // the test accuracy sections collapsed: the screenshot shows general, moe and system
  for (const name of ['ood_acc', 'test_acc']) {
    const toggle = page.getByTestId(`metric-section-toggle-${name}`);
    if (await toggle.count()) await toggle.click();
  }
  await page.waitForTimeout(2000);
  // the top of the page: the run's header, the search box and the general section with the loss's options
  await page.screenshot({ path: join(IMG, 'readme-run-page.png'), fullPage: true, clip: { x: 0, y: 0, width: 1440, height: 1650 } });
  log('readme-run-page.png');
} finally {
  await browser?.close();
  await platform.stop();
}
