import { describe, expect, it } from 'vitest';
import {
  fieldDefault, rangeHint, schemaToFields, switchVariant, validateField, validateSpec, variantOf,
  type JsonSchema, type NumberField, type UnionField,
} from './schemaForm';

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

// The shape pydantic v2 emits for a discriminated union (worker/specs/smoe/topk_eval.py's target):
// oneOf of $refs, discriminator.propertyName + mapping, each variant's tag a const with that default.
const unionSchema: JsonSchema = {
  $defs: {
    Smoe: {
      type: 'object',
      title: 'Smoe',
      description: 'our SMoE',
      properties: {
        type: { const: 'smoe', default: 'smoe', type: 'string' },
        run_id: { anyOf: [{ type: 'integer', minimum: 1 }, { type: 'null' }], default: null },
        path: { anyOf: [{ type: 'string', minLength: 1 }, { type: 'null' }], default: null },
        train_k: { type: 'array', items: { type: 'integer' } },
        eval_batch_size: { type: 'integer', minimum: 1, maximum: 1000000, default: 1024 },
      },
    },
    Hf: {
      type: 'object',
      properties: {
        type: { const: 'hf', default: 'hf', type: 'string' },
        model: { type: 'string', minLength: 1, default: 'tiny-mixtral' },
        score: { enum: ['perplexity', 'multiple_choice'], default: 'perplexity', type: 'string' },
        batch_size: { type: 'integer', minimum: 1, default: 8 },
      },
    },
    Rf: {
      type: 'object',
      properties: {
        type: { enum: ['rf'], type: 'string' },
        path: { anyOf: [{ type: 'string', minLength: 1 }, { type: 'null' }], default: null },
        run_id: { type: 'string', default: 'x' },
        eval_batch_size: { type: 'integer', minimum: 1, maximum: 65536, default: 64 },
      },
    },
  },
  type: 'object',
  properties: {
    kind: { const: 'topk' },
    target: {
      description: 'which model, by type',
      discriminator: { propertyName: 'type', mapping: { smoe: '#/$defs/Smoe', hf: '#/$defs/Hf', rf: '#/$defs/Rf' } },
      oneOf: [{ $ref: '#/$defs/Smoe' }, { $ref: '#/$defs/Hf' }, { $ref: '#/$defs/Rf' }],
    },
    backup: {
      anyOf: [{ discriminator: { propertyName: 'type', mapping: { hf: '#/$defs/Hf' } }, oneOf: [{ $ref: '#/$defs/Smoe' }, { $ref: '#/$defs/Hf' }] }, { type: 'null' }],
      default: null,
    },
    either: { anyOf: [{ type: 'integer' }, { type: 'string' }] },
  },
};

