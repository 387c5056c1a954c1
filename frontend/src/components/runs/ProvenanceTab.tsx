// The run page's Provenance tab (an external run's): where its script ran, as the script sent it when it
// opened its latest attempt (GET /runs/{id}/provenance): the command line, the git commit with a "dirty"
// mark and the uncommitted diff (folded; monospace lines that wrap, so a long line never widens the page),
// the Python version, the host, and the installed packages (folded, with a search). Pure shaping in
// lib/provenance.ts.
import { Alert, Badge, Box, Button, Code, Collapse, CopyButton, Group, Loader, Paper, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { memo, useMemo, useState, type CSSProperties, type ReactNode } from 'react';
import { errorMessage } from '../../api/errors';
import type { Ok, Run } from '../../api/types';
import { useRunProvenance } from '../../hooks/runs';
import { countOf } from '../../lib/labels';
import { diffSummary, diffSummaryText, diffTone, filterPackages, shortCommit, type DiffTone } from '../../lib/provenance';

export type Provenance = NonNullable<Ok<'runs-provenance'>>;

/** Monospace text that wraps anywhere (a path, a hash, a minified line): its box never outgrows the page. */
const WRAPPED: CSSProperties = {
  margin: 0,
  fontFamily: 'var(--mantine-font-family-monospace)',
  fontSize: 12,
  lineHeight: 1.45,
  whiteSpace: 'pre-wrap',
  overflowWrap: 'anywhere',
  wordBreak: 'break-word',
  minWidth: 0,
  maxWidth: '100%',
};
/** Taller than this, the diff and the package list scroll inside their box. */
const DIFF_MAX_HEIGHT = 520;
const PACKAGES_MAX_HEIGHT = 320;

const TONE_STYLE: Record<DiffTone, CSSProperties | undefined> = {
  file: { fontWeight: 700 },
  hunk: { color: 'var(--mantine-color-blue-7)' },
  add: { color: 'var(--mantine-color-green-8)', background: 'var(--mantine-color-green-0)' },
  del: { color: 'var(--mantine-color-red-8)', background: 'var(--mantine-color-red-0)' },
  context: undefined,
};

/** The diff's lines, each toned; drawn only once unfolded (a diff may be 200,000 characters). */
const DiffLines = memo(function DiffLines({ diff }: { diff: string }) {
  const lines = useMemo(() => diff.replace(/\n$/, '').split('\n'), [diff]);
  return (
    <Box component="pre" style={{ ...WRAPPED, maxHeight: DIFF_MAX_HEIGHT, overflowY: 'auto', overflowX: 'hidden' }} data-testid="provenance-diff">
      {lines.map((line, i) => (
        <span key={i} style={{ display: 'block', ...TONE_STYLE[diffTone(line)] }}>
          {line || ' '}
        </span>
      ))}
    </Box>
  );
});

function Diff({ diff }: { diff: string }) {
  const [open, setOpen] = useState(false);
  const summary = useMemo(() => diffSummaryText(diffSummary(diff)), [diff]);
  return (
    <Stack gap="xs">
      <Group gap="sm">
        <Button size="xs" variant="default" onClick={() => setOpen((o) => !o)} aria-expanded={open} data-testid="provenance-diff-toggle">
          {open ? 'Hide' : 'Show'} the uncommitted diff
        </Button>
        <Text size="sm" c="dimmed" data-testid="provenance-diff-summary">{summary}</Text>
      </Group>
      <Collapse in={open}>{open && <DiffLines diff={diff} />}</Collapse>
    </Stack>
  );
}

function Packages({ packages }: { packages: readonly string[] }) {
  const [open, setOpen] = useState(false);
  const [query, setQuery] = useState('');
  const shown = useMemo(() => filterPackages(packages, query), [packages, query]);
  if (!packages.length) return <Text size="sm" c="dimmed">none sent</Text>;
  return (
    <Stack gap="xs">
      <Group gap="sm">
        <Button size="xs" variant="default" onClick={() => setOpen((o) => !o)} aria-expanded={open} data-testid="provenance-packages-toggle">
          {open ? 'Hide' : 'Show'} {countOf(packages.length, 'package')}
        </Button>
        {open && (
          <>
            <TextInput
              size="xs"
              w={260}
              placeholder="Search packages (e.g. torch)"
              aria-label="search packages"
              value={query}
              onChange={(e) => setQuery(e.currentTarget.value)}
              data-testid="provenance-packages-search"
            />
            <Text size="xs" c="dimmed" data-testid="provenance-packages-count">
              {query.trim() ? `${shown.length} of ${packages.length}` : countOf(packages.length, 'package')}
            </Text>
          </>
        )}
      </Group>
      <Collapse in={open}>
        {open && (
          <Box component="pre" style={{ ...WRAPPED, maxHeight: PACKAGES_MAX_HEIGHT, overflowY: 'auto' }} data-testid="provenance-packages">
            {shown.join('\n') || 'no package matches'}
          </Box>
        )}
      </Collapse>
    </Stack>
  );
}

function Row({ label, children, testId }: { label: string; children: ReactNode; testId?: string }) {
  return (
    <Table.Tr data-testid={testId}>
      <Table.Th w={140} style={{ verticalAlign: 'top', whiteSpace: 'nowrap' }}>{label}</Table.Th>
      <Table.Td style={{ minWidth: 0, maxWidth: 0, width: '100%' }}>{children}</Table.Td>
    </Table.Tr>
  );
}

const unknown = <Text size="sm" c="dimmed">not sent</Text>;

/** The provenance itself (ProvenanceTab fetches it; tests draw it from a value). */
export function ProvenanceView({ provenance }: { provenance: Provenance }) {
  const { command, git_commit: commit, git_dirty: dirty, git_diff: diff, python, host, packages = [] } = provenance;
  return (
    <Stack gap="md" data-testid="provenance" style={{ minWidth: 0 }}>
      {/* a fixed layout: the second column takes what is left of the page's width, never more */}
      <Table withTableBorder layout="fixed" fz="sm" verticalSpacing="xs">
        <Table.Tbody>
          <Row label="Command line" testId="provenance-command-row">
            {command ? (
              <Group gap="xs" wrap="nowrap" align="flex-start">
                <Box component="pre" style={{ ...WRAPPED, flex: 1 }} data-testid="provenance-command">{command}</Box>
                <CopyButton value={command}>
                  {({ copied, copy }) => (
                    <Button size="compact-xs" variant="subtle" onClick={copy}>
                      {copied ? 'copied' : 'copy'}
                    </Button>
                  )}
                </CopyButton>
              </Group>
            ) : unknown}
          </Row>
          <Row label="Git commit" testId="provenance-commit-row">
            {commit ? (
              <Group gap="xs">
                <Code title={commit} data-testid="provenance-commit" data-commit={commit}>{shortCommit(commit)}</Code>
                {dirty === true && (
                  <Badge size="sm" color="orange" variant="light" title="the work tree had uncommitted changes (the diff below)" data-testid="provenance-dirty">
                    dirty
                  </Badge>
                )}
                {dirty === false && <Badge size="sm" color="green" variant="light" data-testid="provenance-clean">clean</Badge>}
              </Group>
            ) : (
              <Text size="sm" c="dimmed">not in a git work tree (or git was not found)</Text>
            )}
          </Row>
          <Row label="Python">{python ? <Code data-testid="provenance-python">{python}</Code> : unknown}</Row>
          <Row label="Host">{host ? <Code data-testid="provenance-host">{host}</Code> : unknown}</Row>
        </Table.Tbody>
      </Table>
      {diff && (
        <Stack gap={4}>
          <Title order={5}>Uncommitted changes</Title>
          <Diff diff={diff} />
        </Stack>
      )}
      <Stack gap={4}>
        <Title order={5}>Installed packages</Title>
        <Packages packages={packages} />
      </Stack>
    </Stack>
  );
}

/** The tab: the run's latest attempt's provenance, fetched on the first visit. */
export function ProvenanceTab({ run }: { run: Run }) {
  const provenance = useRunProvenance(run);
  if (provenance.isPending) return <Loader size="sm" />;
  if (provenance.error) return <Alert color="red">{errorMessage(provenance.error)}</Alert>;
  if (!provenance.data) return <Text c="dimmed">No provenance: a worker executed this run from its spec (Spec & params).</Text>;
  return (
    <Paper withBorder p="sm" style={{ minWidth: 0 }}>
      <ProvenanceView provenance={provenance.data} />
    </Paper>
  );
}
