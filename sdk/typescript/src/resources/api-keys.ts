// The caller's API keys: credentials for scripts and other programs, sent as `Authorization: Bearer tfk_…`
// (pass one as the client's `token`). A key acts as the user who made it, with the role they had then. The
// key itself is in `create`'s answer only; the server keeps a hash, so a lost key cannot be shown again
// (revoke it and make another).

import type { HttpClient, RequestOptions } from "../http.js";
import type { ApiKey, CreatedApiKey } from "./types.js";

export class ApiKeys {
  readonly #http: HttpClient;

  constructor(http: HttpClient) {
    this.#http = http;
  }

  /** The caller's keys, oldest first; each with its `prefix` (the first characters), never the key. */
  async list(options?: RequestOptions): Promise<ApiKey[]> {
    return (await this.#http.call("get", "/api/v1/api-keys", options)).data;
  }

  /**
   * Makes a key named `name` (1 to 100 characters; trimmed) and answers it with the key in `key`, which is
   * not shown again. Refused with 409 by a server without login (every caller is already the local admin
   * there) or when the caller holds the most keys allowed, and with 403 when this client itself uses a key:
   * only a logged-in user makes keys.
   */
  async create(name: string, options?: RequestOptions): Promise<CreatedApiKey> {
    return (await this.#http.call("post", "/api/v1/api-keys", { ...options, body: { name } })).data;
  }

  /** Revokes a key by its `id`: requests made with it get 401 from now on (404 when the caller has no such key). */
  async revoke(keyId: string, options?: RequestOptions): Promise<void> {
    await this.#http.call("delete", "/api/v1/api-keys/{key_id}", { ...options, path: { key_id: keyId } });
  }
}
