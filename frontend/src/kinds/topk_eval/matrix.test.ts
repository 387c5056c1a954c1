import { describe, expect, it } from 'vitest';
import type { ExperimentResult } from '../../api/types';
import { matrixOption } from './TopkMatrixChart';
import { linesOption } from './TopkLinesChart';
import { matrixRange, scoreLines, topkMatrices, topkPoints, type PointResult, type TopkPoint } from './matrix';

const point = (run_id: number, train_k: number | null, eval_k: number, value: number, extra: Partial<TopkPoint> = {}): PointResult => ({
  run_id,
  payload: {
    kind: 'topk_eval_point', target: 'smoe_sraven', model: `run ${run_id}`, family: 'smoe', source_run_id: null,
    train_k, eval_k, num_experts: 8, routers: 2, renormalises: true, score: 'test_acc', value,
    higher_is_better: true, ood_value: null, per_feature: null, M: 2, extra: {}, ...extra,
  },
});

describe('topkPoints', () => {
  it('keeps the topk_eval_point records and leaves other result kinds out', () => {
    const record = (run_id: number, payload: ExperimentResult['payload']): ExperimentResult => ({ id: run_id, run_id, kind: payload.kind, created_at: '2026-01-01T00:00:00Z', payload });
    const results = [record(1, point(1, 2, 1, 0.5).payload), record(2, { kind: 'diagnostic', initial_loss: 1, final_loss: 0.1, parameters: 10, steps: 5 })];
    expect(topkPoints(results)).toEqual([point(1, 2, 1, 0.5)]);
  });
});

describe('topkMatrices', () => {
  const results = [
    point(1, 2, 1, 0.4), point(1, 2, 2, 0.7), point(1, 2, 4, 0.6),
    point(2, 1, 1, 0.5), point(2, 1, 2, 0.3),
    point(3, 2, 2, 0.9), // a second seed of (train 2, k' 2): averaged
  ];

  it('lays out rows train k, columns k, marks the diagonal and the best k of each row', () => {
    const [panel] = topkMatrices(results);
    expect(panel!.rows).toEqual([1, 2]);
    expect(panel!.cols).toEqual([1, 2, 4]);
    const at = (k: number, kp: number) => panel!.cells.find((c) => panel!.rows[c.y] === k && panel!.cols[c.x] === kp);
    expect(at(2, 2)).toMatchObject({ value: 0.8, n: 2, runId: 1 });
    expect(at(1, 4)).toBeUndefined();
    expect([...panel!.diagonal].sort()).toEqual(['0,0', '1,1']); // (k'=1, train 1) and (k'=2, train 2)
    expect(panel!.bestCol).toEqual([0, 1]);
    expect(panel!.title).toBe('smoe · test_acc · M=2 · renormalised');
  });

  it('takes the lowest value as best for a lower-is-better score and keeps families apart', () => {
    const ppl = (run: number, k: number, kp: number, v: number, family: string, renormalises: boolean) =>
      point(run, k, kp, v, { target: 'hf', family, score: 'perplexity', higher_is_better: false, M: null, renormalises });
    const panels = topkMatrices([ppl(1, 2, 1, 30, 'mixtral', true), ppl(1, 2, 4, 20, 'mixtral', true), ppl(2, 2, 1, 50, 'olmoe', false)]);
    expect(panels.map((p) => p.title)).toEqual(['mixtral · perplexity · renormalised', 'olmoe · perplexity · not renormalised']);
    expect(panels[0]!.bestCol).toEqual([1]);
    expect(panels[0]!.higherIsBetter).toBe(false);
  });

  it('colours by OOD accuracy on request, leaving points without one out', () => {
    const panels = topkMatrices([point(1, 2, 1, 0.4, { ood_value: 0.2 }), point(1, 2, 2, 0.5)], 'ood_value');
    expect(panels[0]!.cells).toEqual([{ x: 0, y: 0, value: 0.2, runId: 1, n: 1 }]);
    expect(panels[0]!.score).toBe('ood_acc');
  });

  it('puts an unknown train k last', () => {
    const [panel] = topkMatrices([point(1, null, 1, 0.1), point(2, 4, 1, 0.2)]);
    expect(panel!.rows).toEqual([4, null]);
  });
});

describe('scoreLines and the charts', () => {
  const [panel] = topkMatrices([point(1, 2, 2, 0.7), point(1, 2, 1, 0.4), point(2, 8, 8, 0.9)]);

  it('gives one line per train k, by ascending k', () => {
    expect(scoreLines(panel!)).toEqual([
      { name: 'train k=2', trainK: 2, data: [[1, 0.4], [2, 0.7]] },
      { name: 'train k=8', trainK: 8, data: [[8, 0.9]] },
    ]);
    expect(matrixRange(panel!)).toEqual([0.4, 0.9]);
  });

  it('outlines the diagonal cells in the matrix and marks the trained k on each line', () => {
    const series = (matrixOption(panel!) as { series: { data: { value: number[]; itemStyle?: unknown }[] }[] }).series[0]!;
    const outlined = series.data.filter((d) => d.itemStyle !== undefined).map((d) => d.value.slice(0, 2));
    expect(outlined.sort()).toEqual([[1, 0], [2, 1]]);
    const lines = (linesOption(panel!) as { series: { markPoint?: { data: { coord: number[] }[] } }[] }).series;
    expect(lines.map((l) => l.markPoint?.data[0]!.coord)).toEqual([[2, 0.7], [8, 0.9]]);
  });
});
