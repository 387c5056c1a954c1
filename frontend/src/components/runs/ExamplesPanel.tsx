// The run page's Examples tab: a run's per-example tables (a Skill-Mix grading, a CARMA synonym flip, a
// prediction per row), paged from the server, and a diff against another run on the examples' keys:
// only the items that changed (or that one run lacks), both runs' rows side by side. The other run is
// picked among the experiment's runs that hold the same table, or typed (a run of another experiment).
import { Alert, Badge, Button, Group, Paper, SegmentedControl, Select, SimpleGrid, Stack, Table, Text, TextInput } from '@mantine/core';
import { useEffect, useState } from 'react';
import { Link } from 'react-router';
import { errorMessage } from '../../api/errors';
import type { ExampleDiff, ExamplePeer, ExampleRow, ExampleTable } from '../../api/types';
import { useExampleDiff, useExamplePeers, useExampleRows, useExampleTables } from '../../hooks/examples';
import { cellText, diffFields, exampleColumns, parseRunId } from '../../lib/examples';
import { runTitle } from '../../lib/labels';

export function ExampleRowsTable({ rows }: { rows: ExampleRow[] }) {
  const columns = exampleColumns(rows);
  return (
    <Table.ScrollContainer minWidth={600}>
      <Table striped withTableBorder data-testid="example-rows">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>#</Table.Th>
            <Table.Th>key</Table.Th>
            {columns.map((c) => (
              <Table.Th key={c}>{c}</Table.Th>
            ))}
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {rows.map((row) => (
            <Table.Tr key={row.idx} data-testid="example-row" data-key={row.key}>
              <Table.Td>{row.idx}</Table.Td>
              <Table.Td>{row.key}</Table.Td>
              {columns.map((c) => (
                <Table.Td key={c} title={cellText(row.data[c], 5000)}>
                  {cellText(row.data[c])}
                </Table.Td>
              ))}
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Table.ScrollContainer>
  );
}

const CHANGE_LABEL: Record<ExampleDiff['change'], string> = {
  changed: 'changed',
  only_run: 'only in this run',
  only_other: 'only in the other run',
};

function Side({ title, row, changed }: { title: string; row: ExampleRow | null | undefined; changed: Set<string> }) {
  if (!row) {
    return (
      <Stack gap={2}>
        <Text size="xs" fw={600}>{title}</Text>
        <Text size="sm" c="dimmed">not in this run</Text>
      </Stack>
    );
  }
  return (
    <Stack gap={2}>
      <Text size="xs" fw={600}>{title} · row {row.idx}</Text>
      {Object.entries(row.data).map(([field, value]) => (
        <Text key={field} size="sm" c={changed.has(field) ? 'orange' : undefined} data-field={field} data-changed={changed.has(field) || undefined}>
          <b>{field}</b>: {cellText(value, 2000)}
        </Text>
      ))}
    </Stack>
  );
}

export function ExampleDiffList({ items, runId, otherId }: { items: ExampleDiff[]; runId: number; otherId: number }) {
  return (
    <Stack gap="sm" data-testid="example-diff">
      {items.map((d) => {
        const changed = new Set(diffFields(d.run?.data, d.other?.data).filter((f) => f.changed).map((f) => f.field));
        return (
          <Paper key={d.key} withBorder p="sm" data-testid="example-diff-item" data-key={d.key}>
            <Group gap="xs" mb="xs">
              <Text fw={600}>{d.key}</Text>
              <Badge variant="light" color={d.change === 'changed' ? 'orange' : 'gray'}>{CHANGE_LABEL[d.change]}</Badge>
            </Group>
            <SimpleGrid cols={2}>
              <div data-testid="diff-run">
                <Side title={`run ${runId}`} row={d.run} changed={changed} />
              </div>
              <div data-testid="diff-other">
                <Side title={`run ${otherId}`} row={d.other} changed={changed} />
              </div>
            </SimpleGrid>
          </Paper>
        );
      })}
    </Stack>
  );
}

/** The rows filter: the query language over idx, key and data.<path>, applied 400 ms after the last key
 * (or at once on Enter); the server's 422 (with its position) shows under the box. */
function RowsFilter({ value, onChange, error }: { value: string; onChange: (q: string) => void; error: string | null }) {
  const [text, setText] = useState(value);
  useEffect(() => {
    if (text === value) return undefined;
    const t = setTimeout(() => onChange(text), 400);
    return () => clearTimeout(t);
  }, [text, value, onChange]);
  return (
    <TextInput
      size="xs"
      label="Filter rows"
      placeholder='data.correct = false and data.topic contains "sport"'
      description="The query language (docs/api.md): idx, key, data.<field>"
      value={text}
      onChange={(e) => setText(e.currentTarget.value)}
      onKeyDown={(e) => {
        if (e.key === 'Enter') onChange(text);
      }}
      error={error}
      data-testid="example-filter"
    />
  );
}

function Rows({ runId, table, total }: { runId: number; table: string; total: number }) {
  const [filter, setFilter] = useState('');
  const q = useExampleRows(runId, table, filter);
  const box = <RowsFilter value={filter} onChange={setFilter} error={q.error ? errorMessage(q.error) : null} />;
  if (q.error) return <Stack gap="xs">{box}</Stack>;
  if (q.isPending) return <Stack gap="xs">{box}<Text c="dimmed" size="sm">Loading rows…</Text></Stack>;
  const rows = q.data.pages.flatMap((p) => p.items);
  return (
    <Stack gap="xs">
      {box}
      <Text size="sm" c="dimmed" data-testid="example-count">
        {filter.trim()
          ? `${rows.length.toLocaleString()}${q.hasNextPage ? '+' : ''} matching rows of ${total.toLocaleString()}`
          : `${rows.length.toLocaleString()} of ${total.toLocaleString()} rows`}
      </Text>
      <ExampleRowsTable rows={rows} />
      {q.hasNextPage && (
        <Button variant="default" loading={q.isFetchingNextPage} onClick={() => void q.fetchNextPage()} data-testid="example-more">
          Load more
        </Button>
      )}
    </Stack>
  );
}

function Diff({ runId, table, other }: { runId: number; table: string; other: number }) {
  const q = useExampleDiff(runId, other, table);
  if (q.error) return <Alert color="red" data-testid="example-diff-error">{errorMessage(q.error)}</Alert>;
  if (q.isPending) return <Text c="dimmed" size="sm">Comparing…</Text>;
  const items = q.data.pages.flatMap((p) => p.items);
  const scanned = q.data.pages.reduce((n, p) => n + p.scanned, 0);
  return (
    <Stack gap="xs">
      <Text size="sm" c="dimmed" data-testid="example-diff-count">
        {items.length.toLocaleString()} item{items.length === 1 ? '' : 's'} differ ({scanned.toLocaleString()} rows compared
        {q.hasNextPage ? ' so far' : ''}) against <Link to={`/runs/${other}`}>run {other}</Link>
      </Text>
      {items.length > 0 && <ExampleDiffList items={items} runId={runId} otherId={other} />}
      {q.hasNextPage && (
        <Button variant="default" loading={q.isFetchingNextPage} onClick={() => void q.fetchNextPage()} data-testid="example-diff-more">
          Compare more
        </Button>
      )}
    </Stack>
  );
}

/** A peer as the picker lists it: its name and id, its number in the experiment, its status and rows. */
export function peerLabel(peer: ExamplePeer): string {
  return `${runTitle(peer)} · #${peer.index + 1} · ${peer.status} · ${peer.rows.toLocaleString()} rows`;
}

/** The diff's other run: a select of the experiment's other runs that hold the table (``peers``; undefined
 * while they load), or a run id typed for a run of another experiment. ``other``: the run compared now. */
export function DiffPicker({
  table,
  peers,
  other,
  onCompare,
}: {
  table: string;
  peers: ExamplePeer[] | undefined;
  other: number | null;
  onCompare: (id: number) => void;
}) {
  const [otherText, setOtherText] = useState('');
  const typed = parseRunId(otherText);
  const listed = peers?.some((p) => p.id === other) ? String(other) : null;
  return (
    <Group align="flex-end" gap="xs">
      {peers === undefined ? (
        <Text size="sm" c="dimmed">Loading this experiment&apos;s runs…</Text>
      ) : peers.length > 0 ? (
        <Select
          label="Run of this experiment"
          placeholder={`${peers.length} run${peers.length === 1 ? '' : 's'} with ${table}`}
          data={peers.map((p) => ({ value: String(p.id), label: peerLabel(p) }))}
          value={listed}
          onChange={(v) => v && onCompare(Number(v))}
          searchable
          allowDeselect={false}
          nothingFoundMessage="No such run"
          miw={320}
          data-testid="example-peer"
        />
      ) : (
        <Text size="sm" c="dimmed" data-testid="example-no-peers">No other run of this experiment has {table}.</Text>
      )}
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (typed !== null) onCompare(typed);
        }}
      >
        <Group align="flex-end" gap="xs">
          <TextInput
            label="Or a run id"
            description="a run of another experiment"
            placeholder="run id"
            value={otherText}
            onChange={(e) => setOtherText(e.currentTarget.value)}
            error={otherText && typed === null ? 'a run id' : undefined}
            data-testid="example-other"
          />
          <Button type="submit" disabled={typed === null} data-testid="example-compare">
            Compare
          </Button>
        </Group>
      </form>
    </Group>
  );
}

export function ExamplesPanel({ runId, live }: { runId: number; live: boolean }) {
  const tables = useExampleTables(runId, live);
  const [table, setTable] = useState<string | null>(null);
  const [mode, setMode] = useState<'rows' | 'diff'>('rows');
  const [other, setOther] = useState<number | null>(null);
  const list: ExampleTable[] = tables.data ?? [];
  const current = list.find((t) => t.name === table) ?? list[0];
  const peers = useExamplePeers(runId, current?.name ?? null, mode === 'diff');
  useEffect(() => {
    const first = list[0];
    if (table === null && first) setTable(first.name);
  }, [table, list]);
  if (tables.error) return <Alert color="red">{errorMessage(tables.error)}</Alert>;
  if (tables.isPending) return <Text c="dimmed" size="sm">Loading tables…</Text>;
  if (!current) return <Text c="dimmed">No per-example tables{live ? ' yet' : ''}.</Text>;
  return (
    <Stack>
      <Group align="flex-end">
        <Select
          label="Table"
          data={list.map((t) => ({ value: t.name, label: `${t.name} (${t.rows.toLocaleString()} rows)` }))}
          value={current.name}
          onChange={(v) => v && setTable(v)}
          allowDeselect={false}
          data-testid="example-table"
        />
        <SegmentedControl
          value={mode}
          onChange={(v) => setMode(v as 'rows' | 'diff')}
          data={[
            { value: 'rows', label: 'Rows' },
            { value: 'diff', label: 'Diff with another run' },
          ]}
          data-testid="example-mode"
        />
      </Group>
      {mode === 'diff' && peers.error && <Alert color="red">{errorMessage(peers.error)}</Alert>}
      {mode === 'diff' && (
        <DiffPicker table={current.name} peers={peers.error ? [] : peers.data} other={other} onCompare={setOther} />
      )}
      {mode === 'rows' && <Rows runId={runId} table={current.name} total={current.rows} />}
      {mode === 'diff' && other !== null && <Diff runId={runId} table={current.name} other={other} />}
      {mode === 'diff' && other === null && <Text c="dimmed" size="sm">Choose a run to compare this table with.</Text>}
    </Stack>
  );
}
