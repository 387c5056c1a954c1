// The mark of an external run (or experiment): logged by a script through the SDK, not executed by a worker
// (lib/external.ts). On the run page's header, in the runs tables (experiment and project pages), the
// experiments list and the Compare page's columns; nothing where the kind is another.
import { Badge, type MantineSize } from '@mantine/core';
import { EXTERNAL_HINT, isExternal } from '../../lib/external';

export function ExternalBadge({ kind, size = 'xs' }: { kind: string | null | undefined; size?: MantineSize }) {
  if (!isExternal(kind)) return null;
  return (
    <Badge size={size} variant="light" color="grape" title={EXTERNAL_HINT} data-testid="external-badge" style={{ flexShrink: 0, textTransform: 'none' }}>
      external
    </Badge>
  );
}
