// @vitest-environment jsdom
// The spec form edits a discriminated union (topk_eval's `target`): a select of the variant, labelled with the
// field's and the discriminator's names, above the chosen variant's fields; switching variant keeps the
// fields both variants share, drops the others, sets `type` and fills the defaults; errors, the server's
// (named under the variant's tag) included, show on the variant's fields.
import { MantineProvider } from '@mantine/core';
import { act, useState } from 'react';
import { createRoot, type Root } from 'react-dom/client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { setPath, type Json, type JsonObject } from '../../lib/dotted';
import { schemaToFields, validateSpec, type JsonSchema } from '../../lib/schemaForm';
import { installDomShims } from '../../test/dom';
import { SchemaForm } from './SchemaForm';

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

// the shape pydantic v2 emits for worker/specs/smoe/topk_eval.py (trimmed)
const schema: JsonSchema = {
  $defs: {
    SmoeTarget: {
      type: 'object',
      description: 'Our SMoE on SRAVEN.',
      properties: {
        type: { const: 'smoe_sraven', default: 'smoe_sraven', type: 'string' },
        run_id: { anyOf: [{ type: 'integer', minimum: 1 }, { type: 'null' }], default: null, description: 'a succeeded smoe_sraven run' },
        path: { anyOf: [{ type: 'string', minLength: 1 }, { type: 'null' }], default: null },
        train_k: { type: 'array', items: { type: 'integer' } },
        eval_batch_size: { type: 'integer', minimum: 1, maximum: 1000000, default: 1024 },
      },
    },
    HfTarget: {
      type: 'object',
      description: 'An HF mixture-of-experts causal LM.',
      properties: {
        type: { const: 'hf', default: 'hf', type: 'string' },
        model: { type: 'string', minLength: 1, default: 'tiny-mixtral' },
        score: { enum: ['perplexity', 'multiple_choice'], default: 'perplexity', type: 'string' },
        window: { type: 'integer', minimum: 2, maximum: 32768, default: 128 },
      },
    },
    ReasonFormerTarget: {
      type: 'object',
      properties: {
        type: { const: 'reasonformer', default: 'reasonformer', type: 'string' },
        pretrain_run_id: { anyOf: [{ type: 'integer', minimum: 1 }, { type: 'null' }], default: null },
        path: { anyOf: [{ type: 'string', minLength: 1 }, { type: 'null' }], default: null },
        eval_batch_size: { type: 'integer', minimum: 1, maximum: 65536, default: 64 },
      },
    },
  },
  type: 'object',
  properties: {
    seed: { type: 'integer', minimum: 0, default: 0 },
    kind: { const: 'topk_eval', default: 'topk_eval', type: 'string' },
    target: {
      description: 'which model, by type',
      discriminator: {
        propertyName: 'type',
        mapping: { hf: '#/$defs/HfTarget', reasonformer: '#/$defs/ReasonFormerTarget', smoe_sraven: '#/$defs/SmoeTarget' },
      },
      oneOf: [{ $ref: '#/$defs/SmoeTarget' }, { $ref: '#/$defs/HfTarget' }, { $ref: '#/$defs/ReasonFormerTarget' }],
    },
  },
};
const fields = schemaToFields(schema);
const INITIAL: JsonObject = {
  seed: 0,
  kind: 'topk_eval',
  target: { type: 'smoe_sraven', run_id: null, path: 'models/smoe', train_k: [1, 2, 8], eval_batch_size: 512 },
};

let root: Root | null = null;
let container: HTMLElement;
/** the spec as the form last produced it */
let spec: JsonObject;

function Harness({ serverErrors = {} }: { serverErrors?: Record<string, string> }) {
  const [value, setValue] = useState<JsonObject>(INITIAL);
  spec = value;
  const errors = { ...validateSpec(fields, value), ...serverErrors };
  const onChange = (path: string[], v: Json | undefined) => setValue((s) => setPath(s, path, v));
  return <SchemaForm fields={fields} value={value} onChange={onChange} errors={errors} />;
}

function render(serverErrors?: Record<string, string>) {
  act(() => {
    root = createRoot(container);
    root.render(
      <MantineProvider env="test">
        <Harness serverErrors={serverErrors} />
      </MantineProvider>,
    );
  });
}

