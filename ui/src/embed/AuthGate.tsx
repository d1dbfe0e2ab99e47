// Who is signed in, asked once as the UI starts, and what happens when nobody is: the server's login (at
// once, or behind a Sign in button), a clear screen when the server is down, and a login that is refused
// later (any 401 of any call) leading back to the login instead of a page of failed loads.

import type { Me } from "@trueforge/sdk";
import { type ReactNode, useCallback, useEffect, useMemo, useState } from "react";
import type { AgentUIServer, AuthPort } from "../server/port.js";
import { describeError, isUnreachable } from "../state/errors.js";
import { type Account, AccountContext, isLoggedIn } from "./context.js";

/** What the UI does when nobody is signed in as it starts: go to the login at once, or offer it. */
export type LoginBehaviour = "redirect" | "prompt";

/** Why the login is offered rather than taken. */
type OutReason =
  /** Nobody is signed in (prompt mode). */
  | "start"
  /** The UI just sent the browser to the login and the server still does not know it: going again would loop. */
  | "loop"
  /** A call was refused with 401 while the UI was open. */
  | "expired"
  /** The user logged out. */
  | "signed-out";

type Gate =
  | { readonly state: "checking" }
  | { readonly state: "redirecting" }
  | { readonly state: "in"; readonly me: Me | null }
  | { readonly state: "out"; readonly reason: OutReason }
  | { readonly state: "down"; readonly message: string };

/**
 * When the UI last sent the browser to the login, in this tab. Only a time: nothing of the login itself is
 * kept in the browser's storage (the server's cookie is HttpOnly).
 */
const LOGIN_ATTEMPT_KEY = "trueforge.login-attempt";
/** A 401 this soon after sending the browser to the login means the login did not take: do not go again. */
const LOOP_WINDOW_MS = 60_000;

function storage(): Storage | null {
  try {
    return typeof sessionStorage === "undefined" ? null : sessionStorage;
  } catch {
    // Storage denied (a sandboxed frame, a privacy setting).
    return null;
  }
}

function recentLoginAttempt(): boolean {
  const stamp = Number(storage()?.getItem(LOGIN_ATTEMPT_KEY) ?? Number.NaN);
  return Number.isFinite(stamp) && Date.now() - stamp >= 0 && Date.now() - stamp < LOOP_WINDOW_MS;
}

function forgetLoginAttempt(): void {
  try {
    storage()?.removeItem(LOGIN_ATTEMPT_KEY);
  } catch {
    // Nothing to forget.
  }
}

/** Where the login brings the browser back to: this page. */
function here(): string {
  return `${window.location.pathname}${window.location.search}`;
}

/** Sends the browser to the server's login, noting when (see {@link recentLoginAttempt}). */
function goToLogin(auth: AuthPort): void {
  try {
    storage()?.setItem(LOGIN_ATTEMPT_KEY, String(Date.now()));
  } catch {
    // Without storage a failed login is not told from a first one; the user then acts on the screen.
  }
  window.location.assign(auth.loginUrl(here()));
}

const OUT_TEXT: Record<OutReason, { readonly message: string; readonly action: string }> = {
  start: { message: "Sign in to use the agents.", action: "Sign in" },
  loop: {
    message:
      "Signing in did not work: the server still does not recognise you. Try again, or ask your administrator.",
    action: "Sign in again",
  },
  expired: { message: "Your sign-in has expired.", action: "Sign in again" },
  "signed-out": { message: "You are signed out.", action: "Sign in" },
};

function SignInScreen({ auth, reason }: { readonly auth: AuthPort; readonly reason: OutReason }) {
  const text = OUT_TEXT[reason];
  return (
    <div className="tf-state tf-fill" role={reason === "loop" ? "alert" : undefined} data-testid="sign-in">
      <p>{text.message}</p>
      <a
        className="tf-button tf-button-primary"
        href={auth.loginUrl(here())}
        onClick={(event) => {
          if (event.metaKey || event.ctrlKey || event.shiftKey || event.button !== 0) {
            return;
          }
          event.preventDefault();
          goToLogin(auth);
        }}
      >
        {text.action}
      </a>
    </div>
  );
}

/**
 * Renders `children` once the server said who is signed in (or that it has no login). `login` says what a
 * start without a login does; a login refused later always shows a Sign in button (the page may hold
 * something the user wants to copy first).
 */
export function AuthGate({
  server,
  login,
  children,
}: {
  readonly server: AgentUIServer;
  readonly login: LoginBehaviour;
  readonly children: ReactNode;
}) {
  const [gate, setGate] = useState<Gate>({ state: "checking" });
  const [attempt, setAttempt] = useState(0);
  const auth = server.auth;

  // biome-ignore lint/correctness/useExhaustiveDependencies: `attempt` re-runs the check on Retry.
  useEffect(() => {
    if (auth === undefined) {
      setGate({ state: "in", me: null });
      return;
    }
    let live = true;
    setGate({ state: "checking" });
    auth.me().then(
      (me) => {
        if (!live) {
          return;
        }
        if (me !== null) {
          forgetLoginAttempt();
          setGate({ state: "in", me });
        } else if (recentLoginAttempt()) {
          setGate({ state: "out", reason: "loop" });
        } else if (login === "redirect") {
          setGate({ state: "redirecting" });
          goToLogin(auth);
        } else {
          setGate({ state: "out", reason: "start" });
        }
      },
      (error: unknown) => {
        if (!live) {
          return;
        }
        // A server without login routes (a custom port) is simply open; only a server that is down blocks.
        setGate(
          isUnreachable(error) ? { state: "down", message: describeError(error) } : { state: "in", me: null },
        );
      },
    );
    return () => {
      live = false;
    };
  }, [auth, login, attempt]);

  // A 401 of any call once in: the login is gone (expired, cleared, logged out in another tab).
  useEffect(() => {
    if (auth?.onUnauthorized === undefined) {
      return;
    }
    return auth.onUnauthorized(() =>
      setGate((current) =>
        current.state === "in" && isLoggedIn(current.me) ? { state: "out", reason: "expired" } : current,
      ),
    );
  }, [auth]);

  const logOut = useCallback(async () => {
    await auth?.logout();
    setGate({ state: "out", reason: "signed-out" });
  }, [auth]);
  const me = gate.state === "in" ? gate.me : null;
  const account: Account = useMemo(() => ({ me, logOut }), [me, logOut]);

  switch (gate.state) {
    case "checking":
      return (
        <div className="tf-state tf-fill" role="status">
          Connecting…
        </div>
      );
    case "redirecting":
      return (
        <div className="tf-state tf-fill" role="status">
          Signing in…
        </div>
      );
    case "down":
      return (
        <div className="tf-state tf-fill" role="alert">
          <p>{gate.message}</p>
          <button
            type="button"
            className="tf-button tf-button-primary"
            onClick={() => setAttempt((n) => n + 1)}
          >
            Retry
          </button>
        </div>
      );
    case "out":
      return auth ? <SignInScreen auth={auth} reason={gate.reason} /> : null;
    case "in":
      return <AccountContext.Provider value={account}>{children}</AccountContext.Provider>;
  }
}
