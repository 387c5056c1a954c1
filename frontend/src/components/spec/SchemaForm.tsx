// A spec form generated from the kind's JSON schema (lib/schemaForm): nested objects as fieldsets,
// numbers with their range in the description, enums as selects, booleans as switches, nullable
// values clearable, optional nested configs switched on and off, a discriminated union as a select of its
// variant above that variant's fields. Every control has a label.
import { Checkbox, Fieldset, NativeSelect, NumberInput, SimpleGrid, Stack, Switch, Text, TextInput, Textarea } from '@mantine/core';
import { memo, useEffect, useState } from 'react';
import { getPath, type Json, type JsonObject } from '../../lib/dotted';
import { fieldDefault, rangeHint, switchVariant, variantOf, type FormField, type UnionField } from '../../lib/schemaForm';

interface Props {
  fields: readonly FormField[];
  value: JsonObject;
  onChange: (path: string[], value: Json | undefined) => void;
  /** messages keyed by dotted path */
  errors: Record<string, string>;
  disabled?: boolean;
}

const idOf = (path: readonly string[]) => `spec-${path.join('-')}`;

function describe(field: FormField): string | undefined {
  const parts = [field.description?.replace(/``/g, '`'), field.type === 'number' || field.type === 'integer' ? rangeHint(field) : null];
  if (field.nullable) parts.push('empty = none');
  const s = parts.filter(Boolean).join(' · ');
  return s || undefined;
}

function NumberField({ field, value, onChange, error, disabled }: FieldProps) {
  // The input keeps its own text so intermediate states ("-", "1.", "1e") survive typing; the spec
  // gets a number once the text is one, and follows outside changes (YAML edits, kind switch).
  const [text, setText] = useState<string | number>(typeof value === 'number' ? value : '');
  useEffect(() => {
    setText((t) => {
      if (typeof value === 'number') return t !== '' && Number(t) === value ? t : value;
      // no value: clear, unless the text is a half-typed number that has not reached the spec yet
      return typeof t === 'string' && t !== '' && !Number.isFinite(Number(t)) ? t : '';
    });
  }, [value]);
  if (field.type !== 'number' && field.type !== 'integer') return null;
  return (
    <NumberInput
      id={idOf(field.path)}
      name={field.path.join('.')}
      label={field.label}
      description={describe(field)}
      value={text}
      onChange={(v) => {
        setText(v);
        if (v === '' || v === undefined) onChange(field.nullable ? null : undefined);
        else if (typeof v === 'number') onChange(v);
        else if (v.trim() !== '' && Number.isFinite(Number(v))) onChange(Number(v));
      }}
      allowDecimal={field.type === 'number'}
      clampBehavior="none"
      // the server is the authority on ranges; the message shows either way
      error={error}
      disabled={disabled}
      placeholder={field.default !== undefined && field.default !== null ? `default ${String(field.default)}` : field.nullable ? 'none' : undefined}
      inputMode={field.type === 'integer' ? 'numeric' : 'decimal'}
    />
  );
}

function JsonTextField({ field, value, onChange, error, disabled }: FieldProps) {
  const [text, setText] = useState(() => JSON.stringify(value ?? null));
  const [parseError, setParseError] = useState<string | null>(null);
  return (
    <Textarea
      id={idOf(field.path)}
      label={`${field.label} (JSON)`}
      description={describe(field)}
      value={text}
      autosize
      minRows={1}
      ff="monospace"
      disabled={disabled}
      error={parseError ?? error}
      onChange={(e) => {
        const t = e.currentTarget.value;
        setText(t);
        try {
          onChange(JSON.parse(t) as Json);
          setParseError(null);
        } catch {
          setParseError('not valid JSON');
        }
      }}
    />
  );
}

interface FieldProps {
  field: FormField;
  value: unknown;
  onChange: (value: Json | undefined) => void;
  error?: string;
  disabled?: boolean;
}

type NestedProps = { errors: Record<string, string>; onChangeAt: Props['onChange'] };

/** An object's or a union variant's fields: scalars two to a row, nested objects full width. */
function Children({ fields, value, errors, onChangeAt, disabled, keyPrefix = '' }: NestedProps & { fields: readonly FormField[]; value: unknown; disabled?: boolean; keyPrefix?: string }) {
  return (
    <SimpleGrid cols={{ base: 1, sm: 2 }} spacing="sm" verticalSpacing="xs">
      {fields.map((c) => (
        <div
          key={keyPrefix + c.path.join('.')}
          style={c.type === 'object' || c.type === 'union' || c.type === 'json' ? { gridColumn: '1 / -1' } : undefined}
        >
          <Field
            field={c}
            value={getPath({ v: value ?? {} }, ['v', c.path[c.path.length - 1]!])}
            onChange={(v) => onChangeAt(c.path, v)}
            error={errors[c.path.join('.')]}
            errors={errors}
            onChangeAt={onChangeAt}
            disabled={disabled}
          />
        </div>
      ))}
    </SimpleGrid>
  );
}

/**
 * The server names a variant's field under its tag (pydantic's loc: target.hf.choices_path); the form keys
 * it by the spec path (target.choices_path). Both keys, so the message shows on the field.
 */
