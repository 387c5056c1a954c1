// The URL contract of a view: what a runs, experiments or compare page shows — its query,
// columns (with their metric aggregates and widths), grouping, sort, the group chart and each chart's options — written into the
// page's search params, so that any state, saved or not, reproduces from its URL. This file is the single
// source of truth for that encoding: every page that shows a view decodes its URL with `decodeViewState`
// and writes it with `writeViewState`; the saved views (backend/views, `ViewState`) hold the same object.
//
// The params, always in this order, each left out when it holds its default:
//   q      the query-language expression, as typed                      q=params.lr >= 0.001
//   cols   columns, comma-separated: field[:aggregate][@width]          cols=name,metrics.loss:min@120
//   group  `*` (every spec field but seed) or fields, comma-separated    group=params.lambda,kind
//   sort   field, `-field` descending, then [:aggregate]                 sort=-metrics.acc:best
//   chart  metric:mode:x (mode mean_ci|envelope|members, x step|time)  chart=val/loss:mean_ci:step
//   charts each metric's chart options, comma-separated:                charts=loss:log:s0.6,acc:time
//          metric[:log][:s<smoothing 0.01-0.99>][:time|:relative], in metric order, defaults left out
//   runs   the compare page's runs, by id, comma-separated                runs=12,13,14
// Inside cols, group, sort, chart and charts the characters % , : @ of a field or metric are written %25 %2C %3A
// %40 (then URL-encoded once more with the rest), so any field name survives. Other params of the page are
// kept as they are. A saved view is addressed as `/views/<id>`: that route loads the view and replaces
// itself with its page's URL carrying the view's state (`viewUrl`), so the address bar then holds the URL
// contract above, shareable and editable like any unsaved state.

export const AGGREGATES = ['last', 'min', 'max', 'best'] as const;
export type Aggregate = (typeof AGGREGATES)[number];
export const CHART_MODES = ['mean_ci', 'envelope', 'members'] as const;
export type ChartMode = (typeof CHART_MODES)[number];
export const CHART_X = ['step', 'time'] as const;
export type ChartX = (typeof CHART_X)[number];
/** A chart's x axis (lib/metricPanels.ts XAxisMode): the step, wall-clock time, the time since the run started. */
export const X_AXES = ['step', 'time', 'relative'] as const;
export type XAxis = (typeof X_AXES)[number];
/** The most smoothing a chart takes (lib/metricPanels.ts MAX_SMOOTHING; the API's limit). */
const MAX_SMOOTHING = 0.99;
export const VIEW_PAGES = ['runs', 'experiments', 'compare'] as const;
export type ViewPage = (typeof VIEW_PAGES)[number];
/** group_by's literal default: seed groups (every spec field except `seed`). */
export const DEFAULT_GROUP = 'all spec fields but seed';

export interface ViewColumn {
  field: string;
  aggregate: Aggregate | null;
  width: number | null;
}
export interface ViewSort {
  field: string;
  order: 'asc' | 'desc';
  aggregate: Aggregate | null;
}
export interface ViewChart {
  metric: string;
  mode: ChartMode;
  x: ChartX;
}
/** How every chart of one metric draws (backend/views/schemas.py, ChartOptions). */
export interface ViewChartOptions {
  metric: string;
  log_scale: boolean;
  /** the EMA weight, 0 (raw) to 0.99, in hundredths */
  smoothing: number;
  x_axis: XAxis;
}
/** A view's state: the saved view's `state` (backend/views/schemas.py, ViewState), in canonical form. */
export interface ViewState {
  query: string;
  columns: ViewColumn[];
  group_by: string[] | typeof DEFAULT_GROUP | null;
  sort: ViewSort | null;
  chart: ViewChart | null;
  /** the metrics whose charts do not draw with the defaults, in metric order */
  charts: ViewChartOptions[];
  /** the compare page's runs, by id, each once */
  runs: number[];
}

