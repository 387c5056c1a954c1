// The project-wide runs table and the experiments list as server queries: what a view's state
// (lib/viewState.ts) asks of GET /api/v1/runs and GET /api/v1/experiments — `q`, `sort`/`order`,
// `group_by`, `metrics` — and how their answers show: the columns a page offers, a run's cell, a group's
// "mean ± half-CI" cell, and a query's 422 with its position. Pure functions, tested in runsQuery.test.ts.
import type { components } from '../api/schema';
import { flatten, formatValue, isPlainObject } from './dotted';
import { DEFAULT_GROUP, type Aggregate, type ViewColumn, type ViewSort, type ViewState } from './viewState';

/** One metric column of a group (GET /runs?group_by=...: RunGroup.metrics[column]); ci null when n < 2. */
export type MetricStats = components['schemas']['MetricStats'];
/** A group of runs (GET /runs?group_by=...: RunPage.groups[]): key, n, run_ids (at most 100), metrics. */
export type RunGroup = components['schemas']['RunGroup'];

/** The run fields a column may show besides params.<path> and metrics.<key>. */
export const RUN_FIELDS = ['id', 'name', 'kind', 'status', 'experiment', 'created'] as const;
export type RunField = (typeof RUN_FIELDS)[number];
export const DEFAULT_RUN_COLUMNS: ViewColumn[] = RUN_FIELDS.map((field) => ({ field, aggregate: null, width: null }));

export const isMetricField = (field: string) => field.startsWith('metrics.') && field.length > 'metrics.'.length;
export const isParamField = (field: string) => field.startsWith('params.') && field.length > 'params.'.length;
export const metricKeyOf = (field: string) => field.slice('metrics.'.length);

/** The columns a page shows: the view's own, or the run fields when it names none. */
export function columnsOf(state: ViewState): ViewColumn[] {
  return state.columns.length ? state.columns : DEFAULT_RUN_COLUMNS;
}

// ------------------------------------------------------------------------------------------ the query

