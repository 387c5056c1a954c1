import { describe, expect, it } from 'vitest';
import type { OverlaySeries } from '../../lib/overlay';
import { OVERLAY_COLORS, overlayOption } from './OverlayChart';

const series: OverlaySeries[] = [
  { runId: 1, name: 'run 1', points: [[0, 3], [1, 2.5]], raw: [[0, 3], [1, 2]], dropped: 0, breaks: [] },
  { runId: 2, name: 'baseline (run 2)', points: [[0, 4], [1, 3.5]], raw: [[0, 4], [1, 3]], dropped: 0, breaks: [] },
];

type Line = { id: string; name: string; data: unknown; silent?: boolean; lineStyle: { color: string; opacity?: number } };

describe('overlayOption', () => {
  it('is a linear chart of one line per run by default', () => {
    const option = overlayOption('loss', series);
    expect(option.yAxis).toMatchObject({ type: 'value' });
    const lines = option.series as Line[];
    expect(lines.map((s) => s.id)).toEqual(['line-1', 'line-2']);
    expect((option.legend as { data: string[] }).data).toEqual(['run 1', 'baseline (run 2)']);
  });

  it("breaks a run's line where it logged NaN or an infinity instead of joining across", () => {
    const nan: OverlaySeries = { runId: 3, name: 'run 3', points: [[0, 3], [2, 2]], raw: [], dropped: 0, breaks: [1] };
    const [line] = overlayOption('loss', [nan]).series as Line[];
    expect(line!.data).toEqual([[0, 3], [1, null], [2, 2]]);
  });

  it('puts the y axis on a log scale when asked', () => {
    expect(overlayOption('loss', series, { logScale: true, smoothing: 0 }).yAxis).toMatchObject({ type: 'log', name: 'loss' });
  });

  it("draws each run's raw values faint, in its colour and under its name, below its smoothed line", () => {
    const lines = overlayOption('loss', series, { logScale: false, smoothing: 0.8 }).series as Line[];
    expect(lines.map((s) => s.id)).toEqual(['raw-1', 'raw-2', 'line-1', 'line-2']);
    const [raw1, raw2, line1, line2] = lines;
    expect(raw1!.data).toEqual(series[0]!.raw);
    expect(line1!.data).toEqual(series[0]!.points);
    expect(raw1!.name).toBe(line1!.name); // one legend entry toggles both
    expect(raw1!.lineStyle.color).toBe(line1!.lineStyle.color);
    expect(raw2!.lineStyle.color).toBe(line2!.lineStyle.color);
    expect(raw1!.lineStyle.color).not.toBe(raw2!.lineStyle.color);
    expect(raw1!.lineStyle.opacity).toBeLessThan(0.5);
    expect(raw1!.silent).toBe(true);
    expect(line2!.lineStyle.color).toBe(OVERLAY_COLORS[1]);
  });
});