export const EMPTY_VIEW: ViewState = { query: '', columns: [], group_by: null, sort: null, chart: null, charts: [], runs: [] };
export const VIEW_PARAMS = ['q', 'cols', 'group', 'sort', 'chart', 'charts', 'runs'] as const;
/** The most runs a view names (the API's limit). */
const MAX_RUNS = 200;
/** Where each page lives: a saved view of that page opens there. */
export const PAGE_PATHS: Record<ViewPage, string> = { experiments: '/experiments', runs: '/runs', compare: '/compare' };

// the API's limits (backend/views/schemas.py)
const FIELD = /^[A-Za-z_][A-Za-z0-9_]*(\.[^\s\x00-\x1f\x7f]+)?$/;
const METRIC = /^[^\x00-\x1f\x7f]{1,256}$/;
const MIN_WIDTH = 40;
const MAX_WIDTH = 2000;

const isField = (s: string) => s.length <= 256 && FIELD.test(s);
const isAggregate = (s: string): s is Aggregate => (AGGREGATES as readonly string[]).includes(s);

function esc(s: string): string {
  return s.replace(/[%,:@]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
}
function unesc(s: string): string | null {
  try {
    return decodeURIComponent(s);
  } catch {
    return null; // a malformed escape: the part is dropped
  }
}

function encodeColumn(c: ViewColumn): string {
  return esc(c.field) + (c.aggregate ? `:${c.aggregate}` : '') + (c.width !== null ? `@${c.width}` : '');
}

function decodeColumn(part: string): ViewColumn | null {
  const m = /^([^:@]+)(?::([a-z]+))?(?:@(\d{1,4}))?$/.exec(part);
  if (!m) return null;
  const field = unesc(m[1] ?? '');
  if (field === null || !isField(field)) return null;
  if (m[2] !== undefined && !isAggregate(m[2])) return null;
  const width = m[3] === undefined ? null : Number(m[3]);
  if (width !== null && (width < MIN_WIDTH || width > MAX_WIDTH)) return null;
  return { field, aggregate: (m[2] as Aggregate | undefined) ?? null, width };
}

function decodeSort(raw: string): ViewSort | null {
  const m = /^(-?)([^:]+)(?::([a-z]+))?$/.exec(raw);
  if (!m) return null;
  const field = unesc(m[2] ?? '');
  if (field === null || !isField(field)) return null;
  if (m[3] !== undefined && !isAggregate(m[3])) return null;
  return { field, order: m[1] ? 'desc' : 'asc', aggregate: (m[3] as Aggregate | undefined) ?? null };
}

function decodeChart(raw: string): ViewChart | null {
  const [metricPart, mode, x, ...rest] = raw.split(':');
  if (rest.length || mode === undefined || x === undefined) return null;
  const metric = unesc(metricPart ?? '');
  if (metric === null || !METRIC.test(metric)) return null;
  if (!(CHART_MODES as readonly string[]).includes(mode) || !(CHART_X as readonly string[]).includes(x)) return null;
  return { metric, mode: mode as ChartMode, x: x as ChartX };
}

/** A smoothing weight as the URL and the state hold it: in hundredths, within [0, MAX_SMOOTHING]; NaN is 0. */
export function roundSmoothing(weight: number): number {
  if (!Number.isFinite(weight)) return 0;
  return Math.min(Math.max(Math.round(weight * 100) / 100, 0), MAX_SMOOTHING);
}

const isDefaultChart = (c: ViewChartOptions) => !c.log_scale && c.smoothing === 0 && c.x_axis === 'step';

function encodeChartOptions(c: ViewChartOptions): string {
  return [esc(c.metric), ...(c.log_scale ? ['log'] : []), ...(c.smoothing > 0 ? [`s${c.smoothing}`] : []), ...(c.x_axis !== 'step' ? [c.x_axis] : [])].join(':');
}

function decodeChartOptions(part: string): ViewChartOptions | null {
  const [metricPart, ...flags] = part.split(':');
  const metric = unesc(metricPart ?? '');
  if (metric === null || !METRIC.test(metric)) return null;
  const out: ViewChartOptions = { metric, log_scale: false, smoothing: 0, x_axis: 'step' };
  const seen = new Set<string>();
  for (const flag of flags) {
    const kind = flag === 'log' ? 'log' : (X_AXES as readonly string[]).includes(flag) ? 'x' : flag.startsWith('s') ? 's' : null;
    if (kind === null) return null;
    if (seen.has(kind)) return null; // one of each, or the part is not ours
    seen.add(kind);
    if (kind === 'log') out.log_scale = true;
    else if (kind === 's') {
      if (!/^s(0(\.\d{1,2})?|0?\.\d{1,2})$/.test(flag)) return null;
      const w = Number(flag.slice(1));
      if (w > MAX_SMOOTHING) return null;
      out.smoothing = w;
    } else if ((X_AXES as readonly string[]).includes(flag)) out.x_axis = flag as XAxis;
    else return null;
  }
  return out;
}

/** Each metric once (the first entry), defaults left out, in metric order: one form for the same options. */
function canonicalCharts(
  charts: readonly { metric: string; log_scale?: boolean | null; smoothing?: number | null; x_axis?: XAxis | null }[],
): ViewChartOptions[] {
  const byMetric = new Map<string, ViewChartOptions>();
  for (const c of charts) {
    if (byMetric.has(c.metric)) continue;
    byMetric.set(c.metric, { metric: c.metric, log_scale: !!c.log_scale, smoothing: roundSmoothing(c.smoothing ?? 0), x_axis: c.x_axis ?? 'step' });
  }
  return [...byMetric.values()].filter((c) => !isDefaultChart(c)).sort((a, b) => (a.metric < b.metric ? -1 : a.metric > b.metric ? 1 : 0));
}

/** Run ids from 1, each once (its first place), at most MAX_RUNS. */
function canonicalRuns(ids: readonly number[]): number[] {
  return [...new Set(ids.filter((n) => Number.isSafeInteger(n) && n > 0))].slice(0, MAX_RUNS);
}

/** The options of `metric`'s charts in `charts` (the defaults when it has no entry). */
export function chartOptionsOf(charts: readonly ViewChartOptions[], metric: string): ViewChartOptions {
  return charts.find((c) => c.metric === metric) ?? { metric, log_scale: false, smoothing: 0, x_axis: 'step' };
}

/** `charts` with `metric`'s entry replaced by `options` (left out when they are the defaults), canonical. */
export function withChartOptions(
  charts: readonly ViewChartOptions[],
  options: ViewChartOptions,
): ViewChartOptions[] {
  return canonicalCharts([options, ...charts.filter((c) => c.metric !== options.metric)]);
}

function decodeGroup(raw: string): ViewState['group_by'] {
  if (raw === '*') return DEFAULT_GROUP;
  const fields: string[] = [];
  for (const part of raw.split(',')) {
    const field = unesc(part);
    if (field !== null && isField(field) && !fields.includes(field)) fields.push(field);
  }
  return fields.length ? fields : null;
}

/**
 * The view state a page's URL holds. Parts that do not decode (an unknown aggregate, a width out of
 * range, a malformed field) are left out, never guessed; everything `encodeViewState` writes decodes to
 * the same state.
 */
export function decodeViewState(params: URLSearchParams): ViewState {
  const cols = params.get('cols');
  const group = params.get('group');
  const sort = params.get('sort');
  const chart = params.get('chart');
  const charts = params.get('charts');
  const runs = params.get('runs');
  return {
    query: params.get('q') ?? '',
    columns: cols ? cols.split(',').flatMap((p) => decodeColumn(p) ?? []) : [],
    group_by: group ? decodeGroup(group) : null,
    sort: sort ? decodeSort(sort) : null,
    chart: chart ? decodeChart(chart) : null,
    charts: charts ? canonicalCharts(charts.split(',').flatMap((p) => decodeChartOptions(p) ?? [])) : [],
    runs: runs ? canonicalRuns(runs.split(/[\s,]+/).flatMap((p) => (/^\d{1,15}$/.test(p) ? [Number(p)] : []))) : [],
  };
}

/** A state's search params, in the contract's order, defaults left out (the same state: the same string). */
export function encodeViewState(state: ViewState): URLSearchParams {
  const out = new URLSearchParams();
  const s = canonicalViewState(state);
  if (s.query) out.set('q', s.query);
  if (s.columns.length) out.set('cols', s.columns.map(encodeColumn).join(','));
  if (s.group_by === DEFAULT_GROUP) out.set('group', '*');
  else if (s.group_by) out.set('group', s.group_by.map(esc).join(','));
  if (s.sort) out.set('sort', `${s.sort.order === 'desc' ? '-' : ''}${esc(s.sort.field)}${s.sort.aggregate ? `:${s.sort.aggregate}` : ''}`);
  if (s.chart) out.set('chart', `${esc(s.chart.metric)}:${s.chart.mode}:${s.chart.x}`);
  if (s.charts.length) out.set('charts', s.charts.map(encodeChartOptions).join(','));
  if (s.runs.length) out.set('runs', s.runs.join(','));
  return out;
}

/** The page's params with its view state replaced by `state` (other params kept, view params after them). */
export function writeViewState(current: URLSearchParams, state: ViewState): URLSearchParams {
  const out = new URLSearchParams();
  current.forEach((value, key) => {
    if (!(VIEW_PARAMS as readonly string[]).includes(key)) out.append(key, value);
  });
  encodeViewState(state).forEach((value, key) => out.append(key, value));
  return out;
}

/**
 * One form for every state: what the API answers (optional fields, nulls, an empty group list) made
 * canonical, so that two equal states compare and encode equal.
 */
export function canonicalViewState(state: {
  query?: string | null;
  columns?: readonly { field: string; aggregate?: Aggregate | null; width?: number | null }[] | null;
  group_by?: readonly string[] | string | null;
  sort?: { field: string; order?: 'asc' | 'desc' | null; aggregate?: Aggregate | null } | null;
  chart?: { metric: string; mode?: ChartMode | null; x?: ChartX | null } | null;
  charts?: readonly { metric: string; log_scale?: boolean | null; smoothing?: number | null; x_axis?: XAxis | null }[] | null;
  runs?: readonly number[] | null;
}): ViewState {
  const group = state.group_by;
  return {
    query: state.query ?? '',
    columns: (state.columns ?? []).map((c) => ({ field: c.field, aggregate: c.aggregate ?? null, width: c.width ?? null })),
    group_by: group === DEFAULT_GROUP ? DEFAULT_GROUP : Array.isArray(group) && group.length ? [...group] : null,
    sort: state.sort ? { field: state.sort.field, order: state.sort.order ?? 'asc', aggregate: state.sort.aggregate ?? null } : null,
    chart: state.chart ? { metric: state.chart.metric, mode: state.chart.mode ?? 'mean_ci', x: state.chart.x ?? 'step' } : null,
    charts: canonicalCharts(state.charts ?? []),
    runs: canonicalRuns(state.runs ?? []),
  };
}

/** The URL that opens `page` showing `state` (what `/views/<id>` redirects to). */
export function viewUrl(page: ViewPage, state: ViewState): string {
  const search = encodeViewState(state).toString();
  return search ? `${PAGE_PATHS[page]}?${search}` : PAGE_PATHS[page];
}

/** A saved view's own address: it opens the view's page with its state in the URL. */
export const savedViewPath = (id: number) => `/views/${id}`;
