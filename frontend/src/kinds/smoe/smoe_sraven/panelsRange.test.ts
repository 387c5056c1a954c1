import { describe, expect, it } from 'vitest';
import { panelsRange, sravenPanels, type CellResult } from './heatmap';
import { panelOption } from './SravenHeatmap';

// The colour scale of the SRAVEN grid: accuracies, so never below 0 or above 1 for want of a spread.
const cell = (run_id: number, M: number, top_k: number | null, ood_acc: number): CellResult => ({
  run_id,
  payload: { kind: 'sraven_cell', M, top_k, num_experts: 8, attention: 'softmax', test_acc: 0.9, ood_acc, per_feature_acc: [], steps: 1 },
});

describe('panelsRange of a grid with no spread', () => {
  it('gives a one-cell grid the whole [0, 1], not a range around its value that starts at -0.45', () => {
    const panels = sravenPanels([cell(1, 2, 1, 0.05)], 'ood_acc');
    expect(panelsRange(panels)).toEqual([0, 1]);
    // what the heatmap's visualMap draws
    const map = panelOption(panels[0]!, panelsRange(panels), 'ood_acc').visualMap as { min: number; max: number };
    expect([map.min, map.max]).toEqual([0, 1]);
  });

  it('gives equal cells [0, 1] too, at either end of the scale', () => {
    expect(panelsRange(sravenPanels([cell(1, 2, 1, 1), cell(2, 2, 2, 1)], 'ood_acc'))).toEqual([0, 1]);
    expect(panelsRange(sravenPanels([cell(1, 2, 1, 0), cell(2, 4, 1, 0)], 'ood_acc'))).toEqual([0, 1]);
  });

  it('keeps the values range when they differ (contrast between close accuracies)', () => {
    expect(panelsRange(sravenPanels([cell(1, 2, 1, 0.55), cell(2, 2, 2, 0.7)], 'ood_acc'))).toEqual([0.55, 0.7]);
  });
});
