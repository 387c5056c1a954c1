import { describe, expect, it } from 'vitest';
import type { EChartsOption } from './echarts';
import { ciBandSeries, tableWithBands } from './ciBand';

const wilsonLike = (lo: number, hi: number) => ({ lo, hi, method: 'wilson' as const });

describe('ciBandSeries', () => {
  it('stacks the widths on the lower ends, both named like the line', () => {
    const band = ciBandSeries({ name: 'a', key: '0', data: [[1, 0.5], [2, 0.6]], ci: [wilsonLike(0.4, 0.6), wilsonLike(0.5, 0.7)] });
    expect(band.map((s) => [s.id, s.name, s.stack])).toEqual([['band-lo:0', 'a', 'band:0'], ['band-w:0', 'a', 'band:0']]);
    expect(band[0]!.data).toEqual([[1, 0.4], [2, 0.5]]);
    expect(band[1]!.data[0]![1]).toBeCloseTo(0.2, 10);
  });

  it('draws no band unless every point has an interval', () => {
    expect(ciBandSeries({ name: 'a', key: '0', data: [[1, 0.5], [2, 0.6]], ci: [wilsonLike(0.4, 0.6), null] })).toEqual([]);
  });
});

describe('tableWithBands', () => {
  it("downloads the lines with their intervals as ci95_lo and ci95_hi, not the band's drawn series", () => {
    const data: [number, number][] = [[1, 0.5], [2, 0.6]];
    const option = {
      xAxis: { type: 'value', name: "eval k'" },
      yAxis: { type: 'value', name: 'test_acc' },
      series: [
        { id: 'line:0', name: 'a', type: 'line', data },
        ...ciBandSeries({ name: 'a', key: '0', data, ci: [wilsonLike(0.4, 0.6), wilsonLike(0.5, 0.7)] }),
        { id: 'line:1', name: 'b', type: 'line', data: [[1, 0.3]] },
      ],
    } as EChartsOption;
    const table = tableWithBands(option);
    expect(table.columns.map((c) => c.name)).toEqual(['series', "eval k'", 'test_acc', 'ci95_lo', 'ci95_hi']);
    expect(table.columns[0]!.values).toEqual(['a', 'a', 'b']);
    expect(table.columns[3]!.values).toEqual([0.4, 0.5, null]);
    expect(table.columns[4]!.values.map((v) => (v === null ? null : Number((v as number).toFixed(10))))).toEqual([0.6, 0.7, null]);
  });
});
