// The run page's tabs (lib/runTabs.ts): a worker's run has them all; an external run has those that mean
// something for a script, and Results or Examples only once it has some.
import { describe, expect, it } from 'vitest';
import { runTabs } from './runTabs';

describe("the run page's tabs", () => {
  it("are all there for a worker's run, whatever it has posted yet", () => {
    const all = ['metrics', 'results', 'examples', 'spec', 'logs', 'attempts', 'artifacts', 'comments'];
    expect(runTabs('diagnostic', {})).toEqual(all);
    expect(runTabs('carma', { results: 0, exampleTables: 0 })).toEqual(all);
  });

  it('of an external run hold its provenance and no empty Results or Examples', () => {
    expect(runTabs('external', {})).toEqual(['metrics', 'spec', 'logs', 'attempts', 'artifacts', 'provenance', 'comments']);
    expect(runTabs('external', { results: 0, exampleTables: 0 })).toEqual(runTabs('external', {}));
    expect(runTabs('external', { results: 2, exampleTables: 1 })).toEqual([
      'metrics', 'results', 'examples', 'spec', 'logs', 'attempts', 'artifacts', 'provenance', 'comments',
    ]);
  });
});
