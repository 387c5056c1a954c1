// The topk_eval CPU demo through the platform, from the browser (docs/experiments/topk_eval.md): against a
// platform you started (`reasonlab up --home /tmp/demo11-home --port PORT`), log in, submit from the New
// experiment page a small smoe_sraven run trained at k = 2 (top-2 of 8 experts, M = 1, the width of
// topk_eval's in-run SMoEs, 1,500 steps, typed as JSON), wait for it; then submit from the same page a
// topk_eval experiment naming that run (the kind's example "smoe-run" with its run id put in: k' = 1..8),
// wait, and screenshot the Top-k matrix tab (one row: train k = 2) and a point on the run's Results tab
// into docs/img/topk-eval-demo-*.png; the runs and points go to test-output/topk-eval-demo.json. With
// `--in-run` it also submits `{}` (three SMoEs trained in-run at k = 1, 2, 8) and screenshots its matrix;
// `--in-run-only` does only that (the JSON goes to test-output/topk-eval-demo-in-run.json).
// Not a test (node --test skips this file name).
//
//   node e2e/topk_eval_demo.mjs http://127.0.0.1:PORT admin PASSWORD [--in-run | --in-run-only]
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { demoOutput, launchBrowser, openExample, openRunResults, pageApi, signedInPage, submitExperiment, waitUntilFinished } from './harness.mjs';

const [url, username, password, ...flags] = process.argv.slice(2);
if (!url || !username || !password) {
  console.error('usage: node e2e/topk_eval_demo.mjs URL USERNAME PASSWORD [--in-run | --in-run-only]');
  process.exit(2);
}
const inRunOnly = flags.includes('--in-run-only');
const inRun = inRunOnly || flags.includes('--in-run');
const { IMG, OUT, log } = demoOutput();

// topk_eval's in-run SMoE (worker/specs/smoe/topk_eval.py SmoeDemo) at k = 2 (M = 1, half the reference width),
// trained 1,500 steps instead of 600 (600 leave it at 0.50 ID-test accuracy) and evaluated on 1,024
// problems: the spec of docs/experiments/topk_eval.md's CLI run, so the two can be compared
const SMOE_K2 = {
  seed: 0,
  data: { num_features: 1 },
  model: { d_model: 64, num_layers: 2, num_heads: 8, qk_dim: 32, v_dim: 32, mlp_hidden: 128 },
  moe: { num_experts: 8, top_k: 2, expert_hidden: 64 },
  train: { batch_size: 64, steps: 1500, lr: 0.003, warmup_steps: 100, eval_interval: 500, eval_size: 1024, checkpoint_every: 500, log_every: 50 },
};

async function submit(page, kind, name, { example, json, edit } = {}) {
  await openExample(page, url, { kind, name, example });
  if (edit) await edit();
  if (json) {
    await page.getByLabel('spec editor').getByText('JSON').click();
    await page.getByLabel('spec as json').fill(JSON.stringify(json, null, 2));
  }
  const id = await submitExperiment(page);
  log(`submitted ${kind} experiment ${id}`);
  return id;
}

const minutes = (r) => (r.started_at && r.finished_at ? (Date.parse(r.finished_at) - Date.parse(r.started_at)) / 60_000 : null);

