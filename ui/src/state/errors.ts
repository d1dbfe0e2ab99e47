// What a failed call means to the person using the UI: one sentence, never a stack trace.

import {
  TrueForgeAbortError,
  TrueForgeApiError,
  TrueForgeAuthenticationError,
  TrueForgeConnectionError,
  TrueForgeProtocolError,
  TrueForgeTimeoutError,
} from "@trueforge/sdk";

export function describeError(error: unknown): string {
  if (error instanceof TrueForgeApiError) {
    const detail = error.error?.message;
    switch (error.status) {
      case 401:
        return "You are not signed in (or your sign-in expired).";
      case 403:
        return detail ?? "You are not allowed to do this.";
      case 404:
        return detail ?? "It no longer exists.";
      case 413:
        return detail ?? "The request is too large for the server.";
      case 429:
        return "The server is busy; try again in a moment.";
      default:
        return detail ?? `The server answered ${error.status}.`;
    }
  }
  if (error instanceof TrueForgeConnectionError) {
    return "The server cannot be reached. Is it running?";
  }
  if (error instanceof TrueForgeTimeoutError) {
    return "The server took too long to answer.";
  }
  if (error instanceof TrueForgeProtocolError) {
    return `The server's answer could not be read: ${error.message}`;
  }
  if (error instanceof TrueForgeAbortError) {
    return "Stopped.";
  }
  return error instanceof Error ? error.message : String(error);
}

/** Whether the failure means "sign in first". */
export function isUnauthorized(error: unknown): boolean {
  return error instanceof TrueForgeAuthenticationError;
}

/** Whether the failure is a lost or refused connection (the server is down). */
export function isUnreachable(error: unknown): boolean {
  return error instanceof TrueForgeConnectionError || error instanceof TrueForgeTimeoutError;
}

export function isAbort(error: unknown): boolean {
  return (
    error instanceof TrueForgeAbortError || (error instanceof DOMException && error.name === "AbortError")
  );
}
