// The per-example diff's rule: tolerances typed, the rule in the URL and in storage per
// table, and the API's query params.
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_RTOL,
  DEFAULT_RULE,
  MAX_DIFF_FIELDS,
  cleanFields,
  currentRule,
  decodeRule,
  loadRule,
  parseTolerance,
  ruleQuery,
  ruleSummary,
  saveRule,
  storageKey,
  writeRule,
  type DiffRule,
} from './exampleDiff';

/** A Storage over a Map (the tests' own: nothing of the browser's). */
function memoryStorage(initial: Record<string, string> = {}): Storage {
  const data = new Map(Object.entries(initial));
  return {
    get length() {
      return data.size;
    },
    clear: () => data.clear(),
    getItem: (k) => data.get(k) ?? null,
    key: (i) => [...data.keys()][i] ?? null,
    removeItem: (k) => void data.delete(k),
    setItem: (k, v) => void data.set(k, String(v)),
  };
}

const CHOSEN: DiffRule = { fields: ['prediction', 'correct'], rel: 0.01, abs: 0 };

describe('parseTolerance', () => {
  it('reads plain and exponent numbers from 0 up to the maximum', () => {
    expect(parseTolerance('1e-6')).toBe(1e-6);
    expect(parseTolerance(' 0.01 ')).toBe(0.01);
    expect(parseTolerance('0')).toBe(0);
    expect(parseTolerance('.5')).toBe(0.5);
    expect(parseTolerance('2E-3')).toBe(0.002);
    expect(parseTolerance('1', 1)).toBe(1);
  });

  it('refuses negatives, words, past the maximum and the infinite', () => {
    for (const bad of ['', '-1', 'abc', '1e-6x', 'NaN', 'Infinity', '1,5', '0x10']) expect(parseTolerance(bad)).toBeNull();
    expect(parseTolerance('1.5', 1)).toBeNull();
    expect(parseTolerance('1e999')).toBeNull();
  });
});

describe('cleanFields', () => {
  it("keeps the names the API takes, each once, up to the API's maximum", () => {
    expect(cleanFields(['prediction', 'prediction', 'a,b', 'q"t', '', ' pad', 'gold answer', 3])).toEqual(['prediction', 'gold answer']);
    expect(cleanFields('prediction')).toEqual([]);
    expect(cleanFields(Array.from({ length: 40 }, (_, i) => `f${i}`))).toHaveLength(MAX_DIFF_FIELDS);
  });
});

describe('the rule in the URL', () => {
  it('writes only what is not the default, and reads it back', () => {
    const params = writeRule(new URLSearchParams('tab=examples&mode=diff&other=12'), CHOSEN);
    expect(params.toString()).toBe('tab=examples&mode=diff&other=12&fields=prediction%2Ccorrect&rtol=0.01');
    expect(decodeRule(params)).toEqual(CHOSEN);
    expect(writeRule(params, DEFAULT_RULE).toString()).toBe('tab=examples&mode=diff&other=12');
    expect(decodeRule(new URLSearchParams('atol=0.5'))).toEqual({ fields: [], rel: DEFAULT_RTOL, abs: 0.5 });
  });

  it('holds no rule without its params, and a bad param falls back to its default', () => {
    expect(decodeRule(new URLSearchParams('tab=examples'))).toBeNull();
    expect(decodeRule(new URLSearchParams('rtol=lots&atol=-1&fields=,a"b,x'))).toEqual({ fields: ['x'], rel: DEFAULT_RTOL, abs: 0 });
    expect(decodeRule(new URLSearchParams('rtol=2'))!.rel).toBe(DEFAULT_RTOL); // past 1: not a relative tolerance
  });
});

describe('the rule per table in storage', () => {
  it('remembers a rule per table and forgets the default', () => {
    const storage = memoryStorage();
    saveRule('predictions', CHOSEN, storage);
    expect(loadRule('predictions', storage)).toEqual(CHOSEN);
    expect(loadRule('windows', storage)).toBeNull();
    saveRule('predictions', DEFAULT_RULE, storage);
    expect(storage.getItem(storageKey('predictions'))).toBeNull();
  });

  it('reads what is stored defensively', () => {
    const storage = memoryStorage({
      [storageKey('a')]: 'not json',
      [storageKey('b')]: JSON.stringify({ fields: ['ok', 7], rel: -3, abs: 'x' }),
      [storageKey('c')]: '42',
    });
    expect(loadRule('a', storage)).toBeNull();
    expect(loadRule('b', storage)).toEqual({ fields: ['ok'], rel: DEFAULT_RTOL, abs: 0 });
    expect(loadRule('c', storage)).toBeNull();
    const refusing = { ...memoryStorage(), getItem: () => { throw new Error('denied'); }, setItem: () => { throw new Error('full'); } } as Storage;
    expect(loadRule('a', refusing)).toBeNull();
    expect(() => saveRule('a', CHOSEN, refusing)).not.toThrow();
  });

  it("takes the URL's rule first, then the table's stored one, then the default", () => {
    const storage = memoryStorage();
    saveRule('predictions', CHOSEN, storage);
    expect(currentRule(new URLSearchParams('fields=gold'), 'predictions', storage)).toEqual({ ...DEFAULT_RULE, fields: ['gold'] });
    expect(currentRule(new URLSearchParams(''), 'predictions', storage)).toEqual(CHOSEN);
    expect(currentRule(new URLSearchParams(''), 'windows', storage)).toEqual(DEFAULT_RULE);
    expect(currentRule(new URLSearchParams(''), null, storage)).toEqual(DEFAULT_RULE);
  });
});

describe('ruleQuery and ruleSummary', () => {
  it("gives the API's params, fields left out when every field counts", () => {
    expect(ruleQuery(DEFAULT_RULE)).toEqual({ tolerance: DEFAULT_RTOL, abs_tolerance: 0 });
    expect(ruleQuery(CHOSEN)).toEqual({ fields: 'prediction,correct', tolerance: 0.01, abs_tolerance: 0 });
  });

  it('says the rule in words', () => {
    expect(ruleSummary(DEFAULT_RULE)).toBe('every field; numbers within 0.000001 relative');
    expect(ruleSummary(CHOSEN)).toBe('prediction, correct; numbers within 0.01 relative');
    expect(ruleSummary({ fields: [], rel: 0, abs: 0.5 })).toBe('every field; numbers within 0.5 absolute');
    expect(ruleSummary({ fields: ['x'], rel: 0, abs: 0 })).toBe('x; numbers exactly');
  });
});
