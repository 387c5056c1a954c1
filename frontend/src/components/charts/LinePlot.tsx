// The one uPlot host (the run's metric charts: MetricChart.tsx): creates the chart once its module is
// there, gives it new data and x window without making it again, follows its container's width, and
// offers "Download data" under it. uPlot is imported on the first chart, not with the page (router.tsx
// asks for it with the run page's first requests): a page's code runs while it downloads.
import { Text } from '@mantine/core';
import { memo, useEffect, useRef, useState } from 'react';
import type uPlot from 'uplot';
import { fileSlug, type DataTable } from '../../lib/tableExport';
import { ChartDownload } from './ChartDownload';

let module_: Promise<typeof import('./uplot')> | null = null;
/** uPlot's module, asked for once; a failed download (a release replaced the chunk, the network dropped)
 *  is forgotten, so the next chart asks again. */
const loadUPlot = () =>
  (module_ ??= import('./uplot').catch((e: unknown) => {
    module_ = null;
    throw e;
  }));

interface Props {
  /** the chart's options but its size: read once, when the chart is made (remount it to change them) */
  options: () => Omit<uPlot.Options, 'width' | 'height'>;
  data: uPlot.AlignedData;
  /** the x range to show; null: all of the data */
  xRange: [number, number] | null;
  height: number;
  ariaLabel: string;
  /** the table "Download data" writes */
  table: () => DataTable;
}

/** Gives `u` the data and the x window. */
function show(u: uPlot, data: uPlot.AlignedData, xRange: [number, number] | null) {
  u.batch(() => {
    u.setData(data, true);
    if (xRange) u.setScale('x', { min: xRange[0], max: xRange[1] });
  });
}

function LinePlotImpl({ options, data, xRange, height, ariaLabel, table }: Props) {
  const el = useRef<HTMLDivElement>(null);
  const chart = useRef<uPlot | null>(null);
  const [failed, setFailed] = useState(false);
  const latest = useRef({ options, data, xRange, height });
  latest.current = { options, data, xRange, height };

  useEffect(() => {
    let disposed = false;
    let cleanup = () => {};
    loadUPlot().then(({ uPlot: UPlot }) => {
      const host = el.current;
      if (disposed || !host) return;
      const { options: opts, data: d, xRange: w, height: h } = latest.current;
      const u = new UPlot({ ...opts(), width: Math.max(host.clientWidth, 100), height: h }, d, host);
      if (w) u.setScale('x', { min: w[0], max: w[1] });
      chart.current = u;
      const resize = new ResizeObserver(() => {
        const width = Math.max(host.clientWidth, 100);
        if (width !== u.width) u.setSize({ width, height: latest.current.height });
      });
      resize.observe(host);
      cleanup = () => {
        resize.disconnect();
        chart.current = null;
        u.destroy();
      };
    }, () => !disposed && setFailed(true));
    return () => {
      disposed = true;
      cleanup();
    };
  }, []);

  // new data or another window, once the chart exists (its first ones are given as it is made)
  useEffect(() => {
    if (chart.current) show(chart.current, data, xRange);
  }, [data, xRange]);

  useEffect(() => {
    const u = chart.current;
    if (u && u.height !== height) u.setSize({ width: u.width, height });
  }, [height]);

  if (failed) return <Text c="red" size="sm">The chart's code did not load: reload the page to draw it.</Text>;
  return (
    <div>
      <div ref={el} role="img" aria-label={ariaLabel} style={{ width: '100%', minHeight: height, position: 'relative' }} />
      <ChartDownload table={table} filename={fileSlug(ariaLabel)} label={ariaLabel} />
    </div>
  );
}

export const LinePlot = memo(LinePlotImpl);
