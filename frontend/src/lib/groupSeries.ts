// Seed groups as the dashboard draws and tabulates them: which runs form a group, the
// group's statistics over its members (n, mean, 95% Student-t interval, min and max), and a group's
// metric curve as those statistics per step. Pure functions; the compare page and the group chart use them.
//
// Grouping: by default, runs whose specs are equal once every key named `seed` is removed, at any depth
// (the rule of the API's `group_by`, backend group_key): the seeds of one configuration form one group.
//
// Aligning the members' curves on steps. Runs of a group usually log at the same steps, but not always (a
// run logged every 10 steps and another every 15, a run still going or stopped early, downsampled buckets
// ending at different steps). The group's curve is drawn at the union of its members' steps; at a step
// s a member counts with its value at s, or else with its last value before s when that value is recent
// — logged less than one of the member's own typical intervals earlier (the median gap between its
// steps) — so a value is carried forward across a gap of its own logging, never across a hole in the run
// and never past its last step or before its first. A step is drawn only where at least two members (or
// the one member of a group of one) count, so every drawn point of a group of several has a real
// interval; `n` per step says how many members it averages (shown in the chart's tooltip).

import { canonical } from './dotted';
import { tQuantile } from './studentT';

/** A member's curve: [step, value] in increasing step order (non-finite values are left out). */
export type MemberSeries = readonly (readonly [number, number])[];

/** The statistics of a group's values (one per member). `ci` is null for fewer than two values. */
export interface GroupStats {
  n: number;
  mean: number;
  /** sample standard deviation (n - 1); null for n = 1 */
  std: number | null;
  /** 95% Student-t interval of the mean: mean ± t_{0.975, n-1} · std / √n; null for n = 1 */
  ci: { lo: number; hi: number } | null;
  min: number;
  max: number;
}

/** One step of a group's curve: its statistics over the members that count there. */
export interface GroupPoint extends GroupStats {
  step: number;
}

