// A project's datasets: data files uploaded so that a spec can name them (`dataset:<name>` in a data-path
// field) without access to the worker hosts. Every role sees the list (name, size, checksum, who uploaded
// it and when) and how a spec names one; members and admins upload and replace; a project admin, or whoever
// uploaded a dataset, deletes it (the API's rules: backend/datasets/service.py). The API judges a name:
// its 422 lands on the Name field, a 413 (over REASONLAB_DATASET_MAX_BYTES) on the File field.
import { ActionIcon, Alert, Button, Code, CopyButton, Group, Input, Paper, Stack, Table, Text, TextInput, Title, Tooltip } from '@mantine/core';
import { useId, useRef, useState, type FormEvent, type RefObject } from 'react';
import { ConfirmDelete } from '../common/ConfirmDelete';
import type { Dataset, Role } from '../../api/types';
import { useDatasets, useDeleteDataset, useUploadDataset } from '../../hooks/datasets';
import { formatBytes } from '../../lib/artifactTree';
import { datasetFormErrors, shortSha, specReference, unsendableDatasetName, type DatasetFormErrors } from '../../lib/datasetForm';
import { QueryState } from '../common/QueryState';
import { timeAgo } from '../common/time';
import { isoDateTime } from '../../lib/plainFormat';

/** A small button that copies `value`; says so for a moment once it has. */
function Copy({ value, label }: { value: string; label: string }) {
  return (
    <CopyButton value={value} timeout={1500}>
      {({ copied, copy }) => (
        <Tooltip label={copied ? 'copied' : label} withArrow>
          <ActionIcon size="sm" variant="subtle" color={copied ? 'teal' : 'gray'} onClick={copy} aria-label={label} data-copied={copied || undefined}>
            <svg width="14" height="14" viewBox="0 0 16 16" fill="none" stroke="currentColor" strokeWidth="1.6" aria-hidden>
              {copied ? (
                <path d="M3 8.5l3 3 7-7" />
              ) : (
                <>
                  <rect x="5.5" y="5.5" width="8" height="8" rx="1.5" />
                  <path d="M10.5 3.5v-.5A1.5 1.5 0 0 0 9 1.5H3A1.5 1.5 0 0 0 1.5 3v6A1.5 1.5 0 0 0 3 10.5h.5" />
                </>
              )}
            </svg>
          </ActionIcon>
        </Tooltip>
      )}
    </CopyButton>
  );
}

/** The line a spec holds to read a dataset, with a copy button. */
function SpecLine({ name }: { name: string }) {
  const line = `data.path: ${specReference(name)}`;
  return (
    <Group gap={6} wrap="nowrap" data-testid="dataset-spec-line">
      <Code>{line}</Code>
      <Copy value={line} label="copy the spec line" />
    </Group>
  );
}

interface FormProps {
  projectId: number;
  existing: ReadonlySet<string>;
  name: string;
  setName: (name: string) => void;
  /** the name was typed, or taken from a row's Replace: a file chosen afterwards does not change it */
  nameChosen: boolean;
  setNameChosen: (chosen: boolean) => void;
  fileRef: RefObject<HTMLInputElement | null>;
  onSaved: (name: string) => void;
}

