// One value of a per-example row (a cell of the rows table, a field of a diff's side): its text wrapped
// anywhere, so a long value without spaces (a ReasonFormer's `routing` JSON) stays in its column instead
// of running under the next one and widening the page; past FOLD_AT characters folded to its start with
// a "more" toggle, and unfolded as indented JSON in a block that scrolls when it is taller than the screen.
import { Anchor, Code } from '@mantine/core';
import { useState, type CSSProperties } from 'react';
import { FOLD_AT, foldText, prettyText } from '../../lib/examples';

/** Text that breaks anywhere rather than overflow its box. */
export const WRAP_ANYWHERE: CSSProperties = { overflowWrap: 'anywhere', wordBreak: 'break-word', minWidth: 0 };

export function FoldedValue({ value, at = FOLD_AT }: { value: unknown; at?: number }) {
  const [open, setOpen] = useState(false);
  const { text, folded } = foldText(value, at);
  if (!folded) return <span style={WRAP_ANYWHERE}>{text}</span>;
  const toggle = (
    <Anchor
      component="button"
      type="button"
      size="xs"
      ml={4}
      onClick={() => setOpen(!open)}
      aria-expanded={open}
      data-testid={open ? 'value-less' : 'value-more'}
    >
      {open ? 'less' : 'more'}
    </Anchor>
  );
  if (!open) {
    return (
      <span style={WRAP_ANYWHERE} data-testid="value-folded">
        {text}
        {toggle}
      </span>
    );
  }
  return (
    <>
      {toggle}
      <Code block data-testid="value-full" style={{ ...WRAP_ANYWHERE, whiteSpace: 'pre-wrap', maxHeight: 480, overflow: 'auto' }}>
        {prettyText(value)}
      </Code>
    </>
  );
}
