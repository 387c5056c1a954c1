// The one ECharts host: creates the chart once, applies option changes (not a new chart per render),
// follows its container's size, and forwards the events a page asks for. Under every chart, "Download
// data": what it draws as CSV or Parquet (ChartDownload.tsx), the table derived from the option
// (lib/chartTable.ts) unless the chart passes its own (`data`).
//
// ECharts is imported on the first chart, not with the page: a page's code runs and sends its API
// requests while ECharts downloads and parses, instead of after. Line charts need only
// echarts.ts; an option with a heatmap, bars, parallel coordinates... loads echartsFull.ts first.
import { memo, useEffect, useRef } from 'react';
import { chartTable } from '../../lib/chartTable';
import { fileSlug, type DataTable } from '../../lib/tableExport';
import { ChartDownload } from './ChartDownload';
import type { ECharts, EChartsOption } from './echarts';
import { needsFullECharts } from './echartsNeeds';

let echartsModule: Promise<typeof import('./echarts')> | null = null;
let fullModule: Promise<unknown> | null = null;
let fullLoaded = false;
const loadECharts = () => (echartsModule ??= import('./echarts'));
const loadFull = () =>
  (fullModule ??= import('./echartsFull').then(() => {
    fullLoaded = true;
  }));

/**
 * Sets `option` on the chart; an option that needs more than lines, on a chart that started with lines
 * only, once the rest of ECharts is there. Returns what cancels that wait.
 */
function apply(c: ECharts, option: EChartsOption, notMerge: boolean): () => void {
  if (fullLoaded || !needsFullECharts(option)) {
    c.setOption(option, { notMerge, lazyUpdate: true });
    return () => {};
  }
  let live = true;
  void loadFull().then(() => live && !c.isDisposed() && c.setOption(option, { notMerge, lazyUpdate: true }));
  return () => {
    live = false;
  };
}

export interface EChartProps {
  option: EChartsOption;
  height?: number | string;
  /** event name -> handler, e.g. { click: ..., datazoom: ... } */
  on?: Record<string, (params: unknown, chart: ECharts) => void>;
  /** replace the whole option instead of merging (series removed between renders) */
  notMerge?: boolean;
  ariaLabel: string;
  onReady?: (chart: ECharts) => void;
  testId?: string;
  /** the table "Download data" writes, when the option's series are not the data (a drawn band) */
  data?: () => DataTable;
  /** the downloaded file's name without extension (default: from ariaLabel) */
  downloadName?: string;
}

function EChartImpl({ option, height = 300, on, notMerge = true, ariaLabel, onReady, testId, data, downloadName }: EChartProps) {
  const el = useRef<HTMLDivElement>(null);
  const latest = useRef({ option, notMerge });
  latest.current = { option, notMerge };
  // The ECharts instance is a ref, not state: it is nothing React draws, and as state every chart's
  // creation was one more render of the page (53 of them on a SRAVEN run's Metrics tab), each a chance for
  // an effect that sets state to run again (React's "Maximum update depth exceeded" leaving the tab).
  const chart = useRef<ECharts | null>(null);
  const handlers = useRef(on);
  handlers.current = on;
  const eventNames = Object.keys(on ?? {}).sort().join(',');
  const eventNamesRef = useRef(eventNames);
  eventNamesRef.current = eventNames;
  const bound = useRef<string[]>([]);

  /** Binds the events `names` (comma-separated) to the chart, in place of those bound before. */
  const bind = (c: ECharts, names: string) => {
    for (const name of bound.current) c.off(name);
    bound.current = names ? names.split(',') : [];
    for (const name of bound.current) c.on(name, (params: unknown) => handlers.current?.[name]?.(params, c));
  };

  useEffect(() => {
    let disposed = false;
    let cleanup = () => {};
    void Promise.all([loadECharts(), needsFullECharts(latest.current.option) ? loadFull() : null]).then(([{ echarts }]) => {
      if (disposed || !el.current) return;
      const c = echarts.init(el.current, undefined, { renderer: 'canvas' });
      const resize = new ResizeObserver(() => c.resize());
      resize.observe(el.current);
      chart.current = c;
      cleanup = () => {
        resize.disconnect();
        bound.current = [];
        chart.current = null;
        c.dispose();
      };
      apply(c, latest.current.option, latest.current.notMerge);
      bind(c, eventNamesRef.current);
      onReady?.(c);
    });
    return () => {
      disposed = true;
      cleanup();
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  // an option change (after the chart exists: its first option is applied as it is created)
  useEffect(() => {
    const c = chart.current;
    if (!c) return;
    return apply(c, option, notMerge);
  }, [option, notMerge]);

  useEffect(() => {
    const c = chart.current;
    if (c && eventNames !== bound.current.join(',')) bind(c, eventNames);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [eventNames]);

  return (
    <div>
      <div ref={el} role="img" aria-label={ariaLabel} data-testid={testId} style={{ width: '100%', height }} />
      <ChartDownload table={data ?? (() => chartTable(latest.current.option))} filename={downloadName ?? fileSlug(ariaLabel)} label={ariaLabel} />
    </div>
  );
}

export const EChart = memo(EChartImpl);
