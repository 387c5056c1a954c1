import { describe, expect, it } from 'vitest';
import {
  AGGREGATES,
  CHART_MODES,
  CHART_X,
  canonicalViewState,
  chartOptionsOf,
  decodeViewState,
  DEFAULT_GROUP,
  EMPTY_VIEW,
  encodeViewState,
  roundSmoothing,
  viewUrl,
  withChartOptions,
  writeViewState,
  X_AXES,
  type ViewState,
} from './viewState';

const FULL: ViewState = {
  query: "params.lr >= 0.001 and status = 'succeeded'",
  columns: [
    { field: 'name', aggregate: null, width: null },
    { field: 'metrics.val/loss', aggregate: 'min', width: 120 },
    { field: 'params.model.depth', aggregate: null, width: 80 },
  ],
  group_by: DEFAULT_GROUP,
  sort: { field: 'metrics.acc', order: 'desc', aggregate: 'best' },
  chart: { metric: 'val/loss', mode: 'envelope', x: 'time' },
  charts: [
    { metric: 'system/cpu_percent', log_scale: false, smoothing: 0, x_axis: 'time' },
    { metric: 'val/loss', log_scale: true, smoothing: 0.6, x_axis: 'step' },
  ],
  runs: [12, 3, 7],
};

describe('the URL contract', () => {
  it('writes each param in its documented form and order', () => {
    expect(encodeViewState(FULL).toString()).toBe(
      'q=params.lr+%3E%3D+0.001+and+status+%3D+%27succeeded%27' +
        '&cols=name%2Cmetrics.val%2Floss%3Amin%40120%2Cparams.model.depth%4080' +
        '&group=*&sort=-metrics.acc%3Abest&chart=val%2Floss%3Aenvelope%3Atime' +
        '&charts=system%2Fcpu_percent%3Atime%2Cval%2Floss%3Alog%3As0.6&runs=12%2C3%2C7',
    );
    const params = encodeViewState(FULL);
    expect([...params.keys()]).toEqual(['q', 'cols', 'group', 'sort', 'chart', 'charts', 'runs']);
    expect(params.get('charts')).toBe('system/cpu_percent:time,val/loss:log:s0.6');
    expect(params.get('runs')).toBe('12,3,7');
    expect(params.get('cols')).toBe('name,metrics.val/loss:min@120,params.model.depth@80');
    expect(params.get('sort')).toBe('-metrics.acc:best');
    expect(params.get('chart')).toBe('val/loss:envelope:time');
  });

  it('leaves out what holds its default: the empty view is no params at all', () => {
    expect(encodeViewState(EMPTY_VIEW).toString()).toBe('');
    expect(decodeViewState(new URLSearchParams())).toEqual(EMPTY_VIEW);
    expect(encodeViewState({ ...EMPTY_VIEW, group_by: [] }).toString()).toBe('');
    expect(encodeViewState({ ...EMPTY_VIEW, sort: { field: 'name', order: 'asc', aggregate: null } }).toString()).toBe('sort=name');
  });

  it('decodes what it encodes, for the full state and grouping by fields', () => {
    expect(decodeViewState(encodeViewState(FULL))).toEqual(FULL);
    const fields: ViewState = { ...EMPTY_VIEW, group_by: ['params.lambda', 'kind'] };
    expect(encodeViewState(fields).get('group')).toBe('params.lambda,kind');
    expect(decodeViewState(encodeViewState(fields))).toEqual(fields);
  });

  it('keeps field and metric names holding the separators (, : @ %) and any other character', () => {
    const odd: ViewState = {
      query: 'name contains "a,b:c@d%e" and params.x = 1 & y',
      columns: [{ field: 'metrics.acc@k:4,%', aggregate: 'max', width: 40 }, { field: 'params.π.ü', aggregate: null, width: 2000 }],
      group_by: ['params.a,b', 'params.c:d'],
      sort: { field: 'metrics.x:y', order: 'asc', aggregate: 'last' },
      chart: { metric: 'eval:acc@1,%25', mode: 'members', x: 'step' },
      charts: [{ metric: 'eval:acc@1,%25 log', log_scale: true, smoothing: 0.05, x_axis: 'relative' }],
      runs: [],
    };
    const url = `/?${encodeViewState(odd).toString()}`;
    expect(decodeViewState(new URL(url, 'http://x').searchParams)).toEqual(odd);
  });

  it('round-trips random states, and the URL of a decoded state is the URL it came from', () => {
    let seed = 12345;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const pick = <T,>(xs: readonly T[]): T => xs[rand(xs.length)]!;
    const chars = 'abcXYZ_09.,:@%/ -é+&=?#';
    const word = () => 'f' + Array.from({ length: rand(8) }, () => pick([...chars])).join('').replace(/\s/g, '_');
    const field = () => (rand(3) === 0 ? 'name' : `${pick(['params', 'metrics', 'result'])}.${word()}`);
    const agg = () => (rand(2) ? pick(AGGREGATES) : null);
    for (let i = 0; i < 300; i++) {
      const state: ViewState = {
        query: rand(2) ? Array.from({ length: rand(40) }, () => pick([...chars])).join('') : '',
        columns: Array.from({ length: rand(4) }, () => ({ field: field(), aggregate: agg(), width: rand(2) ? 40 + rand(1961) : null })),
        group_by: pick<ViewState['group_by']>([null, DEFAULT_GROUP, ['params.a', field()].filter((f, j, all) => all.indexOf(f) === j)]),
        sort: rand(2) ? { field: field(), order: rand(2) ? 'asc' : 'desc', aggregate: agg() } : null,
        chart: rand(2) ? { metric: word(), mode: pick(CHART_MODES), x: pick(CHART_X) } : null,
        // metric order, each once, never all defaults (the canonical form)
        charts: [...new Set(Array.from({ length: rand(4) }, word))]
          .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
          .map((metric) => ({ metric, log_scale: !!rand(2), smoothing: rand(100) / 100, x_axis: pick(X_AXES) }))
          .filter((c) => c.log_scale || c.smoothing > 0 || c.x_axis !== 'step'),
        runs: [...new Set(Array.from({ length: rand(5) }, () => 1 + rand(100_000)))],
      };
      const url = encodeViewState(state).toString();
      const back = decodeViewState(new URLSearchParams(url));
      expect(back).toEqual(state);
      expect(encodeViewState(back).toString()).toBe(url);
    }
  });

  it('drops the parts that do not decode instead of guessing', () => {
    const params = new URLSearchParams({
      cols: 'name,metrics.loss:median,params.x@10,params.y@120,9bad,metrics.ok:best',
      group: 'params.a,params.a, bad field,kind',
      sort: 'metrics.loss:avg',
      chart: 'loss:violin:step',
    });
    expect(decodeViewState(params)).toEqual({
      query: '',
      columns: [
        { field: 'name', aggregate: null, width: null },
        { field: 'params.y', aggregate: null, width: 120 },
        { field: 'metrics.ok', aggregate: 'best', width: null },
      ],
      group_by: ['params.a', 'kind'],
      sort: null,
      chart: null,
      charts: [],
      runs: [],
    });
    expect(decodeViewState(new URLSearchParams('cols=params.%E0%A4%A&chart=loss:mean_ci'))).toEqual(EMPTY_VIEW);
  });

  it('replaces only the view params of a page, keeping the others', () => {
    const current = new URLSearchParams('tab=runs&q=old&group=*&page=2');
    const next = writeViewState(current, { ...EMPTY_VIEW, query: 'kind = "carma"' });
    expect(next.toString()).toBe('tab=runs&page=2&q=kind+%3D+%22carma%22');
  });

  it('makes the API answer canonical and builds a page URL from a saved view', () => {
    const fromApi = {
      query: 'x',
      columns: [{ field: 'name' }],
      group_by: [] as string[],
      sort: { field: 'name' },
      chart: { metric: 'loss' },
    };
    expect(canonicalViewState(fromApi)).toEqual({
      query: 'x',
      columns: [{ field: 'name', aggregate: null, width: null }],
      group_by: null,
      sort: { field: 'name', order: 'asc', aggregate: null },
      chart: { metric: 'loss', mode: 'mean_ci', x: 'step' },
      charts: [],
      runs: [],
    });
    expect(viewUrl('experiments', EMPTY_VIEW)).toBe('/experiments');
    expect(viewUrl('runs', { ...EMPTY_VIEW, query: 'a', group_by: DEFAULT_GROUP })).toBe('/runs?q=a&group=*');
    expect(viewUrl('compare', { ...EMPTY_VIEW, chart: { metric: 'acc', mode: 'members', x: 'step' } })).toBe('/compare?chart=acc%3Amembers%3Astep');
  });
});

