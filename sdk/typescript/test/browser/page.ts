// The browser test's page script: bundled with esbuild from `src/stream.ts` and served by the cut proxy, it
// streams a turn (or subscribes to one) through the page's own `fetch`, same origin as the API, and hands the
// events back to the test.

import { createTurnStream, subscribeTurnStream } from "../../src/stream.js";
import { fetchTransport } from "../stream/fetch-transport.js";

export interface PageRun {
  readonly mode: "create" | "subscribe";
  readonly sessionId: string;
  readonly message?: string;
  readonly turnId?: string;
  readonly after?: number;
}

export interface PageResult {
  readonly events: { seq: number; event: unknown }[];
  readonly turnId: string | undefined;
  readonly lastSeq: number;
  readonly requests: string[];
  readonly error: { name: string; message: string } | undefined;
  readonly userAgent: string;
}

const options = { backoff: { initialMs: 5, maxMs: 50 }, maxReconnects: 8 };

async function run(spec: PageRun): Promise<PageResult> {
  const transport = fetchTransport(globalThis.location.origin);
  const stream =
    spec.mode === "create"
      ? createTurnStream(
          transport,
          spec.sessionId,
          { input: [{ type: "user.message", content: spec.message ?? "" }] },
          options,
        )
      : subscribeTurnStream(transport, spec.sessionId, spec.turnId ?? "", {
          ...options,
          ...(spec.after === undefined ? {} : { after: spec.after }),
        });
  const events: { seq: number; event: unknown }[] = [];
  let error: PageResult["error"];
  try {
    for await (const { seq, event } of stream) {
      events.push({ seq, event });
    }
  } catch (caught) {
    error =
      caught instanceof Error
        ? { name: caught.name, message: caught.message }
        : { name: "?", message: String(caught) };
  }
  return {
    events,
    turnId: stream.turnId,
    lastSeq: stream.lastSeq,
    requests: transport.sent.map((r) => `${r.method} ${r.path} ${r.headers["last-event-id"] ?? ""}`.trim()),
    error,
    userAgent: globalThis.navigator.userAgent,
  };
}

(globalThis as unknown as { trueforgeRun: typeof run }).trueforgeRun = run;
