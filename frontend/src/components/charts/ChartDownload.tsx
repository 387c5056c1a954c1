// "Download data" under every chart (components/charts/EChart.tsx): the table of what the chart draws
// (lib/chartTable.ts, or the chart's own) as CSV, written here, or Parquet, written by the API from the
// same table (POST /exports/parquet). The table is built on the click, never on a render.
import { Button, Group, Menu } from '@mantine/core';
import { useMutation } from '@tanstack/react-query';
import { api, unwrap } from '../../api/client';
import { saveBlob, toCsv, type DataTable } from '../../lib/tableExport';

interface Props {
  /** the table, built when a download is asked for */
  table: () => DataTable;
  /** the file's name without its extension */
  filename: string;
  /** what the chart shows, for the button's accessible name */
  label: string;
}

export function ChartDownload({ table, filename, label }: Props) {
  const parquet = useMutation({
    mutationFn: async () => {
      const body = table();
      const blob = await unwrap(api.POST('/api/v1/exports/parquet', { body, parseAs: 'blob' }));
      saveBlob(blob as Blob, `${filename}.parquet`);
    },
  });
  const csv = () => {
    const t = table();
    saveBlob(new Blob([toCsv(t)], { type: 'text/csv;charset=utf-8' }), `${filename}.csv`);
  };
  return (
    <Group justify="flex-end" gap={0} mt={2}>
      <Menu position="bottom-end" withinPortal shadow="sm">
        <Menu.Target>
          <Button
            size="compact-xs"
            variant="subtle"
            color="gray"
            loading={parquet.isPending}
            aria-label={`download data: ${label}`}
            data-testid="chart-download"
          >
            ⤓ data
          </Button>
        </Menu.Target>
        <Menu.Dropdown>
          <Menu.Label>Download what the chart draws</Menu.Label>
          <Menu.Item onClick={csv} data-testid="chart-download-csv">
            CSV
          </Menu.Item>
          <Menu.Item onClick={() => parquet.mutate()} data-testid="chart-download-parquet">
            Parquet
          </Menu.Item>
        </Menu.Dropdown>
      </Menu>
    </Group>
  );
}