function UploadForm({ projectId, existing, name, setName, nameChosen, setNameChosen, fileRef, onSaved }: FormProps) {
  const upload = useUploadDataset(projectId);
  const [file, setFile] = useState<File | null>(null);
  const [local, setLocal] = useState<DatasetFormErrors>({});
  const fileId = useId();
  const errors = upload.error ? datasetFormErrors(upload.error) : local;
  const wanted = name.trim();

  const pick = (picked: File | null) => {
    setFile(picked);
    upload.reset();
    setLocal({});
    if (picked && !nameChosen) setName(picked.name);
  };

  const submit = (e: FormEvent) => {
    e.preventDefault();
    const problem = unsendableDatasetName(wanted);
    upload.reset();
    setLocal({ name: problem, file: file ? undefined : 'choose a file to upload' });
    if (problem || !file) return;
    upload.mutate(
      { name: wanted, file },
      {
        onSuccess: (dataset) => {
          setFile(null);
          if (fileRef.current) fileRef.current.value = '';
          setName('');
          setNameChosen(false);
          onSaved(dataset.name);
        },
      },
    );
  };

  return (
    <Paper withBorder p="md" component="form" onSubmit={submit} aria-label="Upload a dataset" data-testid="dataset-form">
      <Stack gap="sm">
        <Title order={5}>Upload a dataset</Title>
        {errors.form && (
          <Alert color="red" role="alert" data-testid="dataset-form-error">
            {errors.form}
          </Alert>
        )}
        <Group align="flex-start" gap="sm" wrap="wrap">
          <Input.Wrapper label="File" id={fileId} error={errors.file} withAsterisk w={340} description={file ? formatBytes(file.size) : 'any file: JSONL, CSV, text, ...'}>
            <input
              ref={fileRef}
              id={fileId}
              type="file"
              aria-invalid={errors.file ? true : undefined}
              // the wrapper's description and error (Mantine names them after the id) describe the input
              aria-describedby={errors.file ? `${fileId}-error ${fileId}-description` : `${fileId}-description`}
              disabled={upload.isPending}
              onChange={(e) => pick(e.currentTarget.files?.[0] ?? null)}
              style={{ display: 'block', marginTop: 4 }}
            />
          </Input.Wrapper>
          <TextInput
            label="Name"
            description={existing.has(wanted) ? `replaces the dataset ${wanted}` : 'the file name unless you change it; a spec names it dataset:<name>'}
            placeholder="train.jsonl"
            value={name}
            onChange={(e) => {
              setName(e.currentTarget.value);
              setNameChosen(true);
              // the API's answer was about the name sent: a new name waits for its own
              if (upload.error) upload.reset();
              setLocal((l) => ({ ...l, name: undefined }));
            }}
            error={errors.name}
            disabled={upload.isPending}
            autoComplete="off"
            spellCheck={false}
            withAsterisk
            w={340}
            styles={{ input: { fontFamily: 'var(--mantine-font-family-monospace)' } }}
          />
        </Group>
        <Group gap="sm">
          <Button type="submit" loading={upload.isPending} data-testid="upload-dataset">
            {existing.has(wanted) ? 'Replace dataset' : 'Upload'}
          </Button>
          {upload.isPending && file && (
            <Text size="sm" c="dimmed" role="status" data-testid="dataset-uploading">
              uploading {file.name} ({formatBytes(file.size)})…
            </Text>
          )}
        </Group>
      </Stack>
    </Paper>
  );
}

