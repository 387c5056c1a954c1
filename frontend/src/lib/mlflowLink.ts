/** "Open in MLflow"'s target, or null where no MLflow UI is served (GET /server: null) or the run has no
 *  MLflow run yet: the link is then hidden. */
export function mlflowRunUrl(uiUrl: string | null | undefined, mlflowRunId: string | null | undefined): string | null {
  return uiUrl && mlflowRunId ? `${uiUrl.replace(/\/+$/, '')}/#/runs/${mlflowRunId}` : null;
}
