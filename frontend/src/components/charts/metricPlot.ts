// The uPlot options of a run's metric chart (MetricChart.tsx): the min/max band under the last-value line
// (the raw values faint under a smoothed line), axes labelled without Intl, a tooltip, dashed marks where
// NaN or infinities were logged, and the zoom gestures (drag a window, the wheel about the pointer, a
// double click for all of it) reported as a zoom of the run's extent, which the caller owns. Plain options
// and hooks, no React: lib/metricPanels.test.ts and lib/metricFrame.test.ts build them without a browser.
import type uPlot from 'uplot';
import { formatValue } from '../../lib/dotted';
import { type MetricFrame, tickLabel, wheelFactor, wheelWindow, zoomOfWindow } from '../../lib/metricFrame';
import { formatSeconds, isSystemKey, xAxisName, type ChartOptions } from '../../lib/metricPanels';
import { isoDateTime } from '../../lib/plainFormat';

/** Up to this many points a series draws its point markers. */
export const FEW_POINTS = 60;
const BLUE = '#1c7ed6';
const BAND = 'rgba(34, 139, 230, 0.18)';
const MARK = '#e8590c';
const AXIS = { stroke: '#495057', font: '11px system-ui, sans-serif', labelFont: '12px system-ui, sans-serif', grid: { stroke: '#e9ecef', width: 1 }, ticks: { stroke: '#dee2e6', width: 1, size: 4 } };
/** The series' order in the data (MetricChart's columns): x, the band's max and min, raw, the line. */
export const SERIES = { upper: 1, lower: 2, raw: 3, line: 4 } as const;

/** Tick distances of an axis in seconds: a clock's (1, 5, 15, 30 s, 1, 5, 15, 30 min, 1, 3, 6, 12 h, days). */
export const SECONDS_INCRS = [0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800];

/** Tick distances of a step axis: whole steps (1, 2, 5 x 10^k), never a half step. */
export const STEP_INCRS = Array.from({ length: 16 }, (_, k) => [1, 2, 5].map((m) => m * 10 ** k)).flat();

/** What the chart's hooks read as it changes (the frame drawn now) and tell (a zoom). */
export interface MetricPlotContext {
  frame: () => MetricFrame;
  onZoom: (zoom: { start: number; end: number }) => void;
}

/** How x reads in ticks and in the tooltip: a step, seconds (a system metric's step, relative time), a date. */
export function xFormat(key: string, mode: ChartOptions['xAxis']): (x: number, incr: number) => string {
  if (mode === 'time') return (x) => isoDateTime(x);
  if (mode === 'relative' || isSystemKey(key)) return secondsLabel;
  return (x, incr) => tickLabel(x, incr);
}

/** Seconds as a clock reads them (`12m 5s`, `3h 20m`), with what ticks `incr` apart need: the fraction of
 *  a second under a second apart, the seconds past an hour under a minute apart (formatSeconds rounds both
 *  away, so two ticks read alike). */
export function secondsLabel(x: number, incr: number): string {
  if (incr > 0 && incr < 1) return `${tickLabel(x, incr)}s`;
  if (incr > 0 && incr < 60 && Math.abs(x) >= 3600) {
    const t = Math.round(Math.abs(x));
    return `${x < 0 ? '-' : ''}${Math.floor(t / 3600)}h ${Math.floor((t % 3600) / 60)}m ${t % 60}s`;
  }
  return formatSeconds(x);
}

/** The width of a y axis that fits its longest label (uPlot's default is fixed). */
function axisWidth(_u: uPlot, values: string[] | null): number {
  const longest = values ? Math.max(0, ...values.map((v) => v.length)) : 0;
  return Math.max(36, 12 + 6.5 * longest);
}

/** A y range with a margin, not pulled to zero (the line's own scale). */
export function yRange(min: number | null, max: number | null): [number | null, number | null] {
  if (min === null || max === null || !Number.isFinite(min) || !Number.isFinite(max)) return [min, max];
  const pad = max > min ? (max - min) * 0.08 : Math.abs(max) * 0.1 || 1;
  return [min - pad, max + pad];
}

