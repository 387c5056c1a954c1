import { describe, expect, it } from 'vitest';
import type { Kind } from '../api/types';
import { defaultSpec, exampleForm, experimentBody, specShapeProblems } from './experimentForm';

const kind: Kind = {
  name: 'diagnostic',
  description: 'self-test',
  result_kinds: ['diagnostic'],
  spec_schema: {},
  defaults: {
    kind: 'diagnostic',
    seed: 0,
    train: { steps: 200, lr: 0.01, batch_size: 64, checkpoint_every: 50, log_every: 1, step_delay: 0 },
    resources: { device: 'auto', gpus: 0, priority: 'normal' },
  },
  examples: [
    { name: 'seed-sweep', description: 'three seeds', spec: { train: { steps: 20 } }, sweep: { grid: { seed: [1, 2, 3] } } },
  ],
};
const form = { name: ' my run ', description: '', project: 'default', sweep: null };

describe('exampleForm', () => {
  it('lays the example spec over the defaults and reads its sweep into the editor model', () => {
    const { spec, sweep } = exampleForm(kind, kind.examples[0]!);
    // defaults are typed as the union of every kind's spec; this fixture is the diagnostic kind's
    const defaults = kind.defaults as Extract<Kind['defaults'], { kind: 'diagnostic' }>;
    expect(spec).toEqual({ ...defaultSpec(kind), train: { ...defaults.train, steps: 20 } });
    expect(sweep.grid).toEqual([{ type: 'grid', path: 'seed', text: '1, 2, 3' }]);
  });
});

describe('exampleForm with a discriminated union', () => {
  // topk_eval's shape: target a union by target.type, its default the smoe_sraven variant
  const variant = (tag: string, properties: Record<string, unknown>) => ({
    type: 'object',
    properties: { type: { const: tag, default: tag, type: 'string' }, ...properties },
  });
  const topk = {
    ...kind,
    name: 'topk_eval',
    spec_schema: {
      $defs: {
        Smoe: variant('smoe_sraven', { run_id: { anyOf: [{ type: 'integer' }, { type: 'null' }], default: null }, train_k: { type: 'array' } }),
        Hf: variant('hf', { model: { type: 'string', default: 'tiny-mixtral' }, score: { enum: ['perplexity', 'multiple_choice'], default: 'perplexity' } }),
      },
      type: 'object',
      properties: {
        seed: { type: 'integer', default: 0 },
        target: {
          discriminator: { propertyName: 'type', mapping: { smoe_sraven: '#/$defs/Smoe', hf: '#/$defs/Hf' } },
          oneOf: [{ $ref: '#/$defs/Smoe' }, { $ref: '#/$defs/Hf' }],
        },
      },
    },
    defaults: { kind: 'topk_eval', seed: 0, target: { type: 'smoe_sraven', run_id: null, train_k: [1, 2, 8] } },
    examples: [
      { name: 'smoe-run', description: '', spec: { target: { type: 'smoe_sraven', run_id: 1 } }, sweep: null },
      { name: 'hf', description: '', spec: { target: { type: 'hf', score: 'multiple_choice' } }, sweep: null },
    ],
  } as unknown as Kind;

  it('merges an example of the default variant into its defaults', () => {
    expect(exampleForm(topk, topk.examples[0]!).spec).toEqual({ kind: 'topk_eval', seed: 0, target: { type: 'smoe_sraven', run_id: 1, train_k: [1, 2, 8] } });
  });

  it("lays an example of another variant onto that variant's defaults, without the default variant's fields", () => {
    expect(exampleForm(topk, topk.examples[1]!).spec).toEqual({
      kind: 'topk_eval', seed: 0, target: { type: 'hf', model: 'tiny-mixtral', score: 'multiple_choice' },
    });
  });
});

describe('experimentBody', () => {
  it('names the kind in the spec and fills left-out top-level defaults', () => {
    const built = experimentBody(kind, { ...form, spec: { train: { lr: 0.1 } } });
    expect(built).toEqual({
      body: { name: 'my run', kind: 'diagnostic', spec: { kind: 'diagnostic', seed: 0, train: { lr: 0.1 } }, sweep: null, project: 'default', description: '', tags: [] },
    });
  });

  it('replaces a wrong kind in the edited spec with the chosen one', () => {
    const built = experimentBody(kind, { ...form, spec: { kind: 'smoe_sraven' } });
    expect('body' in built && built.body.spec?.kind).toBe('diagnostic');
  });

  it('names an unnamed experiment after its kind and the time', () => {
    const built = experimentBody(kind, { ...form, name: '', spec: {} }, new Date('2026-11-23T09:15:00Z'));
    expect('body' in built && built.body.name).toBe('diagnostic 2026-11-23 09:15');
  });

  it('refuses a top-level field of the wrong JSON type, naming it', () => {
    expect(experimentBody(kind, { ...form, spec: { seed: 'seven' } })).toEqual({ problems: { seed: 'must be a number' } });
    expect(specShapeProblems(kind, { seed: 3, train: 'nested values are the server’s to judge' })).toEqual({});
  });
});
