import { Code } from '@mantine/core';
import { stringify } from 'yaml';

export function JsonBlock({ value, yaml = false, maxHeight = 360 }: { value: unknown; yaml?: boolean; maxHeight?: number }) {
  return (
    <Code block style={{ maxHeight, overflow: 'auto', whiteSpace: 'pre' }}>
      {yaml ? stringify(value) : JSON.stringify(value, null, 2)}
    </Code>
  );
}
