// What a per-example diff calls changed (lib/exampleDiff.ts): the data fields that define a change, ticked
// among the table's fields (none ticked: every field), and the relative and absolute tolerance numbers
// are compared with. A tolerance applies when typed and confirmed (Enter, or leaving the box).
import { Button, Checkbox, Group, Stack, Text, TextInput } from '@mantine/core';
import { useEffect, useState } from 'react';
import { DEFAULT_RULE, parseTolerance, ruleSummary, sameRule, type DiffRule } from '../../lib/exampleDiff';

function ToleranceInput({
  label,
  value,
  max,
  onChange,
  testId,
}: {
  label: string;
  value: number;
  max?: number;
  onChange: (v: number) => void;
  testId: string;
}) {
  const [text, setText] = useState(String(value));
  useEffect(() => setText(String(value)), [value]);
  const parsed = parseTolerance(text, max);
  const commit = () => {
    if (parsed !== null && parsed !== value) onChange(parsed);
  };
  return (
    <TextInput
      size="xs"
      w={130}
      label={label}
      value={text}
      onChange={(e) => setText(e.currentTarget.value)}
      onBlur={commit}
      onKeyDown={(e) => {
        if (e.key === 'Enter') commit();
      }}
      error={parsed === null ? `a number from 0${max !== undefined ? ` to ${max}` : ''}` : undefined}
      data-testid={testId}
    />
  );
}

export function DiffRuleControls({ rule, fields, onChange }: { rule: DiffRule; fields: string[]; onChange: (next: DiffRule) => void }) {
  // a field the rule names but the rows shown lack stays listed, so it can be unticked
  const listed = [...fields, ...rule.fields.filter((f) => !fields.includes(f))];
  return (
    <Group align="flex-start" gap="lg" data-testid="diff-rule" data-rule={ruleSummary(rule)}>
      <Stack gap={4} style={{ minWidth: 0, flex: '1 1 320px' }}>
        <Text size="sm" fw={500}>
          Changed when these fields differ
        </Text>
        <Checkbox.Group value={rule.fields} onChange={(v) => onChange({ ...rule, fields: listed.filter((f) => v.includes(f)) })}>
          <Group gap="sm" data-testid="diff-fields">
            {listed.map((f) => (
              <Checkbox key={f} value={f} label={f} size="xs" />
            ))}
          </Group>
        </Checkbox.Group>
        <Text size="xs" c="dimmed">
          {rule.fields.length ? 'other fields may differ without making an item changed' : 'none ticked: any field'}
        </Text>
      </Stack>
      <ToleranceInput label="Relative tolerance" value={rule.rel} max={1} onChange={(rel) => onChange({ ...rule, rel })} testId="diff-rtol" />
      <ToleranceInput label="Absolute tolerance" value={rule.abs} onChange={(abs) => onChange({ ...rule, abs })} testId="diff-atol" />
      <Stack gap={4} justify="flex-end" style={{ alignSelf: 'stretch' }}>
        <Text size="xs" c="dimmed" maw={260}>
          numbers, also inside lists and objects, are the same when |a − b| ≤ max(rel · max(|a|, |b|), abs)
        </Text>
        {!sameRule(rule, DEFAULT_RULE) && (
          <Button size="compact-xs" variant="subtle" onClick={() => onChange(DEFAULT_RULE)} data-testid="diff-rule-reset">
            Reset to every field, 1e-6 relative
          </Button>
        )}
      </Stack>
    </Group>
  );
}