function variantErrors(errors: Record<string, string>, path: readonly string[], tag: unknown): Record<string, string> {
  if (typeof tag !== 'string') return errors;
  const prefix = `${[...path, tag].join('.')}.`;
  const out = { ...errors };
  for (const [k, m] of Object.entries(errors)) {
    if (!k.startsWith(prefix)) continue;
    const key = `${path.join('.')}.${k.slice(prefix.length)}`;
    out[key] = out[key] && out[key] !== m ? `${out[key]}; ${m}` : m;
  }
  return out;
}

function UnionEditor({ field, value, onChange, error, disabled, errors, onChangeAt }: FieldProps & NestedProps & { field: UnionField }) {
  const variant = variantOf(field, value);
  const tagPath = [...field.path, field.discriminator];
  const options: { value: string; label: string; disabled?: boolean }[] = field.variants.map((v) => ({
    value: JSON.stringify(v.tag),
    label: typeof v.tag === 'string' ? v.tag : JSON.stringify(v.tag),
  }));
  if (field.nullable) options.unshift({ value: 'null', label: '(none)' });
  else if (!variant) options.unshift({ value: '', label: '(choose)', disabled: true });
  const selected = variant ? JSON.stringify(variant.tag) : value === null && field.nullable ? 'null' : '';
  return (
    <Fieldset legend={<Text fw={600} size="sm">{field.label}</Text>} variant="filled" p="sm" aria-label={field.label}>
      <Stack gap="xs">
        {describe(field) && <Text size="xs" c="dimmed">{describe(field)}</Text>}
        {error && <Text c="red" size="xs">{error}</Text>}
        <NativeSelect
          id={idOf(tagPath)}
          label={`${field.label} ${field.discriminator}`}
          description={variant?.description?.replace(/``/g, '`')}
          data={options}
          value={selected}
          onChange={(e) => {
            const t = e.currentTarget.value;
            if (t === '') return;
            onChange(t === 'null' ? null : switchVariant(field, value, JSON.parse(t) as Json));
          }}
          error={errors[tagPath.join('.')]}
          disabled={disabled}
        />
        {variant && (
          <Children
            fields={variant.children}
            value={value}
            errors={variantErrors(errors, field.path, variant.tag)}
            onChangeAt={onChangeAt}
            disabled={disabled}
            // a variant's fields start afresh when the variant changes (a number's typed text included)
            keyPrefix={`${JSON.stringify(variant.tag)}:`}
          />
        )}
      </Stack>
    </Fieldset>
  );
}

function Field(props: FieldProps & NestedProps) {
  const { field, value, onChange, error, disabled, errors, onChangeAt } = props;
  switch (field.type) {
    case 'number':
    case 'integer':
      return <NumberField {...props} />;
    case 'boolean':
      return (
        <Switch
          id={idOf(field.path)}
          label={field.label}
          description={describe(field)}
          checked={value === true}
          onChange={(e) => onChange(e.currentTarget.checked)}
          error={error}
          disabled={disabled}
        />
      );
    case 'enum': {
      const options = field.options.map((o) => ({ value: JSON.stringify(o), label: typeof o === 'string' ? o : JSON.stringify(o) }));
      if (field.nullable) options.unshift({ value: 'null', label: '(none)' });
      return (
        <NativeSelect
          id={idOf(field.path)}
          label={field.label}
          description={describe(field)}
          data={options}
          value={JSON.stringify(value ?? (field.nullable ? null : field.options[0]))}
          onChange={(e) => onChange(JSON.parse(e.currentTarget.value) as Json)}
          error={error}
          disabled={disabled}
        />
      );
    }
    case 'string':
      return (
        <TextInput
          id={idOf(field.path)}
          label={field.label}
          description={describe(field)}
          value={typeof value === 'string' ? value : ''}
          onChange={(e) => onChange(e.currentTarget.value === '' && field.nullable ? null : e.currentTarget.value)}
          error={error}
          disabled={disabled}
        />
      );
    case 'object': {
      const enabled = value !== null && value !== undefined ? true : !field.nullable;
      return (
        <Fieldset legend={<Text fw={600} size="sm">{field.label}</Text>} variant="filled" p="sm" aria-label={field.label}>
          <Stack gap="xs">
            {field.description && <Text size="xs" c="dimmed">{field.description.replace(/``/g, '`')}</Text>}
            {field.nullable && (
              <Checkbox
                label={`Enable ${field.label.toLowerCase()}`}
                checked={enabled}
                disabled={disabled}
                onChange={(e) => onChange(e.currentTarget.checked ? fieldDefault({ ...field, default: undefined, nullable: false }) : null)}
              />
            )}
            {error && <Text c="red" size="xs">{error}</Text>}
            {enabled && <Children fields={field.children} value={value} errors={errors} onChangeAt={onChangeAt} disabled={disabled} />}
          </Stack>
        </Fieldset>
      );
    }
    case 'union':
      return <UnionEditor {...props} field={field} />;
    default:
      return <JsonTextField {...props} />;
  }
}

function SchemaFormImpl({ fields, value, onChange, errors, disabled }: Props) {
  return (
    <Stack gap="sm" data-testid="schema-form">
      {fields.map((f) => (
        <Field
          key={f.path.join('.')}
          field={f}
          value={getPath(value, f.path)}
          onChange={(v) => onChange(f.path, v)}
          error={errors[f.path.join('.')]}
          errors={errors}
          onChangeAt={onChange}
          disabled={disabled}
        />
      ))}
    </Stack>
  );
}

export const SchemaForm = memo(SchemaFormImpl);
