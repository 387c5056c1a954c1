// Filtering and sorting of an experiment's runs table, done in the browser: an experiment holds at
// most 10,000 runs (docs/api.md), which sort in a few milliseconds, and the table stays responsive
// while the server streams status changes.
import type { Run, RunsTableColumns } from '../api/types';
import { formatValue } from './dotted';
import { etaSeconds } from './eta';
import { summaryNumber } from './nonfinite';
import type { RunStatus } from './runStatus';
import { naturalCompare } from './plainFormat';

/**
 * What the table reads of a run (the generated RunPublic's fields; tests build rows without the rest), and
 * a running run's ETA (its `progress.eta_at`, which the columnar runs table does not carry: `withEtas`).
 */
export type RunRow = Pick<Run, 'id' | 'index' | 'status' | 'attempt' | 'params' | 'summary' | 'created_at' | 'started_at' | 'finished_at'> & {
  eta_at?: string | null;
  /** what a member named the run (PATCH /runs/{id}); null or absent: unnamed */
  name?: string | null;
  /** the seconds of its ended attempts (the runs table's `ended_seconds`); null or absent: no attempt records */
  ended_seconds?: number | null;
  /** the start of its running attempt (the runs table's `attempt_started_at`) */
  attempt_started_at?: string | null;
  /** its attempts handed back at a worker's shutdown, not counted (RunPublic's `released`); absent: none */
  released?: number;
};

/** A column is a run field, a sweep param ("param:train.lr") or a final metric ("metric:loss"). */
export type ColumnId = 'id' | 'name' | 'index' | 'status' | 'attempt' | 'duration' | 'eta' | `param:${string}` | `metric:${string}`;

export interface Sort {
  column: ColumnId;
  desc: boolean;
}

/** Per-column text filters: a substring, or a numeric comparison like "> 0.5", "<=3", "=2". */
export interface RunFilter {
  statuses: ReadonlySet<RunStatus>;
  columns: Partial<Record<ColumnId, string>>;
}

/** The worker's machine samples (`system/cpu_percent`, ...): charted on the run page, not table columns. */
export const isSystemMetric = (key: string): boolean => key.startsWith('system/');

const columnsCache = new WeakMap<readonly RunRow[], { readonly params: readonly string[]; readonly metrics: readonly string[] }>();

/** The param and metric columns of `runs`, once per array (the experiment page and its runs table both ask,
 *  each a pass over every run's keys: ~10 ms for 10,000 runs with the CPU slowed 4x). */
export function columnsOf(runs: readonly RunRow[]): { readonly params: readonly string[]; readonly metrics: readonly string[] } {
  const known = columnsCache.get(runs);
  if (known) return known;
  const params = new Set<string>();
  const metrics = new Set<string>();
  for (const r of runs) {
    for (const k of Object.keys(r.params)) params.add(k);
    for (const k of Object.keys(r.summary)) if (!isSystemMetric(k)) metrics.add(k);
  }
  const columns = { params: [...params].sort(), metrics: [...metrics].sort() };
  columnsCache.set(runs, columns);
  return columns;
}

/**
 * How long workers ran the run, as the run page's run time (`run_seconds`): without the downtime between
 * attempts (a run released or lost and requeued). With its attempts' records (`ended_seconds`): the
 * seconds of its ended attempts, plus now - the running attempt's start while it runs; a requeued run
 * waiting again shows the work so far, not counting up. A run without them (never started, or started
 * before attempts were recorded) has its start to now while it runs, its start to its end once finished,
 * and nothing while queued or when the span is not known.
 */
export function durationSeconds(run: RunRow, now = Date.now()): number | null {
  const ended = run.ended_seconds;
  if (ended !== undefined && ended !== null) {
    if (run.status !== 'running' || !run.attempt_started_at) return ended;
    return ended + Math.max(0, (now - Date.parse(run.attempt_started_at)) / 1000);
  }
  if (!run.started_at || run.status === 'queued') return null;
  const start = Date.parse(run.started_at);
  if (run.status === 'running') return Math.max(0, (now - start) / 1000);
  if (!run.finished_at) return null;
  const end = Date.parse(run.finished_at);
  return end >= start ? (end - start) / 1000 : null;
}

