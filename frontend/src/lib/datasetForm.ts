// The dataset upload form's errors: the API's answer placed on the field it is about, and the few names
// the request's URL cannot carry to the API's own check.
import { ApiError, errorMessage } from '../api/errors';

export interface DatasetFormErrors {
  /** on the name field: a 422 about the path's name (the API's name rules), or a name the URL cannot carry */
  name?: string;
  /** on the file field: a 413 (over REASONLAB_DATASET_MAX_BYTES), or no file chosen */
  file?: string;
  /** above the form: a 403 (a viewer), a 404, a 409 (the same name uploaded meanwhile), a cut connection */
  form?: string;
}

/** Where each error of the API's answer to an upload goes: 422 `errors[].loc` ["path", "name"] onto Name, 413 onto File. */
export function datasetFormErrors(error: unknown): DatasetFormErrors {
  if (!(error instanceof ApiError)) return { form: `the upload did not complete: ${errorMessage(error)}` };
  if (error.status === 413) return { file: error.detail };
  if (error.status !== 422) return { form: error.detail };
  const names: string[] = [];
  const other: string[] = [];
  for (const e of error.errors) {
    const [where, field] = e.loc;
    if (where === 'path' && field === 'name') names.push(e.msg);
    else other.push(e.loc.length ? `${e.loc.join('.')}: ${e.msg}` : e.msg);
  }
  const out: DatasetFormErrors = {};
  if (names.length) out.name = names.join('; ');
  if (other.length) out.form = other.join('; ');
  if (!out.name && !out.form) out.form = error.detail;
  return out;
}

/**
 * A name the request's URL cannot carry to the API's check (empty, a "/", only dots: the path would
 * change), refused here; every other name goes to the API, whose 422 says what is wrong with it.
 */
export function unsendableDatasetName(name: string): string | undefined {
  if (!name) return 'a name is required';
  if (name.includes('/') || /^\.+$/.test(name)) return 'a file name, never a path: letters, digits, . _ -';
  return undefined;
}

/** How a spec names a dataset in a data-path field. */
export const specReference = (name: string) => `dataset:${name}`;

/** The first 12 hex digits of a sha256, as the table shows it (the copy button copies all 64). */
export const shortSha = (sha256: string) => sha256.slice(0, 12);
