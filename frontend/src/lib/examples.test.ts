import { describe, expect, it } from 'vitest';
import { FOLD_AT, cellText, diffFields, exampleColumns, foldText, parseRunId, prettyText } from './examples';

describe('exampleColumns', () => {
  it('lists the data fields in first-seen order, up to a maximum', () => {
    const rows = [{ data: { item: 1, reply: 'a' } }, { data: { item: 2, points: [1], reply: 'b' } }];
    expect(exampleColumns(rows)).toEqual(['item', 'reply', 'points']);
    expect(exampleColumns(rows, 2)).toEqual(['item', 'reply']);
    expect(exampleColumns([])).toEqual([]);
  });
});

describe('cellText', () => {
  it('prints strings, numbers, booleans and JSON, and cuts long text', () => {
    expect(cellText('plain')).toBe('plain');
    expect(cellText(0.5)).toBe('0.5');
    expect(cellText(false)).toBe('false');
    expect(cellText(null)).toBe('');
    expect(cellText({ a: [1, 2] })).toBe('{"a":[1,2]}');
    expect(cellText('x'.repeat(300), 10)).toBe(`${'x'.repeat(9)}…`);
  });
});

describe('foldText and prettyText', () => {
  it('keeps a short value whole and cuts a long one at the fold', () => {
    expect(foldText('short')).toEqual({ text: 'short', folded: false });
    expect(foldText({ a: [1, 2] })).toEqual({ text: '{"a":[1,2]}', folded: false });
    const long = { probs: Array.from({ length: 60 }, (_, i) => i / 7) };
    const { text, folded } = foldText(long);
    expect(folded).toBe(true);
    expect(text).toBe(`${JSON.stringify(long).slice(0, FOLD_AT)}…`);
    expect(foldText('x'.repeat(FOLD_AT))).toEqual({ text: 'x'.repeat(FOLD_AT), folded: false });
    expect(foldText('x'.repeat(12), 10).folded).toBe(true);
  });

  it('unfolds JSON indented and anything else as its text', () => {
    expect(prettyText({ a: [1, 2] })).toBe('{\n  "a": [\n    1,\n    2\n  ]\n}');
    expect(prettyText('x'.repeat(300))).toBe('x'.repeat(300));
    expect(prettyText(null)).toBe('');
    expect(prettyText(0.5)).toBe('0.5');
  });
});

describe('diffFields', () => {
  it("puts the fields the server found differing first, and counts only the rule's fields", () => {
    const a = { item: 3, prediction: 'cat', gold: 'dog', score: { '1': 0 } };
    const b = { item: 3, prediction: 'dog', gold: 'dog', score: { '1': 1 } };
    expect(diffFields(a, b, ['prediction', 'score'])).toEqual([
      { field: 'prediction', differs: true, counts: true },
      { field: 'score', differs: true, counts: true },
      { field: 'item', differs: false, counts: false },
      { field: 'gold', differs: false, counts: false },
    ]);
    expect(diffFields(a, b, ['prediction', 'score'], ['prediction', 'gold'])).toEqual([
      { field: 'prediction', differs: true, counts: true },
      { field: 'score', differs: true, counts: false },
      { field: 'item', differs: false, counts: false },
      { field: 'gold', differs: false, counts: false },
    ]);
  });

  it('marks every field changed when one side is missing', () => {
    expect(diffFields({ x: 1 }, null, [], ['y'])).toEqual([{ field: 'x', differs: true, counts: true }]);
    expect(diffFields({ x: 1 }, { x: 1, y: 2 }, ['y'])).toEqual([
      { field: 'y', differs: true, counts: true },
      { field: 'x', differs: false, counts: false },
    ]);
  });
});

describe('parseRunId', () => {
  it('reads a run id, with or without "run"', () => {
    expect(parseRunId(' 42 ')).toBe(42);
    expect(parseRunId('run 7')).toBe(7);
    expect(parseRunId('0')).toBeNull();
    expect(parseRunId('abc')).toBeNull();
    expect(parseRunId('1.5')).toBeNull();
    expect(parseRunId('99999999999')).toBeNull();
  });
});
