// A TCP proxy in front of the server that cuts the client's connection part way through chosen responses,
// to test that turn streams resume. It reads the requests that pass (HTTP/1.1 without pipelining, as `fetch`
// sends them) so that it knows which response each byte belongs to: the n-th *stream request* (a POST of a
// turn or a GET of a turn's subscribe) gets the n-th planned cut, counted in bytes of its response, status
// line and headers included. At the cut, the bytes before it are delivered and both connections are closed.
//
// It can also serve a few fixed files itself (a test page and its script), so that a browser loads the page
// from the same origin as the API it calls through the proxy.

import { connect, createServer, type Server, type Socket } from "node:net";

/**
 * Where to cut one response: after `at` bytes; or `offset` bytes after the end of the `occurrence`-th
 * (1-based, default 1) occurrence of `after` in the response (a negative offset cuts inside it: `after: "日",
 * offset: -2` cuts after the first byte of the character).
 */
export type Cut =
  | { readonly at: number }
  | { readonly after: string; readonly offset?: number; readonly occurrence?: number };

/** A stream request the proxy saw. */
export interface SeenRequest {
  readonly method: string;
  readonly path: string;
  /** The cut planned for its response, if any. */
  readonly cut: Cut | undefined;
  /** Where its response was cut (bytes delivered), once it was. */
  cutAt: number | undefined;
  /** Response bytes that reached the client. */
  delivered: number;
  /** The last (up to 16) response bytes that reached the client. */
  tail: Buffer;
}

export interface StaticFile {
  readonly type: string;
  readonly body: string | Uint8Array;
}

/** How long bytes held back for a pattern wait for the next chunk before they are sent anyway. */
const HOLD_MS = 30;

function isStreamRequest(method: string, path: string): boolean {
  const route = path.split("?")[0] ?? "";
  return (
    (method === "POST" && /^\/api\/v1\/sessions\/[^/]+\/turns$/.test(route)) ||
    (method === "GET" && /^\/api\/v1\/sessions\/[^/]+\/turns\/[^/]+\/subscribe$/.test(route))
  );
}

function nthIndexOf(haystack: Buffer, needle: Buffer, occurrence: number): number {
  let from = 0;
  for (let n = 1; ; n++) {
    const index = haystack.indexOf(needle, from);
    if (index === -1 || n === occurrence) {
      return index;
    }
    from = index + 1;
  }
}

/** The response to one forwarded request, as it passes. */
class PassingResponse {
  private received = Buffer.alloc(0);
  private forwarded = 0;
  /** The cut as an absolute byte count, once known. */
  private cutAt: number | undefined;
  private holdTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly seen: SeenRequest | undefined,
    private readonly client: Socket,
    private readonly onCut: () => void,
  ) {
    const cut = seen?.cut;
    if (cut !== undefined && "at" in cut) {
      this.cutAt = cut.at;
    }
    if (this.cutAt === 0) {
      this.cut();
    }
  }

  get done(): boolean {
    return this.seen?.cutAt !== undefined;
  }

  data(chunk: Buffer): void {
    if (this.done) {
      return;
    }
    const cut = this.seen?.cut;
    if (cut === undefined) {
      this.client.write(chunk);
      this.count(chunk);
      return;
    }
    clearTimeout(this.holdTimer);
    this.received = Buffer.concat([this.received, chunk]);
    if (this.cutAt === undefined && "after" in cut) {
      const needle = Buffer.from(cut.after);
      const index = nthIndexOf(this.received, needle, cut.occurrence ?? 1);
      if (index !== -1) {
        this.cutAt = Math.max(this.forwarded, index + needle.length + (cut.offset ?? 0));
      }
    }
    if (this.cutAt !== undefined && this.received.length >= this.cutAt) {
      this.send(this.cutAt);
      this.cut();
      return;
    }
    // Not cut yet: send what cannot be part of a match still to come; hold back the rest briefly.
    const hold = this.cutAt === undefined && "after" in cut ? Buffer.byteLength(cut.after) - 1 : 0;
    this.send(Math.max(this.forwarded, this.received.length - hold));
    if (this.forwarded < this.received.length) {
      this.holdTimer = setTimeout(() => this.send(this.received.length), HOLD_MS);
    }
  }

  end(): void {
    clearTimeout(this.holdTimer);
    if (!this.done) {
      this.send(this.received.length);
    }
  }

  private send(upTo: number): void {
    if (upTo > this.forwarded) {
      const sent = this.received.subarray(this.forwarded, upTo);
      this.client.write(sent);
      this.count(sent);
      this.forwarded = upTo;
    }
  }

  private count(sent: Buffer): void {
    if (this.seen) {
      this.seen.delivered += sent.length;
      this.seen.tail = Buffer.concat([this.seen.tail, sent]).subarray(-16);
    }
  }

  private cut(): void {
    if (this.seen) {
      this.seen.cutAt = this.forwarded;
    }
    clearTimeout(this.holdTimer);
    this.onCut();
  }
}

export class CutProxy {
  /** The stream requests seen, in order. */
  readonly requests: SeenRequest[] = [];
  private plan: Cut[] = [];
  private readonly sockets = new Set<Socket>();
  private connectionCount = 0;

