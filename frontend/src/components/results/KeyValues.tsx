import { Table } from '@mantine/core';
import { formatValue } from '../../lib/dotted';

export function KeyValues({ rows }: { rows: [string, unknown][] }) {
  return (
    <Table withTableBorder fz="sm" w="auto">
      <Table.Tbody>
        {rows.map(([k, v]) => (
          <Table.Tr key={k}>
            <Table.Th>{k}</Table.Th>
            <Table.Td ff="monospace">{formatValue(v)}</Table.Td>
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  );
}
