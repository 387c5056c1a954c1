import { MantineProvider } from '@mantine/core';
import { readFileSync } from 'node:fs';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import type { PayloadOf, ResultPayload } from '../api/types';
import { GenericResultView } from '../components/results/GenericResultView';
import { DiagnosticResultView } from './diagnostic/DiagnosticResultView';
import { kindViews } from './index';
import { buildRegistry, kindOfPath } from './registry';
import { SravenCellView } from './smoe/smoe_sraven/SravenCellView';
import type { ExperimentTab, KindModule, ResultView, ResultViews } from './types';

const Tab: ExperimentTab = { id: 'plot', label: 'Plot', View: () => null };

describe('buildRegistry', () => {
  it('names a kind by its folder', () => {
    expect(kindOfPath('./smoe/smoe_sraven/index.ts')).toBe('smoe_sraven');
    expect(kindOfPath('./diagnostic/diagnostic/index.tsx')).toBe('diagnostic');
    expect(() => kindOfPath('./loose.ts')).toThrow(/src\/kinds\/<family>\/<kind>\/index/);
    expect(() => kindOfPath('./smoe_sraven/index.ts')).toThrow(/src\/kinds\/<family>\/<kind>\/index/);
  });

  it('gives a kind without views no extra tabs and its results the generic view', () => {
    const registry = buildRegistry({ './fam/bare/index.ts': { views: {} } });
    expect(registry.kinds).toEqual(['bare']);
    expect(registry.experimentTabs('bare')).toEqual([]);
    expect(registry.experimentTabs('no_folder_at_all')).toEqual([]);
    expect(registry.resultView('diagnostic')).toBeUndefined();
    expect(registry.viewFor('diagnostic')).toBe(GenericResultView);
    expect(registry.viewFor('a_result_kind_this_build_does_not_know')).toBe(GenericResultView);
  });

  it('collects the tabs and result views each folder declares', () => {
    const modules: Record<string, KindModule> = {
      './f/a/index.ts': { views: { experimentTabs: [Tab], resultViews: { diagnostic: DiagnosticResultView } } },
      './f/b/index.tsx': { views: { resultViews: { sraven_cell: SravenCellView } } },
    };
    const registry = buildRegistry(modules);
    expect(registry.experimentTabs('a')).toEqual([Tab]);
    expect(registry.experimentTabs('b')).toEqual([]);
    expect(registry.viewFor('diagnostic')).toBe(DiagnosticResultView);
    expect(registry.viewFor('sraven_cell')).toBe(SravenCellView);
  });

  it('refuses two views for one result kind and a tab declared twice', () => {
    const twice = { views: { resultViews: { diagnostic: DiagnosticResultView } } };
    expect(() => buildRegistry({ './f/a/index.ts': twice, './g/b/index.ts': twice })).toThrow(/diagnostic has a view in both a and b/);
    expect(() => buildRegistry({ './f/a/index.ts': { views: { experimentTabs: [Tab, Tab] } } })).toThrow(/"plot" twice/);
  });
});

describe('the kinds of this dashboard (src/kinds/<family>/<kind>/index.ts, found by convention)', () => {
  const openapi = JSON.parse(readFileSync(new URL('../../openapi.json', import.meta.url), 'utf8'));
  const mapping = (schema: string, prop: string) => Object.keys(openapi.components.schemas[schema].properties[prop].discriminator.mapping).sort();

  it('are folders named after kinds the API lists', () => {
    expect(kindViews.kinds).toEqual(expect.arrayContaining(['carma', 'diagnostic', 'smoe_sraven']));
    expect(kindViews.kinds).toEqual(expect.arrayContaining(['reasonformer_finetune', 'reasonformer_pretrain', 'skillmix', 'topk_eval']));
    expect(kindViews.kinds).toEqual([...kindViews.kinds].sort());
    for (const kind of kindViews.kinds) expect(mapping('ExperimentCreate', 'spec')).toContain(kind);
  });

  it('draw their result kinds, which the API types, with their own views', () => {
    for (const resultKind of ['diagnostic', 'sraven_cell']) expect(mapping('ResultPublic', 'payload')).toContain(resultKind);
    expect(kindViews.viewFor('diagnostic')).toBe(DiagnosticResultView);
    expect(kindViews.viewFor('sraven_cell')).toBe(SravenCellView);
  });

  it('give smoe_sraven experiments the SRAVEN grid tab and diagnostic ones none', () => {
    expect(kindViews.experimentTabs('smoe_sraven').map((t) => t.label)).toEqual(['SRAVEN grid']);
    expect(kindViews.experimentTabs('diagnostic')).toEqual([]);
  });
});

describe('GenericResultView', () => {
  it('shows a payload as key/values', () => {
    const payload: ResultPayload = { kind: 'diagnostic', initial_loss: 2, final_loss: 0.5, parameters: 99, steps: 10 };
    const html = renderToStaticMarkup(
      <MantineProvider>
        <GenericResultView payload={payload} />
      </MantineProvider>,
    );
    expect(html).toContain('<th');
    expect(html).toContain('initial_loss');
    expect(html).toContain('0.5');
    expect(html).not.toContain('>kind<');
  });
});

// Compile-time checks (`npm run typecheck`): result views are typed by their payload's schema. Each
// line below must fail to compile; if the typing ever loosened (a payload typed as a plain record, or
// `any`), the @ts-expect-error would be unused and the typecheck would fail instead.
describe('result view typing', () => {
  it('is checked by tsc', () => {
    const reads: ResultView<'sraven_cell'> = ({ payload }) => {
      // @ts-expect-error: SravenCell has no field `accuracy`
      void payload.accuracy;
      return null;
    };
    const cell = (p: PayloadOf<'diagnostic'>) =>
      // @ts-expect-error: a diagnostic record has no `M` (that is sraven_cell's)
      p.M;
    // @ts-expect-error: a diagnostic view cannot be registered for sraven_cell records
    const misplaced: ResultViews = { sraven_cell: DiagnosticResultView };
    // @ts-expect-error: not a result kind of the API
    const unknownKind: ResultViews = { no_such_result: GenericResultView };
    expect([reads, cell, misplaced, unknownKind]).toHaveLength(4);
  });
});
