import { describe, expect, it } from 'vitest';
import { ApiError } from '../api/errors';
import { hostLines, secretFormErrors, unsendableName } from './secretForm';

describe('secretFormErrors', () => {
  it("puts a 422's path name and body value errors on their fields", () => {
    const e = new ApiError(422, 'invalid', 'path.name: bad', [
      { loc: ['path', 'name'], msg: 'String should match pattern' },
      { loc: ['body', 'value'], msg: 'String should have at least 1 character' },
    ]);
    expect(secretFormErrors(e)).toEqual({ name: 'String should match pattern', value: 'String should have at least 1 character' });
  });

  it('puts anything else above the form: other 422 locations, a 403, a 404, a network error', () => {
    expect(secretFormErrors(new ApiError(422, 'invalid', 'body: Field required', [{ loc: ['body'], msg: 'Field required' }]))).toEqual({ form: 'body: Field required' });
    expect(secretFormErrors(new ApiError(422, 'invalid', 'a value cannot be stored'))).toEqual({ form: 'a value cannot be stored' });
    expect(secretFormErrors(new ApiError(403, 'forbidden', 'project 1: admin role required'))).toEqual({ form: 'project 1: admin role required' });
    expect(secretFormErrors(new ApiError(404, 'not_found', "secret 'X' not found"))).toEqual({ form: "secret 'X' not found" });
    expect(secretFormErrors(new TypeError('Failed to fetch'))).toEqual({ form: 'Failed to fetch' });
  });
});

describe('unsendableName', () => {
  it('refuses only what the URL cannot carry to the API; the API judges the rest', () => {
    expect(unsendableName('')).toBe('a name is required');
    expect(unsendableName('a/b')).toBe('letters, digits and _ only');
    expect(unsendableName('..')).toBe('letters, digits and _ only');
    for (const name of ['OPENAI_API_KEY', '1bad', 'has-dash', 'x'.repeat(65), 'a.b']) expect(unsendableName(name)).toBeUndefined();
  });
});

describe('hosts', () => {
  it("puts a 422 on a host entry on the hosts field, naming which", () => {
    const e = new ApiError(422, 'invalid', 'body.hosts.1: bad', [{ loc: ['body', 'hosts', 1], msg: 'Value error, not a host' }]);
    expect(secretFormErrors(e)).toEqual({ hosts: 'host 2: Value error, not a host' });
    const many = new ApiError(422, 'invalid', 'body.hosts: too many', [{ loc: ['body', 'hosts'], msg: 'List should have at most 32 items' }]);
    expect(secretFormErrors(many)).toEqual({ hosts: 'List should have at most 32 items' });
  });

  it('reads one entry a line or comma-separated, blanks dropped', () => {
    expect(hostLines(' api.openai.com \n\n*.openai.azure.com, https://llm.internal:8443/v1\n')).toEqual([
      'api.openai.com',
      '*.openai.azure.com',
      'https://llm.internal:8443/v1',
    ]);
    expect(hostLines('  \n')).toEqual([]);
  });
});
