// The one ECharts host: creates the chart once, applies option changes (not a new chart per render),
// follows its container's size, and forwards the events a page asks for.
import { memo, useEffect, useRef } from 'react';
import { echarts, type ECharts, type EChartsOption } from './echarts';

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
  const chart = useRef<ECharts | null>(null);
  const handlers = useRef(on);
  handlers.current = on;

  useEffect(() => {
    const c = echarts.init(el.current!, undefined, { renderer: 'canvas' });
    chart.current = c;
    const resize = new ResizeObserver(() => c.resize());
    resize.observe(el.current!);
    onReady?.(c);
    return () => {
      resize.disconnect();
      c.dispose();
      chart.current = null;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  useEffect(() => {
    chart.current?.setOption(option, { notMerge, lazyUpdate: true });
  }, [option, notMerge]);

  const eventNames = Object.keys(on ?? {}).sort().join(',');
  useEffect(() => {
    const c = chart.current;
    if (!c || !eventNames) return;
    const names = eventNames.split(',');
    for (const name of names) c.on(name, (params: unknown) => handlers.current?.[name]?.(params, c));
    return () => names.forEach((name) => c.off(name));
  }, [eventNames]);

  return <div ref={el} role="img" aria-label={ariaLabel} data-testid={testId} style={{ width: '100%', height }} />;
}

export const EChart = memo(EChartImpl);
