import { describe, expect, it } from 'vitest';
import { formatCount, isoDate, isoDateTime, naturalCompare } from './plainFormat';

describe('formatCount, without Intl', () => {
  it("groups an integer's digits by three, as en-US does", () => {
    const values = [0, 1, 12, 999, 1000, 12345, 999999, 1000000, 1234567890, -1, -1000, -1234567, Number.MAX_SAFE_INTEGER];
    for (const n of values) expect(formatCount(n)).toBe(n.toLocaleString('en-US', { maximumFractionDigits: 20 }));
  });

  it("groups a fraction's integer part and keeps its digits; what is no number stays as it is", () => {
    expect(formatCount(1234.5)).toBe('1,234.5');
    expect(formatCount(-0.25)).toBe('-0.25');
    expect(formatCount(Number.NaN)).toBe('NaN');
    expect(formatCount(Number.POSITIVE_INFINITY)).toBe('Infinity');
    expect(formatCount(1e21)).toBe('1e+21');
  });
});

describe('naturalCompare, without Intl', () => {
  const collator = new Intl.Collator(undefined, { numeric: true, sensitivity: 'base' });
  const sign = (n: number) => Math.sign(n);

  it("orders ASCII names as a numeric, case-blind Intl.Collator does", () => {
    const names = ['e10', 'e2', 'E3', 'loss', 'Loss', 'acc', 'acc/k2', 'acc/k10', 'acc/k1', 'f1', 'f12', 'f012', 'x', 'x1', 'x1y', 'x1y2', 'x10y1', 'a-1', 'a-10', 'a-2', 'b', ''];
    for (const a of names) for (const b of names) {
      // the one difference: digits equal in value ("f12", "f012") are a tie for the collator, ordered by length here
      if (a.toLowerCase().replace(/0+(\d)/g, '$1') === b.toLowerCase().replace(/0+(\d)/g, '$1') && a.toLowerCase() !== b.toLowerCase()) continue;
      expect(sign(naturalCompare(a, b)), `${a} vs ${b}`).toBe(sign(collator.compare(a, b)));
    }
  });

  it('sorts runs of digits by value at any length, and digits equal in value by their length', () => {
    expect(['k10', 'k9', 'k100', 'k1'].sort(naturalCompare)).toEqual(['k1', 'k9', 'k10', 'k100']);
    expect(naturalCompare('s12345678901234567890', 's12345678901234567891')).toBeLessThan(0);
    expect(['f012', 'f12', 'f0012'].sort(naturalCompare)).toEqual(['f12', 'f012', 'f0012']);
  });
});

describe('isoDate and isoDateTime, without Intl', () => {
  it("write the browser's local date and time, zero-padded", () => {
    const d = new Date(2026, 0, 5, 7, 8, 9); // local time
    expect(isoDate(d.toISOString())).toBe('2026-01-05');
    expect(isoDateTime(d.getTime())).toBe('2026-01-05 07:08:09');
  });

  it('leave text that is no date as it is', () => {
    expect(isoDate('not a date')).toBe('not a date');
    expect(isoDateTime('')).toBe('');
  });
});
