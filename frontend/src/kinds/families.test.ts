// No kind family of the dashboard imports another. A file under src/kinds/<family>/ imports nothing of another
// family's folder, directly or through a module at src/kinds/' root (registry.ts, types.ts: what families share).
//
// The families are the folders, read at each run: a new one is under the rule without an edit. Imports are
// read by TypeScript's own scanner (static, `export ... from`, dynamic `import()`), plus `import.meta.glob`
// patterns; a specifier is relative or rooted at the project (`/src/kinds/...`, as Vite resolves it).
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, posix, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOTED = '/src/kinds/';
const EXTENSIONS = ['', '.ts', '.tsx', '/index.ts', '/index.tsx'];

/** A file's import specifiers. */
function importsOf(source: string): string[] {
  const scanned = ts.preProcessFile(source, true, true).importedFiles.map((f) => f.fileName);
  const globs = [...source.matchAll(/import\.meta\.glob\s*(?:<[^>]*>)?\(\s*['"`]([^'"`]+)['"`]/g)].map((m) => m[1] ?? '');
  return [...scanned, ...globs];
}

/** The families: the first folder of every file's path (paths relative to src/kinds/, with '/'). */
function familiesOf(files: Record<string, string>): string[] {
  return [...new Set(Object.keys(files).filter((f) => f.includes('/')).map((f) => f.split('/')[0] ?? ''))].sort();
}

/** Where `spec`, imported by `file`, points inside src/kinds/ (a path, or a glob pattern); null outside it. */
function target(file: string, spec: string): string | null {
  let path: string;
  if (spec.startsWith(ROOTED)) path = spec.slice(ROOTED.length);
  else if (spec.startsWith('.')) path = posix.normalize(posix.join(posix.dirname(file), spec));
  else return null; // a package, or a module of the dashboard outside src/kinds/ (via '../..')
  return path.startsWith('../') || path === '..' ? null : path;
}

/** The file `path` names (extension or index.ts left out), or `path` itself. */
function fileFor(files: Record<string, string>, path: string): string {
  return EXTENSIONS.map((ext) => path + ext).find((p) => p in files) ?? path;
}

/**
 * Every import of one family's file that reaches another family, as `file -> ... -> target`: directly, or
 * through the modules at src/kinds/' root. A glob whose family part is a pattern reaches every family.
 */
function familyViolations(files: Record<string, string>): string[] {
  const families = new Set(familiesOf(files));
  const familyOf = (path: string): string | null => {
    const first = path.split('/')[0] ?? '';
    if (!path.includes('/')) return null; // a module at the root
    return /[*{[?]/.test(first) ? '*' : families.has(first) ? first : null;
  };
  const found: string[] = [];
  for (const file of Object.keys(files).sort()) {
    const own = familyOf(file);
    if (own === null) continue;
    const seen = new Set<string>();
    const visit = (from: string, chain: string[]) => {
      for (const spec of importsOf(files[from] ?? '')) {
        const path = target(from, spec);
        if (path === null) continue;
        const family = familyOf(path);
        if (family !== null && family !== own) found.push([...chain, path].join(' -> '));
        if (family !== null) continue;
        const root = fileFor(files, path);
        if (!seen.has(root) && root in files) {
          seen.add(root);
          visit(root, [...chain, root]);
        }
      }
    };
    visit(file, [file]);
  }
  return found;
}

/** src/kinds/'s .ts and .tsx files, paths relative to it. */
function readKinds(): Record<string, string> {
  const root = dirname(fileURLToPath(import.meta.url));
  const files: Record<string, string> = {};
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (/\.tsx?$/.test(entry.name)) files[relative(root, full).split('\\').join('/')] = readFileSync(full, 'utf8');
    }
  };
  walk(root);
  return files;
}

describe('kind families', () => {
  it('none imports another in the tree', () => {
    const files = readKinds();
    expect(familiesOf(files)).toEqual(expect.arrayContaining(['carma', 'diagnostic', 'reasonformer', 'skillmix', 'smoe']));
    expect(Object.keys(files)).toContain('registry.ts');
    expect(familyViolations(files)).toEqual([]);
  });

  it('a family may import itself, the shared root modules and the rest of the dashboard', () => {
    const files = {
      'registry.ts': "import type { KindModule } from './types';\nimport { GenericResultView } from '../components/results/GenericResultView';",
      'types.ts': "import type { ResultKind } from '../api/types';",
      'index.ts': "const modules = import.meta.glob<KindModule>('./*/*/index.{ts,tsx}', { eager: true });",
      'carma/shape.ts': "import { interval } from '../../lib/interval';\nimport type { ExperimentTab } from '../types';",
      'carma/carma/index.ts': "import { shape } from '../shape';\nimport { x } from '/src/kinds/carma/shape';\nimport '@mantine/core';",
      'smoe/topk_eval/matrix.ts': "export const m = 1;",
    };
    expect(familyViolations(files)).toEqual([]);
  });

  it('catches a new family folder importing another family, however it imports', () => {
    const files = {
      'types.ts': '',
      'hub.ts': "export { m } from './smoe/topk_eval/matrix';",
      'carma/shape.ts': '',
      'smoe/topk_eval/matrix.ts': 'export const m = 1;',
      'sixth/View.tsx': [
        "import type { ExperimentTab } from '../types';",
        '// a comment naming ../carma/shape is no import',
        "import { shape } from '../carma/shape';",
        "export * from '/src/kinds/smoe/topk_eval/matrix';",
        "const lazy = () => import('../smoe/topk_eval/matrix');",
        "import { m } from '../hub';",
        "const all = import.meta.glob('../*/index.ts');",
      ].join('\n'),
      'sixth/own.test.ts': "import { View } from './View';",
    };
    expect(familiesOf(files)).toEqual(['carma', 'sixth', 'smoe']);
    expect(familyViolations(files)).toEqual([
      'sixth/View.tsx -> carma/shape',
      'sixth/View.tsx -> smoe/topk_eval/matrix',
      'sixth/View.tsx -> smoe/topk_eval/matrix',
      'sixth/View.tsx -> hub.ts -> smoe/topk_eval/matrix',
      'sixth/View.tsx -> */index.ts',
    ]);
  });
});
