// The sweep editor's model and its mapping to the API's sweep object (docs/api.md, "Sweep"):
// grid x random x seeds. The server's POST /experiments/preview is the authority on the expansion; the
// local count lets the form say "12 runs" while typing and refuse an empty or oversize sweep early.
import type { Sweep, SweepDistribution } from '../api/types';
import { isPlainObject, type Json } from './dotted';

export const MAX_RUNS_PER_EXPERIMENT = 10_000;

/** The editor's model of one random axis: the API's Distribution with exactly the fields each `dist` uses. */
export type Distribution =
  | { dist: 'uniform' | 'loguniform' | 'int_uniform'; low: number; high: number }
  | { dist: 'choice'; values: Json[] };

export interface GridAxis {
  type: 'grid';
  path: string;
  /** the values as typed: "0.1, 0.01" */
  text: string;
}
export interface RandomAxis {
  type: 'random';
  path: string;
  distribution: Distribution;
}
export interface SweepModel {
  grid: GridAxis[];
  random: RandomAxis[];
  randomN: number;
  randomSeed: number;
  /** "1, 2, 3" or "" for none */
  seeds: string;
}

export const emptySweep = (): SweepModel => ({ grid: [], random: [], randomN: 4, randomSeed: 0, seeds: '' });

/** Parses one typed scalar: numbers, true/false/null, quoted or bare strings. */
export function parseScalar(text: string): Json {
  const t = text.trim();
  if (t === 'true') return true;
  if (t === 'false') return false;
  if (t === 'null') return null;
  if (t !== '' && !Number.isNaN(Number(t))) return Number(t);
  if ((t.startsWith('"') && t.endsWith('"')) || (t.startsWith("'") && t.endsWith("'"))) return t.slice(1, -1);
  return t;
}

/** "0.1, 0.01, 1e-3" -> [0.1, 0.01, 0.001]; empty items are dropped. */
export function parseValueList(text: string): Json[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map(parseScalar);
}

export function modelToSweep(model: SweepModel): Sweep | null {
  const sweep: Sweep = {};
  const grid: Record<string, Json[]> = {};
  for (const axis of model.grid) {
    const values = parseValueList(axis.text);
    if (axis.path.trim() && values.length) grid[axis.path.trim()] = values;
  }
  if (Object.keys(grid).length) sweep.grid = grid;
  const params: Record<string, SweepDistribution> = {};
  for (const axis of model.random) if (axis.path.trim()) params[axis.path.trim()] = axis.distribution;
  if (Object.keys(params).length) sweep.random = { n: model.randomN, seed: model.randomSeed, params };
  const seeds = parseValueList(model.seeds).filter((v): v is number => typeof v === 'number');
  if (seeds.length) sweep.seeds = seeds;
  return Object.keys(sweep).length ? sweep : null;
}

const RANGE_DISTS = ['uniform', 'loguniform', 'int_uniform'] as const;

/** One of the API's distributions as the editor models it, or null when its fields do not fit its `dist`. */
export function toDistribution(value: unknown): Distribution | null {
  if (!isPlainObject(value)) return null;
  const { dist, low, high, values } = value;
  if (dist === 'choice') return Array.isArray(values) ? { dist, values } : null;
  const range = RANGE_DISTS.find((d) => d === dist);
  return range && typeof low === 'number' && typeof high === 'number' ? { dist: range, low, high } : null;
}

/** The editor's model of a sweep object (an example's, or one typed by hand); parts it cannot model are left out. */
export function sweepToModel(sweep: unknown): SweepModel {
  const model = emptySweep();
  if (!isPlainObject(sweep)) return model;
  const { grid, random, seeds } = sweep;
  if (isPlainObject(grid))
    for (const [path, values] of Object.entries(grid))
      if (Array.isArray(values)) model.grid.push({ type: 'grid', path, text: values.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join(', ') });
  if (isPlainObject(random)) {
    if (typeof random.n === 'number') model.randomN = random.n;
    if (typeof random.seed === 'number') model.randomSeed = random.seed;
    if (isPlainObject(random.params))
      for (const [path, value] of Object.entries(random.params)) {
        const distribution = toDistribution(value);
        if (distribution) model.random.push({ type: 'random', path, distribution });
      }
  }
  if (Array.isArray(seeds)) model.seeds = seeds.filter((v) => typeof v === 'number').join(', ');
  return model;
}

/** Runs the sweep expands to: product of grid sizes x random n (when any random axis) x seeds. */
export function sweepRunCount(sweep: Sweep | null): number {
  if (!sweep) return 1;
  let count = 1;
  for (const values of Object.values(sweep.grid ?? {})) count *= values.length;
  if (sweep.random && Object.keys(sweep.random.params).length) count *= Math.max(0, sweep.random.n);
  if (sweep.seeds?.length) count *= sweep.seeds.length;
  return count;
}

/** Grid expansion in the server's order (first axis slowest), for a local preview of grid-only sweeps. */
export function expandGrid(grid: Record<string, readonly Json[]>): Record<string, Json>[] {
  let combos: Record<string, Json>[] = [{}];
  for (const [path, values] of Object.entries(grid)) {
    const next: Record<string, Json>[] = [];
    for (const combo of combos) for (const v of values) next.push({ ...combo, [path]: v });
    combos = next;
  }
  return combos;
}

/** Columns of the preview table: every param any run sets, in first-seen order. */
export function previewColumns(runs: readonly { params: Record<string, unknown> }[]): string[] {
  const seen = new Set<string>();
  for (const r of runs) for (const k of Object.keys(r.params)) seen.add(k);
  return [...seen];
}

/** Problems the form can tell before asking the server. */
export function sweepProblems(model: SweepModel): string[] {
  const problems: string[] = [];
  const paths = [...model.grid.map((a) => a.path.trim()), ...model.random.map((a) => a.path.trim())].filter(Boolean);
  const dup = paths.find((p, i) => paths.indexOf(p) !== i);
  if (dup) problems.push(`"${dup}" is swept twice`);
  for (const a of model.grid) if (a.path.trim() && parseValueList(a.text).length === 0) problems.push(`grid axis "${a.path}" has no values`);
  for (const a of model.random) {
    const d = a.distribution;
    if (d.dist !== 'choice' && !(d.low < d.high)) problems.push(`"${a.path}": low must be below high`);
    if (d.dist === 'int_uniform' && Math.ceil(d.low) > Math.floor(d.high)) problems.push(`"${a.path}": no whole number between low and high`);
    if (d.dist === 'loguniform' && d.low <= 0) problems.push(`"${a.path}": loguniform needs low > 0`);
    if (d.dist === 'choice' && d.values.length === 0) problems.push(`"${a.path}": choice needs values`);
  }
  const count = sweepRunCount(modelToSweep(model));
  if (count > MAX_RUNS_PER_EXPERIMENT) problems.push(`${count} runs exceed the limit of ${MAX_RUNS_PER_EXPERIMENT}`);
  if (count === 0) problems.push('the sweep expands to no runs');
  return problems;
}