  private constructor(
    private readonly server: Server,
    private readonly upstream: { host: string; port: number },
    private readonly files: Map<string, StaticFile>,
    private readonly lingerMs: number,
    readonly baseUrl: string,
  ) {}

  /**
   * Starts a proxy to `upstreamUrl` (e.g. `http://127.0.0.1:4000`) on a free port of 127.0.0.1. `files`: what
   * it serves itself (by path). `lingerMs`: how long the client's connection stays open, silent, after the
   * bytes before a cut were sent (0: closed at once; a browser may then drop bytes it had not read yet,
   * since the error overtakes them).
   */
  static async start(
    upstreamUrl: string,
    options: { files?: Record<string, StaticFile>; lingerMs?: number } = {},
  ): Promise<CutProxy> {
    const url = new URL(upstreamUrl);
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => resolve());
    });
    const address = server.address();
    const port = typeof address === "object" && address ? address.port : 0;
    const proxy = new CutProxy(
      server,
      { host: url.hostname, port: Number(url.port) },
      new Map(Object.entries(options.files ?? {})),
      options.lingerMs ?? 0,
      `http://127.0.0.1:${port}`,
    );
    server.on("connection", (socket) => proxy.accept(socket));
    return proxy;
  }

  /** Plans the cuts of the next stream requests, in order (replacing what was left of the plan). */
  cut(...cuts: Cut[]): void {
    this.plan = [...cuts];
  }

  /** The client connections accepted so far. */
  get connections(): number {
    return this.connectionCount;
  }

  /** The planned cuts not used yet. */
  get pendingCuts(): number {
    return this.plan.length;
  }

  /** Forgets the requests seen. */
  reset(): void {
    this.requests.length = 0;
    this.plan = [];
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) {
      socket.destroy();
    }
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket): void {
    this.connectionCount++;
    this.sockets.add(client);
    client.setNoDelay(true);
    let upstream: Socket | undefined;
    let response: PassingResponse | undefined;
    let pending = Buffer.alloc(0);
    let closed = false;
    /** Cut, closing after the linger: the upstream's end must not close the client sooner. */
    let lingering = false;

    const closeAll = () => {
      if (closed) {
        return;
      }
      closed = true;
      client.destroySoon();
      upstream?.destroy();
    };
    client.on("close", () => {
      this.sockets.delete(client);
      closed = true;
      upstream?.destroy();
    });
    client.on("error", () => closeAll());

    const openUpstream = (): Socket => {
      const socket = connect(this.upstream.port, this.upstream.host);
      this.sockets.add(socket);
      socket.setNoDelay(true);
      socket.on("data", (chunk: Buffer) => response?.data(chunk));
      const upstreamGone = () => {
        response?.end();
        if (!lingering) {
          closeAll();
        }
      };
      socket.on("end", upstreamGone);
      socket.on("error", upstreamGone);
      socket.on("close", () => {
        this.sockets.delete(socket);
        upstreamGone();
      });
      return socket;
    };

    // Splits the client's bytes into requests: headers to the blank line, then `content-length` bytes.
    client.on("data", (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      while (!closed) {
        const headerEnd = pending.indexOf("\r\n\r\n");
        if (headerEnd === -1) {
          return;
        }
        const head = pending.subarray(0, headerEnd).toString("latin1");
        const lines = head.split("\r\n");
        const [method = "", path = ""] = (lines[0] ?? "").split(" ");
        let length = 0;
        for (const line of lines.slice(1)) {
          const colon = line.indexOf(":");
          const name = line.slice(0, colon).trim().toLowerCase();
          const value = line.slice(colon + 1).trim();
          if (name === "content-length") {
            length = Number(value);
          } else if (name === "transfer-encoding") {
            // Not needed by the tests (fetch sends a string body with its length): refuse it visibly.
            client.end("HTTP/1.1 501 Not Implemented\r\ncontent-length: 0\r\n\r\n");
            closeAll();
            return;
          }
        }
        const total = headerEnd + 4 + length;
        if (pending.length < total) {
          return;
        }
        const request = pending.subarray(0, total);
        pending = pending.subarray(total);
        const file = method === "GET" ? this.files.get(path) : undefined;
        if (file !== undefined || (method === "GET" && path === "/favicon.ico")) {
          this.serveFile(client, file);
          continue;
        }
        let seen: SeenRequest | undefined;
        if (isStreamRequest(method, path)) {
          const cut = this.plan.shift();
          seen = { method, path, cut, cutAt: undefined, delivered: 0, tail: Buffer.alloc(0) };
          this.requests.push(seen);
        }
        upstream ??= openUpstream();
        response = new PassingResponse(seen, client, () => {
          if (this.lingerMs > 0) {
            lingering = true;
            upstream?.destroy();
            setTimeout(closeAll, this.lingerMs);
          } else {
            closeAll();
          }
        });
        if (!response.done) {
          upstream.write(request);
        }
      }
    });
  }

  private serveFile(client: Socket, file: StaticFile | undefined): void {
    const body = file === undefined ? Buffer.from("not found") : Buffer.from(file.body);
    const status = file === undefined ? "404 Not Found" : "200 OK";
    const type = file?.type ?? "text/plain";
    client.write(
      `HTTP/1.1 ${status}\r\ncontent-type: ${type}\r\ncontent-length: ${body.length}\r\ncache-control: no-store\r\n\r\n`,
    );
    client.write(body);
  }
}
