import { describe, expect, it } from 'vitest';
import { activityLine, cancelNote, progressNote } from './runNotes';

describe('run notes', () => {
  it('shows a progress message as current only while the run runs', () => {
    expect(progressNote({ status: 'running' }, 'training')).toBe('training');
    expect(progressNote({ status: 'failed' }, 'training')).toBe('last message: training');
    expect(progressNote({ status: 'queued' }, 'training')).toBeNull();
    expect(progressNote({ status: 'running' }, '')).toBeNull();
  });
  it('says which won when a cancel raced the end of a run', () => {
    expect(cancelNote({ status: 'succeeded', cancel_requested: true })).toBe('succeeded before the cancel took effect');
    expect(cancelNote({ status: 'running', cancel_requested: true })).toBe('cancel requested');
    expect(cancelNote({ status: 'cancelled', cancel_requested: true })).toBeNull();
    expect(cancelNote({ status: 'succeeded', cancel_requested: false })).toBeNull();
  });
  it('does not write the actor twice in the activity feed', () => {
    expect(activityLine('admin', 'admin commented on run 3')).toEqual({ actor: 'admin', message: 'commented on run 3' });
    expect(activityLine('admin', 'submitted 4 runs')).toEqual({ actor: 'admin', message: 'submitted 4 runs' });
    expect(activityLine(null, 'run 3 failed')).toEqual({ actor: 'system', message: 'run 3 failed' });
    expect(activityLine('ad', 'admin did it')).toEqual({ actor: 'ad', message: 'admin did it' });
  });
});

describe('sweep colour scale', () => {
  it('keeps decimals that tell the ends apart, and integer ticks for integer params', async () => {
    const { colourScale, parallelData } = await import('./parallel');
    expect(colourScale([1.62, 2.38])).toEqual({ min: 1.62, max: 2.38, precision: 3 });
    expect(colourScale([0.5, 0.52]).precision).toBe(4);
    expect(colourScale([1, 3, 7]).precision).toBe(0);
    const flat = colourScale([2, 2]);
    expect(flat.min).toBeLessThan(2);
    expect(flat.max).toBeGreaterThan(2);
    const runs = [
      { id: 1, params: { k: 1, lr: 0.1 }, summary: { loss: 1.6 } },
      { id: 2, params: { k: 4, lr: 0.3 }, summary: { loss: 2.4 } },
    ];
    const axes = parallelData(runs, 'loss').axes;
    expect(axes.find((a) => a.name === 'k')?.integer).toBe(true);
    expect(axes.find((a) => a.name === 'lr')?.integer).toBe(false);
  });
});
