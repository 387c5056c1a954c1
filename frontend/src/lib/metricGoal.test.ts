import { describe, expect, it } from 'vitest';
import { AXIS_LABEL_ROOM_PX, LEGEND_GAP_PX, legendWidth, parallelOption } from '../components/charts/ParallelCoords';
import { metricGoal, NEUTRAL_SCALE, scaleColours, WORSE_TO_BETTER } from './metricGoal';
import { parallelData } from './parallel';

const GREEN = WORSE_TO_BETTER.at(-1);
const RED = WORSE_TO_BETTER[0];

describe('metricGoal', () => {
  it('reads lower-is-better and higher-is-better from the key, the last telling word deciding', () => {
    expect(['loss', 'train_loss', 'val/loss', 'moe/aux_loss', 'ppl', 'eval/perplexity', 'acc_loss', 'cv/0.3'].map(metricGoal)).toEqual(
      Array(8).fill('min'),
    );
    expect(['test_acc', 'ood_acc/f0', 'accuracy', 'skillmix/score', 'f1', 'loss_accuracy'].map(metricGoal)).toEqual(Array(6).fill('max'));
    expect(['lr', 'moe/load/e0', 'moe/entropy', 'grad_norm', 'classic'].map(metricGoal)).toEqual(Array(5).fill(null));
  });

  it('orders the colours from the low end: green low for a loss, green high for an accuracy, neither otherwise', () => {
    expect(scaleColours('max')).toEqual(WORSE_TO_BETTER);
    expect(scaleColours('min')[0]).toBe(GREEN);
    expect(scaleColours('min').at(-1)).toBe(RED);
    expect(scaleColours(null)).toEqual(NEUTRAL_SCALE);
    expect(NEUTRAL_SCALE).not.toContain(RED);
  });
});

describe('the sweep chart (parallel coordinates) colours the better runs green', () => {
  const runs = [0.1, 0.03, 0.01].map((lr, i) => ({
    id: i + 1,
    params: { 'train.lr': lr },
    summary: { loss: [0.9, 0.2, 0.5][i]!, test_acc: [0.4, 0.9, 0.6][i]! },
  }));
  const colours = (metric: string) => {
    const option = parallelOption(parallelData(runs, metric)) as { visualMap: { min: number; max: number; inRange: { color: string[] }; text: string[] } };
    return option.visualMap;
  };

  it('the lowest loss green, the highest red', () => {
    const map = colours('loss');
    expect(map.min).toBe(0.2); // the scale's low end is the lowest loss (run 2)
    expect(map.inRange.color[0]).toBe(GREEN);
    expect(map.inRange.color.at(-1)).toBe(RED);
    expect(map.text).toEqual(['high', 'low (better)']);
  });

  it('the highest accuracy green', () => {
    const map = colours('test_acc');
    expect(map.inRange.color.at(-1)).toBe(GREEN);
    expect(map.inRange.color[0]).toBe(RED);
    expect(map.text).toEqual(['high (better)', 'low']);
  });
});

describe('the sweep chart keeps its colour legend off the metric axis labels', () => {
  it('reserves the axis labels, a gap and the legend right of the last axis', () => {
    for (const metric of ['test_acc', 'loss', 'custom']) {
      const data = parallelData(
        [
          { id: 1, params: { lr: 0.1 }, summary: { [metric]: 0.5 } },
          { id: 2, params: { lr: 0.01 }, summary: { [metric]: 0.7 } },
        ] as never,
        metric,
      );
      const option = parallelOption(data) as { parallel: { right: number }; visualMap: { right: number } };
      const legendLeftEdge = option.visualMap.right + legendWidth(metric);
      // the last axis sits `parallel.right` px from the edge; its labels need AXIS_LABEL_ROOM_PX to its right
      expect(option.parallel.right - AXIS_LABEL_ROOM_PX).toBeGreaterThanOrEqual(legendLeftEdge + LEGEND_GAP_PX);
    }
    expect(legendWidth('test_acc')).toBeGreaterThanOrEqual(60); // "high (better)" at 10 px
  });
});
