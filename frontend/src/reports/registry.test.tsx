import { MantineProvider } from '@mantine/core';
import { readFileSync } from 'node:fs';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import type { ReportBlock, ReportBlockData } from '../api/types';
import { moveBlock, removeBlock, replaceBlock, staleChanges } from './editing';
import { reportBlocks } from './index';
import { buildBlockRegistry } from './registry';
import { ReportView } from './ReportView';
import type { ReportBlockType } from './types';

const Claim: ReportBlockType<'markdown'> = { type: 'markdown', label: 'Claim', View: () => null };

function html(blocks: ReportBlock[], data: Record<string, ReportBlockData> = {}): string {
  return renderToStaticMarkup(
    <MantineProvider>
      <ReportView blocks={blocks} data={data} />
    </MantineProvider>,
  );
}

const XSS = '<script>alert(1)</script><img src=x onerror=alert(2)> [x](javascript:alert(3))';

describe('report block types', () => {
  it('come from their modules: one per block type of the API, no shared switch', () => {
    const api = JSON.parse(readFileSync('openapi.json', 'utf8')) as {
      components: { schemas: Record<string, { properties: { blocks: { items: { discriminator: { mapping: Record<string, string> } } } } }> };
    };
    const mapping = api.components.schemas.ReportCreate!.properties.blocks.items.discriminator.mapping;
    expect([...reportBlocks.types]).toEqual(Object.keys(mapping).sort());
    expect(reportBlocks.creatable().map((t) => t.type)).toEqual(['callout', 'heading', 'markdown']);
  });

  it('refuses two modules drawing one type, and draws an unknown type as its JSON', () => {
    expect(() => buildBlockRegistry({ './blocks/a.tsx': { block: Claim }, './blocks/b.tsx': { block: Claim } })).toThrow(/both/);
    const out = html([{ id: 'n', type: 'sweep_of_the_future', text: 'x' } as unknown as ReportBlock]);
    expect(out).toContain('sweep_of_the_future');
  });

  it('renders text without raw HTML or script links', () => {
    const out = html([
      { id: 'h', type: 'heading', text: XSS, level: 1 },
      { id: 'm', type: 'markdown', text: XSS },
      { id: 'c', type: 'callout', tone: 'warning', text: XSS },
    ]);
    expect(out).not.toContain('<script');
    expect(out).not.toContain('<img');
    expect(out).not.toMatch(/href="javascript/i);
  });

  it('draws a figure whose lines say which run and steps they show, and a hidden block as not visible', () => {
    const figure: ReportBlock = {
      id: 'f', type: 'figure', title: 'loss', source: { run_ids: [3], limit: 20 }, metrics: ['loss'], group_by: [], log_scale: false, mode: 'frozen',
    };
    const data: ReportBlockData = {
      block_id: 'f', type: 'figure', live: false, as_of: '2026-11-28T20:00:00Z', visible: true, hidden_runs: 1, exact: true,
      runs: [{ run_id: 3, name: 'base', experiment_id: 1, status: 'succeeded', attempt: 1, steps: { loss: [0, 9] } }],
      series: [{ run_id: 3, key: 'loss', label: 'base', points: [[0, 2], [9, 1]] }],
    };
    const out = html([figure], { f: data });
    expect(out).toContain('<title>base: run 3, loss, steps 0-9 (2 points)</title>');
    expect(out).toContain('frozen at 2026-11-28 20:00 UTC; run 3 (base); 1 run(s) not visible to you');
    expect(out).not.toContain('not exact');
    const hidden = html([figure], { f: { ...data, visible: false, runs: [], series: [] } });
    expect(hidden).toContain('not visible to you');
    expect(hidden).not.toContain('<svg');
  });

  it("says in a frozen block's caption when its data was read again instead of kept, and why", () => {
    const figure: ReportBlock = {
      id: 'f', type: 'figure', title: 'loss', source: { run_ids: [3], limit: 20 }, metrics: ['loss'], group_by: [], log_scale: false, mode: 'frozen',
    };
    const note = 'read again up to its cut-off: no data was kept when it was frozen; the run changed since freezing (run 3 is at attempt 2, frozen at attempt 1)';
    const data: ReportBlockData = {
      block_id: 'f', type: 'figure', live: false, as_of: '2026-11-28T20:00:00Z', visible: true, hidden_runs: 0, exact: false, exact_note: note,
      runs: [{ run_id: 3, name: 'base', experiment_id: 1, status: 'running', attempt: 1, steps: { loss: [0, 9] } }],
      series: [{ run_id: 3, key: 'loss', label: 'base', points: [[0, 2], [9, 1]] }],
    };
    expect(html([figure], { f: data })).toContain(`frozen at 2026-11-28 20:00 UTC; run 3 (base); not exact: ${note}`);
  });
});

describe('editing', () => {
  const blocks: ReportBlock[] = [
    { id: 'a', type: 'markdown', text: 'a' },
    { id: 'b', type: 'markdown', text: 'b' },
  ];
  it('moves, removes and replaces blocks', () => {
    expect(moveBlock(blocks, 0, 1).map((b) => b.id)).toEqual(['b', 'a']);
    expect(moveBlock(blocks, 0, -1).map((b) => b.id)).toEqual(['a', 'b']);
    expect(removeBlock(blocks, 'a').map((b) => b.id)).toEqual(['b']);
    expect(replaceBlock(blocks, { id: 'b', type: 'markdown', text: 'B' })[1]).toEqual({ id: 'b', type: 'markdown', text: 'B' });
  });
  it("reads a stale save's 409 into the blocks that changed", () => {
    expect(
      staleChanges([
        { loc: ['body', 'base_version'], msg: 'current version is 3' },
        { loc: ['blocks', 'b'], msg: 'differs from the saved version' },
      ]),
    ).toEqual([{ block: 'b', msg: 'differs from the saved version' }]);
  });
});
