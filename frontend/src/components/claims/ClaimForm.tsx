import { Alert, Button, Group, SegmentedControl, Select, Stack, Text, TextInput } from '@mantine/core';
import { useState } from 'react';
import { isApiError } from '../../api/errors';
import { useCreateClaim } from '../../hooks/claims';
import { claimFieldErrors, definitionOf, emptyDraft, type ClaimDraft } from '../../lib/claims';

/** The form that states a claim: a name, the paper's section, two or more arms (a name and a query each),
 *  the metric and how it is read, the direction, the smallest effect, the test, alpha and the family. The
 *  API's 422 lands on the fields it names. */
export function ClaimForm({ projectId, onDone }: { projectId: number; onDone: () => void }) {
  const [draft, setDraft] = useState<ClaimDraft>(emptyDraft);
  const create = useCreateClaim(projectId);
  const errors = create.error && isApiError(create.error) ? claimFieldErrors(create.error.errors) : {};
  const other = create.error && isApiError(create.error) && create.error.errors.length === 0 ? create.error.detail : errors.other;
  const set = (patch: Partial<ClaimDraft>) => setDraft((d) => ({ ...d, ...patch }));
  const setArm = (i: number, patch: Partial<ClaimDraft['arms'][number]>) =>
    setDraft((d) => ({ ...d, arms: d.arms.map((a, j) => (j === i ? { ...a, ...patch } : a)) }));
  const submit = () =>
    create.mutate({ name: draft.name, definition: definitionOf(draft) }, { onSuccess: () => { setDraft(emptyDraft()); onDone(); } });
  return (
    <Stack gap="xs" data-testid="claim-form">
      <Group grow align="flex-start">
        <TextInput label="Claim" placeholder="shared modules beat private ones" value={draft.name} onChange={(e) => set({ name: e.currentTarget.value })} error={errors.name} data-testid="claim-name" />
        <TextInput label="Paper section" placeholder="001 §4.2" value={draft.section} onChange={(e) => set({ section: e.currentTarget.value })} error={errors.section} data-testid="claim-section" />
      </Group>
      <Text size="sm" fw={500}>Arms (the first is the reference)</Text>
      {draft.arms.map((arm, i) => (
        <Group key={i} align="flex-start" wrap="nowrap">
          <TextInput aria-label={`arm ${i + 1} name`} value={arm.name} onChange={(e) => setArm(i, { name: e.currentTarget.value })} error={errors[`arms.${i}.name`]} w={140} data-testid={`claim-arm-${i}-name`} />
          <TextInput
            aria-label={`arm ${i + 1} query`}
            placeholder="params.train.lr = 0.01"
            value={arm.query}
            onChange={(e) => setArm(i, { query: e.currentTarget.value })}
            error={errors[`arms.${i}.query`]}
            style={{ flex: 1 }}
            ff="monospace"
            data-testid={`claim-arm-${i}-query`}
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
        <TextInput label="Metric" placeholder="loss" value={draft.metric} onChange={(e) => set({ metric: e.currentTarget.value })} error={errors.metric} data-testid="claim-metric" />
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
            data-testid="claim-direction"
          />
        </div>
        <TextInput label="Smallest effect worth reporting" value={draft.minEffect} onChange={(e) => set({ minEffect: e.currentTarget.value })} error={errors.min_effect} data-testid="claim-min-effect" />
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
        <TextInput label="Family (Holm)" placeholder="its own" value={draft.family} onChange={(e) => set({ family: e.currentTarget.value })} error={errors.family} data-testid="claim-family" />
      </Group>
      {other && <Alert color="red" data-testid="claim-form-error">{other}</Alert>}
      <Group>
        <Button onClick={submit} loading={create.isPending} data-testid="claim-submit">
          State the claim
        </Button>
      </Group>
    </Stack>
  );
}

