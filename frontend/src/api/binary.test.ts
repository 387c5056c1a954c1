// The generated client types a binary body (a streamed upload) and a binary download as a Blob
// (scripts/gen-api.mjs), so a caller hands it a File as it is, with no cast. Checked by the typecheck
// (`npm run typecheck` compiles the test files); vitest runs the same assertions as no-ops.
import { describe, expectTypeOf, it } from 'vitest';
import type { operations } from './schema';

type Octet = 'application/octet-stream';
type DatasetUpload = operations['datasets-upload']['requestBody']['content'][Octet];
type ArtifactUpload = operations['artifacts-upload']['requestBody']['content'][Octet];
type ArtifactDownload = operations['artifacts-download']['responses'][200]['content'][Octet];
type DatasetList = operations['datasets-list']['responses'][200]['content']['application/json'];

describe('binary bodies in the generated client', () => {
  it('are Blobs: a File goes as it is, a string does not', () => {
    expectTypeOf<DatasetUpload>().toEqualTypeOf<Blob>();
    expectTypeOf<ArtifactUpload>().toEqualTypeOf<Blob>();
    expectTypeOf<ArtifactDownload>().toEqualTypeOf<Blob>();
    expectTypeOf<File>().toExtend<DatasetUpload>();
    expectTypeOf<string>().not.toExtend<DatasetUpload>();
  });

  it('leave the JSON bodies as they were', () => {
    expectTypeOf<DatasetList>().toExtend<readonly { name: string; size: number }[]>();
  });
});