/** Mean, sample std, Student-t 95% interval, min and max of `values` (the finite ones); null when none. */
export function groupStats(values: readonly (number | null | undefined)[]): GroupStats | null {
  const xs = values.filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
  const n = xs.length;
  if (n === 0) return null;
  const mean = xs.reduce((a, b) => a + b, 0) / n;
  const min = Math.min(...xs);
  const max = Math.max(...xs);
  if (n === 1) return { n, mean, std: null, ci: null, min, max };
  const std = Math.sqrt(xs.reduce((a, v) => a + (v - mean) ** 2, 0) / (n - 1));
  const half = tQuantile(0.975, n - 1) * (std / Math.sqrt(n));
  return { n, mean, std, ci: { lo: mean - half, hi: mean + half }, min, max };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** How far back a member's last value still counts at a later step: its median gap between steps. */
export function carryTolerance(series: MemberSeries): number {
  if (series.length < 2) return 0;
  const gaps: number[] = [];
  for (let i = 1; i < series.length; i++) gaps.push(series[i]![0] - series[i - 1]![0]);
  return median(gaps);
}

/**
 * A group's curve: the statistics of its members at each step of the union of their steps (see the
 * module's comment for which members count at a step). `minMembers` (default 2, or 1 for a group of one)
 * is the fewest members a drawn step needs.
 */
export function alignGroup(members: readonly MemberSeries[], minMembers?: number): GroupPoint[] {
  const series = members.map((m) => m.filter(([s, v]) => Number.isFinite(s) && Number.isFinite(v)).sort((a, b) => a[0] - b[0]));
  const present = series.filter((s) => s.length > 0);
  if (present.length === 0) return [];
  const need = minMembers ?? Math.min(2, present.length);
  const tolerances = present.map(carryTolerance);
  const steps = [...new Set(present.flatMap((s) => s.map(([step]) => step)))].sort((a, b) => a - b);
  const cursors = present.map(() => -1); // per member: the index of its last point at or before the step
  const out: GroupPoint[] = [];
  for (const step of steps) {
    const values: number[] = [];
    present.forEach((s, m) => {
      let i = cursors[m]!;
      while (i + 1 < s.length && s[i + 1]![0] <= step) i++;
      cursors[m] = i;
      if (i < 0) return; // before the member's first step
      const [at, value] = s[i]!;
      if (at === step || (i + 1 < s.length && step - at < tolerances[m]!)) values.push(value);
    });
    if (values.length < need) continue;
    out.push({ step, ...groupStats(values)! });
  }
  return out;
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** `value` without any object key named `seed`, at any depth (arrays keep their order). */
export function withoutSeeds(value: unknown): Json {
  if (Array.isArray(value)) return value.map(withoutSeeds);
  if (value !== null && typeof value === 'object') {
    const out: { [key: string]: Json } = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) if (k !== 'seed') out[k] = withoutSeeds(v);
    return out;
  }
  return value as Json;
}

/** The seed-group key of a spec: its canonical JSON without any key named `seed`. */
export const seedGroupKey = (spec: unknown): string => canonical(withoutSeeds(spec));

export interface RunGroupOf<R> {
  key: string;
  runs: R[];
}

/**
 * Runs grouped by their seed group: the API's `group_key` where the run has one (the runs page groups by
 * it: an external run opened with a `group` name is grouped by that name, whatever its config), else
 * `seedGroupKey` of its spec. Groups in the order of their first run, members in input order.
 */
export function groupBySeed<R extends { spec: unknown; group_key?: string | null }>(runs: readonly R[]): RunGroupOf<R>[] {
  const groups = new Map<string, R[]>();
  for (const r of runs) {
    const key = r.group_key ? `group:${r.group_key}` : seedGroupKey(r.spec);
    const list = groups.get(key);
    if (list) list.push(r);
    else groups.set(key, [r]);
  }
  return [...groups].map(([key, members]) => ({ key, runs: members }));
}

/** "0.812 ± 0.034" (half the interval), or the value alone for a group of one. */
export function formatMeanCi(stats: GroupStats | null, digits = 3): string {
  if (!stats) return '—';
  const v = formatNumber(stats.mean, digits);
  return stats.ci ? `${v} ± ${formatNumber((stats.ci.hi - stats.ci.lo) / 2, digits)}` : v;
}

function formatNumber(v: number, digits: number): string {
  const a = Math.abs(v);
  return a !== 0 && (a < 10 ** -digits || a >= 1e6) ? v.toExponential(digits - 1) : v.toFixed(digits);
}

const isSeedPath = (key: string) => key.split('.').includes('seed');

/**
 * A legend label per group: the params (other than seeds) whose values differ between the groups, as
 * `key=value`; `group i` when nothing differs (one group). `params` are a run's dotted spec fields.
 */
export function groupLabels(groups: readonly { runs: readonly { params: Record<string, unknown> }[] }[]): string[] {
  const firsts = groups.map((g) => g.runs[0]?.params ?? {});
  const keys = [...new Set(firsts.flatMap((p) => Object.keys(p)))]
    .sort()
    .filter((k) => !isSeedPath(k) && new Set(firsts.map((p) => JSON.stringify(p[k]))).size > 1);
  return firsts.map((p, i) => {
    const parts = keys.filter((k) => k in p).map((k) => `${k}=${typeof p[k] === 'string' ? p[k] : JSON.stringify(p[k])}`);
    return parts.length ? parts.join(' ') : `group ${i + 1}`;
  });
}

/** A run's value of a query-language field for grouping: `params.<dotted path>` of its spec, else the run's own field. */
export function groupFieldValue(run: { spec: unknown } & Record<string, unknown>, field: string): Json | undefined {
  if (!field.startsWith('params.')) return run[field] as Json | undefined;
  let at: unknown = run.spec;
  for (const part of field.slice('params.'.length).split('.')) {
    if (at === null || typeof at !== 'object' || Array.isArray(at) || !(part in at)) return undefined;
    at = (at as Record<string, unknown>)[part];
  }
  return at as Json;
}

/**
 * Runs grouped by the listed fields (the view state's `group=params.lambda,kind`): one group per
 * combination of their values (a missing value is a value of its own); named `field=value ...`.
 */
export function groupByFields<R extends { spec: unknown }>(runs: readonly R[], fields: readonly string[]): (RunGroupOf<R> & { name: string })[] {
  const groups = new Map<string, { values: (Json | undefined)[]; runs: R[] }>();
  for (const r of runs) {
    const values = fields.map((f) => groupFieldValue(r as R & Record<string, unknown>, f));
    const key = JSON.stringify(values.map((v) => (v === undefined ? { missing: true } : canonical(v))));
    const g = groups.get(key);
    if (g) g.runs.push(r);
    else groups.set(key, { values, runs: [r] });
  }
  return [...groups].map(([key, g]) => ({
    key,
    runs: g.runs,
    name: fields.map((f, i) => `${f}=${g.values[i] === undefined ? '—' : typeof g.values[i] === 'string' ? g.values[i] : JSON.stringify(g.values[i])}`).join(' '),
  }));
}
