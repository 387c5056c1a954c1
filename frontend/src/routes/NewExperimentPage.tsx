// New experiment: pick a kind (and optionally one of its examples), edit its spec (form generated from
// the kind's schema, or YAML / JSON text), add sweep axes, preview the expansion, submit. A 422 lands on
// the offending fields.
import {
  Alert, Badge, Button, Grid, Group, NativeSelect, Paper, ScrollArea, SegmentedControl, Stack, Table, Text, TextInput, Textarea, Title,
} from '@mantine/core';
import { useCallback, useEffect, useMemo, useState } from 'react';
import { useNavigate } from 'react-router';
import { errorMessage, isApiError } from '../api/errors';
import type { Kind, Preview } from '../api/types';
import { QueryState } from '../components/common/QueryState';
import { SchemaForm } from '../components/spec/SchemaForm';
import { SpecTextEditor } from '../components/spec/SpecTextEditor';
import { SweepEditor } from '../components/spec/SweepEditor';
import { useCreateExperiment, usePreview } from '../hooks/experiments';
import { useKinds } from '../hooks/kinds';
import { useCanWrite, useCurrentProject } from '../hooks/projects';
import { splitErrors, type FieldErrors } from '../lib/apiErrors';
import { flatten, formatValue, setPath, type Json, type JsonObject } from '../lib/dotted';
import { defaultSpec, exampleForm, experimentBody } from '../lib/experimentForm';
import { runNumber } from '../lib/runIds';
import { schemaToFields, validateSpec, type JsonSchema } from '../lib/schemaForm';
import { emptySweep, modelToSweep, previewColumns, sweepProblems, sweepRunCount, type SweepModel } from '../lib/sweep';

/** Rows of the preview table drawn; the count above it is exact. */
const PREVIEW_ROWS = 200;
const NO_ERRORS: FieldErrors = { spec: {}, body: {}, sweep: [], other: [] };

