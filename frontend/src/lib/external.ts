// External runs: the runs a researcher's own script creates and drives through the SDK
// (reasonlab_sdk.init; backend/tracking/). They are the platform's runs like any other (same rows, charts,
// queries, groups, exports), marked `kind: "external"` (common/runs.py EXTERNAL_KIND): no kind manifest
// declares that kind, no worker executes it, and its spec is the script's free-form config.

export const EXTERNAL_KIND = 'external';

/** A run (or an experiment) of a script's own, not executed by a worker from a spec. */
export const isExternal = (kind: string | null | undefined): boolean => kind === EXTERNAL_KIND;

/** What the badge's tooltip says an external run is. */
export const EXTERNAL_HINT = "logged by the user's own script through the SDK (reasonlab_sdk.init), not executed by a worker";
