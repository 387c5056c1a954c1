import { describe, expect, it } from 'vitest';
import { cellText, diffFields, exampleColumns, parseRunId } from './examples';

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

describe('diffFields', () => {
  it('puts the fields whose values differ first', () => {
    const a = { item: 3, prediction: 'cat', gold: 'dog', score: { '1': 0 } };
    const b = { item: 3, prediction: 'dog', gold: 'dog', score: { '1': 1 } };
    expect(diffFields(a, b)).toEqual([
      { field: 'prediction', changed: true },
      { field: 'score', changed: true },
      { field: 'item', changed: false },
      { field: 'gold', changed: false },
    ]);
  });

  it('marks every field changed when one side is missing, and fields only one side has', () => {
    expect(diffFields({ x: 1 }, null)).toEqual([{ field: 'x', changed: true }]);
    expect(diffFields({ x: 1 }, { x: 1, y: 2 })).toEqual([
      { field: 'y', changed: true },
      { field: 'x', changed: false },
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