export function cellValue(run: RunRow, column: ColumnId): unknown {
  if (column.startsWith('param:')) return run.params[column.slice(6)];
  if (column.startsWith('metric:')) return summaryNumber(run.summary[column.slice(7)]);
  if (column === 'duration') return durationSeconds(run);
  if (column === 'eta') return run.status === 'running' ? etaSeconds(run.eta_at, Date.now()) : null;
  if (column === 'index') return run.index + 1; // "#1" is the experiment's first run, as the run page says
  if (column === 'name') return run.name ?? null;
  // the attempts counted against the allowance, as the run page's "attempt 1/3": released ones are not
  if (column === 'attempt') return run.attempt - (run.released ?? 0);
  return run[column as 'id' | 'index' | 'status'];
}

/** The att. cell: the attempts counted (`2`), and the released ones apart (`1 +3r`: resumed three times). */
export function attemptCell(run: Pick<RunRow, 'attempt' | 'released'>): string {
  const released = run.released ?? 0;
  const counted = run.attempt - released;
  return released ? `${counted} +${released}r` : String(counted);
}

const COMPARISON = /^\s*(<=|>=|!=|<|>|=)\s*(-?[\d.]+(?:e-?\d+)?)\s*$/i;

export function matchesFilter(value: unknown, filter: string): boolean {
  const f = filter.trim();
  if (!f) return true;
  const m = COMPARISON.exec(f);
  if (m) {
    if (typeof value !== 'number') return false;
    const x = Number(m[2]);
    switch (m[1]) {
      case '<': return value < x;
      case '<=': return value <= x;
      case '>': return value > x;
      case '>=': return value >= x;
      case '=': return value === x;
      case '!=': return value !== x;
    }
  }
  if (value === undefined || value === null) return false;
  return formatValue(value).toLowerCase().includes(f.toLowerCase());
}

function compare(a: unknown, b: unknown): number {
  // missing values sort last whatever the direction (handled by the caller)
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return naturalCompare(String(a), String(b));
}

export function filterAndSort(runs: readonly RunRow[], filter: RunFilter, sort: Sort | null): RunRow[] {
  const active = Object.entries(filter.columns).filter(([, f]) => f && f.trim()) as [ColumnId, string][];
  const kept = runs.filter(
    (r) => (filter.statuses.size === 0 || filter.statuses.has(r.status)) && active.every(([c, f]) => matchesFilter(cellValue(r, c), f)),
  );
  if (!sort) return kept;
  const missing = (v: unknown) => v === undefined || v === null || (typeof v === 'number' && Number.isNaN(v));
  return kept.sort((ra, rb) => {
    const a = cellValue(ra, sort.column);
    const b = cellValue(rb, sort.column);
    if (missing(a) || missing(b)) return missing(a) === missing(b) ? ra.id - rb.id : missing(a) ? 1 : -1;
    const c = compare(a, b);
    return (sort.desc ? -c : c) || ra.id - rb.id;
  });
}

export function statusCounts(runs: readonly { status: RunStatus }[]): Partial<Record<RunStatus, number>> {
  const counts: Partial<Record<RunStatus, number>> = {};
  for (const r of runs) counts[r.status] = (counts[r.status] ?? 0) + 1;
  return counts;
}

/**
 * The rows of GET /experiments/{id}/runs-table (one array per field, the i-th entry of each is the i-th
 * run): a null parameter or metric is left out of the run's params or summary, as a run without it.
 */
