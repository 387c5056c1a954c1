import { describe, expect, it } from 'vitest';
import { exportScope } from './RunsExportMenu';

describe('exportScope', () => {
  it('says which runs the file holds: the status chips, else all runs; column filters are not applied', () => {
    expect(exportScope([], false)).toBe('all runs');
    expect(exportScope(['succeeded', 'failed'], false)).toBe('runs with status succeeded, failed');
    expect(exportScope([], true)).toBe('all runs (column filters are not applied)');
  });
});
