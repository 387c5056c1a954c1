// "Download data" under every chart (components/charts/EChart.tsx): the table of what the chart draws
// (lib/chartTable.ts, or the chart's own) as CSV, written here, or Parquet, written by the API from the
// same table (POST /exports/parquet). The table is built on the click, never on a render.
//
// The menu itself (a Mantine Menu: a popover, a portal, a transition) exists only while it is open: until
// the first click the button is a plain button, and one with no loader transition until a download runs.
// Mounted with every chart, each menu's popover and portal set state as they mounted, and each transition
// once more after (its reduced-motion media query): a page of 53 charts (a SRAVEN run's Metrics tab), whose
// charts mount one by one as their data comes in, left an update pending after each of more than 50
// commits in a row, which React counts as an update loop ("Maximum update depth exceeded").
import { Button, Group, Menu } from '@mantine/core';
import { useMutation } from '@tanstack/react-query';
import { useState } from 'react';
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
  const [open, setOpen] = useState(false);
  const csv = () => {
    const t = table();
    saveBlob(new Blob([toCsv(t)], { type: 'text/csv;charset=utf-8' }), `${filename}.csv`);
  };
  const button = (
    <Button
      size="compact-xs"
      variant="subtle"
      color="gray"
      // a boolean `loading` mounts the button's loader transition (a state update after it mounts) with
      // every chart: only while a download is under way
      loading={parquet.isPending || undefined}
      aria-label={`download data: ${label}`}
      aria-haspopup="menu"
      onClick={open ? undefined : () => setOpen(true)}
      data-testid="chart-download"
    >
      ⤓ data
    </Button>
  );
  if (!open) {
    return (
      <Group justify="flex-end" gap={0} mt={2}>
        {button}
      </Group>
    );
  }
  return (
    <Group justify="flex-end" gap={0} mt={2}>
      <Menu opened onChange={setOpen} position="bottom-end" withinPortal shadow="sm">
        <Menu.Target>{button}</Menu.Target>
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