export function rowsOfTable(t: RunsTableColumns): RunRow[] {
  const paramNames = Object.keys(t.params);
  const paramColumns = paramNames.map((n) => t.params[n]!);
  const summaryKeys = Object.keys(t.summary);
  const summaryColumns = summaryKeys.map((k) => t.summary[k]!);
  const rows = t.id.map((id, i): RunRow => {
    const p: Record<string, unknown> = {};
    for (let c = 0; c < paramColumns.length; c++) {
      const v = paramColumns[c]![i];
      if (v !== null && v !== undefined) p[paramNames[c]!] = v;
    }
    const s: RunRow['summary'] = {};
    for (let c = 0; c < summaryColumns.length; c++) {
      const v = summaryColumns[c]![i];
      if (v !== null && v !== undefined) s[summaryKeys[c]!] = v;
    }
    return {
      id,
      index: t.index[i]!,
      name: t.name?.[i] ?? null,
      status: t.status[i]!,
      attempt: t.attempt[i]!,
      released: t.released?.[i] ?? 0,
      created_at: t.created_at[i]!,
      started_at: t.started_at[i] ?? null,
      finished_at: t.finished_at[i] ?? null,
      ended_seconds: t.ended_seconds?.[i] ?? null,
      attempt_started_at: t.attempt_started_at?.[i] ?? null,
      params: p,
      summary: s,
    };
  });
  // the columns (columnsOf) read off the table's own, not from each run's keys: a name with a value in
  // some run
  const held = (column: readonly unknown[]) => column.some((v) => v !== null && v !== undefined);
  columnsCache.set(rows, {
    params: paramNames.filter((_, c) => held(paramColumns[c]!)).sort(),
    metrics: summaryKeys.filter((k, c) => !isSystemMetric(k) && held(summaryColumns[c]!)).sort(),
  });
  return rows;
}

/**
 * The table with one run's fresh status fields (a cancel or retry answered with the run). A run that does
 * not run has no running attempt, and its `run_seconds` are its ended attempts' seconds; a running one
 * keeps its attempt columns until the table is read again.
 */
export function patchTable(
  t: RunsTableColumns,
  run: Pick<Run, 'id' | 'status' | 'attempt' | 'started_at' | 'finished_at'> & {
    name?: string | null;
    run_seconds?: number | null;
    released?: number;
  },
): RunsTableColumns {
  const i = t.id.indexOf(run.id);
  if (i < 0) return t;
  const set = <T,>(xs: readonly T[], v: T): T[] => xs.map((x, j) => (j === i ? v : x));
  return {
    ...t,
    status: set(t.status, run.status),
    attempt: set(t.attempt, run.attempt),
    ...(run.released !== undefined && t.released ? { released: set(t.released, run.released) } : {}),
    started_at: set(t.started_at, run.started_at ?? null),
    finished_at: set(t.finished_at, run.finished_at ?? null),
    ...(run.name !== undefined && t.name ? { name: set(t.name, run.name) } : {}),
    ...(run.status !== 'running' && t.ended_seconds && t.attempt_started_at
      ? {
          ended_seconds: set(t.ended_seconds, run.run_seconds ?? t.ended_seconds[i] ?? null),
          attempt_started_at: set(t.attempt_started_at, null),
        }
      : {}),
  };
}

/**
 * The rows with each running run's ETA (`GET /runs?status=running` answers the runs with their progress;
 * the columnar runs table leaves progress out, so that heartbeats do not change it). Rows without an ETA
 * are passed through as they are.
 */
export function withEtas(rows: readonly RunRow[], etas: ReadonlyMap<number, string | null> | undefined): RunRow[] {
  if (!etas?.size) return rows as RunRow[];
  const out = rows.map((r) => {
    const eta_at = r.status === 'running' ? (etas.get(r.id) ?? null) : null;
    return (r.eta_at ?? null) === eta_at ? r : { ...r, eta_at };
  });
  carryColumns(rows, out); // an ETA changes no param or metric
  return out;
}

/** `to`, a copy of the rows `from` with the same params and summaries (ETAs added, or the query's structural
 *  sharing of an unchanged poll), knows `from`'s columns too. */
export function carryColumns(from: readonly RunRow[], to: readonly RunRow[]): void {
  const columns = columnsCache.get(from);
  if (columns && to !== from) columnsCache.set(to, columns);
}