beforeEach(() => {
  installDomShims();
  container = document.body.appendChild(document.createElement('div'));
});

afterEach(() => {
  act(() => root?.unmount());
  root = null;
  container.remove();
});

const labelled = (label: string) =>
  [...container.querySelectorAll('label')].find((l) => l.textContent?.replace('*', '').trim() === label)?.control as
    | HTMLInputElement
    | HTMLSelectElement
    | undefined;
const labels = () => [...container.querySelectorAll('label')].map((l) => l.textContent?.trim());

function choose(label: string, option: string) {
  const select = labelled(label) as HTMLSelectElement;
  act(() => {
    select.value = JSON.stringify(option);
    select.dispatchEvent(new Event('change', { bubbles: true }));
  });
}
function type(label: string, text: string) {
  const input = labelled(label) as HTMLInputElement;
  act(() => {
    Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value')!.set!.call(input, text);
    input.dispatchEvent(new Event('input', { bubbles: true }));
  });
}

describe('SchemaForm with a discriminated union', () => {
  it("shows a labelled select of the variant and the chosen variant's fields, each labelled", () => {
    render();
    const group = container.querySelector('fieldset[aria-label="target"]');
    expect(group).not.toBeNull();
    const select = labelled('target type') as HTMLSelectElement;
    expect(select.tagName).toBe('SELECT');
    expect(group!.contains(select)).toBe(true);
    expect([...select.options].map((o) => o.textContent)).toEqual(['smoe_sraven', 'hf', 'reasonformer']);
    expect(select.value).toBe('"smoe_sraven"');
    expect(container.textContent).toContain('Our SMoE on SRAVEN.');
    expect(labels()).toEqual(expect.arrayContaining(['run_id', 'path', 'train_k (JSON)', 'eval_batch_size']));
    expect(labels()).not.toContain('model');
    expect((labelled('path') as HTMLInputElement).value).toBe('models/smoe');
    // every control of the union has a label pointing at it
    for (const control of group!.querySelectorAll('input, select, textarea')) {
      expect(container.querySelector(`label[for="${control.id}"]`), control.id).not.toBeNull();
    }
  });

  it("selecting a variant produces its type and defaults, and a filled field lands in the variant's value", () => {
    render();
    choose('target type', 'hf');
    expect(spec.target).toEqual({ type: 'hf', model: 'tiny-mixtral', score: 'perplexity', window: 128 });
    expect(labels()).toEqual(expect.arrayContaining(['model', 'score', 'window']));
    expect(labels()).not.toContain('run_id');
    type('model', 'tiny-olmoe');
    type('window', '256');
    choose('score', 'multiple_choice');
    expect(spec).toEqual({ seed: 0, kind: 'topk_eval', target: { type: 'hf', model: 'tiny-olmoe', score: 'multiple_choice', window: 256 } });
  });

  it('switching variant keeps the fields both variants have with agreeing types and drops the others', () => {
    render();
    choose('target type', 'reasonformer');
    // path: a text in both; eval_batch_size 512 fits reasonformer's range; run_id and train_k dropped
    expect(spec.target).toEqual({ type: 'reasonformer', pretrain_run_id: null, path: 'models/smoe', eval_batch_size: 512 });
    type('pretrain_run_id', '3');
    expect(spec.target).toMatchObject({ type: 'reasonformer', pretrain_run_id: 3 });
    choose('target type', 'smoe_sraven');
    expect(spec.target).toEqual({ type: 'smoe_sraven', run_id: null, path: 'models/smoe', eval_batch_size: 512 });
    expect((labelled('run_id') as HTMLInputElement).value).toBe('');
  });

  it("shows the chosen variant's errors on its fields, the server's named under the variant's tag too", () => {
    render({ 'target.hf.model': 'no such model in the model store' });
    choose('target type', 'reasonformer');
    type('eval_batch_size', '100000');
    expect(container.textContent).toContain('must be ≤ 65536');
    choose('target type', 'hf');
    expect(container.textContent).not.toContain('must be ≤ 65536');
    expect(container.textContent).toContain('no such model in the model store');
    const model = labelled('model') as HTMLInputElement;
    expect(model.getAttribute('aria-invalid')).toBe('true');
  });
});
