import { describe, expect, it } from 'vitest';
import { needsFullECharts } from './echartsNeeds';

describe('needsFullECharts', () => {
  it('draws line charts (a run metric, overlaid runs, curves with a legend) with the line module', () => {
    expect(needsFullECharts({ series: [{ type: 'line', data: [] }, { type: 'line', stack: 'band', data: [] }], dataZoom: [{ type: 'slider' }], legend: {} })).toBe(false);
    expect(needsFullECharts({ series: { type: 'line', data: [] } })).toBe(false);
    expect(needsFullECharts({ title: { text: 'no series yet' } })).toBe(false);
  });

  it('loads the rest for other series types, mark points, visual maps, parallel axes and the toolbox', () => {
    expect(needsFullECharts({ series: [{ type: 'line' }, { type: 'heatmap' }] })).toBe(true);
    expect(needsFullECharts({ series: { type: 'bar' } })).toBe(true);
    expect(needsFullECharts({ series: [{ type: 'scatter' }] })).toBe(true);
    expect(needsFullECharts({ series: [{ type: 'line', markPoint: { data: [{ type: 'max' }] } }] })).toBe(true);
    expect(needsFullECharts({ series: [{ type: 'line', markLine: { data: [{ xAxis: 3 }] } }] })).toBe(true);
    expect(needsFullECharts({ series: [{ type: 'line', markLine: undefined }] })).toBe(false);
    expect(needsFullECharts({ series: [{ type: 'line' }], visualMap: { min: 0, max: 1 } })).toBe(true);
    expect(needsFullECharts({ parallelAxis: [{ dim: 0 }], series: [{ type: 'parallel' }] })).toBe(true);
    expect(needsFullECharts({ series: [], toolbox: { feature: {} } })).toBe(true);
  });
});
