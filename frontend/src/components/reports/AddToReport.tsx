// "Add to report" beside a chart, a table or a result view: the block it makes goes to the end of an
// existing report of the project, or starts a new one; the report then opens.
import { Button, Modal, NativeSelect, Stack, Text, TextInput } from '@mantine/core';
import { useState } from 'react';
import { useNavigate } from 'react-router';
import { errorMessage } from '../../api/errors';
import type { ReportBlock } from '../../api/types';
import { useCurrentProject } from '../../hooks/projects';
import { addToReport, useReports } from '../../hooks/reports';
import { newBlockId } from '../../reports/editing';

const NEW = 'new';

export function AddToReport({ block, label = 'Add to report' }: { block: (id: string) => ReportBlock; label?: string }) {
  const project = useCurrentProject();
  const [open, setOpen] = useState(false);
  const reports = useReports(open ? project.id : undefined);
  const [target, setTarget] = useState<string>(NEW);
  const [title, setTitle] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const navigate = useNavigate();
  const add = async () => {
    if (project.id === undefined) return;
    setBusy(true);
    try {
      const report = await addToReport(project.id, target === NEW ? { title: title.trim() || 'Untitled report' } : Number(target), block(newBlockId()));
      setOpen(false);
      void navigate(`/reports/${report.id}`);
    } catch (e) {
      setError(errorMessage(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <Button size="compact-xs" variant="light" onClick={() => setOpen(true)} data-testid="add-to-report">
        {label}
      </Button>
      <Modal opened={open} onClose={() => setOpen(false)} title="Add to report">
        <Stack>
          <NativeSelect
            label="Report"
            data-testid="add-to-report-target"
            value={target}
            onChange={(e) => setTarget(e.currentTarget.value)}
            data={[{ value: NEW, label: 'A new report' }, ...(reports.data ?? []).map((r) => ({ value: String(r.id), label: r.title }))]}
          />
          {target === NEW && <TextInput label="Title" data-testid="add-to-report-title" value={title} onChange={(e) => setTitle(e.currentTarget.value)} />}
          {error && <Text c="red" size="sm">{error}</Text>}
          <Button onClick={() => void add()} loading={busy} data-testid="add-to-report-confirm">
            Add
          </Button>
        </Stack>
      </Modal>
    </>
  );
}
