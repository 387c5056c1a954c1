import { describe, expect, it } from 'vitest';
import { csvCell, dispositionFilename, fileSlug, safeText, toCsv } from './tableExport';

describe('csvCell', () => {
  it('quotes what RFC 4180 needs quoted, doubling quotes', () => {
    expect(csvCell('plain')).toBe('plain');
    expect(csvCell('a,b')).toBe('"a,b"');
    expect(csvCell('say "hi"')).toBe('"say ""hi"""');
    expect(csvCell('two\nlines')).toBe('"two\nlines"');
  });
  it('writes missing and non-finite values as empty cells, numbers as numbers', () => {
    expect([null, undefined, NaN, Infinity, -Infinity].map(csvCell)).toEqual(['', '', '', '', '']);
    expect([0, -0.5, 1e-7, 3].map(csvCell)).toEqual(['0', '-0.5', '1e-7', '3']);
    expect([true, false].map(csvCell)).toEqual(['true', 'false']);
  });
  it('makes text a spreadsheet would run as a formula safe', () => {
    expect(['=1+1', '+1', '-cmd', '@SUM(A1)', '\tx', 'a=b'].map(safeText)).toEqual(["'=1+1", "'+1", "'-cmd", "'@SUM(A1)", "'\tx", 'a=b']);
    // and quoted where the leading ' joins a quote or comma
    expect(csvCell('=HYPERLINK("http://x","y")')).toBe('"\'=HYPERLINK(""http://x"",""y"")"');
  });
});

describe('toCsv', () => {
  it('writes a header and one line per row, \\r\\n ended', () => {
    const csv = toCsv({ columns: [{ name: 'step', values: [1, 2] }, { name: 'loss, train', values: [0.5, null] }] });
    expect(csv).toBe('step,"loss, train"\r\n1,0.5\r\n2,\r\n');
  });
  it('makes header names formula-safe too', () => {
    expect(toCsv({ columns: [{ name: '=x', values: [] }] })).toBe("'=x\r\n");
  });
});

describe('file names', () => {
  it('slugs a chart label', () => {
    expect(fileSlug("train k by eval k' matrix: val/acc")).toBe('train-k-by-eval-k-matrix-val-acc');
    expect(fileSlug('///')).toBe('data');
  });
  it('reads the name a Content-Disposition header gives', () => {
    expect(dispositionFilename('attachment; filename="a_b.csv"; filename*=UTF-8\'\'a%C3%A9b.csv', 'x')).toBe('aéb.csv');
    expect(dispositionFilename('attachment; filename="runs.csv"', 'x')).toBe('runs.csv');
    expect(dispositionFilename(null, 'fallback.csv')).toBe('fallback.csv');
  });
});
