// A report's draft: its blocks drawn with their data, and for members the block editor: add, move, delete,
// edit text with a preview, switch a figure or table between live and frozen. The draft is saved as you
// type (a moment after the last edit); a save made on a stale version is refused (409) and the editor
// says which blocks changed and offers the saved version. Comments anchor to blocks; publishing makes a
// revision (its own page: reviews, exports, share links).
import { ActionIcon, Alert, Anchor, Badge, Button, Group, Menu, Paper, SegmentedControl, Stack, Tabs, Text, Textarea, TextInput, Title } from '@mantine/core';
import { useQueryClient } from '@tanstack/react-query';
import { useEffect, useRef, useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { ApiError, errorMessage, isApiError } from '../api/errors';
import type { Report, ReportBlock } from '../api/types';
import { Markdown } from '../components/common/Markdown';
import { QueryState } from '../components/common/QueryState';
import { timeAgo } from '../components/common/time';
import { fetchReport, useAddReportComment, usePublish, useReport, useReportComments, useReportData, useRevisions, useSaveReport } from '../hooks/reports';
import { reportBlocks } from '../reports';
import { moveBlock, newBlockId, removeBlock, replaceBlock, staleChanges } from '../reports/editing';
import { blockData, ReportView } from '../reports/ReportView';

const SAVE_AFTER_MS = 700;
type TextBlock = Extract<ReportBlock, { type: 'heading' | 'markdown' | 'callout' }>;
const isText = (b: ReportBlock): b is TextBlock => b.type === 'heading' || b.type === 'markdown' || b.type === 'callout';
const isData = (b: ReportBlock): b is Extract<ReportBlock, { mode?: 'live' | 'frozen' }> => 'source' in b;

export function ReportPage() {
  const id = Number(useParams().id);
  const report = useReport(id);
  return (
    <QueryState isPending={report.isPending} error={report.error}>
      {() => (report.data ? <ReportEditor key={report.data.id} report={report.data} /> : null)}
    </QueryState>
  );
}

function TextEditor({ block, onChange }: { block: TextBlock; onChange: (b: ReportBlock) => void }) {
  const [tab, setTab] = useState<string | null>('write');
  return (
    <Tabs value={tab} onChange={setTab} mt="xs">
      <Tabs.List>
        <Tabs.Tab value="write">Write</Tabs.Tab>
        <Tabs.Tab value="preview">Preview</Tabs.Tab>
      </Tabs.List>
      <Tabs.Panel value="write" pt="xs">
        <Textarea
          aria-label={`${block.type} text`}
          data-testid="block-text"
          value={block.text}
          autosize
          minRows={block.type === 'heading' ? 1 : 3}
          onChange={(e) => onChange({ ...block, text: e.currentTarget.value })}
        />
      </Tabs.Panel>
      <Tabs.Panel value="preview" pt="xs">
        <Markdown math={block.type !== 'heading'}>{block.text || '_nothing to preview_'}</Markdown>
      </Tabs.Panel>
    </Tabs>
  );
}

function BlockComments({ reportId, blockId, canWrite }: { reportId: number; blockId: string; canWrite: boolean }) {
  const comments = useReportComments(reportId);
  const add = useAddReportComment(reportId);
  const [body, setBody] = useState('');
  const [open, setOpen] = useState(false);
  const mine = (comments.data ?? []).filter((c) => c.block_id === blockId);
  return (
    <Stack gap={4} mt="xs" data-testid="block-comments">
      {mine.map((c) => (
        <Paper key={c.id} withBorder p="xs" bg="gray.0" data-testid="report-comment">
          <Group gap="xs">
            <Text size="xs" fw={600}>{c.author}</Text>
            <Text size="xs" c="dimmed">{timeAgo(c.created_at)}</Text>
          </Group>
          <Markdown>{c.body}</Markdown>
        </Paper>
      ))}
      {canWrite &&
        (open ? (
          <form
            onSubmit={(e) => {
              e.preventDefault();
              if (body.trim())
                add.mutate({ block_id: blockId, body }, { onSuccess: () => { setBody(''); setOpen(false); } });
            }}
          >
            <Textarea aria-label="Comment (markdown)" value={body} onChange={(e) => setBody(e.currentTarget.value)} autosize minRows={2} />
            <Group justify="flex-end" mt={4}>
              <Button size="xs" variant="default" onClick={() => setOpen(false)}>Cancel</Button>
              <Button size="xs" type="submit" loading={add.isPending} disabled={!body.trim()}>Comment</Button>
            </Group>
          </form>
        ) : (
          <Group justify="flex-end">
            <Button size="compact-xs" variant="subtle" onClick={() => setOpen(true)}>Comment on this block</Button>
          </Group>
        ))}
    </Stack>
  );
}

function ReportEditor({ report }: { report: Report }) {
  const qc = useQueryClient();
  const navigate = useNavigate();
  const [title, setTitle] = useState(report.title);
  const [blocks, setBlocks] = useState<ReportBlock[]>(report.blocks);
  const [base, setBase] = useState<Report>(report);
  const [edits, setEdits] = useState(0); // edits made since the page opened; a save covers those up to its start
  const [savedEdits, setSavedEdits] = useState(0);
  const [conflict, setConflict] = useState<ApiError | null>(null);
  const [editing, setEditing] = useState<string | null>(null);
  const save = useSaveReport(report.id);
  const publish = usePublish(report.id);
  const revisions = useRevisions(report.id);
  const data = useReportData(report.id, base.version);
  const inFlight = useRef(false);
  const editCount = useRef(0); // edits as of now (the state's count is a render's)
  const canEdit = report.can_edit;

  const edit = (next: ReportBlock[], nextTitle = title) => {
    setBlocks(next);
    setTitle(nextTitle);
    editCount.current += 1;
    setEdits(editCount.current);
  };

  useEffect(() => {
    if (edits === savedEdits || conflict || inFlight.current || !title.trim()) return;
    const upto = edits;
    const timer = setTimeout(() => {
      inFlight.current = true;
      save.mutate(
        { report: { ...base, title }, blocks },
        {
          onSuccess: (saved) => {
            setBase(saved);
            setSavedEdits(upto);
            // the server's cut-offs for blocks saved frozen; later edits keep the local blocks
            setBlocks((current) => (editCount.current === upto ? saved.blocks : current));
          },
          onError: (e) => {
            if (isApiError(e, 409)) setConflict(e);
          },
          onSettled: () => {
            inFlight.current = false;
          },
        },
      );
    }, SAVE_AFTER_MS);
    return () => clearTimeout(timer);
  }, [edits, savedEdits, conflict, title, blocks, base, save]);

  const reload = async () => {
    const fresh = await fetchReport(report.id);
    qc.setQueryData(['reports', report.id], fresh);
    setBase(fresh);
    setBlocks(fresh.blocks);
    setTitle(fresh.title);
    setSavedEdits(edits);
    setConflict(null);
  };

  const saved = edits === savedEdits && !save.isPending;
  const controls = (b: ReportBlock) => {
    const i = blocks.findIndex((x) => x.id === b.id);
    return (
      <>
        {canEdit && (
          <Group gap={4} mt="xs" justify="flex-end" data-testid="block-controls">
            {isData(b) && (
              <SegmentedControl
                size="xs"
                data={['frozen', 'live']}
                value={b.mode ?? 'frozen'}
                onChange={(mode) => edit(replaceBlock(blocks, { ...b, mode: mode as 'live' | 'frozen', cutoff: null } as ReportBlock))}
              />
            )}
            {isData(b) && b.mode !== 'live' && (
              <Button size="compact-xs" variant="subtle" onClick={() => edit(replaceBlock(blocks, { ...b, cutoff: null } as ReportBlock))}>
                Freeze now
              </Button>
            )}
            {isText(b) && (
              <Button size="compact-xs" variant="subtle" onClick={() => setEditing(editing === b.id ? null : b.id)}>
                {editing === b.id ? 'Done' : 'Edit'}
              </Button>
            )}
            <ActionIcon size="sm" variant="subtle" aria-label="Move up" disabled={i === 0} onClick={() => edit(moveBlock(blocks, i, -1))}>↑</ActionIcon>
            <ActionIcon size="sm" variant="subtle" aria-label="Move down" disabled={i === blocks.length - 1} onClick={() => edit(moveBlock(blocks, i, 1))}>↓</ActionIcon>
            <ActionIcon size="sm" variant="subtle" color="red" aria-label="Delete block" onClick={() => edit(removeBlock(blocks, b.id))}>✕</ActionIcon>
          </Group>
        )}
        {editing === b.id && isText(b) && <TextEditor block={b} onChange={(next) => edit(replaceBlock(blocks, next))} />}
        <BlockComments reportId={report.id} blockId={b.id} canWrite={canEdit} />
      </>
    );
  };

  return (
    <Stack>
      <Group justify="space-between" align="flex-end">
        {canEdit ? (
          <TextInput aria-label="Report title" size="lg" value={title} onChange={(e) => edit(blocks, e.currentTarget.value)} style={{ flex: 1 }} />
        ) : (
          <Title order={2}>{title}</Title>
        )}
        <Group gap="xs">
          <Badge variant="light" color={saved ? 'green' : 'yellow'} data-testid="save-state">
            {conflict ? 'not saved' : saved ? `saved (version ${base.version})` : 'saving…'}
          </Badge>
          {canEdit && (
            <Button
              disabled={!saved || !!conflict}
              loading={publish.isPending}
              onClick={() => publish.mutate(base.version, { onSuccess: (r) => void navigate(`/reports/${report.id}/revisions/${r.number}`) })}
            >
              Publish
            </Button>
          )}
        </Group>
      </Group>
      {publish.error && <Alert color="red">{errorMessage(publish.error)}</Alert>}
      {conflict && (
        <Alert color="orange" title="Someone saved this report since you started editing" data-testid="conflict">
          <Text size="sm">{conflict.detail}</Text>
          <ul>
            {staleChanges(conflict.errors).map((c) => (
              <li key={c.block}>
                block {c.block}: {c.msg}
              </li>
            ))}
          </ul>
          <Button size="xs" onClick={() => void reload()}>Load the saved version (drops my unsaved edits)</Button>
        </Alert>
      )}
      {save.error && !conflict && <Alert color="red">{errorMessage(save.error)}</Alert>}
      {(revisions.data ?? []).length > 0 && (
        <Group gap="xs">
          <Text size="sm">Published:</Text>
          {(revisions.data ?? []).map((r) => (
            <Anchor key={r.number} size="sm" component={Link} to={`/reports/${report.id}/revisions/${r.number}`}>
              revision {r.number}
            </Anchor>
          ))}
        </Group>
      )}
      <ReportView blocks={blocks} data={blockData(data.data)} aside={controls} />
      {canEdit && (
        <Menu>
          <Menu.Target>
            <Button variant="default" data-testid="add-block">Add block</Button>
          </Menu.Target>
          <Menu.Dropdown>
            {reportBlocks.creatable().map((t) => (
              <Menu.Item
                key={t.type}
                onClick={() => {
                  const b = t.create!(newBlockId());
                  edit([...blocks, b]);
                  if (isText(b)) setEditing(b.id);
                }}
              >
                {t.label}
              </Menu.Item>
            ))}
          </Menu.Dropdown>
        </Menu>
      )}
      {!blocks.length && <Text c="dimmed">No blocks yet: add text here, or "Add to report" from a chart, a table or a result view.</Text>}
    </Stack>
  );
}
