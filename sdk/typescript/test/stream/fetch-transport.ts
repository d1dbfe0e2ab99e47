// A `StreamTransport` over the platform's `fetch`, for the tests (Node and the browser page): the client's own
// transport is wired elsewhere. Failures map as the seam asks: an abort to `TrueForgeAbortError`, anything
// else `fetch` rejects with to `TrueForgeConnectionError`.

import { TrueForgeAbortError, TrueForgeConnectionError } from "../../src/errors.js";
import type { StreamTransport } from "../../src/stream.js";

export interface CountingTransport extends StreamTransport {
  /** The requests sent, in order: method, path and the headers the stream set. */
  readonly sent: { method: string; path: string; headers: Record<string, string> }[];
}

export function fetchTransport(baseUrl: string): CountingTransport {
  const sent: CountingTransport["sent"] = [];
  return {
    sent,
    async request(path: string, init: RequestInit): Promise<Response> {
      sent.push({
        method: init.method ?? "GET",
        path,
        headers: { ...(init.headers as Record<string, string> | undefined) },
      });
      try {
        return await fetch(`${baseUrl}${path}`, init);
      } catch (error) {
        if (init.signal?.aborted) {
          throw new TrueForgeAbortError(`${init.method ?? "GET"} ${path} was aborted`, { cause: error });
        }
        throw new TrueForgeConnectionError(`${init.method ?? "GET"} ${path} failed: ${String(error)}`, {
          cause: error,
        });
      }
    },
  };
}
