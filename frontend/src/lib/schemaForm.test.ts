import { describe, expect, it } from 'vitest';
import { fieldDefault, rangeHint, schemaToFields, validateField, validateSpec, type JsonSchema, type NumberField } from './schemaForm';

// The shape pydantic v2 emits for a spec like worker/specs/diagnostic/diagnostic.py.
const schema: JsonSchema = {
  $defs: {
    Resources: {
      type: 'object',
      properties: {
        device: { enum: ['auto', 'cpu', 'cuda'], type: 'string', default: 'auto' },
        gpus: { type: 'integer', minimum: 0, maximum: 64, default: 0 },
      },
    },
    Train: {
      type: 'object',
      properties: {
        lr: { type: 'number', exclusiveMinimum: 0, maximum: 10, default: 0.01, description: 'learning rate' },
        steps: { type: 'integer', minimum: 1, default: 200 },
        fail_at_step: { anyOf: [{ type: 'integer' }, { type: 'null' }], default: null },
        shuffle: { type: 'boolean', default: true },
        optimizer: { const: 'adam', default: 'adam' },
      },
    },
    Moe: { type: 'object', properties: { top_k: { type: 'integer', minimum: 1, default: 2 } } },
  },
  type: 'object',
  properties: {
    kind: { const: 'diagnostic' },
    seed: { type: 'integer', minimum: 0, default: 0 },
    resources: { $ref: '#/$defs/Resources' },
    train: { $ref: '#/$defs/Train', description: 'training loop' },
    moe: { anyOf: [{ $ref: '#/$defs/Moe' }, { type: 'null' }], default: null },
    name: { type: ['string', 'null'], default: null },
    layers: { type: 'array', items: { type: 'integer' }, default: [1, 2] },
  },
};

describe('schemaToFields', () => {
  const fields = schemaToFields(schema);
  const byName = (name: string) => fields.find((f) => f.path.join('.') === name)!;

  it('skips the kind tag and keeps field order', () => {
    expect(fields.map((f) => f.path.join('.'))).toEqual(['seed', 'resources', 'train', 'moe', 'name', 'layers']);
  });

  it('resolves $ref into nested object fields, keeping sibling descriptions', () => {
    const train = byName('train');
    expect(train.type).toBe('object');
    expect(train.description).toBe('training loop');
    if (train.type !== 'object') throw new Error();
    const lr = train.children[0] as NumberField;
    expect(lr).toMatchObject({ type: 'number', path: ['train', 'lr'], exclusiveMinimum: 0, maximum: 10, default: 0.01, label: 'lr' });
  });

  it('reads enums, consts, booleans and nullable scalars', () => {
    const resources = byName('resources');
    if (resources.type !== 'object') throw new Error();
    expect(resources.children[0]).toMatchObject({ type: 'enum', options: ['auto', 'cpu', 'cuda'] });
    const train = byName('train');
    if (train.type !== 'object') throw new Error();
    expect(train.children.find((c) => c.path[1] === 'fail_at_step')).toMatchObject({ type: 'integer', nullable: true });
    expect(train.children.find((c) => c.path[1] === 'shuffle')).toMatchObject({ type: 'boolean' });
    expect(train.children.find((c) => c.path[1] === 'optimizer')).toMatchObject({ type: 'enum', options: ['adam'] });
    expect(byName('name')).toMatchObject({ type: 'string', nullable: true });
  });

  it('models an optional nested config as a nullable object', () => {
    expect(byName('moe')).toMatchObject({ type: 'object', nullable: true, default: null });
  });

  it('falls back to JSON for arrays', () => {
    expect(byName('layers').type).toBe('json');
  });

  it('builds defaults from children', () => {
    expect(fieldDefault(byName('resources'))).toEqual({ device: 'auto', gpus: 0 });
    const moe = byName('moe');
    expect(fieldDefault(moe)).toBeNull();
    if (moe.type !== 'object') throw new Error();
    expect(fieldDefault({ ...moe, default: undefined, nullable: false })).toEqual({ top_k: 2 });
  });
});

describe('validateField', () => {
  const lr: NumberField = { type: 'number', path: ['lr'], label: 'Lr', nullable: false, exclusiveMinimum: 0, maximum: 10 };
  it('applies exclusive and inclusive bounds', () => {
    expect(validateField(lr, 0)).toBe('must be > 0');
    expect(validateField(lr, 10)).toBeNull();
    expect(validateField(lr, 11)).toBe('must be ≤ 10');
  });
  it('requires whole numbers for integers and a value unless nullable', () => {
    expect(validateField({ ...lr, type: 'integer' }, 1.5)).toBe('must be a whole number');
    expect(validateField(lr, null)).toBe('a value is required');
    expect(validateField({ ...lr, nullable: true }, null)).toBeNull();
  });
  it('checks enum membership', () => {
    expect(validateField({ type: 'enum', path: ['d'], label: 'D', nullable: false, options: ['a'] }, 'b')).toMatch(/one of/);
  });
  it('describes the range for the label', () => {
    expect(rangeHint(lr)).toBe('0 < x ≤ 10');
  });
});

describe('validateSpec', () => {
  it('reports nested errors by dotted path and ignores absent fields', () => {
    const fields = schemaToFields(schema);
    expect(validateSpec(fields, { train: { lr: -1 }, seed: 3 })).toEqual({ 'train.lr': 'must be > 0' });
    expect(validateSpec(fields, {})).toEqual({});
  });
});
