// A project's secrets: the names, where each may be sent, who set each and when; a project admin adds,
// replaces and deletes them and edits their hosts. The value is typed into an uncontrolled password input:
// React state never holds it, the mutation takes it out of its variables as it sends it (hooks/secrets.ts),
// and the input is emptied once the API has it. No answer of the API carries a value, so the page never
// shows one. A secret goes only to its hosts: a spec naming it with another endpoint is refused.
import { Alert, Badge, Button, Code, Group, Modal, Paper, Stack, Table, Text, Textarea, TextInput, Title } from '@mantine/core';
import { useRef, useState, type FormEvent, type RefObject } from 'react';
import { ConfirmDelete } from '../common/ConfirmDelete';
import type { Secret } from '../../api/types';
import { useDeleteSecret, useSecrets, useSetSecret, useSetSecretHosts } from '../../hooks/secrets';
import { hostLines, secretFormErrors, unsendableName, type SecretFormErrors } from '../../lib/secretForm';
import { QueryState } from '../common/QueryState';
import { timeAgo } from '../common/time';
import { isoDateTime } from '../../lib/plainFormat';

const SPEC_LINE = 'api_key_secret: NAME';
const HOSTS_PLACEHOLDER = 'api.openai.com\n*.openai.azure.com\nhttps://llm.internal:8443/v1';
const HOSTS_HELP =
  'one a line: a host name (https), *.domain, an IP address or network, or a URL prefix (http(s)://host:port/path, the only way to allow http); none: sent nowhere';

interface FormProps {
  projectId: number;
  name: string;
  setName: (name: string) => void;
  hosts: string;
  setHosts: (hosts: string) => void;
  valueRef: RefObject<HTMLInputElement | null>;
  onSaved: (name: string) => void;
}

function SecretForm({ projectId, name, setName, hosts, setHosts, valueRef, onSaved }: FormProps) {
  const set = useSetSecret(projectId);
  const [local, setLocal] = useState<SecretFormErrors>({});
  const errors = set.error ? secretFormErrors(set.error) : local;

  const submit = (e: FormEvent) => {
    e.preventDefault();
    const input = valueRef.current;
    if (!input) return;
    const wanted = name.trim();
    const problem = unsendableName(wanted);
    set.reset();
    setLocal(problem ? { name: problem } : {});
    if (problem) return;
    set.mutate(
      { name: wanted, value: input.value, hosts: hostLines(hosts) },
      {
        onSuccess: (secret) => {
          input.value = '';
          setName('');
          setHosts('');
          onSaved(secret.name);
        },
      },
    );
  };

  return (
    <Paper withBorder p="md" component="form" onSubmit={submit} aria-label="Add or replace a secret" data-testid="secret-form">
      <Stack gap="sm">
        <Title order={5}>Add or replace a secret</Title>
        {errors.form && (
          <Alert color="red" role="alert" data-testid="secret-form-error">
            {errors.form}
          </Alert>
        )}
        <Group align="flex-start" gap="sm" wrap="wrap">
          <TextInput
            label="Name"
            description="letters, digits and _; a name set before is replaced"
            placeholder="OPENAI_API_KEY"
            value={name}
            onChange={(e) => setName(e.currentTarget.value)}
            error={errors.name}
            autoComplete="off"
            spellCheck={false}
            withAsterisk
            w={340}
            styles={{ input: { fontFamily: 'var(--mantine-font-family-monospace)' } }}
          />
          <TextInput
            ref={valueRef}
            type="password"
            label="Value"
            description="never shown again once saved"
            error={errors.value}
            autoComplete="new-password"
            spellCheck={false}
            withAsterisk
            w={340}
          />
        </Group>
        <Textarea
          label="Sent only to"
          description={HOSTS_HELP}
          placeholder={HOSTS_PLACEHOLDER}
          value={hosts}
          onChange={(e) => setHosts(e.currentTarget.value)}
          error={errors.hosts}
          autosize
          minRows={2}
          maxRows={8}
          spellCheck={false}
          maw={694}
          styles={{ input: { fontFamily: 'var(--mantine-font-family-monospace)' } }}
        />
        <Group>
          <Button type="submit" loading={set.isPending} data-testid="save-secret">
            Save secret
          </Button>
        </Group>
      </Stack>
    </Paper>
  );
}

function Hosts({ hosts }: { hosts: readonly string[] }) {
  if (hosts.length === 0)
    return (
      <Badge color="orange" variant="light" title="a project admin names its hosts before any run may send it" data-testid="secret-hosts-none">
        nowhere yet
      </Badge>
    );
  return (
    <Group gap={4} data-testid="secret-hosts">
      {hosts.map((h) => (
        <Code key={h}>{h}</Code>
      ))}
    </Group>
  );
}

