// The run page's Metrics tab: a search box over the keys, then one collapsible section per key prefix
// (lib/metricPanels.ts groupMetricKeys: `loss` in general, `moe/load/e0` in moe, the worker's system/*
// last), each a grid of charts with their own options, kept in the page's URL (`charts`, hooks/views.ts
// useUrlChartOptions): a reload or a link draws them alike. A collapsed section draws (and fetches) nothing.
import { ActionIcon, CloseButton, Group, Paper, SimpleGrid, Stack, Text, TextInput, UnstyledButton } from '@mantine/core';
import { memo, useMemo, useState } from 'react';
import { useUrlChartOptions } from '../../hooks/views';
import { groupMetricKeys, SYSTEM_SECTION, type ChartOptions } from '../../lib/metricPanels';
import { ChartOptionsBar, ChartOptionsButton, isDefault } from './ChartOptionsMenu';
import { RunMetricChart } from './RunMetricChart';

interface Props {
  runId: number;
  keys: readonly string[];
  /** latest step per key from the run's event stream */
  steps: Record<string, number>;
  startedAt?: string | null;
}

const MetricPanel = memo(function MetricPanel({ runId, metricKey, latestStep, startedAt, options, setOptions }: {
  runId: number;
  metricKey: string;
  latestStep: number;
  startedAt?: string | null;
  options: ChartOptions;
  setOptions: (metric: string, options: ChartOptions) => void;
}) {
  const [showOptions, setShowOptions] = useState(false);
  return (
    <Paper withBorder p="xs" pos="relative" data-testid={`metric-panel-${metricKey}`}>
      <div style={{ position: 'absolute', top: 6, right: 6, zIndex: 2 }}>
        <ChartOptionsButton metricKey={metricKey} open={showOptions} changed={!isDefault(options)} onToggle={() => setShowOptions((o) => !o)} />
      </div>
      {showOptions && <ChartOptionsBar metricKey={metricKey} options={options} onChange={(o) => setOptions(metricKey, o)} />}
      {/* a new x axis starts unzoomed: the zoom window of one axis means nothing on another */}
      <RunMetricChart key={options.xAxis} runId={runId} metricKey={metricKey} latestStep={latestStep} options={options} startedAt={startedAt} />
    </Paper>
  );
});

export function MetricPanels({ runId, keys, steps, startedAt }: Props) {
  const [search, setSearch] = useState('');
  const [collapsed, setCollapsed] = useState<Record<string, boolean>>({});
  const { optionsOf, setOptions } = useUrlChartOptions();
  const sections = useMemo(() => groupMetricKeys(keys, search), [keys, search]);
  const shown = sections.reduce((n, s) => n + s.keys.length, 0);
  const toggle = (name: string) => setCollapsed((c) => ({ ...c, [name]: !c[name] }));
  return (
    <Stack gap="sm">
      <Group gap="sm">
        <TextInput
          placeholder="Search metric keys (e.g. load l0)"
          value={search}
          onChange={(e) => setSearch(e.currentTarget.value)}
          rightSection={search ? <CloseButton aria-label="clear the search" size="sm" onClick={() => setSearch('')} /> : null}
          w={320}
          aria-label="search metric keys"
          data-testid="metric-search"
        />
        <Text size="sm" c="dimmed" data-testid="metric-count">
          {search ? `${shown} of ${new Set(keys).size} keys` : `${shown} keys`} in {sections.length} section{sections.length === 1 ? '' : 's'}
        </Text>
      </Group>
      {sections.length === 0 && <Text c="dimmed">No metric key matches “{search}”.</Text>}
      {sections.map((section) => {
        const open = !collapsed[section.name];
        return (
          <Stack key={section.name} gap="xs" data-testid={`metric-section-${section.name}`} data-open={open ? 'true' : 'false'}>
            <UnstyledButton onClick={() => toggle(section.name)} aria-expanded={open} data-testid={`metric-section-toggle-${section.name}`}>
              <Group gap={6}>
                <ActionIcon component="span" variant="subtle" size="sm" aria-hidden>
                  {open ? '▾' : '▸'}
                </ActionIcon>
                <Text fw={600}>{section.name === SYSTEM_SECTION ? 'system (CPU, memory, GPU)' : section.name}</Text>
                <Text size="sm" c="dimmed">{section.keys.length}</Text>
              </Group>
            </UnstyledButton>
            {open && (
              <SimpleGrid cols={{ base: 1, lg: section.keys.length > 1 ? 2 : 1 }}>
                {section.keys.map((k) => (
                  <MetricPanel
                    key={k}
                    runId={runId}
                    metricKey={k}
                    latestStep={steps[k] ?? -1}
                    startedAt={startedAt}
                    options={optionsOf(k)}
                    setOptions={setOptions}
                  />
                ))}
              </SimpleGrid>
            )}
          </Stack>
        );
      })}
    </Stack>
  );
}
