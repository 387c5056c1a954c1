// The runs table's "Export" menu: the experiment's runs table as CSV or Parquet, written by the API
// (GET /experiments/{id}/runs/export: the table's columns, names, params and latest metrics), with the
// table's status chips as its filter. The per-column text filters are the browser's own and the API
// cannot express them: the menu says so when one is set.
import { Button, Menu } from '@mantine/core';
import { useMutation } from '@tanstack/react-query';
import { api, unwrap } from '../../api/client';
import type { RunStatus } from '../../lib/runStatus';
import { dispositionFilename, saveBlob } from '../../lib/tableExport';

type Format = 'csv' | 'parquet';

interface Props {
  experimentId: number;
  /** the status chips selected (none: every run) */
  statuses: readonly RunStatus[];
  /** a column's text filter is set (not applied to the file) */
  columnFiltered: boolean;
}

/** What the file holds, in words. */
export function exportScope(statuses: readonly RunStatus[], columnFiltered: boolean): string {
  const runs = statuses.length ? `runs with status ${statuses.join(', ')}` : 'all runs';
  return columnFiltered ? `${runs} (column filters are not applied)` : runs;
}

export function RunsExportMenu({ experimentId, statuses, columnFiltered }: Props) {
  const download = useMutation({
    mutationFn: async (format: Format) => {
      const call = api.GET('/api/v1/experiments/{experiment_id}/runs/export', {
        params: { path: { experiment_id: experimentId }, query: { format, status: statuses.length ? [...statuses] : undefined } },
        parseAs: 'blob',
      });
      const blob = await unwrap(call);
      const { response } = await call;
      const name = dispositionFilename(response.headers.get('Content-Disposition'), `experiment-${experimentId}-runs.${format}`);
      saveBlob(blob as Blob, name);
    },
  });
  const scope = exportScope(statuses, columnFiltered);
  return (
    <Menu position="bottom-end" withinPortal shadow="sm">
      <Menu.Target>
        <Button size="compact-xs" variant="light" loading={download.isPending} data-testid="runs-export">
          Export
        </Button>
      </Menu.Target>
      <Menu.Dropdown>
        <Menu.Label data-testid="runs-export-scope">{scope}</Menu.Label>
        <Menu.Item onClick={() => download.mutate('csv')} data-testid="runs-export-csv">
          CSV
        </Menu.Item>
        <Menu.Item onClick={() => download.mutate('parquet')} data-testid="runs-export-parquet">
          Parquet
        </Menu.Item>
      </Menu.Dropdown>
    </Menu>
  );
}