const OPERATOR = /[=<>!()"']|\b(and|or|not|in|contains|exists|missing)\b/i;

/**
 * What a search box's text asks the API: an expression of the query language as typed, or — for text
 * without any operator, quote, parenthesis or keyword (a plain word or words) — `name contains "<text>"`.
 * `#7` is `id = 7`, and a bare number also finds names containing it. Blank text: no filter (null).
 */
export function effectiveQuery(text: string): string | null {
  const t = text.trim();
  if (!t) return null;
  if (OPERATOR.test(t)) return t;
  const id = /^(#?)(\d{1,15})$/.exec(t);
  if (id) return id[1] ? `id = ${id[2]}` : `id = ${id[2]} or name contains ${JSON.stringify(t)}`;
  return `name contains ${JSON.stringify(t)}`;
}

/** True when the box's text is read as a plain name search (the page says so under the box). */
export const isPlainSearch = (text: string) => text.trim() !== '' && !OPERATOR.test(text.trim());

/** `metrics.<key>` as the language writes it: keys with spaces, quotes or operators are quoted. */
export function metricRef(key: string): string {
  return /^[^\s=<>!(),"']+$/.test(key) ? `metrics.${key}` : `metrics.${JSON.stringify(key)}`;
}

/** A metric column as a field of the language: `metrics.k` (last), `min(metrics.k)`, `max(...)`, `best(...)`. */
export function metricExpr(field: string, aggregate: Aggregate | null): string {
  const ref = metricRef(metricKeyOf(field));
  return !aggregate || aggregate === 'last' ? ref : `${aggregate}(${ref})`;
}

/** The API's `sort` for a view's sort in the runs list (keyset fields where the API has them). */
export function runSortParam(sort: ViewSort | null): { sort?: string; order?: 'asc' | 'desc' } {
  if (!sort) return {};
  const field = sort.field === 'created' ? 'created_at' : isMetricField(sort.field) ? metricExpr(sort.field, sort.aggregate) : sort.field;
  return { sort: field, order: sort.order };
}

/** The API's `sort` for groups: a group field as is, a metric column by its mean (`metric-mean:<column>`). */
export function groupSortParam(sort: ViewSort | null, groupFields: readonly string[] | null): { sort?: string; order?: 'asc' | 'desc' } {
  if (!sort) return {};
  if (isMetricField(sort.field)) return { sort: `metric-mean:${metricExpr(sort.field, sort.aggregate)}`, order: sort.order };
  if (groupFields?.includes(sort.field)) return { sort: sort.field, order: sort.order };
  return {};
}

/** `group_by` as the API takes it: `default` (every spec field but seed) or the fields, comma-separated. */
export function groupByParam(group: ViewState['group_by']): string | null {
  if (group === null) return null;
  return group === DEFAULT_GROUP ? 'default' : group.join(',');
}

/** `metrics` for a grouped list: each metric column's expression, comma-separated (null: none). */
export function metricsParam(columns: readonly ViewColumn[]): string | null {
  const exprs = [...new Set(columns.filter((c) => isMetricField(c.field)).map((c) => metricExpr(c.field, c.aggregate)))];
  return exprs.length ? exprs.join(',') : null;
}

/** Clicking a column's header: ascending, then descending, then no sort. */
export function nextSort(current: ViewSort | null, column: ViewColumn): ViewSort | null {
  const same = current?.field === column.field && current.aggregate === (isMetricField(column.field) ? column.aggregate : null);
  if (!same) return { field: column.field, order: 'asc', aggregate: isMetricField(column.field) ? column.aggregate : null };
  return current.order === 'asc' ? { ...current, order: 'desc' } : null;
}

export function sortMatches(sort: ViewSort | null, column: ViewColumn): 'asc' | 'desc' | null {
  if (!sort || sort.field !== column.field) return null;
  if (isMetricField(column.field) && (sort.aggregate ?? 'last') !== (column.aggregate ?? 'last')) return null;
  return sort.order;
}

// ------------------------------------------------------------------------------------------ the 422

export interface QueryProblem {
  message: string;
  /** 0-based position in the text the API read, when the message names one */
  position: number | null;
}

/** A query's 422 (`loc: ["query", "q"]` or `["query", "sort"]`, `msg: "position N: ..."`) for the box. */
export function queryProblem(errors: readonly { loc: readonly (string | number)[]; msg: string }[], detail: string): QueryProblem {
  const e = errors.find((x) => x.loc[0] === 'query') ?? errors[0];
  const message = e?.msg ?? detail;
  const m = /^position (\d+)\b/.exec(message);
  return { message, position: m ? Number(m[1]) : null };
}

/** The text with a caret line under the position (for a monospace block), or null when none applies. */
export function caretLines(text: string, position: number | null): [string, string] | null {
  if (position === null || position < 0 || position > text.length) return null;
  return [text, `${' '.repeat(position)}^`];
}

// ------------------------------------------------------------------------------------------ cells

/** The spec's dotted paths over loaded runs, sorted (the column chooser's params.<path>). */
export function paramPaths(specs: readonly unknown[]): string[] {
  const out = new Set<string>();
  for (const spec of specs) for (const path of Object.keys(flatten(spec))) out.add(path);
  return [...out].sort();
}

export function numberText(v: number | null | undefined): string {
  if (v === null || v === undefined) return '—';
  return formatValue(v);
}

export interface GroupCell {
  text: string;
  /** the tooltip: the interval's bounds and n, or why there is none */
  title: string;
}

/**
 * A group's metric cell: "mean ± half-CI" with "[low, high]" in the tooltip; a group of one (or a metric
 * only one member has) shows its value, never a fake interval; no member with a value: "—".
 */
export function groupCell(stats: MetricStats | undefined): GroupCell {
  if (!stats || stats.n === 0 || stats.mean === null) return { text: '—', title: 'no member has a value' };
  if (stats.ci_low === null || stats.ci_high === null || stats.n < 2)
    return { text: numberText(stats.mean), title: `n = ${stats.n}: no interval` };
  const half = (stats.ci_high - stats.ci_low) / 2;
  return {
    text: `${numberText(stats.mean)} ± ${numberText(half)}`,
    title: `95% CI [${numberText(stats.ci_low)}, ${numberText(stats.ci_high)}], n = ${stats.n}, sd ${numberText(stats.std)}, min ${numberText(stats.min)}, max ${numberText(stats.max)}`,
  };
}

/**
 * A group's key as short text: for `default` groups (the whole spec but seed) only the dotted paths whose
 * values differ between the loaded groups (all of them when one group), else the fields as they are.
 */
export function groupLabels(groups: readonly RunGroup[]): string[] {
  const flat = groups.map((g) => flatten(g.key));
  const paths = new Set(flat.flatMap((f) => Object.keys(f)));
  const varying = [...paths].filter((p) => new Set(flat.map((f) => JSON.stringify(f[p] ?? null))).size > 1).sort();
  const shown = varying.length ? varying : [...paths].sort();
  return flat.map((f) => shown.filter((p) => p in f).map((p) => `${p}=${formatValue(f[p])}`).join(', ') || '(all)');
}

/** A run row's value of a non-metric column. */
export function runFieldValue(run: { id: number; name: string | null; kind: string; status: string; experiment_id: number; created_at: string; spec: unknown }, field: string): unknown {
  switch (field) {
    case 'id':
      return run.id;
    case 'name':
      return run.name;
    case 'kind':
      return run.kind;
    case 'status':
      return run.status;
    case 'experiment':
      return run.experiment_id;
    case 'created':
      return run.created_at;
  }
  if (isParamField(field)) {
    let cur: unknown = run.spec;
    for (const part of field.slice('params.'.length).split('.')) cur = isPlainObject(cur) ? cur[part] : undefined;
    return cur;
  }
  return undefined;
}

export const columnLabel = (c: ViewColumn) => (isMetricField(c.field) && c.aggregate && c.aggregate !== 'last' ? `${c.aggregate}(${c.field})` : c.field);
