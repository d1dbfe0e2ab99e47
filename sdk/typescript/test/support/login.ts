// A server with login: hosted mode (a fresh database on the test run's Postgres, its Redis) and a real OpenID
// provider, the certified `oidc-provider` from npm run by the testkit's `crates/testkit/oidc/provider.mjs`.
// What this needs comes from `scripts/test.sh`, as for the server's own login tests:
//
//   TRUEFORGE_TEST_OIDC_DIR       where `oidc-provider` is installed (test.sh installs it)
//   TRUEFORGE_TEST_POSTGRES_URL   a Postgres the tests may create databases on (test.sh starts one)
//   TRUEFORGE_TEST_REDIS_URL      a Redis (test.sh starts one)
//
// Without them the tests that log in fail and say what is missing; they never skip.

import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort, type RunningServer, start, startServer, stopChild, waitUntil } from "./server.js";

export const CLIENT_ID = "trueforge-test";
const CLIENT_SECRET = "test-client-secret-123456";

/** The claims of each account the provider knows, beyond `sub` and `email`. */
export type Accounts = Readonly<Record<string, Readonly<Record<string, unknown>>>>;

/** alice is an admin (the `admin` group), bob a user. */
export const DEFAULT_ACCOUNTS: Accounts = {
  alice: { groups: ["admin", "staff"] },
  bob: { groups: ["staff"] },
};

export interface LoginServer extends RunningServer {
  /** The OpenID provider's issuer (its base URL). */
  readonly issuer: string;
  /**
   * An ID token for `account` as the provider issues them, valid for ten minutes: signed with the provider's
   * key, not obtained by logging in (for tests of what a token may do).
   */
  tokenFor(account: string): Promise<string>;
  /**
   * Logs `account` in through the provider's form, starting at `loginUrl` (the server's `/auth/login`), as a
   * browser would, cookies and all: the `id_token` cookie the server set, and the address the flow ended at.
   */
  logIn(loginUrl: string, account: string): Promise<{ idToken: string; landed: string }>;
}

function required(variable: string, what: string): string {
  const value = process.env[variable];
  if (!value) {
    throw new Error(
      `${variable} is not set: the login tests need ${what}; run them through scripts/test.sh, which provides it`,
    );
  }
  return value;
}

/** `crates/testkit/oidc/provider.mjs`, found from this file up (it runs from the SDK's build and the UI's). */
function providerScript(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, "crates", "testkit", "oidc", "provider.mjs");
    if (existsSync(candidate)) {
      return candidate;
    }
    const parent = dirname(dir);
    if (parent === dir) {
      throw new Error("crates/testkit/oidc/provider.mjs not found above the test build");
    }
    dir = parent;
  }
}

/** A database named `<prefix>_<random hex>` on the test run's Postgres, made with `psql`; its URL. */
export async function freshDatabase(prefix: string): Promise<string> {
  const base = required("TRUEFORGE_TEST_POSTGRES_URL", "a Postgres to run hosted mode on");
  const name = `${prefix}_${randomBytes(16).toString("hex")}`;
  await new Promise<void>((done, fail) => {
    const psql = spawn("psql", [base, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-c", `CREATE DATABASE ${name}`], {
      stdio: ["ignore", "ignore", "pipe"],
    });
    let errors = "";
    psql.stderr.on("data", (chunk: Buffer) => {
      errors += chunk.toString();
    });
    psql.on("error", (error) =>
      fail(new Error(`psql (installed with Postgres) did not run: ${error.message}`)),
    );
    psql.on("exit", (code) =>
      code === 0 ? done() : fail(new Error(`CREATE DATABASE ${name} failed (${code}): ${errors}`)),
    );
  });
  const server = base.slice(0, base.lastIndexOf("/"));
  return `${server}/${name}`;
}

