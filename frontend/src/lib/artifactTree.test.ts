import { describe, expect, it } from 'vitest';
import { artifactRows, artifactUrl, formatBytes, type ArtifactFile } from './artifactTree';

const file = (path: string, size: number, kind: ArtifactFile['kind'] = 'output'): ArtifactFile => ({
  path,
  size,
  modified: null,
  kind,
});

describe('artifact tree', () => {
  const files = [
    file('outputs/model/weights.safetensors', 3000),
    file('checkpoints/step-20.pt', 100, 'checkpoint'),
    file('outputs/model/config.json', 20),
    file('checkpoints/step-10.pt', 100, 'checkpoint'),
    file('outputs/log.txt', 5),
    file('model/step-20.pt', 100, 'model'),
  ];

  it('lists folders before files with the sizes and counts of everything under them', () => {
    const rows = artifactRows(files).map((r) => [r.type, r.path, r.depth, r.size, r.type === 'folder' ? r.files : 1]);
    expect(rows).toEqual([
      ['folder', 'checkpoints', 0, 200, 2],
      ['file', 'checkpoints/step-10.pt', 1, 100, 1],
      ['file', 'checkpoints/step-20.pt', 1, 100, 1],
      ['folder', 'model', 0, 100, 1],
      ['file', 'model/step-20.pt', 1, 100, 1],
      ['folder', 'outputs', 0, 3025, 3],
      ['folder', 'outputs/model', 1, 3020, 2],
      ['file', 'outputs/model/config.json', 2, 20, 1],
      ['file', 'outputs/model/weights.safetensors', 2, 3000, 1],
      ['file', 'outputs/log.txt', 1, 5, 1],
    ]);
  });

  it('hides the contents of a collapsed folder but keeps its row and totals', () => {
    const rows = artifactRows(files, new Set(['outputs']));
    expect(rows.map((r) => r.path)).toEqual([
      'checkpoints',
      'checkpoints/step-10.pt',
      'checkpoints/step-20.pt',
      'model',
      'model/step-20.pt',
      'outputs',
    ]);
    expect(rows.at(-1)).toMatchObject({ type: 'folder', size: 3025, files: 3 });
  });

  it('has no rows without files', () => {
    expect(artifactRows([])).toEqual([]);
  });
});

describe('formatBytes', () => {
  it('uses powers of 1024 with three significant digits', () => {
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(1023)).toBe('1023 B');
    expect(formatBytes(1536)).toBe('1.50 KB');
    expect(formatBytes(15 * 1024 * 1024)).toBe('15.0 MB');
    expect(formatBytes(250 * 1024 ** 3)).toBe('250 GB');
    expect(formatBytes(-1)).toBe('—');
  });
});

describe('artifactUrl', () => {
  it('encodes each segment and the ticket, keeping the folders', () => {
    expect(artifactUrl(7, 'outputs/a b/c#d.txt', 't+k')).toBe('/api/v1/runs/7/artifacts/outputs/a%20b/c%23d.txt?ticket=t%2Bk');
  });
});
