import { describe, expect, it } from 'vitest';
import { alignGroup, type MemberSeries } from '../../lib/groupSeries';
import { groupChart, groupChartOption, groupTable, type ChartGroup } from './GroupChart';

const m = (runId: number, points: MemberSeries) => ({ runId, points });
const members = [m(1, [[0, 1], [10, 2]]), m(2, [[0, 3], [10, 4]]), m(3, [[0, 5], [10, 9]])];
const groups: ChartGroup[] = [
  { name: 'lr=0.1', members, points: alignGroup(members.map((x) => x.points)) },
  { name: 'lr=0.2', members: [m(4, [[0, 7], [10, 6]])], points: alignGroup([[[0, 7], [10, 6]]]) },
];

type S = { id: string; name: string; data: unknown[]; stack?: string };
const ids = (mode: 'mean_ci' | 'envelope' | 'members') => (groupChartOption('loss', groups, mode).series as S[]).map((s) => s.id);
const byId = (mode: 'mean_ci' | 'envelope' | 'members', id: string) => (groupChartOption('loss', groups, mode).series as S[]).find((s) => s.id === id)!;

describe('groupChartOption', () => {
  it('draws a group as its mean line with the t interval as a band; a group of one as its line only', () => {
    expect(ids('mean_ci')).toEqual(['band-lo:ci:0', 'band-w:ci:0', 'mean:0', 'mean:1']);
    const t2 = 4.302652729749462; // t_{0.975, 2}
    // a metric free to go below 0 (a member's value is negative): the band is the interval itself
    const shifted: ChartGroup[] = [{ ...groups[0]!, members: [...members, m(9, [[20, -1]])] }];
    const band = (id: string) => (groupChartOption('loss', shifted, 'mean_ci').series as S[]).find((s) => s.id === id)!.data as [number, number][];
    const lo = band('band-lo:ci:0');
    const w = band('band-w:ci:0');
    expect(lo[0]![0]).toBe(0);
    expect(lo[0]![1]).toBeCloseTo(3 - (t2 * 2) / Math.sqrt(3), 12); // values 1, 3, 5: std 2
    expect(w[0]![1]).toBeCloseTo((2 * t2 * 2) / Math.sqrt(3), 12);
    // the same members with no value below 0: the lower end stops at 0, the upper end stays
    const clipped = byId('mean_ci', 'band-lo:ci:0').data as [number, number][];
    const width = byId('mean_ci', 'band-w:ci:0').data as [number, number][];
    expect(clipped[0]![1]).toBe(0);
    expect(width[0]![1]).toBeCloseTo(3 + (t2 * 2) / Math.sqrt(3), 12);
    expect(byId('mean_ci', 'mean:0').data[1]).toEqual([10, 5, 3, groups[0]!.points[1]!.ci!.lo, groups[0]!.points[1]!.ci!.hi, 2, 9]);
    expect(byId('mean_ci', 'mean:1').data).toEqual([[0, 7, 1, null, null, 7, 7], [10, 6, 1, null, null, 6, 6]]);
  });

  it('draws the min/max envelope as the band in envelope mode', () => {
    expect(ids('envelope')).toEqual(['band-lo:env:0', 'band-w:env:0', 'mean:0', 'mean:1']);
    expect(byId('envelope', 'band-lo:env:0').data).toEqual([[0, 1], [10, 2]]);
    expect(byId('envelope', 'band-w:env:0').data).toEqual([[0, 4], [10, 7]]);
  });

  it('draws every member of a group in members mode, no band', () => {
    expect(ids('members')).toEqual(['member:0:1', 'member:0:2', 'member:0:3', 'mean:0', 'mean:1']);
    expect(byId('members', 'member:0:2').name).toBe('lr=0.1');
  });

  it('shows n per step in the tooltip', () => {
    const option = groupChartOption('loss', groups, 'mean_ci');
    const format = (option.tooltip as { formatter: (p: unknown) => string }).formatter;
    const text = format([
      { seriesId: 'band-lo:ci:0', value: [0, 0] },
      { seriesId: 'mean:0', seriesName: 'lr=0.1', value: byId('mean_ci', 'mean:0').data[0] },
      { seriesId: 'mean:1', seriesName: 'lr=0.2', value: byId('mean_ci', 'mean:1').data[0] },
    ]);
    expect(text).toMatch(/^step 0<br\/>lr=0\.1: 3 \[.+\] \(n=3\) min 1 max 5<br\/>lr=0\.2: 7 \(n=1\)$/);
  });

  it('downloads one row per group and step', () => {
    const t = groupTable('loss', groups);
    expect(t.columns.map((c) => c.name)).toEqual(['group', 'step', 'n', 'loss', 'ci95_lo', 'ci95_hi', 'min', 'max']);
    expect(t.columns[0]!.values).toEqual(['lr=0.1', 'lr=0.1', 'lr=0.2', 'lr=0.2']);
    expect(t.columns[2]!.values).toEqual([3, 3, 1, 1]);
    expect(t.columns[4]!.values[3]).toBeNull();
  });
});

