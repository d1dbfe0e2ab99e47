// The signed-in user's API keys: the list (name, first characters, role, when made), a new key (shown once,
// with Copy, and only ever held in this screen's state: never stored, never in an address) and Revoke after
// a confirmation. A server without login has no keys to offer, and says so.

import type { ApiKey, CreatedApiKey, Me } from "@trueforge/sdk";
import { useId, useState } from "react";
import { toast } from "sonner";
import { isLoggedIn, useAccount, useServer } from "../embed/context.js";
import type { ApiKeysPort } from "../server/port.js";
import { TextField } from "../settings/fields.js";
import { PanelForm, useFormSave } from "../settings/forms.js";
import { ConfirmDelete, ListRow, StatusChip } from "../settings/rows.js";
import { EmptyState, LoadedList } from "../settings/states.js";
import { useLoadFrom } from "../settings/useLoad.js";
import "../settings/screens.css";

const MAX_NAME_CHARS = 100;
const REVOKE = { label: "Revoke", busy: "Revoking…", done: "Revoked" } as const;

function nameError(name: string): string | null {
  const trimmed = name.trim();
  if (trimmed === "") {
    return "Name the key (what it is for).";
  }
  if ([...trimmed].length > MAX_NAME_CHARS) {
    return `At most ${MAX_NAME_CHARS} characters.`;
  }
  return null;
}

function when(iso: string): string {
  const date = new Date(iso);
  return Number.isNaN(date.getTime())
    ? iso
    : date.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

function roleLabel(role: ApiKey["role"]): string {
  return role === "admin" ? "Admin" : "User";
}

function NewKeyForm({
  port,
  onCreated,
  onCancel,
}: {
  readonly port: ApiKeysPort;
  readonly onCreated: (created: CreatedApiKey) => void;
  readonly onCancel: () => void;
}) {
  const [name, setName] = useState("");
  const save = useFormSave<CreatedApiKey>({
    what: "the API key",
    savedMessage: (created) => `Created ${created.name}.`,
    onSaved: onCreated,
  });
  const error = nameError(name);
  return (
    <PanelForm
      label="New API key"
      testId="api-key-form"
      errorTestId="api-key-form-error"
      save={save}
      submitLabel="Create key"
      onSubmit={() => void save.submit(error === null ? () => port.create(name.trim()) : null)}
      onCancel={onCancel}
    >
      <TextField
        label="Name"
        hint="What the key is for, to tell it apart later (a script, a machine)."
        value={name}
        onChange={setName}
        error={save.show(error)}
        required
        testId="api-key-name"
      />
    </PanelForm>
  );
}

/** The key just made: shown this once, with Copy, until the user says Done. */
function NewKey({ created, onDone }: { readonly created: CreatedApiKey; readonly onDone: () => void }) {
  const titleId = useId();
  const [copied, setCopied] = useState(false);
  const copy = () => {
    const clipboard = typeof navigator === "undefined" ? undefined : navigator.clipboard;
    if (!clipboard) {
      toast.error("Could not copy here: select the key and copy it yourself.");
      return;
    }
    clipboard.writeText(created.key).then(
      () => {
        setCopied(true);
        toast.success("Copied the key.");
      },
      () => toast.error("Could not copy: select the key and copy it yourself."),
    );
  };
  return (
    <section className="tf-panel tf-form" aria-labelledby={titleId} data-testid="new-api-key">
      <h3 className="tf-panel-title" id={titleId}>
        Your new key “{created.name}”
      </h3>
      <p className="tf-notice" role="status">
        Copy it now: it is shown only this once. The server keeps no copy it could show again; if it is lost,
        revoke it and make another.
      </p>
      <div className="tf-row">
        <input
          className="tf-mono tf-key-value"
          readOnly
          value={created.key}
          aria-label="The new API key"
          data-testid="new-api-key-value"
          autoComplete="off"
          spellCheck={false}
          onFocus={(event) => event.currentTarget.select()}
        />
        <button type="button" className="tf-button tf-button-primary" onClick={copy}>
          {copied ? "Copied" : "Copy"}
        </button>
      </div>
      <p className="tf-field-hint">
        Send it as <code>Authorization: Bearer &lt;key&gt;</code>; it acts as you, with the role you have now.
      </p>
      <div className="tf-row">
        <button type="button" className="tf-button" onClick={onDone}>
          Done
        </button>
      </div>
    </section>
  );
}

function ApiKeys({ port, me }: { readonly port: ApiKeysPort; readonly me: Me }) {
  const keys = useLoadFrom(port, (p) => p.list(), "your API keys");
  const [creating, setCreating] = useState(false);
  // The only place the new key lives: this state, cleared by Done, by revoking it, or by leaving the screen.
  const [created, setCreated] = useState<CreatedApiKey | null>(null);
  const list = keys.data ?? [];
  return (
    <div className="tf-page" data-testid="api-keys">
      <div className="tf-page-head">
        <h1>API keys</h1>
        <button
          type="button"
          className="tf-button"
          data-testid="api-key-new"
          disabled={creating}
          onClick={() => setCreating(true)}
        >
          New key
        </button>
      </div>
      <p className="tf-field-hint">
        A key lets a script or another program use this server's API as you ({me.email}), with your role, sent
        as <code>Authorization: Bearer &lt;key&gt;</code>. Revoke a key you no longer use, or one that may
        have leaked.
      </p>
      {creating ? (
        <NewKeyForm
          port={port}
          onCancel={() => setCreating(false)}
          onCreated={(result) => {
            const { key: _secret, ...listed } = result;
            keys.update((current) => [...current, listed]);
            setCreating(false);
            setCreated(result);
          }}
        />
      ) : null}
      {created ? <NewKey created={created} onDone={() => setCreated(null)} /> : null}
      <LoadedList
        loaded={keys}
        loadingLabel="Loading your API keys…"
        empty={
          list.length === 0 ? <EmptyState testId="api-keys-empty">You have no API key yet.</EmptyState> : null
        }
        testId="api-key-list"
        label="Your API keys"
      >
        {list.map((key) => (
          <ListRow
            key={key.id}
            testId="api-key-row"
            name={key.name}
            title={key.name}
            subtitle={
              <>
                <span className="tf-mono">{key.prefix}…</span> · made {when(key.created_at)}
              </>
            }
            badges={
              <StatusChip tone={key.role === "admin" ? "warn" : "muted"}>{roleLabel(key.role)}</StatusChip>
            }
            actions={
              <ConfirmDelete
                what={key.name}
                verb={REVOKE}
                testId="api-key-revoke"
                description={
                  <p>
                    Programs using the key <span className="tf-mono">{key.prefix}…</span> are refused from now
                    on. This cannot be undone.
                  </p>
                }
                remove={() => port.revoke(key.id)}
                onDeleted={() => {
                  keys.update((current) => current.filter((entry) => entry.id !== key.id));
                  setCreated((shown) => (shown?.id === key.id ? null : shown));
                }}
              />
            }
          />
        ))}
      </LoadedList>
    </div>
  );
}

export default function ApiKeysView() {
  const server = useServer();
  const { me } = useAccount();
  const port = server.apiKeys;
  if (port && isLoggedIn(me)) {
    return <ApiKeys port={port} me={me} />;
  }
  return (
    <div className="tf-page" data-testid="api-keys">
      <h1>API keys</h1>
      <EmptyState testId="api-keys-unavailable">
        {port === undefined
          ? "This server offers no API keys."
          : "This server has no login, so every request already acts as its local admin: there are no API keys to make. They come with login (an OpenID provider configured on the server)."}
      </EmptyState>
    </div>
  );
}