/** Where `oidc-provider` is installed. */
function providerDir(): string {
  const dir = required("TRUEFORGE_TEST_OIDC_DIR", "the oidc-provider package");
  if (!existsSync(join(dir, "node_modules", "oidc-provider"))) {
    throw new Error(
      `TRUEFORGE_TEST_OIDC_DIR=${dir} has no node_modules/oidc-provider: run scripts/test.sh, which installs it`,
    );
  }
  return dir;
}

/** The environment of `node provider.mjs <mode>`. */
function providerEnv(dir: string, port: number, redirectUri: string, accounts: Accounts, keyDir: string) {
  return {
    PATH: process.env.PATH ?? "",
    OIDC_PROVIDER_DIR: dir,
    OIDC_PORT: String(port),
    OIDC_CLIENT_ID: CLIENT_ID,
    OIDC_CLIENT_SECRET: CLIENT_SECRET,
    OIDC_REDIRECT_URI: redirectUri,
    OIDC_ACCOUNTS: JSON.stringify(accounts),
    OIDC_KEY_DIR: keyDir,
    OIDC_KIDS: "k1",
  };
}

async function mint(env: NodeJS.ProcessEnv, claims: Record<string, unknown>): Promise<string> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [providerScript(), "mint"], {
      env: { ...env, OIDC_MINT_CLAIMS: JSON.stringify(claims) },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let errors = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      errors += chunk.toString();
    });
    child.on("error", fail);
    child.on("exit", (code) =>
      code === 0 ? done(out.trim()) : fail(new Error(`minting failed: ${errors}`)),
    );
  });
}

/** Cookies by origin, as a browser keeps them (paths and expiry beyond deletion ignored). */
class CookieJar {
  readonly #jars = new Map<string, Map<string, string>>();

  header(url: string): string | undefined {
    const jar = this.#jars.get(new URL(url).origin);
    return jar && jar.size > 0 ? [...jar].map(([name, value]) => `${name}=${value}`).join("; ") : undefined;
  }

  store(url: string, response: Response): void {
    const origin = new URL(url).origin;
    let jar = this.#jars.get(origin);
    if (jar === undefined) {
      jar = new Map();
      this.#jars.set(origin, jar);
    }
    for (const line of response.headers.getSetCookie()) {
      const [pair = "", ...attributes] = line.split(";");
      const at = pair.indexOf("=");
      const name = pair.slice(0, at).trim();
      const value = pair.slice(at + 1).trim();
      const expired = attributes.some((attribute) => /^\s*max-age=0\s*$/i.test(attribute));
      if (value === "" || expired) {
        jar.delete(name);
      } else {
        jar.set(name, value);
      }
    }
  }

  get(url: string, name: string): string | undefined {
    return this.#jars.get(new URL(url).origin)?.get(name);
  }
}

/** One request without following redirects, with the jar's cookies: the answer and its redirect target. */
async function step(
  jar: CookieJar,
  url: string,
  init: { method?: string; form?: Record<string, string> } = {},
): Promise<{ response: Response; body: string; next: string | null }> {
  const headers: Record<string, string> = {};
  const cookie = jar.header(url);
  if (cookie) {
    headers.cookie = cookie;
  }
  let body: string | null = null;
  if (init.form) {
    headers["content-type"] = "application/x-www-form-urlencoded";
    body = new URLSearchParams(init.form).toString();
  }
  const response = await fetch(url, { method: init.method ?? "GET", headers, body, redirect: "manual" });
  jar.store(url, response);
  const location = response.headers.get("location");
  const next =
    response.status >= 300 && response.status < 400 && location ? new URL(location, url).href : null;
  return { response, body: await response.text(), next };
}

