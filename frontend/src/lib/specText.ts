// The spec editor's text modes: YAML (what researchers write specs in) and JSON (what the API takes).
import { parse, stringify } from 'yaml';
import { isPlainObject, type JsonObject } from './dotted';

export type TextFormat = 'yaml' | 'json';

export function specToText(spec: JsonObject, format: TextFormat): string {
  return format === 'yaml' ? stringify(spec) : JSON.stringify(spec, null, 2);
}

export function textToSpec(text: string, format: TextFormat): { spec: JsonObject } | { error: string } {
  try {
    const value: unknown = format === 'yaml' ? parse(text) : JSON.parse(text);
    if (value === null || value === undefined) return { spec: {} };
    if (!isPlainObject(value)) return { error: 'the spec must be a mapping of fields' };
    return { spec: value };
  } catch (e) {
    return { error: e instanceof Error ? e.message.split('\n')[0]! : String(e) };
  }
}
