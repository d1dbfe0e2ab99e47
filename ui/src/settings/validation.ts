// The server's value rules the forms check before sending, with the same patterns as the API document, so
// most mistakes are shown next to their field instead of coming back as a 400.

/** `ResourceName`: 2 to 64 characters of a-z, 0-9, `.`, `_`, `-`; a letter first, a letter or digit last. */
export const RESOURCE_NAME = /^[a-z](?:[a-z0-9._-]{0,62}[a-z0-9])$/;

/** Why `name` is not a valid resource name, or `null` when it is. */
export function resourceNameError(name: string): string | null {
  if (name === "") {
    return "Required.";
  }
  if (name.length < 2 || name.length > 64) {
    return "Use 2 to 64 characters.";
  }
  if (!/^[a-z]/.test(name)) {
    return "Start with a lowercase letter.";
  }
  if (!/[a-z0-9]$/.test(name)) {
    return "End with a lowercase letter or a digit.";
  }
  if (!RESOURCE_NAME.test(name)) {
    return "Use only lowercase letters, digits, '.', '_' and '-'.";
  }
  return null;
}

/** A resource name made from free text (a model id, a title): lowercased, other characters as `-`. */
export function suggestName(text: string): string {
  const slug = text
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, "-")
    .replace(/^[^a-z]+/, "")
    .slice(0, 64)
    .replace(/[^a-z0-9]+$/, "");
  return slug;
}

/** Why `value` is not an absolute http(s) URL, or `null`. */
export function urlError(value: string, required = true): string | null {
  if (value.trim() === "") {
    return required ? "Required." : null;
  }
  try {
    const url = new URL(value.trim());
    return url.protocol === "http:" || url.protocol === "https:" ? null : "Use an http or https address.";
  } catch {
    return "Not a valid address (e.g. https://example.com/mcp).";
  }
}

export function requiredError(value: string): string | null {
  return value.trim() === "" ? "Required." : null;
}

/** `SkillManifest.url`: an HTTPS GitHub or GitLab repository. */
const SKILL_URL =
  /^https:\/\/(github\.com\/[A-Za-z0-9._-]+\/[A-Za-z0-9._-]+|gitlab\.com\/[A-Za-z0-9._-]+(?:\/[A-Za-z0-9._-]+)+)(\/|\.git)?$/;
/** `SkillManifest.path`. */
const SKILL_PATH = /^(?!\/*$)(?!(?:.*\/)?\.\.?(?:\/|$))[A-Za-z0-9._\-/]+$/;
/** `SkillManifest.ref`. */
const SKILL_REF = /^(?!\/*$)(?!(?:.*\/)?\.\.(?:\/|$))[A-Za-z0-9._\-/]+$/;

/** `message` when `value` (trimmed) does not match `pattern`; an empty value is `Required.` or, optional, fine. */
function patternError(value: string, pattern: RegExp, message: string, required: boolean): string | null {
  if (value.trim() === "") {
    return required ? "Required." : null;
  }
  return pattern.test(value.trim()) ? null : message;
}

export function skillUrlError(value: string): string | null {
  return patternError(
    value,
    SKILL_URL,
    "Use the HTTPS address of a GitHub or GitLab repository (https://github.com/owner/repo).",
    true,
  );
}

export function skillPathError(value: string): string | null {
  return patternError(
    value,
    SKILL_PATH,
    "Letters, digits, '.', '_', '-' and '/', without '.' or '..' segments.",
    false,
  );
}

export function skillRefError(value: string): string | null {
  return patternError(
    value,
    SKILL_REF,
    "Letters, digits, '.', '_', '-' and '/', without '..' segments.",
    true,
  );
}

/** Environment variable names of a stdio MCP server. */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** A whole number of at least `min`, or the reason it is not. */
export function integerError(value: string, min: number): string | null {
  if (value.trim() === "") {
    return "Required.";
  }
  const number = Number(value);
  if (!Number.isInteger(number)) {
    return "Use a whole number.";
  }
  return number < min ? `Use ${min} or more.` : null;
}

/** The marker the server puts in place of a secret in its answers; sent back, it keeps the stored secret. */
export const REDACTED_MARKER = "***REDACTED***";

/** How a stored secret is described next to its empty field: its last characters when the server shows them. */
export function storedSecretHint(value: string | undefined): string {
  if (value === undefined || value === "") {
    return "";
  }
  const tail = value.startsWith(`${REDACTED_MARKER}-`) ? value.slice(REDACTED_MARKER.length + 1) : "";
  return tail ? `A key ending in “${tail}” is stored.` : "A key is stored.";
}
