// A claim's form (the dashboard's claims page) as the API's definition, a claim back as the form (to edit
// it) and the edit as the PATCH body of what changed, the 422's field paths back onto the form's fields,
// and how a claim's numbers read on its card.
import type { ClaimDefinition } from '../api/types';
import type { ErrorItem } from './apiErrors';
import { canonical } from './dotted';

export interface ArmDraft {
  name: string;
  query: string;
}

export interface ClaimDraft {
  name: string;
  section: string;
  arms: ArmDraft[];
  metric: string;
  read: 'last' | 'best' | 'mean_last';
  steps: string;
  direction: 'greater' | 'less';
  minEffect: string;
  test: 'auto' | 'paired' | 'welch' | 'bootstrap';
  alpha: string;
  family: string;
}

export const emptyDraft = (): ClaimDraft => ({
  name: '',
  section: '',
  arms: [
    { name: 'A', query: '' },
    { name: 'B', query: '' },
  ],
  metric: '',
  read: 'last',
  steps: '10',
  direction: 'greater',
  minEffect: '0',
  test: 'auto',
  alpha: '0.05',
  family: '',
});

/** A number field as typed: the number, or the text itself when it is not one (the API's 422 then names the
 *  field, as for any other bad value: the form does not second-guess the API's rules). */
function numeric(text: string): number {
  const t = text.trim();
  return t === '' ? Number.NaN : Number(t);
}

/** The API's body for a draft. `base`, when the draft edits a claim, is its current definition: what the form
 *  has no field for (the description, the power, a bootstrap's resamples and seed) is kept from it, so an
 *  edit changes only what the form shows. */
export function definitionOf(d: ClaimDraft, base?: ClaimDefinition): ClaimDefinition {
  const read: NonNullable<ClaimDefinition['read']> =
    d.read === 'mean_last' ? { mode: 'mean_last', steps: numeric(d.steps) } : { mode: d.read };
  const baseBootstrap = base?.test?.type === 'bootstrap' ? base.test : undefined;
  const test: NonNullable<ClaimDefinition['test']> =
    d.test === 'bootstrap'
      ? { type: 'bootstrap', resamples: baseBootstrap?.resamples ?? 10_000, seed: baseBootstrap?.seed ?? 0 }
      : { type: 't', pairing: d.test };
  return {
    section: d.section,
    description: base?.description ?? '',
    arms: d.arms.map((a) => ({ name: a.name, query: a.query })),
    metric: d.metric,
    read,
    direction: d.direction,
    min_effect: numeric(d.minEffect),
    test,
    alpha: numeric(d.alpha),
    power: base?.power ?? 0.8,
    family: d.family.trim() === '' ? null : d.family.trim(),
  };
}

/** A claim as the form: its name and its definition's fields, as the form holds them (text for numbers). */
export function draftOf(name: string, def: ClaimDefinition): ClaimDraft {
  const read = def.read ?? { mode: 'last' };
  const test = def.test ?? { type: 't', pairing: 'auto' };
  return {
    name,
    section: def.section,
    arms: def.arms.map((a) => ({ name: a.name, query: a.query })),
    metric: def.metric,
    read: read.mode,
    steps: read.mode === 'mean_last' ? String(read.steps) : emptyDraft().steps,
    direction: def.direction,
    minEffect: String(def.min_effect ?? 0),
    test: test.type === 'bootstrap' ? 'bootstrap' : (test.pairing ?? 'auto'),
    alpha: String(def.alpha ?? 0.05),
    family: def.family ?? '',
  };
}

/** The PATCH body of an edit: the name when it differs from the claim's, the definition when it differs
 *  from the current one (keys in any order: the same definition is no change); empty when nothing changed.
 *  A changed definition is a new version (docs/api.md, Claims). */
export function claimPatch(
  claim: { name: string; definition: ClaimDefinition },
  d: ClaimDraft,
): { name?: string; definition?: ClaimDefinition } {
  const out: { name?: string; definition?: ClaimDefinition } = {};
  if (d.name !== claim.name) out.name = d.name;
  const definition = definitionOf(d, claim.definition);
  if (canonical(definition) !== canonical(claim.definition)) out.definition = definition;
  return out;
}

/** A 422's errors by the form's field: `name`, `section`, `arms` (the list), `arms.1.name`,
 *  `arms.1.query`, `metric`, `read` (its union's tag dropped: `read.mean_last.steps` is `steps`),
 *  `min_effect`, `alpha`, `test`; anything else under `other`. */
export function claimFieldErrors(errors: readonly ErrorItem[]): Record<string, string> {
  const out: Record<string, string> = {};
  const add = (key: string, msg: string) => (out[key] = out[key] ? `${out[key]}; ${msg}` : msg);
  for (const e of errors) {
    const loc = e.loc[0] === 'body' ? e.loc.slice(1) : e.loc;
    if (loc[0] === 'name') add('name', e.msg);
    else if (loc[0] === 'definition' && loc.length >= 2) {
      const [, field, ...rest] = loc;
      if (field === 'arms' && typeof rest[0] === 'number' && rest.length >= 2) add(`arms.${rest[0]}.${rest[1]}`, e.msg);
      else if (field === 'read' && rest[rest.length - 1] === 'steps') add('steps', e.msg);
      else if (field === 'test' || field === 'read') add(String(field), e.msg);
      else add(String(field), e.msg);
    } else if (loc[0] === 'path') add('other', e.msg); // the project's, not a field's (a full project: 409)
    else add('other', `${loc.join('.') || 'request'}: ${e.msg}`);
  }
  return out;
}

/** A statistic for the card: 4 significant digits, "-" for none. */
export function num(value: number | null | undefined, digits = 4): string {
  if (value === null || value === undefined) return '-';
  if (value === 0) return '0';
  return Math.abs(value) >= 1e-3 && Math.abs(value) < 1e6 ? String(Number(value.toPrecision(digits))) : value.toExponential(digits - 1);
}

/** An interval "[low, high]", or "-" without one. */
export function interval(low: number | null | undefined, high: number | null | undefined): string {
  return low === null || low === undefined || high === null || high === undefined ? '-' : `[${num(low)}, ${num(high)}]`;
}

/** A p-value: "< 0.0001" below it, else 2 significant digits. */
export function pValue(p: number | null | undefined): string {
  if (p === null || p === undefined) return '-';
  return p < 1e-4 ? '< 0.0001' : String(Number(p.toPrecision(2)));
}

/** How a definition reads its metric and tests it, in words (the card's summary line). */
export function readingText(read: ClaimDefinition['read']): string {
  if (!read || read.mode === 'last') return 'last value';
  if (read.mode === 'best') return 'best value';
  return `mean of the last ${read.steps} steps`;
}

export function testText(test: ClaimDefinition['test']): string {
  if (!test) return 't test (auto)';
  return test.type === 'bootstrap' ? `bootstrap (${test.resamples} resamples)` : `t test (${test.pairing})`;
}

export const VERDICT_COLOURS: Record<string, string> = { supported: 'green', contradicted: 'red', inconclusive: 'gray' };
export const PREREG_COLOURS: Record<string, string> = {
  'pre-registered': 'teal',
  'locked late': 'orange',
  'edited after lock': 'orange',
  'not locked': 'gray',
};
