// The run page's Examples tab: a run's per-example tables (a Skill-Mix grading, a CARMA synonym flip, a
// prediction per row), paged from the server, and a diff against another run on the examples' keys:
// only the items that changed (or that one run lacks), both runs' rows side by side. The other run is
// picked among the experiment's runs that hold the same table, or typed (a run of another experiment).
// What "changed" means is the diff's rule (the fields that count, a tolerance for numbers), kept per table
// in the URL and in localStorage (lib/exampleDiff.ts); the table, mode and other run live in the URL too.
// Long values are folded and wrap in their column (FoldedValue): the page never grows wider than the window.
import { Alert, Badge, Button, Group, Paper, SegmentedControl, Select, SimpleGrid, Stack, Table, Text, TextInput } from '@mantine/core';
import { useCallback, useEffect, useMemo, useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import { errorMessage } from '../../api/errors';
import type { ExampleDiff, ExamplePeer, ExampleRow, ExampleTable } from '../../api/types';
import { useExampleDiff, useExamplePeers, useExampleRows, useExampleTables } from '../../hooks/examples';
import { DIFF_FIELD, RULE_PARAMS, currentRule, ruleSummary, saveRule, writeRule, type DiffRule } from '../../lib/exampleDiff';
import { cellText, diffFields, exampleColumns, parseRunId } from '../../lib/examples';
import { runTitle } from '../../lib/labels';
import { DiffRuleControls } from './DiffRuleControls';
import { FoldedValue, WRAP_ANYWHERE } from './FoldedValue';
import { AddToReport } from '../reports/AddToReport';
import { formatCount } from '../../lib/plainFormat';

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
                <Table.Td key={c} title={cellText(row.data[c], 5000)} style={{ ...WRAP_ANYWHERE, maxWidth: 480, verticalAlign: 'top' }}>
                  <FoldedValue value={row.data[c]} />
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

function Side({ title, row, marks }: { title: string; row: ExampleRow | null | undefined; marks: Map<string, { differs: boolean; counts: boolean }> }) {
  if (!row) {
    return (
      <Stack gap={2}>
        <Text size="xs" fw={600}>{title}</Text>
        <Text size="sm" c="dimmed">not in this run</Text>
      </Stack>
    );
  }
  return (
    <Stack gap={2} style={{ minWidth: 0 }}>
      <Text size="xs" fw={600}>{title} · row {row.idx}</Text>
      {Object.entries(row.data).map(([field, value]) => {
        const mark = marks.get(field);
        return (
          <Text
            key={field}
            component="div"
            size="sm"
            style={WRAP_ANYWHERE}
            c={mark?.counts ? 'orange' : undefined}
            fs={mark?.differs && !mark.counts ? 'italic' : undefined}
            title={mark?.differs && !mark.counts ? 'differs, but is not one of the fields that define a change' : undefined}
            data-field={field}
            data-changed={mark?.counts || undefined}
            data-differs={mark?.differs || undefined}
          >
            <b>{field}</b>: <FoldedValue value={value} />
          </Text>
        );
      })}
    </Stack>
  );
}

/** The diff's items; ``compared``: the rule's fields (empty: every field counts). */
export function ExampleDiffList({ items, runId, otherId, compared = [] }: { items: ExampleDiff[]; runId: number; otherId: number; compared?: string[] }) {
  return (
    <Stack gap="sm" data-testid="example-diff">
      {items.map((d) => {
        const marks = new Map(diffFields(d.run?.data, d.other?.data, d.differing ?? [], compared).map((m) => [m.field, m]));
        return (
          <Paper key={d.key} withBorder p="sm" data-testid="example-diff-item" data-key={d.key} data-change={d.change}>
            <Group gap="xs" mb="xs">
              <Text fw={600}>{d.key}</Text>
              <Badge variant="light" color={d.change === 'changed' ? 'orange' : 'gray'}>{CHANGE_LABEL[d.change]}</Badge>
            </Group>
            <SimpleGrid cols={2}>
              <div data-testid="diff-run" style={{ minWidth: 0 }}>
                <Side title={`run ${runId}`} row={d.run} marks={marks} />
              </div>
              <div data-testid="diff-other" style={{ minWidth: 0 }}>
                <Side title={`run ${otherId}`} row={d.other} marks={marks} />
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
          ? `${formatCount(rows.length)}${q.hasNextPage ? '+' : ''} matching rows of ${formatCount(total)}`
          : `${formatCount(rows.length)} of ${formatCount(total)} rows`}
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

function Diff({ runId, table, other, rule, onRule }: { runId: number; table: string; other: number; rule: DiffRule; onRule: (r: DiffRule) => void }) {
  const q = useExampleDiff(runId, other, table, rule);
  const firstRows = useExampleRows(runId, table); // the table's fields, from its first page (cached from the Rows view)
  const seen = q.data?.pages.flatMap((p) => p.items.flatMap((d) => [d.run, d.other].filter((r): r is ExampleRow => !!r))) ?? [];
  const fields = exampleColumns([...(firstRows.data?.pages[0]?.items ?? []), ...seen], 40).filter((f) => DIFF_FIELD.test(f));
  const controls = <DiffRuleControls rule={rule} fields={fields} onChange={onRule} />;
  if (q.error) return <Stack gap="xs">{controls}<Alert color="red" data-testid="example-diff-error">{errorMessage(q.error)}</Alert></Stack>;
  if (q.isPending) return <Stack gap="xs">{controls}<Text c="dimmed" size="sm">Comparing…</Text></Stack>;
  const items = q.data.pages.flatMap((p) => p.items);
  const scanned = q.data.pages.reduce((n, p) => n + p.scanned, 0);
  const changed = items.filter((d) => d.change === 'changed').length;
  return (
    <Stack gap="xs">
      {controls}
      <Text size="sm" c="dimmed" data-testid="example-diff-count" data-rule={ruleSummary(rule)} data-items={items.length} data-changed={changed}>
        {formatCount(items.length)} item{items.length === 1 ? '' : 's'} differ ({formatCount(changed)} changed in {ruleSummary(rule)};{' '}
        {formatCount(scanned)} rows compared{q.hasNextPage ? ' so far' : ''}) against <Link to={`/runs/${other}`}>run {other}</Link>
      </Text>
      {items.length > 0 && <ExampleDiffList items={items} runId={runId} otherId={other} compared={rule.fields} />}
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
  return `${runTitle(peer)} · #${peer.index + 1} · ${peer.status} · ${formatCount(peer.rows)} rows`;
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

/** The Examples tab's state in the run page's URL (lib/exampleDiff.ts lists its params), written in place. */
function useExamplesParams() {
  const [params, setParams] = useSearchParams();
  const update = useCallback(
    (change: (next: URLSearchParams) => URLSearchParams | void) =>
      setParams(
        (current) => {
          const next = new URLSearchParams(current);
          return change(next) ?? next;
        },
        // rendered in the same task (not a transition): a ticked box shows its state in the click that set it
        { replace: true, flushSync: true },
      ),
    [setParams],
  );
  return [params, update] as const;
}

export function ExamplesPanel({ runId, live }: { runId: number; live: boolean }) {
  const tables = useExampleTables(runId, live);
  const [params, update] = useExamplesParams();
  const mode = params.get('mode') === 'diff' ? 'diff' : 'rows';
  const other = parseRunId(params.get('other') ?? '');
  const list: ExampleTable[] = tables.data ?? [];
  const current = list.find((t) => t.name === params.get('table')) ?? list[0];
  const rule = useMemo(() => currentRule(params, current?.name ?? null), [params, current?.name]);
  const peers = useExamplePeers(runId, current?.name ?? null, mode === 'diff');
  const setRule = (next: DiffRule) => {
    if (!current) return;
    saveRule(current.name, next);
    update((p) => writeRule(p, next));
  };
  // a rule in the URL is remembered for its table as soon as the table is known (a shared link included)
  useEffect(() => {
    if (current && RULE_PARAMS.some((p) => params.has(p))) saveRule(current.name, rule);
  }, [current, params, rule]);
  if (tables.error) return <Alert color="red">{errorMessage(tables.error)}</Alert>;
  if (tables.isPending) return <Text c="dimmed" size="sm">Loading tables…</Text>;
  if (!current) return <Text c="dimmed">No per-example tables{live ? ' yet' : ''}.</Text>;
  return (
    <Stack style={{ minWidth: 0 }}>
      <Group align="flex-end">
        <Select
          label="Table"
          data={list.map((t) => ({ value: t.name, label: `${t.name} (${formatCount(t.rows)} rows)` }))}
          value={current.name}
          onChange={(v) =>
            v &&
            update((p) => {
              p.set('table', v);
              for (const r of RULE_PARAMS) p.delete(r); // the rule was the other table's: this one's is stored
            })
          }
          allowDeselect={false}
          data-testid="example-table"
        />
        <SegmentedControl
          value={mode}
          onChange={(v) => update((p) => (v === 'diff' ? p.set('mode', 'diff') : p.delete('mode')))}
          data={[
            { value: 'rows', label: 'Rows' },
            { value: 'diff', label: 'Diff with another run' },
          ]}
          data-testid="example-mode"
        />
        <AddToReport
          block={(blockId) => ({
            id: blockId,
            type: 'examples_table',
            title: `${current.name} of run ${runId}`,
            source: { run_ids: [runId], limit: 1 },
            table: current.name,
            columns: [],
            limit: 50,
            mode: 'frozen',
          })}
        />
      </Group>
      {mode === 'diff' && peers.error && <Alert color="red">{errorMessage(peers.error)}</Alert>}
      {mode === 'diff' && (
        <DiffPicker
          table={current.name}
          peers={peers.error ? [] : peers.data}
          other={other}
          onCompare={(id) => update((p) => p.set('other', String(id)))}
        />
      )}
      {mode === 'rows' && <Rows runId={runId} table={current.name} total={current.rows} />}
      {mode === 'diff' && other !== null && <Diff runId={runId} table={current.name} other={other} rule={rule} onRule={setRule} />}
      {mode === 'diff' && other === null && <Text c="dimmed" size="sm">Choose a run to compare this table with.</Text>}
    </Stack>
  );
}
