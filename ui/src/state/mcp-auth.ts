// MCP authorization in a popup: the server's authorization URL opens in a small window, the authorization
// server sends it back to this app's `?screenType=mcp-auth` page, which tells the opener on a
// BroadcastChannel and closes. A host on another origin does not hear the channel: when the popup closes,
// the authorization status is asked again instead.

import type { McpAuthPort } from "../server/port.js";

export const MCP_AUTH_CHANNEL = "trueforge-mcp-auth";
export const MCP_AUTH_SCREEN = "mcp-auth";

interface PopupMessage {
  readonly popupUid: string;
  readonly isSuccess: boolean;
  /** Why it failed, as the server's callback reported it (`access_denied`, …). */
  readonly reason?: string;
}

/** How an authorization in the popup ended. */
export interface PopupOutcome {
  readonly authorized: boolean;
  readonly reason?: string;
}

function randomId(): string {
  return globalThis.crypto?.randomUUID?.() ?? `${Date.now()}-${Math.random().toString(36).slice(2)}`;
}

/** Resolves once `server` is authorized, or the user gave up, or it was refused (with the reason when known). */
export async function authorizeInPopup(
  auth: McpAuthPort | undefined,
  server: string,
  fallbackUrl: string,
): Promise<PopupOutcome> {
  const popupUid = randomId();
  // Opened at once, inside the click, so no popup blocker refuses it; pointed at the URL when it is known.
  const popup = window.open("about:blank", `trueforge-mcp-${popupUid}`, "popup,width=520,height=700");
  let url = fallbackUrl;
  if (auth !== undefined) {
    const returnTo = `${window.location.pathname}?screenType=${MCP_AUTH_SCREEN}&pUid=${encodeURIComponent(popupUid)}`;
    try {
      const status = await auth.authorize(server, returnTo);
      if (status.status !== "auth_required") {
        popup?.close();
        return { authorized: true };
      }
      url = status.authorization_url ?? fallbackUrl;
    } catch (error) {
      popup?.close();
      throw error;
    }
  }
  if (popup === null) {
    // Popups refused: a new tab; the user comes back and presses Continue.
    window.open(url, "_blank", "noopener");
    return {
      authorized: false,
      reason: "the browser blocked the popup; authorize in the new tab, then Continue",
    };
  }
  popup.location.href = url;
  return new Promise<PopupOutcome>((resolve) => {
    const channel = typeof BroadcastChannel === "undefined" ? null : new BroadcastChannel(MCP_AUTH_CHANNEL);
    let settled = false;
    const finish = (value: PopupOutcome) => {
      if (settled) {
        return;
      }
      settled = true;
      clearInterval(timer);
      channel?.close();
      resolve(value);
    };
    channel?.addEventListener("message", (event: MessageEvent<PopupMessage>) => {
      if (event.data?.popupUid === popupUid) {
        const reason = event.data.reason;
        finish(
          reason
            ? { authorized: event.data.isSuccess === true, reason }
            : { authorized: event.data.isSuccess === true },
        );
      }
    });
    const timer = setInterval(async () => {
      if (!popup.closed) {
        return;
      }
      clearInterval(timer);
      if (auth === undefined) {
        finish({ authorized: false });
        return;
      }
      try {
        const status = await auth.authorize(server, window.location.pathname);
        finish({ authorized: status.status !== "auth_required" });
      } catch {
        finish({ authorized: false });
      }
    }, 500);
  });
}

/** The popup's side: runs on the page the authorization server returned to. `true` when it was that page. */
export function completeAuthorizationPopup(): boolean {
  const query = new URLSearchParams(window.location.search);
  if (query.get("screenType") !== MCP_AUTH_SCREEN) {
    return false;
  }
  const reason = query.get("reason");
  const message: PopupMessage = {
    popupUid: query.get("pUid") ?? "",
    isSuccess: query.get("isSuccess") === "true",
    ...(reason ? { reason } : {}),
  };
  if (typeof BroadcastChannel !== "undefined") {
    const channel = new BroadcastChannel(MCP_AUTH_CHANNEL);
    channel.postMessage(message);
    channel.close();
  }
  setTimeout(() => window.close(), 1_500);
  return true;
}
