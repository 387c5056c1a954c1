// The one ECharts host: creates the chart once, applies option changes (not a new chart per render),
// follows its container's size, and forwards the events a page asks for.
//
// ECharts (~680 KB of JavaScript) is imported on the first chart, not with the page: a page's code runs
// and sends its API requests while ECharts downloads and parses, instead of after (issue 12).
import { memo, useEffect, useRef, useState } from 'react';
import type { ECharts, EChartsOption } from './echarts';

let echartsModule: Promise<typeof import('./echarts')> | null = null;
const loadECharts = () => (echartsModule ??= import('./echarts'));

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
}

function EChartImpl({ option, height = 300, on, notMerge = true, ariaLabel, onReady, testId }: EChartProps) {
  const el = useRef<HTMLDivElement>(null);
  const [chart, setChart] = useState<ECharts | null>(null);
  const handlers = useRef(on);
  handlers.current = on;

  useEffect(() => {
    let disposed = false;
    let cleanup = () => {};
    void loadECharts().then(({ echarts }) => {
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
    chart?.setOption(option, { notMerge, lazyUpdate: true });
  }, [chart, option, notMerge]);

  const eventNames = Object.keys(on ?? {}).sort().join(',');
  useEffect(() => {
    if (!chart || !eventNames) return;
    const names = eventNames.split(',');
    for (const name of names) chart.on(name, (params: unknown) => handlers.current?.[name]?.(params, chart));
    return () => names.forEach((name) => chart.off(name));
  }, [chart, eventNames]);

  return <div ref={el} role="img" aria-label={ariaLabel} data-testid={testId} style={{ width: '100%', height }} />;
}

export const EChart = memo(EChartImpl);
