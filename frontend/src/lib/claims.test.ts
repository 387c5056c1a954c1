import { describe, expect, it } from 'vitest';
import type { ClaimDefinition } from '../api/types';
import { claimFieldErrors, claimPatch, definitionOf, draftOf, emptyDraft, interval, num, pValue, readingText, testText } from './claims';

describe('claims', () => {
  it("turns a draft into the API's definition", () => {
    const d = {
      ...emptyDraft(),
      name: 'lr matters',
      section: '4.2',
      arms: [
        { name: 'slow', query: 'params.train.lr = 0.01' },
        { name: 'fast', query: 'params.train.lr = 0.05' },
      ],
      metric: 'loss',
      direction: 'less' as const,
      minEffect: '0.01',
      family: ' table 2 ',
    };
    expect(definitionOf(d)).toEqual({
      section: '4.2',
      description: '',
      arms: d.arms,
      metric: 'loss',
      read: { mode: 'last' },
      direction: 'less',
      min_effect: 0.01,
      test: { type: 't', pairing: 'auto' },
      alpha: 0.05,
      power: 0.8,
      family: 'table 2',
    });
    expect(definitionOf({ ...d, read: 'mean_last', steps: '5', test: 'bootstrap', family: '' })).toMatchObject({
      read: { mode: 'mean_last', steps: 5 },
      test: { type: 'bootstrap', resamples: 10000, seed: 0 },
      family: null,
    });
    // a number field left blank is sent as it is: the API's 422 names it
    expect(Number.isNaN(definitionOf({ ...d, alpha: '' }).alpha)).toBe(true);
  });

  it('reads a claim back into the form, and an edit into a PATCH body of what changed', () => {
    // what the API answers: every default written out, and fields the form has no input for
    const def: ClaimDefinition = {
      section: '4.2',
      description: 'as table 2 reports it',
      arms: [
        { name: 'slow', query: 'params.train.lr = 0.01' },
        { name: 'fast', query: 'params.train.lr = 0.05' },
      ],
      metric: 'loss',
      read: { mode: 'mean_last', steps: 20 },
      direction: 'less',
      min_effect: 0.015,
      test: { type: 'bootstrap', resamples: 2000, seed: 7 },
      alpha: 0.01,
      power: 0.9,
      family: 'table 2',
    };
    const claim = { name: 'lr matters', definition: def };
    const draft = draftOf(claim.name, def);
    expect(draft).toEqual({
      name: 'lr matters', section: '4.2', arms: def.arms, metric: 'loss', read: 'mean_last', steps: '20', direction: 'less',
      minEffect: '0.015', test: 'bootstrap', alpha: '0.01', family: 'table 2',
    });
    // unedited, the form is the definition again (its description, power, resamples and seed kept), so
    // nothing is sent; the keys' order is no change
    expect(definitionOf(draft, def)).toEqual(def);
    expect(claimPatch(claim, draft)).toEqual({});
    const reordered = Object.fromEntries(Object.entries(def).reverse()) as ClaimDefinition;
    expect(claimPatch({ name: claim.name, definition: reordered }, draft)).toEqual({});
    // a new name alone, a changed field alone, both
    expect(claimPatch(claim, { ...draft, name: 'lr matters a lot' })).toEqual({ name: 'lr matters a lot' });
    expect(claimPatch(claim, { ...draft, alpha: '0.05' })).toEqual({ definition: { ...def, alpha: 0.05 } });
    expect(claimPatch(claim, { ...draft, name: 'x', family: '' })).toEqual({ name: 'x', definition: { ...def, family: null } });
    // from a bootstrap to a t test and back: the new bootstrap takes the form's defaults only without a base's
    expect(claimPatch(claim, { ...draft, test: 'welch' }).definition?.test).toEqual({ type: 't', pairing: 'welch' });
    expect(definitionOf({ ...draft, test: 'bootstrap' }, { ...def, test: { type: 't', pairing: 'auto' } }).test).toEqual({
      type: 'bootstrap', resamples: 10000, seed: 0,
    });
    // what the API may leave out reads as its defaults
    const sparse = { section: '1', arms: def.arms, metric: 'loss', direction: 'greater', power: 0.8, description: '' } as ClaimDefinition;
    expect(draftOf('c', sparse)).toMatchObject({ read: 'last', steps: '10', test: 'auto', minEffect: '0', alpha: '0.05', family: '' });
  });

  it("maps a 422's field paths onto the form", () => {
    const errors = claimFieldErrors([
      { loc: ['body', 'name'], msg: 'bad name' },
      { loc: ['body', 'definition', 'arms', 1, 'query'], msg: 'unknown field colour' },
      { loc: ['body', 'definition', 'arms'], msg: 'two arms have the same name' },
      { loc: ['body', 'definition', 'read', 'mean_last', 'steps'], msg: 'at least 1' },
      { loc: ['body', 'definition', 'alpha'], msg: 'greater than 0' },
      { loc: ['body', 'definition', 'alpha'], msg: 'again' },
      { loc: ['query', 'x'], msg: 'odd' },
    ]);
    expect(errors).toEqual({
      name: 'bad name',
      'arms.1.query': 'unknown field colour',
      arms: 'two arms have the same name',
      steps: 'at least 1',
      alpha: 'greater than 0; again',
      other: 'query.x: odd',
    });
  });

  it("shows a full project's 409 as its message, not as a field", () => {
    const msg = 'at most 100 claims a project: delete one to state another';
    expect(claimFieldErrors([{ loc: ['path', 'project_id'], msg, type: 'project_full' }])).toEqual({ other: msg });
  });

  it('reads numbers for the card', () => {
    expect(num(0.123456)).toBe('0.1235');
    expect(num(null)).toBe('-');
    expect(num(0)).toBe('0');
    expect(num(0.00001234)).toBe('1.234e-5');
    expect(interval(0.1, 0.25)).toBe('[0.1, 0.25]');
    expect(interval(null, 1)).toBe('-');
    expect(pValue(0.00002)).toBe('< 0.0001');
    expect(pValue(0.04321)).toBe('0.043');
    expect(pValue(undefined)).toBe('-');
    expect(readingText({ mode: 'mean_last', steps: 5 })).toBe('mean of the last 5 steps');
    expect(readingText(undefined)).toBe('last value');
    expect(testText({ type: 't', pairing: 'welch' })).toBe('t test (welch)');
    expect(testText({ type: 'bootstrap', resamples: 2000, seed: 1 })).toBe('bootstrap (2000 resamples)');
  });
});
