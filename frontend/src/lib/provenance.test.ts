// The Provenance tab's shaping (lib/provenance.ts): a diff's size and its lines' tones, the package search.
import { describe, expect, it } from 'vitest';
import { diffSummary, diffSummaryText, diffTone, filterPackages, shortCommit } from './provenance';

const DIFF = [
  'diff --git a/train.py b/train.py',
  'index 1111111..2222222 100644',
  '--- a/train.py',
  '+++ b/train.py',
  '@@ -1,3 +1,3 @@',
  ' import torch',
  '-lr = 1.0',
  '+lr = 0.1',
  '+steps = 10',
  'diff --git a/README.md b/README.md',
  '--- a/README.md',
  '+++ b/README.md',
  '@@ -1 +0,0 @@',
  '-old',
  '',
].join('\n');

describe('a diff', () => {
  it('counts its files and its added and removed lines, headers left out', () => {
    expect(diffSummary(DIFF)).toEqual({ files: 2, added: 2, removed: 2, lines: 14 });
    expect(diffSummaryText(diffSummary(DIFF))).toBe('2 files, +2 −2');
    expect(diffSummaryText(diffSummary('-a\n+b\n+c'))).toBe('3 lines, +2 −1'); // no `diff --git` header
    expect(diffSummary('')).toEqual({ files: 0, added: 0, removed: 0, lines: 0 });
  });

  it('tones each line: file headers, hunks, additions, removals, context', () => {
    expect(DIFF.split('\n').slice(0, 9).map(diffTone)).toEqual(['file', 'file', 'file', 'file', 'hunk', 'context', 'del', 'add', 'add']);
  });
});

describe('the packages', () => {
  const packages = ['numpy==2.1.0', 'scikit-learn==1.5.2', 'torch==2.5.1', 'typing_extensions==4.12.2'];

  it('are narrowed by every word of the search, with -, _ and . alike', () => {
    expect(filterPackages(packages, '')).toEqual(packages);
    expect(filterPackages(packages, 'TORCH')).toEqual(['torch==2.5.1']);
    expect(filterPackages(packages, 'scikit_learn')).toEqual(['scikit-learn==1.5.2']);
    expect(filterPackages(packages, 'typing-extensions 4.12')).toEqual(['typing_extensions==4.12.2']);
    expect(filterPackages(packages, 'torch numpy')).toEqual([]);
  });
});

it('shortens a commit to 12 hex digits', () => {
  expect(shortCommit('0123456789abcdef0123456789abcdef01234567')).toBe('0123456789ab');
});