describe("the charts' options in the URL (charts)", () => {
  const decode = (raw: string) => decodeViewState(new URLSearchParams({ charts: raw })).charts;

  it('writes a metric once with only what is not its default, in metric order', () => {
    const charts = withChartOptions(
      withChartOptions([], { metric: 'val/loss', log_scale: true, smoothing: 0.6, x_axis: 'step' }),
      { metric: 'acc', log_scale: false, smoothing: 0, x_axis: 'relative' },
    );
    expect(encodeViewState({ ...EMPTY_VIEW, charts }).get('charts')).toBe('acc:relative,val/loss:log:s0.6');
    // back to the defaults: the metric's entry is gone, and with it the param
    const reset = withChartOptions(charts, { metric: 'acc', log_scale: false, smoothing: 0, x_axis: 'step' });
    expect(reset.map((c) => c.metric)).toEqual(['val/loss']);
    expect(encodeViewState({ ...EMPTY_VIEW, charts: withChartOptions(reset, chartOptionsOf([], 'val/loss')) }).toString()).toBe('');
    expect(chartOptionsOf(charts, 'loss')).toEqual({ metric: 'loss', log_scale: false, smoothing: 0, x_axis: 'step' });
  });

  it('keeps smoothing in hundredths within [0, 0.99]', () => {
    expect(roundSmoothing(0.604)).toBe(0.6);
    expect(roundSmoothing(0.996)).toBe(0.99);
    expect(roundSmoothing(-1)).toBe(0);
    expect(roundSmoothing(Number.NaN)).toBe(0);
    expect(decode('loss:s0.35')).toEqual([{ metric: 'loss', log_scale: false, smoothing: 0.35, x_axis: 'step' }]);
  });

  it('drops an entry that does not decode, keeping the others', () => {
    expect(decode('loss:s1.5,acc:log')).toEqual([{ metric: 'acc', log_scale: true, smoothing: 0, x_axis: 'step' }]);
    for (const bad of ['loss:s0.123', 'loss:epoch', 'loss:log:log', 'loss:s0.2:s0.3', 'loss:time:relative', 'loss:s-0.1', ':log']) {
      expect(decode(bad), bad).toEqual([]);
    }
    // all defaults is no entry; a metric named twice keeps its first
    expect(decode('loss:s0,acc:step')).toEqual([]);
    expect(decode('loss:log,loss:time')).toEqual([{ metric: 'loss', log_scale: true, smoothing: 0, x_axis: 'step' }]);
  });

  it("makes the API's charts and runs canonical", () => {
    const state = canonicalViewState({
      charts: [
        { metric: 'z', log_scale: true },
        { metric: 'a', smoothing: 0.5, x_axis: 'time' },
        { metric: 'm', log_scale: false, smoothing: 0, x_axis: 'step' },
      ],
      runs: [5, 2, 5, 9],
    });
    expect(state.charts).toEqual([
      { metric: 'a', log_scale: false, smoothing: 0.5, x_axis: 'time' },
      { metric: 'z', log_scale: true, smoothing: 0, x_axis: 'step' },
    ]);
    expect(state.runs).toEqual([5, 2, 9]);
    expect(viewUrl('compare', state)).toBe('/compare?charts=a%3As0.5%3Atime%2Cz%3Alog&runs=5%2C2%2C9');
  });

  it('reads the compared runs as the compare page always has (spaces or commas, ids from 1)', () => {
    expect(decodeViewState(new URLSearchParams('runs=3,1 2,,x,0,3')).runs).toEqual([3, 1, 2]);
  });
});