function DatasetsTable({ datasets, canUpload, canDelete, onReplace, onDelete, saved }: {
  datasets: readonly Dataset[];
  canUpload: boolean;
  canDelete: (dataset: Dataset) => boolean;
  onReplace: (name: string) => void;
  onDelete: (name: string) => void;
  saved: string | null;
}) {
  if (datasets.length === 0) return <Text c="dimmed" data-testid="datasets-empty">No datasets in this project yet.</Text>;
  const actions = canUpload || datasets.some(canDelete);
  return (
    <Table withTableBorder fz="sm" data-testid="datasets-table">
      <Table.Thead>
        <Table.Tr>
          <Table.Th>Name</Table.Th>
          <Table.Th ta="right">Size</Table.Th>
          <Table.Th>sha256</Table.Th>
          <Table.Th>Uploaded by</Table.Th>
          <Table.Th>Uploaded</Table.Th>
          {actions && <Table.Th aria-label="actions" />}
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        {datasets.map((d) => (
          <Table.Tr key={d.name} data-testid="dataset-row" data-name={d.name} bg={d.name === saved ? 'green.0' : undefined}>
            <Table.Td>
              <Group gap={4} wrap="nowrap">
                <Text ff="monospace" fz="sm">
                  {d.name}
                </Text>
                <Copy value={specReference(d.name)} label={`copy ${specReference(d.name)}`} />
              </Group>
            </Table.Td>
            <Table.Td ta="right" title={`${d.size} bytes`} data-testid="dataset-size">
              {formatBytes(d.size)}
            </Table.Td>
            <Table.Td>
              <Group gap={4} wrap="nowrap">
                <Text ff="monospace" fz="sm" title={d.sha256}>
                  {shortSha(d.sha256)}
                </Text>
                <Copy value={d.sha256} label={`copy the sha256 of ${d.name}`} />
              </Group>
            </Table.Td>
            <Table.Td>{d.uploaded_by ?? '—'}</Table.Td>
            <Table.Td title={isoDateTime(d.uploaded_at)} data-testid="dataset-uploaded-at">
              {timeAgo(d.uploaded_at)}
            </Table.Td>
            {actions && (
              <Table.Td>
                <Group gap={4} wrap="nowrap">
                  {canUpload && (
                    <Button size="compact-xs" variant="subtle" onClick={() => onReplace(d.name)} aria-label={`replace ${d.name}`}>
                      Replace
                    </Button>
                  )}
                  {canDelete(d) && (
                    <Button size="compact-xs" variant="subtle" color="red" onClick={() => onDelete(d.name)} aria-label={`delete ${d.name}`}>
                      Delete
                    </Button>
                  )}
                </Group>
              </Table.Td>
            )}
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  );
}

/**
 * The Datasets section of a project's settings. `role` is the signed-in user's role in the project (site
 * admins are admins) and `username` theirs: members and admins get the upload form and a Replace button
 * per row; Delete shows on the rows a project admin may delete (all) or a member uploaded; viewers read.
 */
export function ProjectDatasets({ projectId, role, username }: { projectId: number; role: Role | null; username: string | undefined }) {
  const datasets = useDatasets(projectId);
  const canUpload = role === 'admin' || role === 'member';
  const canDelete = (d: Dataset) => role === 'admin' || (role === 'member' && username !== undefined && d.uploaded_by === username);
  const [name, setName] = useState('');
  const [nameChosen, setNameChosen] = useState(false);
  const fileRef = useRef<HTMLInputElement>(null);
  const [saved, setSaved] = useState<string | null>(null);
  // the dataset the delete dialog asks about; kept while the dialog closes so its title does not change
  const [deleting, setDeleting] = useState<{ name: string; opened: boolean }>({ name: '', opened: false });
  const del = useDeleteDataset(projectId);
  const list = datasets.data ?? [];

  const replace = (dataset: string) => {
    setName(dataset);
    setNameChosen(true);
    // the picker opens for the new file; the name stays the row's whatever the file is called
    fileRef.current?.focus();
    fileRef.current?.click();
  };

  return (
    <Stack gap="md" maw={1000} data-testid="project-datasets">
      <Stack gap={4}>
        <Text size="sm" c="dimmed" data-testid={canUpload ? undefined : 'datasets-read-only'}>
          Data files for this project&apos;s experiments, kept by the server: a spec names one in a data-path field (the kind&apos;s{' '}
          <Code>data.path</Code>, <Code>data.skills</Code>, ...) as <Code style={{ whiteSpace: 'nowrap' }}>dataset:&lt;name&gt;</Code>, and its runs download it.
          {canUpload
            ? ' Uploading a name again replaces the file for the runs that start later.'
            : ' Project members and admins upload them; a project admin or its uploader deletes one.'}
        </Text>
        <SpecLine name={list[0]?.name ?? 'NAME'} />
      </Stack>
      {canUpload && (
        <UploadForm
          projectId={projectId}
          existing={new Set(list.map((d) => d.name))}
          name={name}
          setName={setName}
          nameChosen={nameChosen}
          setNameChosen={setNameChosen}
          fileRef={fileRef}
          onSaved={setSaved}
        />
      )}
      <QueryState isPending={datasets.isPending} error={datasets.error}>
        {() => (
          <DatasetsTable
            datasets={list}
            canUpload={canUpload}
            canDelete={canDelete}
            onReplace={replace}
            onDelete={(dataset) => setDeleting({ name: dataset, opened: true })}
            saved={saved}
          />
        )}
      </QueryState>
      <ConfirmDelete what="dataset" del={del} name={deleting.name} target={deleting.name} opened={deleting.opened} onClose={() => setDeleting((d) => ({ ...d, opened: false }))}>
          Its bytes are removed. Experiments whose spec names <Code>{specReference(deleting.name)}</Code> are refused from then on, and their runs that
          have not started cannot get it.
        </ConfirmDelete>
    </Stack>
  );
}
