import { describe, expect, it } from 'vitest';
import { mlflowRunUrl } from './mlflowLink';

describe('mlflowRunUrl', () => {
  it("links to the run in MLflow's UI", () => {
    expect(mlflowRunUrl('http://127.0.0.1:5000/', 'abc123')).toBe('http://127.0.0.1:5000/#/runs/abc123');
  });
  it('is null where there is no UI or no MLflow run: the link is hidden', () => {
    expect(mlflowRunUrl(null, 'abc123')).toBeNull();
    expect(mlflowRunUrl('http://127.0.0.1:5000', null)).toBeNull();
  });
});