/** The tooltip: what the line (and under it the raw value and the band) holds at the pointer's bucket. */
function tooltip(key: string, ctx: MetricPlotContext, fmtX: (x: number, incr: number) => string, xName: string): uPlot.Plugin {
  let box: HTMLDivElement | null = null;
  const line = (text: string, strong = false) => {
    const div = document.createElement('div');
    div.textContent = text; // names are the user's: text, never markup
    if (strong) div.style.fontWeight = '600';
    return div;
  };
  return {
    hooks: {
      init: (u) => {
        box = document.createElement('div');
        box.dataset.testid = 'chart-tooltip';
        Object.assign(box.style, {
          position: 'absolute', pointerEvents: 'none', display: 'none', zIndex: '2', padding: '4px 8px', font: '12px system-ui, sans-serif',
          background: 'rgba(255,255,255,0.95)', border: '1px solid #ced4da', borderRadius: '4px', maxWidth: '60%', overflowWrap: 'anywhere',
        });
        u.over.appendChild(box);
      },
      setCursor: (u) => {
        if (!box) return;
        const i = u.cursor.idx;
        const f = ctx.frame();
        const y = i === null || i === undefined ? undefined : f.line[i];
        if (i === null || i === undefined || (y === undefined && f.raw[i] === undefined)) {
          box.style.display = 'none';
          return;
        }
        const x = f.xs[i]!;
        // a NaN or an infinity (null: the line's gap) by its name; a value the axis cannot draw as "not drawn"
        const odd = y === null ? f.nonfinite.find((m) => m.x === x)?.label : undefined;
        const shown = y === null ? (odd ?? 'NaN/inf') : y === undefined ? 'not drawn' : formatValue(y);
        // the exact x (ticks 1 apart): a step as a whole number, seconds to the second
        const rows = [line(`${xName} ${fmtX(x, 1)}`), line(`${key}: ${shown}`, true)];
        const raw = f.raw[i];
        if (raw !== undefined && raw !== null) rows.push(line(`raw: ${formatValue(raw)}`));
        const lo = f.lower[i];
        const hi = f.upper[i];
        if (f.hasBand && typeof lo === 'number' && typeof hi === 'number' && hi > lo) rows.push(line(`min–max: ${formatValue(lo)} – ${formatValue(hi)}`));
        box.replaceChildren(...rows);
        box.style.display = 'block';
        const left = u.cursor.left ?? 0;
        const flip = left > u.over.clientWidth / 2;
        box.style.left = flip ? '' : `${left + 12}px`;
        box.style.right = flip ? `${u.over.clientWidth - left + 12}px` : '';
        box.style.top = `${Math.max(0, (u.cursor.top ?? 0) - 40)}px`;
      },
    },
  };
}

/** A dashed vertical line, labelled, at each bucket holding NaN or infinite values ("NaN", "Infinity"). */
function nonfiniteMarks(ctx: MetricPlotContext): uPlot.Plugin {
  return {
    hooks: {
      draw: (u) => {
        const marks = ctx.frame().nonfinite;
        if (marks.length === 0) return;
        const c = u.ctx;
        const { left, top, width, height } = u.bbox;
        const ratio = typeof devicePixelRatio === 'number' ? devicePixelRatio : 1;
        c.save();
        c.strokeStyle = MARK;
        c.fillStyle = MARK;
        c.lineWidth = ratio;
        c.setLineDash([4 * ratio, 3 * ratio]);
        c.font = `${10 * ratio}px system-ui, sans-serif`;
        c.textBaseline = 'top';
        for (const m of marks) {
          const x = Math.round(u.valToPos(m.x, 'x', true));
          if (x < left || x > left + width) continue;
          c.beginPath();
          c.moveTo(x, top);
          c.lineTo(x, top + height);
          c.stroke();
          c.fillText(m.label, x + 3 * ratio, top + 2 * ratio);
        }
        c.restore();
      },
    },
  };
}

