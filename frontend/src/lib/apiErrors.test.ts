import { describe, expect, it } from 'vitest';
import { errorFor, splitErrors } from './apiErrors';

describe('splitErrors', () => {
  it('maps spec locs to dotted field paths', () => {
    const e = splitErrors([{ loc: ['body', 'spec', 'train', 'lr'], msg: 'Input should be greater than 0', type: 'greater_than' }]);
    expect(e.spec).toEqual({ 'train.lr': 'Input should be greater than 0' });
  });
  it('keeps sweep combination errors and top-level body errors apart', () => {
    const e = splitErrors([
      { loc: ['body', 'sweep', 3, 'train', 'lr'], msg: 'too big (train.lr=20)' },
      { loc: ['body', 'name'], msg: 'Field required' },
      { loc: ['query', 'x'], msg: 'bad' },
    ]);
    // loc index 3 is the 4th combination: run #4 of the preview
    expect(e.sweep).toEqual(['combination 4: train.lr: too big (train.lr=20)']);
    expect(e.body).toEqual({ name: 'Field required' });
    expect(e.other).toEqual(['query.x: bad']);
  });
  it('finds an error behind a discriminated-union tag', () => {
    const e = splitErrors([{ loc: ['body', 'spec', 'diagnostic', 'train', 'lr'], msg: 'bad' }]);
    expect(errorFor(e.spec, 'train.lr', 'diagnostic')).toBe('bad');
  });
});
