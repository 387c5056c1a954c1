// A stand-in OpenAPI document written from docs/api.md, used ONLY while the backend's
// `python -m backend.openapi` does not exist yet. Once it does, scripts/gen-api.mjs takes the spec
// from the backend and this file is no longer read.
const ref = (name) => ({ $ref: `#/components/schemas/${name}` });
const arr = (items) => ({ type: 'array', items });
const str = { type: 'string' };
const int = { type: 'integer' };
const num = { type: 'number' };
const bool = { type: 'boolean' };
const nullable = (s) => ({ anyOf: [s, { type: 'null' }] });
const anyObj = { type: 'object', additionalProperties: true };
const obj = (properties, required = Object.keys(properties)) => ({ type: 'object', properties, required });

const schemas = {
  ErrorItem: obj({ loc: arr({ anyOf: [str, int] }), msg: str, type: str }),
  ErrorBody: obj({ detail: str, code: str, errors: arr(ref('ErrorItem')) }, ['detail', 'code']),
  LoginRequest: obj({ username: str, password: str }),
  LoginResponse: obj({ access_token: str, token_type: str, expires_at: str }),
  Membership: obj({ project_id: int, project: str, role: { type: 'string', enum: ['admin', 'member', 'viewer'] } }),
  Me: obj({ id: int, username: str, is_admin: bool, memberships: arr(ref('Membership')) }),
  Project: obj({ id: int, name: str, description: nullable(str) }),
  Kind: obj({ name: str, description: str, spec_schema: anyObj, defaults: anyObj, result_kinds: arr(str) }),
  Progress: obj({ done: num, total: nullable(num), message: nullable(str) }),
  RunStatus: { type: 'string', enum: ['queued', 'running', 'succeeded', 'failed', 'cancelled'] },
  Run: obj({
    id: int, experiment_id: int, project_id: int, kind: str, index: int, spec: anyObj, params: anyObj,
    status: ref('RunStatus'), attempt: int, max_attempts: int, queue: str, worker: nullable(str),
    heartbeat_at: nullable(str), progress: nullable(ref('Progress')), error: nullable(str), created_at: str,
    started_at: nullable(str), finished_at: nullable(str), mlflow_run_id: nullable(str),
    summary: { type: 'object', additionalProperties: num }, tags: arr(str), cancel_requested: bool,
  }),
  RunPage: obj({ items: arr(ref('Run')), next_cursor: nullable(str) }),
  Experiment: obj({
    id: int, project_id: int, project: str, name: str, description: nullable(str), kind: str, spec: anyObj,
    sweep: nullable(anyObj), author: str, created_at: str, run_count: int,
    status_counts: { type: 'object', additionalProperties: int }, tags: arr(str),
    review_state: nullable({ type: 'string', enum: ['approved', 'changes_requested'] }), starred: bool,
  }),
  ExperimentDetail: { allOf: [ref('Experiment'), obj({ runs: arr(ref('Run')) })] },
  ExperimentPage: obj({ items: arr(ref('Experiment')), next_cursor: nullable(str) }),
  ExperimentCreate: obj(
    { name: str, kind: str, spec: anyObj, sweep: nullable(anyObj), project: nullable(str), description: nullable(str), tags: arr(str) },
    ['name', 'kind'],
  ),
  PreviewRun: obj({ index: int, params: anyObj, spec: anyObj }),
  Preview: obj({ count: int, runs: arr(ref('PreviewRun')) }),
  Bucket: obj({ step_start: int, step_end: int, min: num, max: num, last: num, count: int }),
  MetricSeries: obj({ total_points: int, step_min: nullable(int), step_max: nullable(int), buckets: arr(ref('Bucket')) }),
  MetricsResponse: obj({ run_id: int, series: { type: 'object', additionalProperties: ref('MetricSeries') } }),
  Result: obj({ id: int, run_id: int, kind: str, payload: anyObj, created_at: str }),
  ExperimentResult: obj({ id: int, run_id: int, kind: str, payload: anyObj, params: anyObj, created_at: str }),
  LogLine: obj({ seq: int, time: str, line: str }),
  LogPage: obj({ items: arr(ref('LogLine')), last_seq: int }),
  CommentCreate: obj({ body: str }),
  Comment: obj({ id: int, author: str, body: str, created_at: str, experiment_id: nullable(int), run_id: nullable(int) }),
  ReviewPut: obj({ state: { type: 'string', enum: ['approved', 'changes_requested'] }, body: nullable(str) }, ['state']),
  Review: obj({ id: int, experiment_id: int, reviewer: str, state: { type: 'string', enum: ['approved', 'changes_requested'] }, body: nullable(str), created_at: str }),
  Activity: obj({
    id: int, type: { type: 'string', enum: ['submitted', 'finished', 'failed', 'cancelled', 'commented', 'reviewed'] },
    actor: nullable(str), experiment_id: nullable(int), run_id: nullable(int), message: str, created_at: str,
  }),
  Health: obj({ status: str, database: str, version: str }),
};

