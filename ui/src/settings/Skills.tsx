// Settings › Skills: the configured skills, the catalog's to add with one click, and a form for a skill
// from a GitHub or GitLab repository.

import type { ConfiguredSkill, SkillManifest } from "@trueforge/sdk";
import { useMemo, useRef, useState } from "react";
import { toast } from "sonner";
import { useServer } from "../embed/context.js";
import { describeError } from "../state/errors.js";
import {
  ConfirmDelete,
  EmptyState,
  ErrorState,
  FormError,
  ListRow,
  LoadingState,
  TextField,
  useReveal,
} from "./fields.js";
import { useLoad } from "./useLoad.js";
import {
  requiredError,
  resourceNameError,
  skillPathError,
  skillRefError,
  skillUrlError,
} from "./validation.js";

function source(manifest: SkillManifest): string {
  return `${manifest.url}${manifest.path ? ` › ${manifest.path}` : ""} @ ${manifest.ref}`;
}

type Editing = { readonly mode: "new" } | { readonly mode: "edit"; readonly name: string } | null;

export function SkillsSection() {
  const settings = useServer().settings;
  const loadCatalog = useMemo(() => (settings ? () => settings.skillCatalog() : null), [settings]);
  const loadConfigured = useMemo(() => (settings ? () => settings.skills() : null), [settings]);
  const catalog = useLoad(loadCatalog, "the skill catalog");
  const configured = useLoad(loadConfigured, "the skills");
  const [editing, setEditing] = useState<Editing>(null);
  const [adding, setAdding] = useState<string | null>(null);
  if (!settings) {
    return null;
  }
  const remove = settings.deleteSkill;
  const skills = configured.data ?? [];
  const names = new Set(skills.map((s) => s.name));
  const available = (catalog.data ?? []).filter((entry) => !names.has(entry.name));

  const saved = (result: ConfiguredSkill) => {
    configured.update((list) =>
      list.some((s) => s.name === result.name)
        ? list.map((s) => (s.name === result.name ? result : s))
        : [...list, result],
    );
    setEditing(null);
  };

  const add = async (entry: SkillManifest) => {
    setAdding(entry.name);
    try {
      saved(await settings.putSkill(entry));
      toast.success(`Added ${entry.name}.`);
    } catch (error) {
      toast.error(`Could not add ${entry.name}: ${describeError(error)}`);
    } finally {
      setAdding(null);
    }
  };

  return (
    <section className="tf-section" aria-labelledby="tf-skills-title" data-testid="settings-skills">
      <div className="tf-page-head">
        <h2 id="tf-skills-title">Skills</h2>
        <button
          type="button"
          className="tf-button"
          data-testid="skill-add-custom"
          onClick={() => setEditing({ mode: "new" })}
        >
          Add from Git
        </button>
      </div>
      <p className="tf-field-hint">
        Folders of instructions and files from a Git repository, which agents load when a task calls for them.
      </p>

      {editing?.mode === "new" ? (
        <SkillForm existing={null} onSaved={saved} onCancel={() => setEditing(null)} />
      ) : null}

      <h3 className="tf-subhead">Configured</h3>
      {configured.loading && !configured.data ? (
        <LoadingState label="Loading the skills…" />
      ) : configured.error && !configured.data ? (
        <ErrorState message={configured.error} onRetry={configured.reload} />
      ) : skills.length === 0 ? (
        <EmptyState testId="skills-empty">No skill yet.</EmptyState>
      ) : (
        <ul className="tf-list" data-testid="skill-list" aria-label="Configured skills">
          {skills.map((skill) => {
            const isEditing = editing?.mode === "edit" && editing.name === skill.name;
            return (
              <ListRow
                key={skill.name}
                testId="skill-row"
                name={skill.name}
                title={skill.name}
                subtitle={
                  <>
                    <span className="tf-block">{skill.manifest.description}</span>
                    <span className="tf-mono tf-break">{source(skill.manifest)}</span>
                  </>
                }
                actions={
                  <>
                    <button
                      type="button"
                      className="tf-button"
                      aria-label={`Edit ${skill.name}`}
                      aria-expanded={isEditing}
                      onClick={() => setEditing(isEditing ? null : { mode: "edit", name: skill.name })}
                    >
                      Edit
                    </button>
                    {remove ? (
                      <ConfirmDelete
                        what={skill.name}
                        description={<p>Agents that use it are refused until it is removed from them.</p>}
                        onConfirm={async () => {
                          try {
                            await remove.call(settings, skill.name);
                            configured.update((list) => list.filter((s) => s.name !== skill.name));
                            toast.success(`Deleted ${skill.name}.`);
                          } catch (error) {
                            toast.error(`Could not delete ${skill.name}: ${describeError(error)}`);
                            throw error;
                          }
                        }}
                      />
                    ) : null}
                  </>
                }
              >
                {isEditing ? (
                  <SkillForm existing={skill} onSaved={saved} onCancel={() => setEditing(null)} />
                ) : null}
              </ListRow>
            );
          })}
        </ul>
      )}

      <h3 className="tf-subhead">From the catalog</h3>
      {catalog.loading && !catalog.data ? (
        <LoadingState label="Loading the catalog…" />
      ) : catalog.error && !catalog.data ? (
        <ErrorState message={catalog.error} onRetry={catalog.reload} />
      ) : available.length === 0 ? (
        <EmptyState>Every skill of the catalog is configured.</EmptyState>
      ) : (
        <ul className="tf-list" data-testid="skill-catalog" aria-label="Skills to add">
          {available.map((entry) => (
            <ListRow
              key={entry.name}
              testId="skill-catalog-row"
              name={entry.name}
              title={entry.name}
              subtitle={entry.description}
              actions={
                <button
                  type="button"
                  className="tf-button"
                  aria-label={`Add ${entry.name}`}
                  disabled={adding !== null}
                  onClick={() => void add(entry)}
                >
                  {adding === entry.name ? "Adding…" : "Add"}
                </button>
              }
            />
          ))}
        </ul>
      )}
    </section>
  );
}

