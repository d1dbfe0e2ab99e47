// The caller and the login flow. Logging in is a browser navigation, not a call: `loginUrl` builds the
// address to send the browser to.

import type { operations } from "../generated/schema.js";
import { type HttpClient, queryString, type RequestOptions } from "../http.js";
import type { Me } from "./types.js";

export type LoginCallbackQuery = operations["login_callback"]["parameters"]["query"];

export class Auth {
  readonly #http: HttpClient;

  constructor(http: HttpClient) {
    this.#http = http;
  }

  /** The caller (401 without valid credentials, except in local mode). */
  me(options?: RequestOptions): Promise<Me> {
    return this.#http.call("get", "/api/v1/auth/me", options);
  }

  /** The address that starts a login and brings the browser back to `returnTo` (a path of the app). */
  loginUrl(returnTo?: string): string {
    return this.#http.url(`/api/v1/auth/login${queryString({ return_to: returnTo })}`);
  }

  /** The login callback's address with its query (the identity provider's redirect target). */
  callbackUrl(query: LoginCallbackQuery): string {
    return this.#http.url(`/api/v1/auth/callback${queryString(query)}`);
  }

  /** Clears the login cookie. */
  async logout(options?: RequestOptions): Promise<void> {
    await this.#http.call("post", "/api/v1/auth/logout", options);
  }
}