const json = (schema) => ({ content: { 'application/json': { schema } } });
const ok = (schema, status = '200') => ({ [status]: { description: 'OK', ...json(schema) }, default: { description: 'error', ...json(ref('ErrorBody')) } });
const pathParam = (name) => ({ name, in: 'path', required: true, schema: int });
const q = (name, schema = str) => ({ name, in: 'query', required: false, schema });
const op = (operationId, { params = [], body, res, status } = {}) => ({
  operationId,
  tags: [operationId.split('-')[0]],
  ...(params.length ? { parameters: params } : {}),
  ...(body ? { requestBody: { required: true, ...json(body) } } : {}),
  responses: ok(res ?? anyObj, status),
});
const run = pathParam('run_id');
const exp = pathParam('experiment_id');
const proj = pathParam('project_id');
const tag = { name: 'tag', in: 'path', required: true, schema: str };

const paths = {
  '/api/v1/health': { get: op('health-get', { res: ref('Health') }) },
  '/api/v1/auth/login': { post: op('auth-login', { body: ref('LoginRequest'), res: ref('LoginResponse') }) },
  '/api/v1/auth/me': { get: op('auth-me', { res: ref('Me') }) },
  '/api/v1/kinds': { get: op('kinds-list', { res: arr(ref('Kind')) }) },
  '/api/v1/projects': { get: op('projects-list', { res: arr(ref('Project')) }) },
  '/api/v1/projects/{project_id}/activity': { get: op('projects-activity', { params: [proj, q('limit', int)], res: arr(ref('Activity')) }) },
  '/api/v1/experiments': {
    get: op('experiments-list', { params: [q('project'), q('kind'), q('limit', int), q('cursor')], res: ref('ExperimentPage') }),
    post: op('experiments-create', { body: ref('ExperimentCreate'), res: ref('ExperimentDetail'), status: '201' }),
  },
  '/api/v1/experiments/preview': { post: op('experiments-preview', { body: ref('ExperimentCreate'), res: ref('Preview') }) },
  '/api/v1/experiments/{experiment_id}': { get: op('experiments-get', { params: [exp], res: ref('ExperimentDetail') }) },
  '/api/v1/experiments/{experiment_id}/results': { get: op('results-experiment-list', { params: [exp, q('kind')], res: arr(ref('ExperimentResult')) }) },
  '/api/v1/experiments/{experiment_id}/comments': {
    get: op('reviews-experiment-comments', { params: [exp], res: arr(ref('Comment')) }),
    post: op('reviews-experiment-comment', { params: [exp], body: ref('CommentCreate'), res: ref('Comment'), status: '201' }),
  },
  '/api/v1/experiments/{experiment_id}/review': { put: op('reviews-put', { params: [exp], body: ref('ReviewPut'), res: ref('Review') }) },
  '/api/v1/experiments/{experiment_id}/reviews': { get: op('reviews-list', { params: [exp], res: arr(ref('Review')) }) },
  '/api/v1/experiments/{experiment_id}/tags/{tag}': {
    put: op('tags-experiment-add', { params: [exp, tag] }),
    delete: op('tags-experiment-remove', { params: [exp, tag] }),
  },
  '/api/v1/experiments/{experiment_id}/star': {
    put: op('experiments-star', { params: [exp] }),
    delete: op('experiments-unstar', { params: [exp] }),
  },
  '/api/v1/runs': {
    get: op('runs-list', {
      params: [q('experiment_id', int), q('status'), q('kind'), q('tag'), q('project'), q('sort'), q('order'), q('limit', int), q('cursor')],
      res: ref('RunPage'),
    }),
  },
  '/api/v1/runs/{run_id}': { get: op('runs-get', { params: [run], res: ref('Run') }) },
  '/api/v1/runs/{run_id}/cancel': { post: op('runs-cancel', { params: [run], res: ref('Run') }) },
  '/api/v1/runs/{run_id}/retry': { post: op('runs-retry', { params: [run], res: ref('Run') }) },
  '/api/v1/runs/{run_id}/logs': { get: op('runs-logs', { params: [run, q('after', int), q('limit', int)], res: ref('LogPage') }) },
  '/api/v1/runs/{run_id}/metrics': {
    get: op('metrics-get', { params: [run, q('keys'), q('max_points', int), q('step_min', int), q('step_max', int)], res: ref('MetricsResponse') }),
  },
  '/api/v1/runs/{run_id}/metric-keys': { get: op('metrics-keys', { params: [run], res: arr(str) }) },
  '/api/v1/runs/{run_id}/results': { get: op('results-run-list', { params: [run, q('kind')], res: arr(ref('Result')) }) },
  '/api/v1/runs/{run_id}/comments': {
    get: op('reviews-run-comments', { params: [run], res: arr(ref('Comment')) }),
    post: op('reviews-run-comment', { params: [run], body: ref('CommentCreate'), res: ref('Comment'), status: '201' }),
  },
  '/api/v1/runs/{run_id}/tags/{tag}': {
    put: op('tags-run-add', { params: [run, tag] }),
    delete: op('tags-run-remove', { params: [run, tag] }),
  },
};

export const provisionalSpec = {
  openapi: '3.1.0',
  info: { title: 'ReasonLab (provisional, from docs/api.md)', version: '0.0.0' },
  paths,
  components: { schemas },
};
