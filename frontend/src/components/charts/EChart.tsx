// The one ECharts host: creates the chart once, applies option changes (not a new chart per render),
// follows its container's size, and forwards the events a page asks for. Under every chart, "Download
// data": what it draws as CSV or Parquet (ChartDownload.tsx), the table derived from the option
// (lib/chartTable.ts) unless the chart passes its own (`data`).
//
// ECharts is imported on the first chart, not with the page: a page's code runs and sends its API
// requests while ECharts downloads and parses, instead of after. Line charts need only
// echarts.ts; an option with a heatmap, bars, parallel coordinates... loads echartsFull.ts first.
import { memo, useEffect, useRef, useState } from 'react';
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
  const latest = useRef(option);
  latest.current = option;
  const [chart, setChart] = useState<ECharts | null>(null);
  const handlers = useRef(on);
  handlers.current = on;

  const first = useRef(option);
  useEffect(() => {
    let disposed = false;
    let cleanup = () => {};
    void Promise.all([loadECharts(), needsFullECharts(first.current) ? loadFull() : null]).then(([{ echarts }]) => {
      if (disposed || !el.current) return;
      const c = echarts.init(el.current, undefined, { renderer: 'canvas' });
      const resize = new ResizeObserver(() => c.resize());
      resize.observe(el.current);
      cleanup = () => {
        resize.disconnect();
        c.dispose();
      };
      onReady?.(c);
      setChart(c);
    });
    return () => {
      disposed = true;
      cleanup();
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  useEffect(() => {
    if (!chart) return;
    if (fullLoaded || !needsFullECharts(option)) {
      chart.setOption(option, { notMerge, lazyUpdate: true });
      return;
    }
    let live = true; // an option that needs more than lines, on a chart that started with lines only
    void loadFull().then(() => live && !chart.isDisposed() && chart.setOption(option, { notMerge, lazyUpdate: true }));
    return () => {
      live = false;
    };
  }, [chart, option, notMerge]);

  const eventNames = Object.keys(on ?? {}).sort().join(',');
  useEffect(() => {
    if (!chart || !eventNames) return;
    const names = eventNames.split(',');
    for (const name of names) chart.on(name, (params: unknown) => handlers.current?.[name]?.(params, chart));
    return () => names.forEach((name) => chart.off(name));
  }, [chart, eventNames]);

  return (
    <div>
      <div ref={el} role="img" aria-label={ariaLabel} data-testid={testId} style={{ width: '100%', height }} />
      <ChartDownload table={data ?? (() => chartTable(latest.current))} filename={downloadName ?? fileSlug(ariaLabel)} label={ariaLabel} />
    </div>
  );
}

export const EChart = memo(EChartImpl);