/** The zoom gestures, as zooms of the frame's extent: a dragged window, the wheel about the pointer (a
 *  step zooms by 1.25x), a double click back to all of it. */
function zoomGestures(ctx: MetricPlotContext): uPlot.Plugin {
  return {
    hooks: {
      setSelect: (u) => {
        const { left, width } = u.select;
        if (width > 2) {
          const z = zoomOfWindow(ctx.frame().extent, u.posToVal(left, 'x'), u.posToVal(left + width, 'x'));
          if (z) ctx.onZoom(z);
        }
        u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
      },
      ready: (u) => {
        u.over.addEventListener(
          'wheel',
          (e) => {
            const extent = ctx.frame().extent;
            const { min, max } = u.scales.x ?? {};
            const factor = wheelFactor(e.deltaY, e.deltaMode);
            if (!extent || min === undefined || max === undefined || factor === 1) return;
            const at = u.posToVal(e.offsetX, 'x');
            const [a, b] = wheelWindow([min, max], extent, at, factor);
            if (a === min && b === max) return; // all of it shown already: the page scrolls on
            e.preventDefault();
            const z = zoomOfWindow(extent, a, b);
            if (z) ctx.onZoom(z);
          },
          { passive: false },
        );
      },
    },
  };
}

/** The chart's uPlot options but its size. */
export function metricPlotOptions(key: string, options: ChartOptions, ctx: MetricPlotContext): Omit<uPlot.Options, 'width' | 'height'> {
  const fmtX = xFormat(key, options.xAxis);
  const xName = xAxisName(key, options.xAxis);
  const seconds = options.xAxis === 'relative' || (options.xAxis === 'step' && isSystemKey(key));
  const few = () => ctx.frame().line.filter((y) => typeof y === 'number').length <= FEW_POINTS;
  return {
    ms: 1, // time in epoch ms, as the buckets give it
    legend: { show: false },
    cursor: {
      y: false,
      points: { show: false },
      drag: { x: true, y: false, setScale: false },
      bind: {
        dblclick: () => () => {
          ctx.onZoom({ start: 0, end: 100 });
          return null;
        },
      },
    },
    scales: {
      x: { time: options.xAxis === 'time' },
      y: options.logScale ? { distr: 3, log: 10 } : { range: (_u, min, max) => yRange(min, max) },
    },
    axes: [
      {
        ...AXIS,
        label: xName,
        size: 32,
        labelSize: 16,
        labelGap: 0,
        ...(options.xAxis === 'time' ? {} : { values: (_u: uPlot, splits: number[], _i: number, _s: number, incr: number) => splits.map((v) => fmtX(v, incr)) }),
        ...(seconds ? { incrs: SECONDS_INCRS } : options.xAxis === 'step' ? { incrs: STEP_INCRS } : {}),
      },
      {
        ...AXIS,
        size: axisWidth,
        values: (_u: uPlot, splits: number[], _i: number, _s: number, incr: number) => splits.map((v) => tickLabel(v, options.logScale ? v : incr)),
      },
    ],
    series: [
      {},
      { label: 'max', stroke: 'transparent', width: 0, points: { show: false } },
      { label: 'min', stroke: 'transparent', width: 0, points: { show: false } },
      { label: 'raw', stroke: BLUE, alpha: 0.3, width: 1, points: { show: false } },
      { label: key, stroke: BLUE, width: 1.5, points: { show: few, size: 4, fill: BLUE, stroke: BLUE } },
    ],
    bands: [{ series: [SERIES.upper, SERIES.lower], fill: BAND }],
    plugins: [tooltip(key, ctx, fmtX, xName), nonfiniteMarks(ctx), zoomGestures(ctx)],
  };
}

/** The frame as uPlot's columns, in SERIES' order. */
export function plotData(f: MetricFrame): uPlot.AlignedData {
  return [f.xs, f.upper, f.lower, f.raw, f.line];
}
