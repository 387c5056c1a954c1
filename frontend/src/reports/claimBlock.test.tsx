// The claim block of reports: drawn with the claims page's card from the evaluation its data holds
// (verdict, pre-registration, deciding version, each arm's n, mean and interval, each comparison's effect,
// p-values and needed n), frozen or live as the caption says, text only (a claim's name may hold < and >),
// and "not visible" for a claim of another project or a frozen evaluation the server refused.
import { MantineProvider } from '@mantine/core';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import type { ReportBlock, ReportBlockData } from '../api/types';
import { reportBlocks } from './index';
import { ReportView } from './ReportView';
import { CLAIM_NOT_VISIBLE, type ClaimSnapshot } from './blocks/claim';

const snapshot: ClaimSnapshot = {
  claim_id: 7,
  name: 'shared <b>beats</b> private',
  definition: {
    section: '001 §4.2',
    description: '',
    arms: [
      { name: 'private', query: 'params.m = "private"' },
      { name: 'shared', query: 'params.m = "shared"' },
    ],
    metric: 'acc',
    read: { mode: 'last' },
    direction: 'greater',
    min_effect: 0.02,
    test: { type: 't', pairing: 'auto' },
    alpha: 0.05,
    power: 0.8,
    family: null,
  },
  evaluation: {
    version: 2,
    hash: 'cd'.repeat(32),
    verdict: 'supported',
    arms: [
      { name: 'private', n: 6, mean: 0.62, std: 0.02, ci_low: 0.599, ci_high: 0.641, run_ids: [1, 2, 3, 4, 5, 6] },
      { name: 'shared', n: 6, mean: 0.6783, std: 0.03, ci_low: 0.647, ci_high: 0.7096, run_ids: [7, 8, 9, 10, 11, 12] },
    ],
    comparisons: [
      {
        arm: 'shared', reference: 'private', test: 'paired', n: 6, effect: 0.0583, ci_low: 0.0451, ci_high: 0.0716,
        statistic: 11.3, df: 5, p_value: 0.000095, p_adjusted: 0.00019, verdict: 'supported', reason: 'significant', needed_n: null,
      },
    ],
    family: 'claim 7',
    family_size: 1,
    preregistration: { status: 'pre-registered', locked_version: 2, locked_hash: 'cd'.repeat(32), locked_at: '2026-11-01T10:00:00Z', locked_by: 'meg', first_run_started_at: null },
    evaluated_at: '2026-11-28T20:00:00Z',
  },
};

const block: ReportBlock = { id: 'c', type: 'claim', title: '', claim_id: 7, mode: 'frozen' };

function data(over: Partial<ReportBlockData> = {}): ReportBlockData {
  return { block_id: 'c', type: 'claim', live: false, as_of: '2026-11-28T20:00:00Z', visible: true, hidden_runs: 0, detail: snapshot, ...over } as ReportBlockData;
}

function html(d: ReportBlockData): string {
  return renderToStaticMarkup(
    <MantineProvider>
      <ReportView blocks={[block]} data={{ c: d }} />
    </MantineProvider>,
  );
}

const text = (markup: string) => markup.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ');

describe('the claim block', () => {
  it('is a block type of the registry, added from a claim card rather than the editor', () => {
    expect(reportBlocks.get('claim')?.label).toBe('Claim');
    expect(reportBlocks.creatable().map((t) => t.type)).not.toContain('claim');
  });

  it('draws the frozen evaluation as the claims page does, as text', () => {
    const out = html(data());
    expect(out).not.toContain('<b>beats');
    expect(out).toContain('shared &lt;b&gt;beats&lt;/b&gt; private');
    const words = text(out);
    expect(out).toMatch(/data-testid="claim-block-c-verdict"><span[^>]*>supported</);
    expect(out).toMatch(/data-testid="claim-block-c-prereg"><span[^>]*>pre-registered</);
    expect(words).toContain('version 2 decided (sha256 cdcdcdcdcdcd)');
    expect(out).toMatch(/data-testid="claim-block-c-n-1"[^>]*>6</);
    expect(words).toContain('0.6783');
    expect(words).toContain('[0.647, 0.7096]');
    expect(words).toContain('0.0583');
    expect(words).toContain('&lt; 0.0001'); // the raw p
    expect(words).toContain('0.00019'); // Holm's adjusted p
    expect(words).toContain('frozen at 2026-11-28 20:00 UTC');
    expect(out).not.toContain('add-to-report'); // a report's card has no actions
  });

  it('says live and as of when for a live block', () => {
    expect(text(html(data({ live: true, as_of: '2026-11-28T21:30:00Z' })))).toContain('live, as of 2026-11-28 21:30 UTC');
  });

  it('shows a claim it may not see, or an evaluation the server refused, as not visible and nothing of it', () => {
    const hidden = html(data({ visible: false, detail: null }));
    expect(hidden).toContain(CLAIM_NOT_VISIBLE);
    expect(hidden).not.toContain('claim-block-c-verdict');
    const refused = html(data({ visible: false, detail: { problem: 'not shown: the frozen evaluation of this block does not match its seal' } }));
    expect(refused).toContain('does not match its seal');
    expect(refused).not.toContain('supported');
  });
});
