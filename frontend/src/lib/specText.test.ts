import { describe, expect, it } from 'vitest';
import { specToText, textToSpec } from './specText';

describe('spec text', () => {
  const spec = { seed: 1, train: { lr: 0.01, steps: 10 } };
  it('round-trips YAML and JSON', () => {
    expect(textToSpec(specToText(spec, 'yaml'), 'yaml')).toEqual({ spec });
    expect(textToSpec(specToText(spec, 'json'), 'json')).toEqual({ spec });
  });
  it('treats empty text as the empty spec', () => {
    expect(textToSpec('', 'yaml')).toEqual({ spec: {} });
  });
  it('reports a parse error or a non-mapping', () => {
    expect(textToSpec('{"a": ', 'json')).toHaveProperty('error');
    expect(textToSpec('- 1\n- 2', 'yaml')).toEqual({ error: 'the spec must be a mapping of fields' });
  });
});
