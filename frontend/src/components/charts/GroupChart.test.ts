import { describe, expect, it } from 'vitest';
import { alignGroup, type MemberSeries } from '../../lib/groupSeries';
import { groupChartOption, groupTable, type ChartGroup } from './GroupChart';

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
    const lo = byId('mean_ci', 'band-lo:ci:0').data as [number, number][];
    const w = byId('mean_ci', 'band-w:ci:0').data as [number, number][];
    expect(lo[0]![0]).toBe(0);
    expect(lo[0]![1]).toBeCloseTo(3 - (t2 * 2) / Math.sqrt(3), 12); // values 1, 3, 5: std 2
    expect(w[0]![1]).toBeCloseTo((2 * t2 * 2) / Math.sqrt(3), 12);
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
