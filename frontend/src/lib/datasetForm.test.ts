import { describe, expect, it } from 'vitest';
import { ApiError } from '../api/errors';
import { datasetFormErrors, shortSha, specReference, unsendableDatasetName } from './datasetForm';

describe('datasetFormErrors', () => {
  it("puts a 422's path name errors on Name and a 413 on File", () => {
    const e = new ApiError(422, 'invalid', "dataset name 'a b' refused", [{ loc: ['path', 'name'], msg: 'a dataset name is a file name', type: 'dataset_name' }]);
    expect(datasetFormErrors(e)).toEqual({ name: 'a dataset name is a file name' });
    const big = new ApiError(413, 'too_large', 'a dataset may hold at most 4096 bytes (REASONLAB_DATASET_MAX_BYTES)');
    expect(datasetFormErrors(big)).toEqual({ file: 'a dataset may hold at most 4096 bytes (REASONLAB_DATASET_MAX_BYTES)' });
  });

  it('puts anything else above the form: other 422 locations, a 403, a 409, a cut connection', () => {
    expect(datasetFormErrors(new ApiError(422, 'invalid', 'path.project_id: bad', [{ loc: ['path', 'project_id'], msg: 'bad' }]))).toEqual({
      form: 'path.project_id: bad',
    });
    expect(datasetFormErrors(new ApiError(422, 'invalid', 'refused'))).toEqual({ form: 'refused' });
    expect(datasetFormErrors(new ApiError(403, 'forbidden', 'your role in this project is viewer; this needs member'))).toEqual({
      form: 'your role in this project is viewer; this needs member',
    });
    expect(datasetFormErrors(new ApiError(409, 'conflict', 'uploaded meanwhile'))).toEqual({ form: 'uploaded meanwhile' });
    expect(datasetFormErrors(new TypeError('Failed to fetch'))).toEqual({ form: 'the upload did not complete: Failed to fetch' });
  });
});

describe('unsendableDatasetName', () => {
  it('refuses only what the URL cannot carry to the API; the API judges the rest', () => {
    expect(unsendableDatasetName('')).toBe('a name is required');
    expect(unsendableDatasetName('a/b')).toMatch(/never a path/);
    expect(unsendableDatasetName('..')).toMatch(/never a path/);
    for (const name of ['train.jsonl', 'has space.txt', '-leading', 'x'.repeat(200), 'a..b']) expect(unsendableDatasetName(name)).toBeUndefined();
  });

  it('names a dataset the way a spec does, and shortens a checksum to 12 digits', () => {
    expect(specReference('train.jsonl')).toBe('dataset:train.jsonl');
    expect(shortSha('0123456789abcdef'.repeat(4))).toBe('0123456789ab');
  });
});
