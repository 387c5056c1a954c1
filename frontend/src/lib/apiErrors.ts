// Maps the API's 422 `errors[].loc` (e.g. ["body", "spec", "train", "lr"]) onto the form's fields.
import { runNumber } from './runIds';

export interface ErrorItem {
  loc: (string | number)[];
  msg: string;
  type?: string;
}

export interface FieldErrors {
  /** spec field errors, keyed by dotted spec path ("train.lr") */
  spec: Record<string, string>;
  /** errors of other top-level body fields (name, kind, project) keyed by field */
  body: Record<string, string>;
  /** sweep errors: loc ["body", "sweep", <combination>, ...path] -> message naming the combination */
  sweep: string[];
  /** anything that is not about a field */
  other: string[];
}

export function splitErrors(errors: readonly ErrorItem[]): FieldErrors {
  const out: FieldErrors = { spec: {}, body: {}, sweep: [], other: [] };
  for (const e of errors) {
    const loc = e.loc[0] === 'body' ? e.loc.slice(1) : e.loc;
    const [head, ...rest] = loc;
    if (head === 'spec' && rest.length) {
      // a discriminated union may insert the kind's tag ("diagnostic") before the field path
      const key = rest.map(String).join('.');
      out.spec[key] = out.spec[key] ? `${out.spec[key]}; ${e.msg}` : e.msg;
    } else if (head === 'sweep') {
      const where = rest.length > 1 ? `${rest.slice(1).join('.')}: ` : '';
      // the loc counts combinations from 0; the preview's # column (the runs' numbers) from 1
      const combo = typeof rest[0] === 'number' ? `combination ${runNumber(rest[0])}: ` : '';
      out.sweep.push(`${combo}${where}${e.msg}`);
    } else if (typeof head === 'string' && rest.length === 0 && head !== 'spec') {
      out.body[head] = e.msg;
    } else {
      out.other.push(`${loc.join('.') || 'request'}: ${e.msg}`);
    }
  }
  return out;
}

/** Finds the error for a field path, tolerating a union tag inserted before it ("diagnostic.train.lr"). */
export function errorFor(specErrors: Record<string, string>, path: string, kind?: string): string | undefined {
  return specErrors[path] ?? (kind ? specErrors[`${kind}.${path}`] : undefined);
}
