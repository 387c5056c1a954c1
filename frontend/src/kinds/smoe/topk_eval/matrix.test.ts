import { describe, expect, it } from 'vitest';
import type { ExperimentResult } from '../../../api/types';
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
    expect(panels[0]!.cells).toEqual([{ x: 0, y: 0, value: 0.2, runId: 1, n: 1, ci: null }]);
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
      { name: 'train k=2', trainK: 2, data: [[1, 0.4], [2, 0.7]], ci: [null, null] },
      { name: 'train k=8', trainK: 8, data: [[8, 0.9]], ci: [null] },
    ]);
    expect(matrixRange(panel!)).toEqual([0.4, 0.9]);
  });

  it('outlines the diagonal cells in the matrix and marks the trained k on each line', () => {
    const series = (matrixOption(panel!) as { series: { data: { value: number[]; itemStyle?: unknown }[] }[] }).series[0]!;
    const outlined = series.data.filter((d) => d.itemStyle !== undefined).map((d) => d.value.slice(0, 2));
    expect(outlined.sort()).toEqual([[1, 0], [2, 1]]);
    const lines = (linesOption(panel!) as { series: { id: string; markPoint?: { data: { coord: number[] }[] } }[] }).series.filter((s) =>
      s.id.startsWith('line:'),
    );
    expect(lines.map((l) => l.markPoint?.data[0]!.coord)).toEqual([[2, 0.7], [8, 0.9]]);
  });
});

describe('95% intervals on the cells, the lines and the point view', () => {
  // 205 of 256 right: Wilson [0.7476, 0.8451] (computed by hand in Python, lib/interval.test.ts)
  const sized = (run: number, k: number, kp: number, value: number, n: number | null = 256) =>
    point(run, k, kp, value, { n, ood_value: 0.5, ood_n: n });

  it('gives a one-run cell the Wilson interval over its problems and names it in the caption', () => {
    const [panel] = topkMatrices([sized(1, 2, 2, 205 / 256), sized(1, 2, 4, 0.5)]);
    const cell = panel!.cells.find((c) => c.x === 0)!;
    expect(cell.ci!.method).toBe('wilson');
    expect(cell.ci!.lo).toBeCloseTo(0.747567, 5);
    expect(cell.ci!.hi).toBeCloseTo(0.845102, 5);
    expect(panel!.caption).toBe('[lo, hi]: 95% Wilson score interval over n = 256 problems');
    const ood = topkMatrices([sized(1, 2, 2, 205 / 256)], 'ood_value')[0]!;
    expect(ood.cells[0]!.ci!.lo).toBeCloseTo(0.439206, 5); // 0.5 of 256
  });

  it('gives a cell of several runs the t interval over them, and says so', () => {
    const [panel] = topkMatrices([sized(1, 2, 2, 0.5), sized(2, 2, 2, 0.6), sized(3, 2, 2, 0.7)]);
    expect(panel!.cells[0]!.ci).toMatchObject({ method: 't' });
    expect(panel!.cells[0]!.ci!.lo).toBeCloseTo(0.351586, 5);
    expect(panel!.caption).toMatch(/cells averaged over seeds: 95% Student-t interval/);
  });

  it('shows no interval for old results without n (with a note) nor for perplexity (no caption)', () => {
    const [old] = topkMatrices([sized(1, 2, 2, 0.5, null)]);
    expect(old!.cells[0]!.ci).toBeNull();
    expect(old!.caption).toMatch(/no interval where the result does not record its n/);
    const [ppl] = topkMatrices([point(1, 2, 1, 30, { score: 'perplexity', higher_is_better: false, n: 256 })]);
    expect(ppl!.cells[0]!.ci).toBeNull();
    expect(ppl!.caption).toBeNull();
  });

  it('writes the interval under the value in each matrix cell and in its tooltip', () => {
    const [panel] = topkMatrices([sized(1, 2, 2, 205 / 256), sized(1, 2, 4, 0.5)]);
    const option = matrixOption(panel!) as {
      series: { data: { value: number[] }[]; label: { formatter: (p: unknown) => string } }[];
      tooltip: { formatter: (p: unknown) => string };
    };
    const first = option.series[0]!.data[0]!;
    expect(option.series[0]!.label.formatter({ value: first.value })).toBe('◆ 0.801 ★\n[0.75, 0.85]');
    // as ECharts calls it: params.data is the item ({value, itemStyle}), params.value its numbers
    expect(option.tooltip.formatter({ data: first, value: first.value })).toContain('test_acc=0.801 [0.748, 0.845] (95% Wilson)');
  });

  it('draws each line with a band of its intervals and the interval in the tooltip', () => {
    const [panel] = topkMatrices([sized(1, 2, 2, 205 / 256), sized(1, 2, 4, 0.5)]);
    const option = linesOption(panel!) as {
      series: { id: string; name: string; stack?: string; data: number[][] }[];
      tooltip: { formatter: (p: unknown) => string };
    };
    expect(option.series.map((s) => s.id)).toEqual(['line:0', 'band-lo:0', 'band-w:0']);
    expect(option.series[2]!.stack).toBe(option.series[1]!.stack);
    expect(new Set(option.series.map((s) => s.name))).toEqual(new Set(['train k=2'])); // one legend entry
    expect(option.series[1]!.data[0]![1]).toBeCloseTo(0.747567, 5);
    expect(option.series[2]!.data[0]![1]).toBeCloseTo(0.845102 - 0.747567, 5);
    const text = option.tooltip.formatter([
      { seriesId: 'line:0', seriesName: 'train k=2', data: [2, 205 / 256], dataIndex: 0, marker: '' },
      { seriesId: 'band-lo:0', seriesName: 'train k=2', data: [2, 0.75], dataIndex: 0, marker: '' },
    ]);
    expect(text).toBe("k'=2<br/>train k=2: 0.8008 [0.7476, 0.8451]");
  });
});