describe('the group chart near a bound and under its options', () => {
  // three seeds of a loss under 0.4 whose values spread: the t interval's lower end is far below 0
  const near = [m(1, [[0, 0.05], [10, 0.02]]), m(2, [[0, 0.1], [10, 0.08]]), m(3, [[0, 0.6], [10, 0.5]])];
  const low: ChartGroup[] = [{ name: 'lr=0.1', members: near, points: alignGroup(near.map((x) => x.points)) }];
  const series = (drawing: ReturnType<typeof groupChart>) => drawing.option.series as S[];
  const bandLows = (drawing: ReturnType<typeof groupChart>) =>
    (series(drawing).find((x) => x.id === 'band-lo:ci:0')!.data as [number, number][]).map(([, y]) => y);

  it("clips a loss's interval at 0 and says so", () => {
    expect(low[0]!.points[0]!.ci!.lo).toBeLessThan(-0.3); // the interval itself crosses 0
    const drawing = groupChart('loss', low, 'mean_ci');
    expect(Math.min(...bandLows(drawing))).toBe(0);
    expect(drawing.bandMin).toBe(0);
    expect(drawing.clipNote).toBe('band clipped at 0: no value is below 0');
    // the band's top stays the interval's
    const w = series(drawing).find((x) => x.id === 'band-w:ci:0')!.data as [number, number][];
    expect(w[0]![1]).toBeCloseTo(low[0]!.points[0]!.ci!.hi, 12);
  });

  it('says nothing where the band stays above 0, nor for a metric that goes below 0', () => {
    const tight = [m(1, [[0, 10], [10, 11]]), m(2, [[0, 11], [10, 12]]), m(3, [[0, 12], [10, 13]])];
    const above = groupChart('loss', [{ name: 'g', members: tight, points: alignGroup(tight.map((x) => x.points)) }], 'mean_ci');
    expect(above.clipNote).toBeNull();
    expect(above.bandMin!).toBeGreaterThan(0);
    const signed = [m(1, [[0, -0.5]]), m(2, [[0, 0.1]]), m(3, [[0, 0.6]])];
    const drawing = groupChart('reward', [{ name: 'g', members: signed, points: alignGroup(signed.map((x) => x.points)) }], 'mean_ci');
    expect(drawing.clipNote).toBeNull();
    expect(drawing.bandMin!).toBeLessThan(-0.5);
  });

  it('draws a log y axis with the band raised to the smallest value drawn', () => {
    const drawing = groupChart('loss', low, 'mean_ci', { logScale: true, smoothing: 0 });
    expect((drawing.option.yAxis as { type: string }).type).toBe('log');
    const means = low[0]!.points.map((p) => p.mean);
    expect(Math.min(...bandLows(drawing))).toBe(Math.min(...means));
    expect(drawing.clipNote).toMatch(/^band clipped at 0\.2\d*: the smallest value drawn/);
  });

  it('draws the raw mean faint under a smoothed one', () => {
    const drawing = groupChart('loss', [{ ...low[0]!, rawPoints: low[0]!.points }], 'mean_ci', { logScale: false, smoothing: 0.6 });
    expect(series(drawing).map((x) => x.id)).toEqual(['band-lo:ci:0', 'band-w:ci:0', 'raw:0', 'mean:0']);
  });
});

