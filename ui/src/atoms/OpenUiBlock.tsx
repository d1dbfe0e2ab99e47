// Generative UI: an ```openui fence. The renderer of the OpenUI language is not built yet (README, "Not yet"):
// the block shows its source, marked as such, so nothing the model wrote is hidden.

import { CodeBlock } from "./CodeBlock.js";

export default function OpenUiBlock({
  source,
  streaming,
}: {
  readonly source: string;
  readonly streaming: boolean;
}) {
  return (
    <div className="tf-openui" data-openui="source">
      <CodeBlock code={source} language="openui" streaming={streaming} />
    </div>
  );
}
