import { describe, expect, it } from 'vitest';
import type { ExperimentResult } from '../../../api/types';
import { panelsRange, sravenCaption, sravenCells, sravenPanels, type CellResult, type SravenCell } from './heatmap';
import { panelOption } from './SravenHeatmap';

type Attention = SravenCell['attention'];
const cell = (run_id: number, attention: Attention, M: number, top_k: number | null, ood_acc: number | null, test_acc = 0.9): CellResult => ({
  run_id,
  payload: { kind: 'sraven_cell', M, top_k, num_experts: top_k === null ? null : 8, attention, test_acc, ood_acc, per_feature_acc: [], steps: 100 },
});

describe('sravenCells', () => {
  it('keeps the sraven_cell records of an experiment and leaves other result kinds out', () => {
    const record = (run_id: number, payload: ExperimentResult['payload']): ExperimentResult => ({ id: run_id, run_id, kind: payload.kind, created_at: '2026-01-01T00:00:00Z', payload });
    const results = [
      record(1, cell(1, 'softmax', 4, 1, 0.5).payload),
      record(2, { kind: 'diagnostic', initial_loss: 1, final_loss: 0.1, parameters: 10, steps: 5 }),
    ];
    expect(sravenCells(results)).toEqual([cell(1, 'softmax', 4, 1, 0.5)]);
  });
});

describe('sravenPanels', () => {
  const results = [
    cell(1, 'softmax', 4, 1, 0.5),
    cell(2, 'softmax', 4, 2, 0.7),
    cell(3, 'softmax', 8, 1, 0.6),
    cell(4, 'softmax', 8, 2, 0.4),
    cell(5, 'hyla', 4, 1, 0.3),
  ];

  it('makes one panel per attention with rows M and columns top-k, ascending', () => {
    const panels = sravenPanels(results, 'ood_acc');
    expect(panels.map((p) => p.attention)).toEqual(['hyla', 'softmax']);
    const softmax = panels[1]!;
    expect(softmax.rows).toEqual([4, 8]);
    expect(softmax.cols).toEqual([1, 2]);
    expect(softmax.cells).toContainEqual({ x: 1, y: 0, value: 0.7, runId: 2, numExperts: 8, n: 1, ci: null });
  });

  it('marks the best k per row', () => {
    const softmax = sravenPanels(results, 'ood_acc')[1]!;
    expect(softmax.bestCol).toEqual([1, 0]); // M=4 best at k=2, M=8 best at k=1
  });

  it('colours by ID accuracy when asked', () => {
    const panels = sravenPanels([cell(1, 'hyla', 4, 1, 0.1, 0.95)], 'test_acc');
    expect(panels[0]!.cells[0]!.value).toBe(0.95);
  });

  it('averages seeds of the same cell and links the first run', () => {
    const panels = sravenPanels([cell(7, 'hyla', 4, 1, 0.2), cell(3, 'hyla', 4, 1, 0.4)], 'ood_acc');
    expect(panels[0]!.cells).toHaveLength(1);
    expect(panels[0]!.cells[0]!.value).toBeCloseTo(0.3);
    expect(panels[0]!.cells[0]!.runId).toBe(3);
  });

  it('leaves a missing cell empty', () => {
    const panels = sravenPanels([cell(1, 'hyla', 4, 1, 0.5), cell(2, 'hyla', 8, 2, 0.6)], 'ood_acc');
    expect(panels).toHaveLength(1);
    expect(panels[0]!.cells).toHaveLength(2);
    expect(panels[0]!.bestCol).toEqual([0, 1]);
  });

  it('puts a dense FFN (top_k null) first and skips cells without OOD accuracy', () => {
    const dense = cell(8, 'hyla', 4, null, 0.1, 0.8);
    const noOod = cell(9, 'hyla', 4, 2, null, 0.8);
    const panel = sravenPanels([cell(1, 'hyla', 4, 1, 0.5), dense, noOod], 'ood_acc')[0]!;
    expect(panel.cols).toEqual([null, 1, 2]);
    expect(panel.cells.map((c) => c.runId).sort()).toEqual([1, 8]);
    expect(sravenPanels([dense, noOod], 'test_acc')[0]!.cells).toHaveLength(2);
  });

  it('shares one colour range across panels', () => {
    expect(panelsRange(sravenPanels(results, 'ood_acc'))).toEqual([0.3, 0.7]);
    expect(panelsRange([])).toEqual([0, 1]);
  });
});