function SecretsTable({ secrets, canManage, onReplace, onEditHosts, onDelete, saved }: {
  secrets: readonly Secret[];
  canManage: boolean;
  onReplace: (secret: Secret) => void;
  onEditHosts: (secret: Secret) => void;
  onDelete: (name: string) => void;
  saved: string | null;
}) {
  if (secrets.length === 0) return <Text c="dimmed" data-testid="secrets-empty">No secrets in this project yet.</Text>;
  return (
    <Table withTableBorder fz="sm" data-testid="secrets-table">
      <Table.Thead>
        <Table.Tr>
          <Table.Th>Name</Table.Th>
          <Table.Th>Sent only to</Table.Th>
          <Table.Th>Set by</Table.Th>
          <Table.Th>Updated</Table.Th>
          {canManage && <Table.Th aria-label="actions" />}
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        {secrets.map((s) => (
          <Table.Tr key={s.name} data-testid="secret-row" data-name={s.name} bg={s.name === saved ? 'green.0' : undefined}>
            <Table.Td ff="monospace">{s.name}</Table.Td>
            <Table.Td>
              <Hosts hosts={s.hosts} />
            </Table.Td>
            <Table.Td>{s.updated_by ?? '—'}</Table.Td>
            <Table.Td title={isoDateTime(s.updated_at)}>{timeAgo(s.updated_at)}</Table.Td>
            {canManage && (
              <Table.Td>
                <Group gap={4} wrap="nowrap">
                  <Button size="compact-xs" variant="subtle" onClick={() => onReplace(s)} aria-label={`replace ${s.name}`}>
                    Replace
                  </Button>
                  <Button size="compact-xs" variant="subtle" onClick={() => onEditHosts(s)} aria-label={`hosts of ${s.name}`}>
                    Hosts
                  </Button>
                  <Button size="compact-xs" variant="subtle" color="red" onClick={() => onDelete(s.name)} aria-label={`delete ${s.name}`}>
                    Delete
                  </Button>
                </Group>
              </Table.Td>
            )}
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  );
}

/** An admin's edit of where a secret may be sent, its value untouched (PATCH); mounted per secret edited. */
function HostsEditor({ projectId, secret, onClose }: { projectId: number; secret: Secret; onClose: () => void }) {
  const patch = useSetSecretHosts(projectId);
  const [text, setText] = useState(secret.hosts.join('\n'));
  const errors = patch.error ? secretFormErrors(patch.error) : {};
  const close = () => {
    patch.reset();
    onClose();
  };
  const save = (e: FormEvent) => {
    e.preventDefault();
    patch.mutate({ name: secret.name, hosts: hostLines(text) }, { onSuccess: close });
  };
  return (
    <Modal opened onClose={close} title={`Where ${secret.name} may be sent`} centered size="lg">
      <Stack gap="sm" component="form" onSubmit={save} data-testid="secret-hosts-form">
        {errors.form && (
          <Alert color="red" role="alert">
            {errors.form}
          </Alert>
        )}
        <Textarea
          label="Sent only to"
          description={`${HOSTS_HELP}. Runs that have not read it yet get it only for endpoints these cover.`}
          placeholder={HOSTS_PLACEHOLDER}
          value={text}
          onChange={(e) => setText(e.currentTarget.value)}
          error={errors.hosts}
          autosize
          minRows={3}
          maxRows={10}
          spellCheck={false}
          data-autofocus
          styles={{ input: { fontFamily: 'var(--mantine-font-family-monospace)' } }}
        />
        <Group justify="flex-end" gap="sm">
          <Button variant="default" onClick={close}>
            Cancel
          </Button>
          <Button type="submit" loading={patch.isPending} data-testid="save-secret-hosts">
            Save hosts
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}

/**
 * The Secrets section of a project's settings. `canManage` (a project admin, or a site admin) gets the form
 * and the replace and delete buttons; members and viewers see the names, read-only.
 */
export function ProjectSecrets({ projectId, canManage }: { projectId: number; canManage: boolean }) {
  const secrets = useSecrets(projectId);
  const [name, setName] = useState('');
  const [hosts, setHosts] = useState('');
  const [hostsOf, setHostsOf] = useState<Secret | null>(null);
  const valueRef = useRef<HTMLInputElement>(null);
  const [saved, setSaved] = useState<string | null>(null);
  // the secret the delete dialog asks about; kept while the dialog closes so its title does not change
  const [deleting, setDeleting] = useState<{ name: string; opened: boolean }>({ name: '', opened: false });
  const del = useDeleteSecret(projectId);

  const replace = (secret: Secret) => {
    setName(secret.name);
    setHosts(secret.hosts.join('\n'));
    valueRef.current?.focus();
  };

  return (
    <Stack gap="md" maw={900} data-testid="project-secrets">
      {canManage ? (
        <Text size="sm" c="dimmed">
          Keys for outside endpoints (a grader&apos;s API key). A spec names one in a field ending in <Code>_secret</Code>, as in{' '}
          <Code>{SPEC_LINE}</Code>; only the runs whose spec names it receive the value, only for the hosts you list with it (a spec
          whose endpoint is elsewhere is refused), and no page or API answer shows it once saved.
        </Text>
      ) : (
        <Text size="sm" c="dimmed" data-testid="secrets-read-only">
          Only project admins set secrets; a spec names one in a field ending in <Code>_secret</Code>: <Code>{SPEC_LINE}</Code>, with an
          endpoint among the secret&apos;s hosts.
        </Text>
      )}
      {canManage && (
        <SecretForm projectId={projectId} name={name} setName={setName} hosts={hosts} setHosts={setHosts} valueRef={valueRef} onSaved={setSaved} />
      )}
      <QueryState isPending={secrets.isPending} error={secrets.error}>
        {() => (
          <SecretsTable
            secrets={secrets.data ?? []}
            canManage={canManage}
            onReplace={replace}
            onEditHosts={setHostsOf}
            onDelete={(secret) => setDeleting({ name: secret, opened: true })}
            saved={saved}
          />
        )}
      </QueryState>
      {canManage && hostsOf && <HostsEditor key={hostsOf.name} projectId={projectId} secret={hostsOf} onClose={() => setHostsOf(null)} />}
      {canManage && (
        <ConfirmDelete what="secret" del={del} name={deleting.name} target={deleting.name} opened={deleting.opened} onClose={() => setDeleting((d) => ({ ...d, opened: false }))}>
          Until it is set again, experiments whose spec names <Code>{deleting.name}</Code> are refused, and their runs that have not started cannot get it.
        </ConfirmDelete>
      )}
    </Stack>
  );
}
