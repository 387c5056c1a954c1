import { Alert, Button, Group, SegmentedControl, Select, Stack, Text, TextInput } from '@mantine/core';
import { useState } from 'react';
import { isApiError } from '../../api/errors';
import type { Claim } from '../../api/types';
import { useCreateClaim, useEditClaim } from '../../hooks/claims';
import { claimFieldErrors, claimPatch, definitionOf, draftOf, emptyDraft, type ClaimDraft } from '../../lib/claims';

/** The form that states a claim: a name, the paper's section, two or more arms (a name and a query each),
 *  the metric and how it is read, the direction, the smallest effect, the test, alpha and the family. The
 *  API's 422 lands on the fields it names. Given a `claim`, the same form edits it: prefilled with its name
 *  and current definition, it sends only what changed (PATCH; a changed definition is a new version), its
 *  test ids under `claim-${id}-edit` (`claim-${id}-edit-name`...) instead of `claim` (`claim-name`...). */
export function ClaimForm({ projectId, onDone, claim }: { projectId: number; onDone: () => void; claim?: Claim }) {
  const [draft, setDraft] = useState<ClaimDraft>(() => (claim ? draftOf(claim.name, claim.definition) : emptyDraft()));
  const create = useCreateClaim(projectId);
  const edit = useEditClaim(projectId);
  const error = claim ? edit.error : create.error;
  const errors = error && isApiError(error) ? claimFieldErrors(error.errors) : {};
  const other = error && isApiError(error) && error.errors.length === 0 ? error.detail : errors.other;
  const set = (patch: Partial<ClaimDraft>) => setDraft((d) => ({ ...d, ...patch }));
  const setArm = (i: number, patch: Partial<ClaimDraft['arms'][number]>) =>
    setDraft((d) => ({ ...d, arms: d.arms.map((a, j) => (j === i ? { ...a, ...patch } : a)) }));
  const patch = claim ? claimPatch(claim, draft) : {};
  const unchanged = claim !== undefined && patch.name === undefined && patch.definition === undefined;
  const submit = () =>
    claim
      ? edit.mutate({ id: claim.id, body: patch }, { onSuccess: onDone })
      : create.mutate({ name: draft.name, definition: definitionOf(draft) }, { onSuccess: () => { setDraft(emptyDraft()); onDone(); } });
  const locked = claim?.evaluation.preregistration.locked_version;
  const tid = claim ? `claim-${claim.id}-edit` : 'claim';
  return (
    <Stack gap="xs" data-testid={`${tid}-form`}>
      <Group grow align="flex-start">
        <TextInput label="Claim" placeholder="shared modules beat private ones" value={draft.name} onChange={(e) => set({ name: e.currentTarget.value })} error={errors.name} data-testid={`${tid}-name`} />
        <TextInput label="Paper section" placeholder="001 §4.2" value={draft.section} onChange={(e) => set({ section: e.currentTarget.value })} error={errors.section} data-testid={`${tid}-section`} />
      </Group>
      <Text size="sm" fw={500}>Arms (the first is the reference)</Text>
      {draft.arms.map((arm, i) => (
        <Group key={i} align="flex-start" wrap="nowrap">
          <TextInput aria-label={`arm ${i + 1} name`} value={arm.name} onChange={(e) => setArm(i, { name: e.currentTarget.value })} error={errors[`arms.${i}.name`]} w={140} data-testid={`${tid}-arm-${i}-name`} />
          <TextInput
            aria-label={`arm ${i + 1} query`}
            placeholder="params.train.lr = 0.01"
            value={arm.query}
            onChange={(e) => setArm(i, { query: e.currentTarget.value })}
            error={errors[`arms.${i}.query`]}
            style={{ flex: 1 }}
            ff="monospace"
            data-testid={`${tid}-arm-${i}-query`}
          />
          {draft.arms.length > 2 && (
            <Button variant="subtle" color="red" size="xs" onClick={() => set({ arms: draft.arms.filter((_, j) => j !== i) })}>
              Remove
            </Button>
          )}
        </Group>
      ))}
      {errors.arms && <Text size="xs" c="red">{errors.arms}</Text>}
      <Group>
        <Button size="xs" variant="subtle" disabled={draft.arms.length >= 10} onClick={() => set({ arms: [...draft.arms, { name: String.fromCharCode(65 + draft.arms.length), query: '' }] })}>
          Add an arm
        </Button>
      </Group>
      <Group grow align="flex-start">
        <TextInput label="Metric" placeholder="loss" value={draft.metric} onChange={(e) => set({ metric: e.currentTarget.value })} error={errors.metric} data-testid={`${tid}-metric`} />
        <Select
          label="Read as"
          data={[
            { value: 'last', label: 'last value' },
            { value: 'best', label: 'best value' },
            { value: 'mean_last', label: 'mean of the last N steps' },
          ]}
          value={draft.read}
          onChange={(v) => v && set({ read: v as ClaimDraft['read'] })}
          error={errors.read}
          allowDeselect={false}
        />
        {draft.read === 'mean_last' && <TextInput label="N steps" value={draft.steps} onChange={(e) => set({ steps: e.currentTarget.value })} error={errors.steps} />}
      </Group>
      <Group grow align="flex-start">
        <div>
          <Text size="sm" fw={500}>Direction</Text>
          <SegmentedControl
            value={draft.direction}
            onChange={(v) => set({ direction: v as ClaimDraft['direction'] })}
            data={[
              { value: 'greater', label: 'greater than the reference' },
              { value: 'less', label: 'less than the reference' },
            ]}
            data-testid={`${tid}-direction`}
          />
        </div>
        <TextInput label="Smallest effect worth reporting" value={draft.minEffect} onChange={(e) => set({ minEffect: e.currentTarget.value })} error={errors.min_effect} data-testid={`${tid}-min-effect`} />
      </Group>
      <Group grow align="flex-start">
        <Select
          label="Test"
          data={[
            { value: 'auto', label: 'paired by seed where the arms share seeds, else Welch' },
            { value: 'paired', label: 'paired t (by seed)' },
            { value: 'welch', label: "Welch's t" },
            { value: 'bootstrap', label: 'bootstrap' },
          ]}
          value={draft.test}
          onChange={(v) => v && set({ test: v as ClaimDraft['test'] })}
          error={errors.test}
          allowDeselect={false}
        />
        <TextInput label="Alpha" value={draft.alpha} onChange={(e) => set({ alpha: e.currentTarget.value })} error={errors.alpha} />
        <TextInput label="Family (Holm)" placeholder="its own" value={draft.family} onChange={(e) => set({ family: e.currentTarget.value })} error={errors.family} data-testid={`${tid}-family`} />
      </Group>
      {other && <Alert color="red" data-testid={`${tid}-form-error`}>{other}</Alert>}
      {claim && locked != null && (
        <Alert color="orange" data-testid={`${tid}-locked`}>
          Version {locked} is locked. Saving a changed definition makes version {claim.version + 1}, which is not pre-registered
          until it is locked again: until then the card says &ldquo;edited after lock&rdquo;. A new name alone makes no new version.
        </Alert>
      )}
      <Group>
        {claim ? (
          <Button onClick={submit} loading={edit.isPending} disabled={unchanged} data-testid={`${tid}-submit`}>
            {unchanged ? 'Nothing changed' : 'Save'}
          </Button>
        ) : (
          <Button onClick={submit} loading={create.isPending} data-testid="claim-submit">
            State the claim
          </Button>
        )}
      </Group>
    </Stack>
  );
}

