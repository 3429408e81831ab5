// Exports of the flamegraph shown: the picture (PNG, as drawn), its stacks as collapsed text (Brendan
// Gregg's `outer;inner;leaf value` lines, which flamegraph.pl, speedscope and inferno read) and its tree as
// JSON in Pyroscope's exported shape (a flamebearer), besides the pprof download of the merge.

import { saveFile } from "../api/client";
import type { FlamegraphData } from "../api/types";
import type { Layout } from "../flamegraph/layout";
import { collapsedStacks } from "../flamegraph/transform";

interface Props {
  /** The canvas drawn; null where none is shown whole (a sandwich). */
  canvas: React.RefObject<HTMLCanvasElement> | null;
  layout: Layout;
  data: FlamegraphData;
  unit: string;
  fileName: string;
}

/** The tree in the JSON Pyroscope exports and imports (version 1, levels in the same delta encoding). */
export function flamebearerJson(data: FlamegraphData, unit: string): string {
  return JSON.stringify({
    version: 1,
    flamebearer: { names: data.names, levels: data.levels, numTicks: data.total, maxSelf: data.max_self },
    metadata: { format: "single", units: unit },
  });
}

export function ExportMenu({ canvas, layout, data, unit, fileName }: Props) {
  const png = () => canvas?.current?.toBlob((blob) => blob && saveFile(blob, `${fileName}.png`), "image/png");
  const close = (e: React.MouseEvent) => e.currentTarget.closest("details")?.removeAttribute("open");
  return (
    <details className="export-menu">
      <summary className="button" title="save what is shown">Export</summary>
      <div className="export-items" role="menu" onClick={close}>
        <button type="button" role="menuitem" disabled={!canvas} onClick={png}>PNG image</button>
        <button type="button" role="menuitem"
          onClick={() => saveFile(new Blob([collapsedStacks(layout)], { type: "text/plain" }), `${fileName}.collapsed.txt`)}>
          Collapsed stacks
        </button>
        <button type="button" role="menuitem"
          onClick={() => saveFile(new Blob([flamebearerJson(data, unit)], { type: "application/json" }), `${fileName}.json`)}>
          JSON
        </button>
      </div>
    </details>
  );
}