const browser = await launchBrowser();
try {
  const page = await signedInPage(browser, url, { username, password }, { viewport: { width: 1440, height: 1000 } });
  const api = await pageApi(page, url);
  const out = {};

  // 1. the SMoE trained at k = 2
  if (!inRunOnly) {
    const smoeId = await submit(page, 'smoe_sraven', 'topk_eval demo: SMoE trained at k=2', { json: SMOE_K2 });
    await waitUntilFinished(page);
    const smoe = await api(`/experiments/${smoeId}`);
    const smoeRun = smoe.runs[0];
    const cell = (await api(`/experiments/${smoeId}/results?kind=sraven_cell`))[0]?.payload;
    out.smoe = { experiment: smoeId, run: smoeRun.id, status: smoeRun.status, minutes: minutes(smoeRun), test_acc: cell?.test_acc, ood_acc: cell?.ood_acc };
    log(`smoe_sraven run ${smoeRun.id} ${smoeRun.status}`);
    if (smoeRun.status !== 'succeeded') throw new Error(`smoe_sraven run ${smoeRun.id} ${smoeRun.status}: ${smoeRun.error}`);

    // 2. that run at k' = 1..8: the kind's example "smoe-run" with the run id put in
    const topkId = await submit(page, 'topk_eval', `topk_eval demo: run ${smoeRun.id} at k'=1..8`, {
      example: 'smoe-run',
      // target, a union by type: the example picks smoe_sraven in the form's select, whose run_id field takes the run
      edit: async () => {
        const target = page.getByRole('group', { name: 'target' });
        if ((await target.getByLabel('target type').inputValue()) !== '"smoe_sraven"') throw new Error('the example should pick target type smoe_sraven');
        await target.getByLabel('run_id', { exact: true }).fill(String(smoeRun.id));
      },
    });
    await waitUntilFinished(page);
    await page.screenshot({ path: join(IMG, 'topk-eval-demo-runs.png'), fullPage: true });
    await page.getByRole('tab', { name: 'Top-k matrix' }).click();
    await page.getByTestId('topk-matrix').locator('canvas').first().waitFor();
    await page.getByTestId('topk-lines').locator('canvas').first().waitFor();
    await page.waitForTimeout(1500);
    await page.screenshot({ path: join(IMG, 'topk-eval-demo-matrix.png'), fullPage: true });
    const topk = await api(`/experiments/${topkId}`);
    const points = (await api(`/experiments/${topkId}/results?kind=topk_eval_point`)).map((r) => r.payload);
    out.topk = { experiment: topkId, runs: topk.runs.map((r) => ({ id: r.id, status: r.status, minutes: minutes(r) })), points };
    await openRunResults(page, url, topk.runs[0].id);
    await page.getByText('renormalises').first().waitFor();
    await page.waitForTimeout(1000);
    await page.screenshot({ path: join(IMG, 'topk-eval-demo-run-results.png') });
  }

  // 3. optionally `{}`: three SMoEs trained in-run at k = 1, 2, 8, each at k' = 1..8
  if (inRun) {
    const demoId = await submit(page, 'topk_eval', 'topk_eval demo: {} (k = 1, 2, 8 trained in-run)');
    await waitUntilFinished(page);
    await page.getByRole('tab', { name: 'Top-k matrix' }).click();
    await page.getByTestId('topk-matrix').locator('canvas').first().waitFor();
    await page.waitForTimeout(1500);
    await page.screenshot({ path: join(IMG, 'topk-eval-demo-in-run-matrix.png'), fullPage: true });
    const demo = await api(`/experiments/${demoId}`);
    const demoPoints = (await api(`/experiments/${demoId}/results?kind=topk_eval_point`)).map((r) => r.payload);
    out.inRun = { experiment: demoId, runs: demo.runs.map((r) => ({ id: r.id, status: r.status, minutes: minutes(r) })), points: demoPoints };
  }
  log('screenshots in docs/img/topk-eval-demo-*.png');

  writeFileSync(join(OUT, inRunOnly ? 'topk-eval-demo-in-run.json' : 'topk-eval-demo.json'), JSON.stringify(out, null, 2));
  const brief = (ps) => ps.map((p) => ({ train_k: p.train_k, eval_k: p.eval_k, value: p.value, ood: p.ood_value })).sort((a, b) => a.train_k - b.train_k || a.eval_k - b.eval_k);
  console.log(JSON.stringify({ smoe: out.smoe, topk: out.topk && { ...out.topk, points: brief(out.topk.points) }, inRun: out.inRun && { ...out.inRun, points: brief(out.inRun.points) } }, null, 2));
} finally {
  await browser.close();
}
