// The model of a new free chat, from the models the tenant configured; the last choice is remembered.

import type { AvailableModel } from "@trueforge/sdk";
import { useEffect, useState } from "react";
import { toast } from "sonner";
import { useServer } from "../embed/context.js";
import { describeError } from "../state/errors.js";

const KEY = "trueforge.model";

function remembered(): string | null {
  try {
    return globalThis.localStorage?.getItem(KEY) ?? null;
  } catch {
    return null;
  }
}

/** The tenant's models (read once) and the chosen one: the remembered choice while it exists, else the first. */
export function useDefaultModel(): [string | null, (model: string) => void, AvailableModel[]] {
  const server = useServer();
  const [model, setModel] = useState<string | null>(remembered);
  const [models, setModels] = useState<AvailableModel[]>([]);
  useEffect(() => {
    let live = true;
    server.agents
      ?.models()
      .then((models) => {
        if (!live) {
          return;
        }
        setModels(models);
        setModel((current) =>
          current && models.some((m) => m.name === current) ? current : (models[0]?.name ?? null),
        );
      })
      .catch((error: unknown) => toast.error(`Could not list the models: ${describeError(error)}`));
    return () => {
      live = false;
    };
  }, [server]);
  const choose = (next: string) => {
    setModel(next);
    try {
      globalThis.localStorage?.setItem(KEY, next);
    } catch {
      // Not remembered: fine.
    }
  };
  return [model, choose, models];
}

export function ModelPicker({
  value,
  models,
  onChange,
}: {
  readonly value: string | null;
  readonly models: readonly AvailableModel[];
  readonly onChange: (model: string) => void;
}) {
  if (models.length === 0) {
    return null;
  }
  return (
    <label className="tf-model-picker">
      <span className="tf-visually-hidden">Model</span>
      <select value={value ?? ""} onChange={(event) => onChange(event.target.value)}>
        {models.map((model) => (
          <option key={model.name} value={model.name}>
            {model.name}
          </option>
        ))}
      </select>
    </label>
  );
}