describe('discriminated unions', () => {
  const fields = schemaToFields(unionSchema);
  const target = fields.find((f) => f.path[0] === 'target') as UnionField;

  it('become a union field: the discriminator, each variant tag and its fields without the discriminator', () => {
    expect(target).toMatchObject({ type: 'union', path: ['target'], label: 'target', discriminator: 'type', nullable: false, description: 'which model, by type' });
    expect(target.variants.map((v) => v.tag)).toEqual(['smoe', 'hf', 'rf']);
    expect(target.variants[0]).toMatchObject({ title: 'Smoe', description: 'our SMoE' });
    const [smoe, hf, rf] = target.variants;
    expect(smoe!.children.map((c) => c.path.join('.'))).toEqual(['target.run_id', 'target.path', 'target.train_k', 'target.eval_batch_size']);
    expect(smoe!.children.map((c) => c.type)).toEqual(['integer', 'string', 'json', 'integer']);
    expect(smoe!.children[0]).toMatchObject({ nullable: true, minimum: 1, default: null });
    expect(hf!.children.map((c) => [c.label, c.type])).toEqual([['model', 'string'], ['score', 'enum'], ['batch_size', 'integer']]);
    expect(rf!.children.map((c) => c.label)).toEqual(['path', 'run_id', 'eval_batch_size']);
  });

  it('keeps an optional union nullable, and leaves a union of scalars (no discriminator) as JSON', () => {
    const backup = fields.find((f) => f.path[0] === 'backup');
    expect(backup).toMatchObject({ type: 'union', nullable: true, default: null, discriminator: 'type' });
    expect((backup as UnionField).variants.map((v) => v.tag)).toEqual(['smoe', 'hf']);
    expect(fields.find((f) => f.path[0] === 'either')?.type).toBe('json');
  });

  it('tells variants apart by a const property when the schema names no discriminator', () => {
    const { discriminator: _d, ...plain } = unionSchema.properties!.target!;
    const [f] = schemaToFields({ ...unionSchema, properties: { target: { ...plain, anyOf: plain.oneOf, oneOf: undefined } } });
    expect(f).toMatchObject({ type: 'union', discriminator: 'type' });
    expect((f as UnionField).variants.map((v) => v.tag)).toEqual(['smoe', 'hf', 'rf']);
  });

  it("starts from the first variant's defaults, the discriminator set and fields without a default left to the server", () => {
    expect(fieldDefault(target)).toEqual({ type: 'smoe', run_id: null, path: null, eval_batch_size: 1024 });
    expect(fieldDefault(fields.find((f) => f.path[0] === 'backup')!)).toBeNull();
  });

  it('picks the variant by the discriminator value', () => {
    expect(variantOf(target, { type: 'hf' })?.tag).toBe('hf');
    expect(variantOf(target, { type: 'nope' })).toBeUndefined();
    expect(variantOf(target, 'hf')).toBeUndefined();
  });

  it('validates a value against the variant its discriminator picks', () => {
    expect(validateSpec(fields, { target: { type: 'smoe', run_id: 0, eval_batch_size: 5 } })).toEqual({ 'target.run_id': 'must be ≥ 1' });
    expect(validateSpec(fields, { target: { type: 'hf', model: '', score: 'accuracy', batch_size: 2 } })).toEqual({
      'target.model': 'at least 1 characters',
      'target.score': 'must be one of "perplexity", "multiple_choice"',
    });
    // the same name, another variant's bounds: 100000 is fine for smoe, too many for rf
    expect(validateSpec(fields, { target: { type: 'smoe', eval_batch_size: 100000 } })).toEqual({});
    expect(validateSpec(fields, { target: { type: 'rf', eval_batch_size: 100000 } })).toEqual({ 'target.eval_batch_size': 'must be ≤ 65536' });
    expect(validateSpec(fields, { target: { type: 'rf', run_id: 3 } })).toEqual({ 'target.run_id': 'must be text' });
  });

  it('names a missing or unknown discriminator, a value that is no object, and null unless optional', () => {
    expect(validateSpec(fields, { target: { model: 'x' } })).toEqual({ 'target.type': 'type is required' });
    expect(validateSpec(fields, { target: { type: 'gpt' } })).toEqual({ 'target.type': 'type must be one of "smoe", "hf", "rf"' });
    expect(validateSpec(fields, { target: 3 })).toEqual({ target: 'must be an object' });
    expect(validateSpec(fields, { target: null })).toEqual({ target: 'a value is required' });
    expect(validateSpec(fields, { backup: null })).toEqual({});
    expect(validateSpec(fields, { backup: { type: 'hf', batch_size: 0 } })).toEqual({ 'backup.batch_size': 'must be ≥ 1' });
    expect(validateField(target, { type: 'hf' })).toBeNull();
  });

  it('switching variant keeps same-named fields whose types agree, drops the others and fills the defaults', () => {
    const smoe = { type: 'smoe', run_id: 7, path: 'models/a', train_k: [1, 2], eval_batch_size: 100000 };
    // path: a nullable string in both; run_id: an integer here, text in rf; eval_batch_size: over rf's maximum
    expect(switchVariant(target, smoe, 'rf')).toEqual({ type: 'rf', path: 'models/a', run_id: 'x', eval_batch_size: 64 });
    expect(switchVariant(target, { ...smoe, eval_batch_size: 512 }, 'rf')).toEqual({ type: 'rf', path: 'models/a', run_id: 'x', eval_batch_size: 512 });
    expect(switchVariant(target, smoe, 'hf')).toEqual({ type: 'hf', model: 'tiny-mixtral', score: 'perplexity', batch_size: 8 });
    expect(switchVariant(target, { type: 'rf', path: null, run_id: 'y', eval_batch_size: 32 }, 'smoe')).toEqual({
      type: 'smoe', run_id: null, path: null, eval_batch_size: 32,
    });
    expect(switchVariant(target, undefined, 'hf')).toEqual({ type: 'hf', model: 'tiny-mixtral', score: 'perplexity', batch_size: 8 });
  });
});