function PreviewTable({ preview }: { preview: Preview }) {
  const cols = previewColumns(preview.runs);
  const rows = preview.runs.slice(0, PREVIEW_ROWS);
  return (
    <Stack gap="xs" data-testid="preview">
      <Text fw={600} data-testid="preview-count">
        {preview.count} run{preview.count === 1 ? '' : 's'}
      </Text>
      <ScrollArea h={Math.min(360, 40 + rows.length * 32)}>
        <Table striped withTableBorder stickyHeader fz="xs" aria-label="runs of the sweep">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>#</Table.Th>
              {cols.map((c) => <Table.Th key={c}>{c}</Table.Th>)}
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {rows.map((r) => (
              <Table.Tr key={r.index}>
                <Table.Td>{runNumber(r.index)}</Table.Td>
                {cols.map((c) => <Table.Td key={c}>{formatValue(r.params[c])}</Table.Td>)}
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </ScrollArea>
      {preview.count > rows.length && <Text size="xs" c="dimmed">…and {preview.count - rows.length} more</Text>}
    </Stack>
  );
}

function NewExperimentForm({ kinds }: { kinds: Kind[] }) {
  const navigate = useNavigate();
  const project = useCurrentProject();
  const canWrite = useCanWrite(project.id);
  const [kindName, setKindName] = useState(kinds.find((k) => k.name === 'diagnostic')?.name ?? kinds[0]?.name ?? '');
  const kind = kinds.find((k) => k.name === kindName);
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [spec, setSpec] = useState<JsonObject>(() => (kind ? defaultSpec(kind) : {}));
  const [exampleName, setExampleName] = useState('');
  const example = kind?.examples.find((x) => x.name === exampleName);
  const [mode, setMode] = useState<'form' | 'yaml' | 'json'>('form');
  const [sweep, setSweep] = useState<SweepModel>(emptySweep);
  const [serverErrors, setServerErrors] = useState<FieldErrors>(NO_ERRORS);
  const preview = usePreview();
  const create = useCreateExperiment();

  useEffect(() => {
    setSpec(kind ? defaultSpec(kind) : {});
    setExampleName('');
    setServerErrors(NO_ERRORS);
    preview.reset();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [kindName]);

  const fields = useMemo(() => schemaToFields((kind?.spec_schema ?? {}) as JsonSchema), [kind]);
  const paths = useMemo(() => Object.keys(flatten(kind?.defaults ?? {})), [kind]);
  const localErrors = useMemo(() => validateSpec(fields, spec), [fields, spec]);
  const specErrors = useMemo(() => ({ ...localErrors, ...serverErrors.spec }), [localErrors, serverErrors.spec]);
  const problems = sweepProblems(sweep);
  const sweepObj = modelToSweep(sweep);
  const localCount = sweepRunCount(sweepObj);

  const onField = useCallback((path: string[], value: Json | undefined) => {
    setSpec((s) => setPath(s, path, value));
    setServerErrors((e) => {
      const key = path.join('.');
      if (!(key in e.spec)) return e;
      const { [key]: _gone, ...rest } = e.spec;
      return { ...e, spec: rest };
    });
  }, []);

  const loadExample = (chosen: string) => {
    setExampleName(chosen);
    if (!kind) return;
    const found = kind.examples.find((x) => x.name === chosen);
    const loaded = found ? exampleForm(kind, found) : { spec: defaultSpec(kind), sweep: emptySweep() };
    setSpec(loaded.spec);
    setSweep(loaded.sweep);
    setServerErrors(NO_ERRORS);
    preview.reset();
  };

  /** The request body, or null after putting the spec's shape problems on its fields. */
  const body = () => {
    if (!kind) return null;
    const built = experimentBody(kind, { name, description, project: project.name, spec, sweep: sweepObj });
    if ('problems' in built) {
      setServerErrors({ ...NO_ERRORS, spec: built.problems });
      return null;
    }
    return built.body;
  };

  const onError = (e: unknown) => setServerErrors(isApiError(e, 422) ? splitErrors(e.errors) : { ...NO_ERRORS, other: [errorMessage(e)] });

  const submit = () => {
    setServerErrors(NO_ERRORS);
    const b = body();
    if (b) create.mutate(b, { onSuccess: (d) => navigate(`/experiments/${d.id}`), onError });
  };
  const runPreview = () => {
    setServerErrors(NO_ERRORS);
    const b = body();
    if (b) preview.mutate(b, { onError });
  };

  const errorCount = Object.keys(specErrors).length + Object.keys(serverErrors.body).length + serverErrors.sweep.length + serverErrors.other.length;

  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        submit();
      }}
      aria-label="new experiment"
    >
      <Grid gutter="lg">
        <Grid.Col span={{ base: 12, lg: 7 }}>
          <Stack>
            <Group align="flex-end">
              <NativeSelect
                label="Kind"
                id="kind"
                data={kinds.map((k) => ({ value: k.name, label: k.name }))}
                value={kindName}
                onChange={(e) => setKindName(e.currentTarget.value)}
                w={220}
              />
              {kind && kind.examples.length > 0 && (
                <NativeSelect
                  label="Load example"
                  id="kind-example"
                  data={[{ value: '', label: 'none (defaults)' }, ...kind.examples.map((x) => ({ value: x.name, label: x.name }))]}
                  value={exampleName}
                  onChange={(e) => loadExample(e.currentTarget.value)}
                  w={220}
                />
              )}
              <TextInput label="Name" id="experiment-name" value={name} onChange={(e) => setName(e.currentTarget.value)} placeholder={`${kindName} sweep`} error={serverErrors.body.name} style={{ flex: 1 }} />
            </Group>
            {kind?.description && <Text size="sm" c="dimmed">{kind.description}</Text>}
            {example && <Text size="sm" c="dimmed" data-testid="example-description">Example {example.name}: {example.description}</Text>}
            <Textarea label="Description" id="experiment-description" autosize minRows={1} value={description} onChange={(e) => setDescription(e.currentTarget.value)} />
            <Group justify="space-between">
              <Title order={4}>Spec</Title>
              <SegmentedControl
                aria-label="spec editor"
                value={mode}
                onChange={(v) => setMode(v as typeof mode)}
                data={[{ value: 'form', label: 'Form' }, { value: 'yaml', label: 'YAML' }, { value: 'json', label: 'JSON' }]}
                size="xs"
              />
            </Group>
            {mode === 'form' ? (
              <SchemaForm fields={fields} value={spec} onChange={onField} errors={specErrors} />
            ) : (
              <>
                <SpecTextEditor spec={spec} format={mode} onChange={setSpec} />
                {Object.entries(specErrors).map(([p, m]) => (
                  <Text key={p} c="red" size="sm">
                    {p}: {m}
                  </Text>
                ))}
              </>
            )}
          </Stack>
        </Grid.Col>
        <Grid.Col span={{ base: 12, lg: 5 }}>
          <Stack style={{ position: 'sticky', top: 68 }}>
            <Paper withBorder p="md">
              <Title order={4} mb="sm">Sweep</Title>
              <SweepEditor model={sweep} onChange={setSweep} paths={paths} />
              {problems.map((p) => <Text key={p} c="red" size="sm">{p}</Text>)}
            </Paper>
            {(serverErrors.sweep.length > 0 || serverErrors.other.length > 0 || errorCount > 0) && (
              <Alert color="red" title={`${errorCount} problem${errorCount === 1 ? '' : 's'}`} role="alert" data-testid="form-errors">
                {[...serverErrors.sweep, ...serverErrors.other, ...Object.entries(specErrors).map(([p, m]) => `${p}: ${m}`)].map((m) => (
                  <div key={m}>{m}</div>
                ))}
              </Alert>
            )}
            <Group>
              <Badge size="lg" variant="light">{localCount} run{localCount === 1 ? '' : 's'}</Badge>
              <Button variant="default" onClick={runPreview} loading={preview.isPending} disabled={problems.length > 0}>
                Preview
              </Button>
              {canWrite && (
                <Button type="submit" loading={create.isPending} disabled={problems.length > 0} data-testid="submit-experiment">
                  Submit {localCount} run{localCount === 1 ? '' : 's'}
                </Button>
              )}
            </Group>
            {!canWrite && <Alert color="gray">Viewers of {project.name} can preview but not submit.</Alert>}
            {preview.data && <PreviewTable preview={preview.data} />}
          </Stack>
        </Grid.Col>
      </Grid>
    </form>
  );
}

export function NewExperimentPage() {
  const kinds = useKinds();
  return (
    <Stack>
      <Title order={2}>New experiment</Title>
      <QueryState isPending={kinds.isPending} error={kinds.error}>
        {() => <NewExperimentForm kinds={kinds.data!} />}
      </QueryState>
    </Stack>
  );
}
