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
export type RunsTableColumns = Ok<'experiments-runs-table'>;
export type ExperimentCreate = Body<'experiments-create'>;
export type Preview = Ok<'experiments-preview'>;
export type MetricsResponse = Ok<'metrics-get'>;
export type RunResult = Elem<Ok<'results-list_run'>>;
export type ExperimentResult = Elem<Ok<'results-list_experiment'>>;
export type LogPage = Ok<'runs-logs'>;
/** A run's per-example table: its name and row count. */
export type ExampleTable = Elem<Ok<'examples-tables'>>;
export type ExamplePage = Ok<'examples-list'>;
export type ExampleRow = ExamplePage['items'][number];
export type ExampleDiffPage = Ok<'examples-diff'>;
export type ExampleDiff = ExampleDiffPage['items'][number];
export type ExamplePeer = Elem<Ok<'examples-peers'>>;
/** One attempt of a run (worker, claim, end, duration without downtime, outcome). */
export type RunAttempt = Elem<Ok<'runs-attempts'>>;
export type Comment = Elem<Ok<'reviews-experiment_comments'>>;
export type Review = Elem<Ok<'reviews-list'>>;
export type Activity = Elem<Ok<'reviews-activity'>>;
/** A project secret as the API shows it: name, when and by whom it was set; never its value. */
export type Secret = Elem<Ok<'secrets-list'>>;
/** A data file uploaded to a project (name, size, sha256, who uploaded it and when); a spec names it `dataset:<name>`. */
export type Dataset = Elem<Ok<'datasets-list'>>;
export type Role = 'admin' | 'member' | 'viewer';

/** A run's status (the API's `RunStatus` enum; lib/runStatus.ts lists it once). */
export type RunStatus = Run['status'];
/** A kind's spec: a union over every kind's spec, discriminated by `kind`. */
export type Spec = Run['spec'];
export type SpecKind = Spec['kind'];
export type KindExample = Kind['examples'][number];
export type Sweep = NonNullable<ExperimentCreate['sweep']>;
export type SweepDistribution = NonNullable<Sweep['random']>['params'][string];
export type PreviewRun = Preview['runs'][number];
/** A result record's payload: a union over every result type, discriminated by `kind`. */
export type ResultPayload = RunResult['payload'];
export type ResultKind = ResultPayload['kind'];
/** The payload of one result kind: `PayloadOf<'sraven_cell'>` has exactly the SravenCell fields. */
export type PayloadOf<K extends ResultKind> = Extract<ResultPayload, { kind: K }>;

type EventStream<R> = R extends { content: { 'text/event-stream': infer E } } ? E : never;
/** One server-sent event of `GET /runs/{id}/events`: a union on `event` (status, progress, metrics, end). */
export type RunEvent = EventStream<Responses<'runs-events'>[200]>;
export type RunEventName = RunEvent['event'];
/** The data of one event: `RunEventData<'progress'>` is the run's Progress. */
export type RunEventData<E extends RunEventName> = Extract<RunEvent, { event: E }>['data'];
/** A project's saved view: its name, page, state (lib/viewState.ts), author and can_edit. */
export type SavedView = Ok<'views-get'>;
export type Claim = Ok<'claims-get'>;
export type ClaimCreate = Body<'claims-create'>;
export type ClaimDefinition = ClaimCreate['definition'];
export type ClaimEvaluation = Claim['evaluation'];
export type ClaimComparison = ClaimEvaluation['comparisons'][number];
export type ClaimArm = ClaimEvaluation['arms'][number];
export type ClaimComment = Elem<Ok<'claims-comments'>>;
export type ClaimReview = Elem<Ok<'claims-reviews'>>;

/** A report's draft (backend/reports/): its blocks are the API's discriminated union on `type`. */
export type Report = Ok<'reports-get'>;
/** A report as the project's list shows it (title, author, revisions, updated_at; no blocks). */
export type ReportSummary = Ok<'reports-list'>['items'][number];
/** A block as the editor writes it (the API's input: fields with a default may be left out). */
export type ReportBlock = Body<'reports-update'>['blocks'][number];
export type ReportBlockKind = ReportBlock['type'];
/** The data a report block shows (live, or frozen at its cut-off), by block id. */
export type ReportData = Ok<'reports-data'>;
export type ReportBlockData = ReportData[string];
export type ReportRevision = Ok<'reports-revision'>;
/** What a share link opens without an account: one revision and its frozen data. */
export type SharedReport = Ok<'reports-shared'>;
