// Names for the API's shapes, taken from the generated operations (by stable operation id) so they
// follow the backend's OpenAPI document whatever its schema classes are called.
import type { operations } from './schema';

type JsonBody<R> = R extends { content: { 'application/json': infer J } } ? J : never;
type Responses<Op extends keyof operations> = operations[Op]['responses'];
/** The JSON body of an operation's success response (200 or 201). */
export type Ok<Op extends keyof operations> =
  | (200 extends keyof Responses<Op> ? JsonBody<Responses<Op>[200]> : never)
  | (201 extends keyof Responses<Op> ? JsonBody<Responses<Op>[201]> : never);
/** The JSON body an operation takes. */
export type Body<Op extends keyof operations> = operations[Op] extends { requestBody?: infer B } ? JsonBody<NonNullable<B>> : never;
type Elem<T> = T extends readonly (infer E)[] ? E : never;

export type Me = Ok<'auth-me'>;
export type Membership = Me['memberships'][number];
export type Project = Elem<Ok<'projects-list'>>;
export type Kind = Elem<Ok<'kinds-list'>>;
export type Run = Ok<'runs-get'>;
export type RunPage = Ok<'runs-list'>;
export type Experiment = Ok<'experiments-list'>['items'][number];
export type ExperimentDetail = Ok<'experiments-get'>;
export type ExperimentCreate = Body<'experiments-create'>;
export type Preview = Ok<'experiments-preview'>;
export type MetricsResponse = Ok<'metrics-get'>;
export type RunResult = Elem<Ok<'results-list_run'>>;
export type ExperimentResult = Elem<Ok<'results-list_experiment'>>;
export type LogPage = Ok<'runs-logs'>;
export type Comment = Elem<Ok<'reviews-experiment_comments'>>;
export type Review = Elem<Ok<'reviews-list'>>;
export type Activity = Elem<Ok<'reviews-activity'>>;
export type Role = 'admin' | 'member' | 'viewer';