describe('95% intervals on the SRAVEN grid', () => {
  const sized = (run_id: number, top_k: number, ood_acc: number, size: number | null = 256): CellResult => {
    const c = cell(run_id, 'softmax', 2, top_k, ood_acc);
    return { run_id, payload: { ...c.payload, test_size: size, ood_size: size } };
  };

  it('gives one run the Wilson interval over its problems and several runs the t interval', () => {
    const results = [sized(1, 1, 205 / 256), sized(2, 2, 0.5), sized(3, 2, 0.6), sized(4, 2, 0.7)];
    const [panel] = sravenPanels(results, 'ood_acc');
    const one = panel!.cells.find((c) => c.x === 0)!;
    expect(one.ci).toMatchObject({ method: 'wilson' });
    expect(one.ci!.lo).toBeCloseTo(0.747567, 5); // Wilson by hand (lib/interval.test.ts)
    const three = panel!.cells.find((c) => c.x === 1)!;
    expect(three.n).toBe(3);
    expect(three.ci!.lo).toBeCloseTo(0.351586, 5); // mean 0.6 ± t(2)·0.1/sqrt(3)
    expect(sravenCaption(results, [panel!], 'ood_acc')).toBe(
      '[lo, hi]: 95% Wilson score interval over n = 256 problems; cells averaged over seeds: 95% Student-t interval over the seeds',
    );
  });

  it('shows the interval under the value and in the tooltip; none for an old result without sizes', () => {
    const [panel] = sravenPanels([sized(1, 1, 205 / 256), sized(2, 2, 0.5, null)], 'ood_acc');
    const option = panelOption(panel!, [0, 1], 'ood_acc') as {
      series: { data: number[][]; label: { formatter: (p: unknown) => string } }[];
      tooltip: { formatter: (p: unknown) => string };
    };
    const [withN, old] = option.series[0]!.data;
    expect(option.series[0]!.label.formatter({ data: withN })).toBe('0.80 ★\n[0.75, 0.85]');
    expect(option.series[0]!.label.formatter({ data: old })).toBe('0.50');
    expect(option.tooltip.formatter({ data: withN })).toContain('ood_acc=0.801 [0.748, 0.845] (95% Wilson)');
    expect(sravenCaption([sized(2, 2, 0.5, null)], [panel!], 'ood_acc')).toMatch(/no interval where the result does not record its n/);
  });

  it('shows a cell of several seeds as their mean, the Student-t interval over them and n', () => {
    // numpy/scipy: mean 0.82, std 0.0360555, t_{0.975,2} = 4.3026527 -> [0.730433, 0.909567]
    const seeds = [cell(4, 'hyla', 4, 1, 0.81), cell(5, 'hyla', 4, 1, 0.79), cell(6, 'hyla', 4, 1, 0.86), cell(7, 'hyla', 4, 2, 0.5)];
    const [panel] = sravenPanels(seeds, 'ood_acc');
    const three = panel!.cells.find((c) => c.x === 0)!;
    expect(three.n).toBe(3);
    expect(three.value).toBeCloseTo(0.82, 12);
    expect(three.ci!.lo).toBeCloseTo(0.730433141049704, 12);
    expect(three.ci!.hi).toBeCloseTo(0.9095668589502959, 12);
    const option = panelOption(panel!, [0, 1], 'ood_acc') as {
      series: { data: number[][]; label: { formatter: (p: unknown) => string } }[];
      tooltip: { formatter: (p: unknown) => string };
    };
    const [mean, single] = option.series[0]!.data;
    expect(option.series[0]!.label.formatter({ data: mean })).toBe('0.82 ★\n[0.73, 0.91] n=3');
    expect(option.series[0]!.label.formatter({ data: single })).toBe('0.50');
    expect(option.tooltip.formatter({ data: mean })).toContain('ood_acc=0.820 [0.730, 0.910] (95% t over 3 runs)');
  });
});
