// A chart's options, opened by a small button in its corner and shown inline above the chart: log
// scale, smoothing (EMA weight), x axis (step, wall time, time since the run started; a system metric:
// time since the run was created, wall time). The options live in the page's URL (hooks/views.ts
// useUrlChartOptions): the smoothing slider shows its value at once and writes the URL once it rests.
import { ActionIcon, Group, SegmentedControl, Slider, Switch, Text } from '@mantine/core';
import { useDebouncedCallback } from '@mantine/hooks';
import { useEffect, useRef, useState } from 'react';
import { MAX_SMOOTHING, xAxisChoices, type ChartOptions, type XAxisMode } from '../../lib/metricPanels';

/** Milliseconds the smoothing slider rests before its value goes to the chart (and the URL). */
export const SMOOTHING_SETTLE_MS = 150;

export function isDefault(options: ChartOptions): boolean {
  return !options.logScale && options.smoothing === 0 && options.xAxis === 'step';
}

/** The corner button that shows or hides a chart's options. */
export function ChartOptionsButton({ metricKey, open, changed, onToggle }: { metricKey: string; open: boolean; changed: boolean; onToggle: () => void }) {
  return (
    <ActionIcon
      variant={open || changed ? 'light' : 'subtle'}
      size="sm"
      onClick={onToggle}
      aria-label={`chart options of ${metricKey}`}
      aria-expanded={open}
      data-testid={`chart-options-${metricKey}`}
    >
      {/* three sliders: the options are settings */}
      <svg width="14" height="14" viewBox="0 0 16 16" fill="none" stroke="currentColor" strokeWidth="1.6" aria-hidden>
        <path d="M2 4h12M2 8h12M2 12h12" />
        <circle cx="5" cy="4" r="1.6" fill="white" />
        <circle cx="11" cy="8" r="1.6" fill="white" />
        <circle cx="7" cy="12" r="1.6" fill="white" />
      </svg>
    </ActionIcon>
  );
}

/** The options row itself; `xAxis={false}`: a chart drawn over steps only (the runs overlay) offers no x axis. */
export function ChartOptionsBar({ metricKey, options, onChange, xAxis = true }: { metricKey: string; options: ChartOptions; onChange: (options: ChartOptions) => void; xAxis?: boolean }) {
  // the slider's value while it moves: a key held down or a drag writes the URL once, not at every step
  const [moving, setMoving] = useState<number | null>(null);
  const latest = useRef(options);
  latest.current = options;
  const settle = useDebouncedCallback((smoothing: number) => onChange({ ...latest.current, smoothing }), SMOOTHING_SETTLE_MS);
  useEffect(() => {
    if (moving !== null && Math.abs(options.smoothing - moving) < 0.005) setMoving(null);
  }, [options.smoothing, moving]);
  const smoothing = moving ?? options.smoothing;
  return (
    <Group gap="md" wrap="wrap" pr={32} pb={4} data-testid={`chart-options-panel-${metricKey}`}>
      <Switch
        size="xs"
        label="Log scale"
        checked={options.logScale}
        onChange={(e) => onChange({ ...options, logScale: e.currentTarget.checked })}
        data-testid="option-log-scale"
      />
      <Group gap={6} wrap="nowrap">
        <Text size="xs">Smoothing {smoothing.toFixed(2)}</Text>
        <Slider
          w={110}
          size="xs"
          min={0}
          max={MAX_SMOOTHING}
          step={0.01}
          value={smoothing}
          onChange={(v) => {
            setMoving(v);
            settle(v);
          }}
          label={(v) => v.toFixed(2)}
          thumbLabel="smoothing"
          data-testid="option-smoothing"
        />
      </Group>
      {xAxis && (
        <SegmentedControl
          size="xs"
          data={xAxisChoices(metricKey)}
          value={options.xAxis}
          onChange={(v) => onChange({ ...options, xAxis: v as XAxisMode })}
          data-testid="option-x-axis"
        />
      )}
    </Group>
  );
}
