// Settings › Skills: the configured skills, the catalog's to add with one click, and a form for a skill
// from a GitHub or GitLab repository.

import type { ConfiguredSkill, SkillManifest } from "@trueforge/sdk";
import { useState } from "react";
import { toast } from "sonner";
import { useServer } from "../embed/context.js";
import { DescriptionField, NameField, TextField } from "./fields.js";
import { type EditFormProps, PanelForm, useFormSave } from "./forms.js";
import { EditAndDelete, ListRow, RowButton, useRowAction } from "./rows.js";
import { Section } from "./section.js";
import { EmptyState, LoadedList } from "./states.js";
import { useNamedSettings } from "./useNamedSettings.js";
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
  const skills = useNamedSettings(
    (port) => port.skillCatalog(),
    (port) => port.skills(),
    { catalog: "the skill catalog", configured: "the skills" },
  );
  const [editing, setEditing] = useState<Editing>(null);
  const adding = useRowAction();
  if (!settings) {
    return null;
  }
  const remove = settings.deleteSkill;

  const saved = (result: ConfiguredSkill) => {
    skills.put(result);
    setEditing(null);
  };

  const add = (entry: SkillManifest) =>
    adding.run(entry.name, `Could not add ${entry.name}`, async () => {
      saved(await settings.putSkill(entry));
      toast.success(`Added ${entry.name}.`);
    });

  return (
    <Section
      titleId="tf-skills-title"
      title="Skills"
      testId="settings-skills"
      action={
        <button
          type="button"
          className="tf-button"
          data-testid="skill-add-custom"
          onClick={() => setEditing({ mode: "new" })}
        >
          Add from Git
        </button>
      }
      intro="Folders of instructions and files from a Git repository, which agents load when a task calls for them."
    >
      {editing?.mode === "new" ? (
        <SkillForm existing={null} onSaved={saved} onCancel={() => setEditing(null)} />
      ) : null}

      <LoadedList
        heading="Configured"
        loaded={skills.configured}
        loadingLabel="Loading the skills…"
        empty={skills.list.length === 0 ? <EmptyState testId="skills-empty">No skill yet.</EmptyState> : null}
        testId="skill-list"
        label="Configured skills"
      >
        {skills.list.map((skill) => {
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
                <EditAndDelete
                  what={skill.name}
                  editing={isEditing}
                  onToggleEdit={() => setEditing(isEditing ? null : { mode: "edit", name: skill.name })}
                  remove={remove && (() => remove.call(settings, skill.name))}
                  onDeleted={() => skills.drop(skill.name)}
                  description={<p>Agents that use it are refused until it is removed from them.</p>}
                />
              }
            >
              {isEditing ? (
                <SkillForm existing={skill} onSaved={saved} onCancel={() => setEditing(null)} />
              ) : null}
            </ListRow>
          );
        })}
      </LoadedList>

      <LoadedList
        heading="From the catalog"
        loaded={skills.catalog}
        loadingLabel="Loading the catalog…"
        empty={
          skills.available.length === 0 ? (
            <EmptyState>Every skill of the catalog is configured.</EmptyState>
          ) : null
        }
        testId="skill-catalog"
        label="Skills to add"
      >
        {skills.available.map((entry) => (
          <ListRow
            key={entry.name}
            testId="skill-catalog-row"
            name={entry.name}
            title={entry.name}
            subtitle={entry.description}
            actions={
              <RowButton
                label={`Add ${entry.name}`}
                disabled={adding.busy !== null}
                onClick={() => void add(entry)}
              >
                {adding.busy === entry.name ? "Adding…" : "Add"}
              </RowButton>
            }
          />
        ))}
      </LoadedList>
    </Section>
  );
}

export function SkillForm({ existing, onSaved, onCancel }: EditFormProps<ConfiguredSkill>) {
  const settings = useServer().settings;
  const manifest = existing?.manifest;
  const [name, setName] = useState(existing?.name ?? "");
  const [description, setDescription] = useState(manifest?.description ?? "");
  const [url, setUrl] = useState(manifest?.url ?? "");
  const [path, setPath] = useState(manifest?.path ?? "");
  const [ref, setRef] = useState(manifest?.ref ?? "main");
  const form = useFormSave({ what: "the skill", savedMessage: (skill) => `Saved ${skill.name}.`, onSaved });
  const { submitted, show } = form;
  const errors = {
    name: existing ? null : resourceNameError(name),
    description: requiredError(description),
    url: skillUrlError(url),
    path: skillPathError(path),
    ref: skillRefError(ref),
  };
  const invalid = Object.values(errors).some((error) => error !== null);

  const save = () =>
    form.submit(
      settings && !invalid
        ? () =>
            settings.putSkill({
              type: "git",
              name: existing?.name ?? name,
              description: description.trim(),
              url: url.trim(),
              ref: ref.trim(),
              ...(path.trim() ? { path: path.trim() } : {}),
            })
        : null,
    );

  return (
    <PanelForm
      label={existing ? `Edit ${existing.name}` : "Add a skill from Git"}
      testId="skill-form"
      errorTestId="skill-save-error"
      save={form}
      submitLabel={existing ? "Save" : "Add skill"}
      onSubmit={() => void save()}
      onCancel={onCancel}
    >
      {existing ? null : (
        <NameField
          value={name}
          onChange={setName}
          error={errors.name}
          submitted={submitted}
          testId="skill-name"
          hint="Lowercase letters, digits, '.', '_' and '-'; a letter first."
        />
      )}
      <DescriptionField
        value={description}
        onChange={setDescription}
        error={show(errors.description)}
        testId="skill-description"
        hint="What the skill does; agents read it to decide when to load the skill."
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
    </PanelForm>
  );
}