export function SkillForm({
  existing,
  onSaved,
  onCancel,
}: {
  readonly existing: ConfiguredSkill | null;
  readonly onSaved: (skill: ConfiguredSkill) => void;
  readonly onCancel: () => void;
}) {
  const settings = useServer().settings;
  const formRef = useRef<HTMLFormElement>(null);
  useReveal(formRef);
  const manifest = existing?.manifest;
  const [name, setName] = useState(existing?.name ?? "");
  const [description, setDescription] = useState(manifest?.description ?? "");
  const [url, setUrl] = useState(manifest?.url ?? "");
  const [path, setPath] = useState(manifest?.path ?? "");
  const [ref, setRef] = useState(manifest?.ref ?? "main");
  const [submitted, setSubmitted] = useState(false);
  const [saving, setSaving] = useState(false);
  const [serverError, setServerError] = useState<string | null>(null);
  const errors = {
    name: existing ? null : resourceNameError(name),
    description: requiredError(description),
    url: skillUrlError(url),
    path: skillPathError(path),
    ref: skillRefError(ref),
  };
  const invalid = Object.values(errors).some((error) => error !== null);
  const show = (error: string | null) => (submitted ? error : null);

  const save = async () => {
    setSubmitted(true);
    if (!settings || invalid) {
      return;
    }
    setSaving(true);
    setServerError(null);
    try {
      const result = await settings.putSkill({
        type: "git",
        name: existing?.name ?? name,
        description: description.trim(),
        url: url.trim(),
        ref: ref.trim(),
        ...(path.trim() ? { path: path.trim() } : {}),
      });
      toast.success(`Saved ${result.name}.`);
      onSaved(result);
    } catch (error) {
      const message = describeError(error);
      setServerError(message);
      toast.error(`Could not save the skill: ${message}`);
    } finally {
      setSaving(false);
    }
  };

  const title = existing ? `Edit ${existing.name}` : "Add a skill from Git";
  return (
    <form
      ref={formRef}
      className="tf-form tf-panel"
      data-testid="skill-form"
      aria-label={title}
      noValidate
      onSubmit={(event) => {
        event.preventDefault();
        void save();
      }}
    >
      <h3 className="tf-panel-title">{title}</h3>
      {existing ? null : (
        <TextField
          label="Name"
          value={name}
          onChange={setName}
          required
          monospace
          testId="skill-name"
          hint="Lowercase letters, digits, '.', '_' and '-'; a letter first."
          error={submitted || name !== "" ? errors.name : null}
        />
      )}
      <TextField
        label="Description"
        value={description}
        onChange={setDescription}
        required
        rows={2}
        testId="skill-description"
        hint="What the skill does; agents read it to decide when to load the skill."
        error={show(errors.description)}
      />
      <TextField
        label="Repository"
        type="url"
        value={url}
        onChange={setUrl}
        required
        monospace
        testId="skill-url"
        placeholder="https://github.com/owner/repository"
        error={show(errors.url)}
      />
      <div className="tf-grid-2">
        <TextField
          label="Folder"
          value={path}
          onChange={setPath}
          monospace
          testId="skill-path"
          placeholder="skills/my-skill"
          hint="The skill's folder in the repository; empty for its root."
          error={show(errors.path)}
        />
        <TextField
          label="Branch, tag or commit"
          value={ref}
          onChange={setRef}
          required
          monospace
          testId="skill-ref"
          error={show(errors.ref)}
        />
      </div>
      <div className="tf-form-actions">
        <FormError message={serverError} testId="skill-save-error" />
        <div className="tf-row tf-wrap">
          <button type="submit" className="tf-button tf-button-primary" disabled={saving} aria-busy={saving}>
            {saving ? "Saving…" : existing ? "Save" : "Add skill"}
          </button>
          <button type="button" className="tf-button" onClick={onCancel} disabled={saving}>
            Cancel
          </button>
        </div>
      </div>
    </form>
  );
}
