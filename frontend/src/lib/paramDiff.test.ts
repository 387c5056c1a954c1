import { describe, expect, it } from 'vitest';
import { diffParams } from './paramDiff';

describe('diffParams', () => {
  const a = { seed: 1, train: { lr: 0.1, steps: 100 }, model: { hidden: 32 } };
  const b = { seed: 2, train: { lr: 0.1, steps: 100 }, model: { hidden: 32, layers: 3 } };

  it('flattens to dotted keys and lists differing rows first', () => {
    const rows = diffParams([a, b]);
    expect(rows.filter((r) => r.differs).map((r) => r.key)).toEqual(['model.layers', 'seed']);
    expect(rows.slice(0, 2).every((r) => r.differs)).toBe(true);
    expect(rows.find((r) => r.key === 'train.lr')).toEqual({ key: 'train.lr', values: [0.1, 0.1], differs: false });
  });

  it('marks a key present in only one run as differing', () => {
    expect(diffParams([a, b]).find((r) => r.key === 'model.layers')!.values).toEqual([undefined, 3]);
  });

  it('compares arrays by value and can drop the equal rows', () => {
    const rows = diffParams([{ x: [1, 2] }, { x: [1, 2] }, { x: [1, 3] }], { onlyDiffering: true });
    expect(rows).toHaveLength(1);
    expect(rows[0]!.differs).toBe(true);
  });

  it('handles a single run (nothing differs)', () => {
    expect(diffParams([a]).every((r) => !r.differs)).toBe(true);
  });
});