/** Starts the provider and a server in hosted mode that logs in with it; the fake model is `fake/fake-model`. */
export async function startServerWithLogin(
  options: { accounts?: Accounts; env?: Record<string, string> } = {},
): Promise<LoginServer> {
  const accounts = options.accounts ?? DEFAULT_ACCOUNTS;
  const oidcDir = providerDir();
  const redisUrl = required("TRUEFORGE_TEST_REDIS_URL", "a Redis to run hosted mode on");
  const databaseUrl = await freshDatabase("sdk_login");
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const providerPort = await freePort();
  const issuer = `http://127.0.0.1:${providerPort}`;
  const keyDir = await mkdtemp(join(tmpdir(), "trueforge-oidc-keys-"));
  const env = providerEnv(oidcDir, providerPort, `${baseUrl}/api/v1/auth/callback`, accounts, keyDir);
  const provider = start(process.execPath, [providerScript(), "serve"], env);
  const stopProvider = async () => {
    await stopChild(provider.child);
    await rm(keyDir, { recursive: true, force: true });
  };
  const tokenFor = async (account: string) => {
    const claims = accounts[account];
    if (claims === undefined) {
      throw new Error(`no account ${account} at the provider`);
    }
    const now = Math.floor(Date.now() / 1000);
    return mint(env, {
      ...claims,
      iss: issuer,
      aud: CLIENT_ID,
      sub: account,
      email: `${account}@example.com`,
      iat: now,
      exp: now + 600,
    });
  };
  let server: RunningServer;
  try {
    await waitUntil(
      async () => provider.log().includes("ready "),
      "the OpenID provider",
      provider.child,
      provider.log,
    );
    const admin = Object.keys(accounts).find((name) => {
      const groups = accounts[name]?.groups;
      return Array.isArray(groups) ? groups.includes("admin") : groups === "admin";
    });
    server = await startServer(
      {
        STANDALONE: "false",
        DATABASE_URL: databaseUrl,
        REDIS_URL: redisUrl,
        TRUEFORGE_SECRET_KEY: randomBytes(32).toString("base64"),
        PUBLIC_BASE_URL: baseUrl,
        OIDC_ISSUER_URL: issuer,
        OIDC_CLIENT_ID: CLIENT_ID,
        OIDC_CLIENT_SECRET: CLIENT_SECRET,
        OIDC_USER_REFERENCE_CLAIM: "sub",
        OIDC_USER_ROLE_CLAIM: "groups",
        OIDC_ADMIN_ROLE_VALUE: "admin",
        ...options.env,
      },
      { port, ...(admin ? { adminToken: await tokenFor(admin) } : {}) },
    );
  } catch (error) {
    await stopProvider();
    throw error;
  }
  return {
    ...server,
    issuer,
    tokenFor,
    async logIn(loginUrl, account) {
      const jar = new CookieJar();
      let url = loginUrl;
      let answer = await step(jar, url);
      for (let hops = 0; answer.next !== null; hops++) {
        if (hops > 10) {
          throw new Error(`too many redirects from ${loginUrl}`);
        }
        url = answer.next;
        answer = await step(jar, url);
      }
      const action = /action="([^"]+)"/.exec(answer.body)?.[1];
      if (answer.response.status !== 200 || action === undefined) {
        throw new Error(
          `expected the provider's login form at ${url}, got ${answer.response.status}: ${answer.body}`,
        );
      }
      url = new URL(action, url).href;
      answer = await step(jar, url, {
        method: "POST",
        form: { prompt: "login", login: account, password: "anything" },
      });
      for (let hops = 0; answer.next !== null; hops++) {
        if (hops > 10) {
          throw new Error("too many redirects after the login form");
        }
        url = answer.next;
        // The last hop is the app's own page: where the login flow sends the browser, not part of it.
        if (new URL(url).origin === baseUrl && !new URL(url).pathname.startsWith("/api/")) {
          break;
        }
        answer = await step(jar, url);
      }
      const idToken = jar.get(baseUrl, "id_token");
      if (idToken === undefined) {
        throw new Error(`the login of ${account} ended at ${url} without an id_token cookie`);
      }
      return { idToken, landed: url };
    },
    async stop() {
      await server.stop();
      await stopProvider();
    },
  };
}
