// Generative UI: an ```openui fence, rendered as the components it describes (src/openui/: a tolerant
// streaming parser of the language the agent's guide defines, and React components for it). A separate
// chunk, loaded by Markdown only when an answer has such a block.

import "../openui/openui.css";
import { OpenUi } from "../openui/OpenUi.js";

export default function OpenUiBlock({
  source,
  streaming,
}: {
  readonly source: string;
  readonly streaming: boolean;
}) {
  return <OpenUi source={source} streaming={streaming} />;
}
