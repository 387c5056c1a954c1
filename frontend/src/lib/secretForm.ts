// The secrets form's errors: the API's answer to a set or a delete, placed on the field it names.
import { ApiError, errorMessage } from '../api/errors';

export interface SecretFormErrors {
  /** on the name field: a 422 about the path's name (the pattern), or a name the URL cannot carry */
  name?: string;
  /** on the value field: a 422 about the body's value (empty, too long) */
  value?: string;
  /** on the hosts field: a 422 about the body's hosts (an entry that is no host: its line named) */
  hosts?: string;
  /** above the form: a 403 (not a project admin), a 404, anything not about a field */
  form?: string;
}

/** Where each error of the API's answer goes: 422 `errors[].loc` ["path", "name"] / ["body", "value"] / ["body", "hosts", i] onto the fields. */
export function secretFormErrors(error: unknown): SecretFormErrors {
  if (!(error instanceof ApiError)) return { form: errorMessage(error) };
  if (error.status !== 422) return { form: error.detail };
  const out: SecretFormErrors = {};
  const other: string[] = [];
  for (const e of error.errors) {
    const [where, field] = e.loc;
    if (where === 'path' && field === 'name') out.name = out.name ? `${out.name}; ${e.msg}` : e.msg;
    else if (where === 'body' && field === 'value') out.value = out.value ? `${out.value}; ${e.msg}` : e.msg;
    else if (where === 'body' && field === 'hosts') {
      const line = typeof e.loc[2] === 'number' ? `host ${e.loc[2] + 1}: ` : '';
      out.hosts = out.hosts ? `${out.hosts}; ${line}${e.msg}` : `${line}${e.msg}`;
    }
    else other.push(e.loc.length ? `${e.loc.join('.')}: ${e.msg}` : e.msg);
  }
  if (other.length) out.form = other.join('; ');
  if (!out.name && !out.value && !out.hosts && !out.form) out.form = error.detail;
  return out;
}

/**
 * A name the request's URL cannot carry to the API's check (empty, a "/", only dots: the path would
 * change), refused here; every other name goes to the API, whose 422 names what is wrong.
 */
export function unsendableName(name: string): string | undefined {
  if (!name) return 'a name is required';
  if (name.includes('/') || /^\.+$/.test(name)) return 'letters, digits and _ only';
  return undefined;
}

/** The hosts field's text as the API takes it: one entry a line (or comma-separated), blanks dropped. */
export function hostLines(text: string): string[] {
  return text
    .split(/[\n,]/)
    .map((h) => h.trim())
    .filter((h) => h.length > 0);
}
