// The spec as YAML or JSON text; edits that parse to an object replace the spec, others show the
// parse error and leave the spec as it was.
import { Textarea } from '@mantine/core';
import { useEffect, useRef, useState } from 'react';
import type { JsonObject } from '../../lib/dotted';
import { specToText, textToSpec, type TextFormat } from '../../lib/specText';

export function SpecTextEditor({ spec, format, onChange, error }: { spec: JsonObject; format: TextFormat; onChange: (spec: JsonObject) => void; error?: string }) {
  const [text, setText] = useState(() => specToText(spec, format));
  const [parseError, setParseError] = useState<string | null>(null);
  const lastEmitted = useRef(spec);
  useEffect(() => {
    // the spec changed from outside (kind switch, form edits): show it
    if (spec !== lastEmitted.current) {
      setText(specToText(spec, format));
      lastEmitted.current = spec;
    }
  }, [spec, format]);
  useEffect(() => setText(specToText(lastEmitted.current, format)), [format]);
  return (
    <Textarea
      label={`Spec (${format.toUpperCase()})`}
      aria-label={`spec as ${format}`}
      ff="monospace"
      autosize
      minRows={12}
      maxRows={40}
      value={text}
      error={parseError ?? error}
      spellCheck={false}
      onChange={(e) => {
        const t = e.currentTarget.value;
        setText(t);
        const r = textToSpec(t, format);
        if ('error' in r) setParseError(r.error);
        else {
          setParseError(null);
          lastEmitted.current = r.spec;
          onChange(r.spec);
        }
      }}
    />
  );
}
