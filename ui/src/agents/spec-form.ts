// Between an agent spec and the builder's form: what the form edits, read from a spec and written back into
// it, keeping every part of the spec the form does not show (seed messages, response format, model
// parameters, context management, disabled and preloaded tool lists) exactly as it was.

import type { AgentSpec, components } from "@trueforge/sdk";

type Schemas = components["schemas"];
export type McpServerRef = Schemas["MCPServer"];
export type ReasoningEffort = Schemas["ReasoningEffort"];
export type RuntimeConfig = Schemas["RuntimeConfig"];

export const ALL = "@all";
export const READ_ONLY = "@read-only";
export const WRITE = "@write";
export const DESTRUCTIVE = "@destructive";

/** How the agent uses one MCP server: which tools, which ask first. */
export interface McpChoice {
  readonly name: string;
  /** `enable_tools: ["@all"]` (the default). */
  readonly allTools: boolean;
  /** With `allTools` off: every tool annotated read-only (`@read-only`). */
  readonly readOnlyTools: boolean;
  /** With `allTools` off: these tools by name. */
  readonly tools: readonly string[];
  /** `require_approval_for_tools: ["@all"]`. */
  readonly approveAll: boolean;
  /** With `approveAll` off: tools that write (`@write`), destructive ones (`@destructive`), these names. */
  readonly approveWrite: boolean;
  readonly approveDestructive: boolean;
  readonly approvalTools: readonly string[];
  /** The tools' descriptions go to the model from the start instead of being looked up when needed. */
  readonly preload: boolean;
  /** The entry's other fields, as loaded. */
  readonly rest: Omit<McpServerRef, "name" | "enable_tools" | "require_approval_for_tools" | "preload">;
}

export function newMcpChoice(name: string): McpChoice {
  return {
    name,
    allTools: true,
    readOnlyTools: false,
    tools: [],
    approveAll: false,
    approveWrite: true,
    approveDestructive: true,
    approvalTools: [],
    preload: false,
    rest: {},
  };
}

const isTag = (selector: string) => selector.startsWith("@");

export function mcpChoiceFromSpec(ref: McpServerRef): McpChoice {
  const { name, enable_tools, require_approval_for_tools, preload, ...rest } = ref;
  // Absent lists mean the server's defaults: every tool, approval for those that write or destroy.
  const enable = enable_tools ?? [ALL];
  const approval = require_approval_for_tools ?? [WRITE, DESTRUCTIVE];
  return {
    name,
    allTools: enable.includes(ALL),
    readOnlyTools: enable.includes(READ_ONLY),
    tools: enable.filter((selector) => !isTag(selector)),
    approveAll: approval.includes(ALL),
    approveWrite: approval.includes(WRITE),
    approveDestructive: approval.includes(DESTRUCTIVE),
    approvalTools: approval.filter((selector) => !isTag(selector)),
    preload: preload ?? false,
    rest,
  };
}

export function mcpChoiceToSpec(choice: McpChoice): McpServerRef {
  const enable_tools = choice.allTools
    ? [ALL]
    : [...(choice.readOnlyTools ? [READ_ONLY] : []), ...choice.tools];
  const require_approval_for_tools = choice.approveAll
    ? [ALL]
    : [
        ...(choice.approveWrite ? [WRITE] : []),
        ...(choice.approveDestructive ? [DESTRUCTIVE] : []),
        ...choice.approvalTools,
      ];
  return {
    name: choice.name,
    ...choice.rest,
    enable_tools,
    require_approval_for_tools,
    ...(choice.preload ? { preload: true } : {}),
  };
}

/** What the builder's form holds. */
export interface AgentForm {
  readonly name: string;
  readonly model: string;
  /** `""`: the model's default. */
  readonly reasoningEffort: ReasoningEffort | "";
  readonly instructions: string;
  readonly mcp: readonly McpChoice[];
  readonly skills: readonly string[];
  readonly askUserQuestions: boolean;
  readonly dynamicSubAgents: boolean;
  readonly generativeUi: boolean;
  readonly sandbox: boolean;
}

export function emptyForm(model: string): AgentForm {
  return {
    name: "",
    model,
    reasoningEffort: "",
    instructions: "",
    mcp: [],
    skills: [],
    askUserQuestions: true,
    dynamicSubAgents: true,
    generativeUi: true,
    sandbox: false,
  };
}

export function formFromSpec(name: string, spec: AgentSpec): AgentForm {
  const config = spec.config ?? {};
  return {
    name,
    model: spec.model.name,
    reasoningEffort: spec.model.params?.reasoning_effort ?? "",
    instructions: spec.instructions ?? "",
    mcp: (spec.mcp_servers ?? []).map(mcpChoiceFromSpec),
    skills: (spec.skills ?? []).map((skill) => skill.name.trim()),
    // The runtime's defaults when a block is absent: on, on, on, and no sandbox.
    askUserQuestions: config.ask_user_questions?.enabled ?? true,
    dynamicSubAgents: config.dynamic_sub_agents?.enabled ?? true,
    generativeUi: config.generative_ui?.enabled ?? true,
    sandbox: config.sandbox?.enabled ?? false,
  };
}

/** A switch block written only when it says something: it was there before, or it leaves the default. */
function switchBlock<T extends { enabled?: boolean }>(
  before: T | undefined,
  enabled: boolean,
  byDefault: boolean,
): T | undefined {
  if (before === undefined && enabled === byDefault) {
    return undefined;
  }
  return { ...(before ?? ({} as T)), enabled };
}

/** The spec the form describes, over `base` (the saved spec, or nothing for a new agent). */
export function specFromForm(form: AgentForm, base: AgentSpec | undefined): AgentSpec {
  const { reasoning_effort: _dropped, ...otherParams } = base?.model.params ?? {};
  const params = form.reasoningEffort
    ? { ...otherParams, reasoning_effort: form.reasoningEffort }
    : otherParams;
  const {
    instructions: _instructions,
    mcp_servers: _servers,
    skills: _skills,
    config: baseConfig,
    model: _model,
    ...restOfSpec
  } = base ?? { model: { name: "" } };
  const configBefore: RuntimeConfig = baseConfig ?? {};
  const config: RuntimeConfig = { ...configBefore };
  const blocks = {
    ask_user_questions: switchBlock(configBefore.ask_user_questions, form.askUserQuestions, true),
    dynamic_sub_agents: switchBlock(configBefore.dynamic_sub_agents, form.dynamicSubAgents, true),
    generative_ui: switchBlock(configBefore.generative_ui, form.generativeUi, true),
  };
  for (const [key, block] of Object.entries(blocks) as [
    keyof typeof blocks,
    { enabled: boolean } | undefined,
  ][]) {
    if (block === undefined) {
      delete config[key];
    } else {
      config[key] = block;
    }
  }
  if (configBefore.sandbox !== undefined || form.sandbox) {
    config.sandbox = { ...configBefore.sandbox, enabled: form.sandbox };
  }
  const instructions = form.instructions.trim() === "" ? undefined : form.instructions;
  return {
    ...restOfSpec,
    model: Object.keys(params).length > 0 ? { name: form.model, params } : { name: form.model },
    ...(instructions !== undefined ? { instructions } : {}),
    ...(form.mcp.length > 0 ? { mcp_servers: form.mcp.map(mcpChoiceToSpec) } : {}),
    ...(form.skills.length > 0 ? { skills: form.skills.map((name) => ({ name })) } : {}),
    ...(Object.keys(config).length > 0 ? { config } : {}),
  };
}

/** One tool of an MCP server, as `tools/list` describes it. */
export interface ToolInfo {
  readonly name: string;
  readonly title: string | undefined;
  readonly description: string | undefined;
  /** `readOnlyHint`; `undefined` when the server does not say. */
  readonly readOnly: boolean | undefined;
  readonly destructive: boolean | undefined;
}

function text(value: unknown): string | undefined {
  return typeof value === "string" && value.trim() !== "" ? value : undefined;
}

function flag(value: unknown): boolean | undefined {
  return typeof value === "boolean" ? value : undefined;
}

/** The tools of a `mcpTools` answer; entries without a name are skipped. */
export function toolInfos(tools: readonly Record<string, unknown>[]): ToolInfo[] {
  const list: ToolInfo[] = [];
  for (const tool of tools) {
    const name = text(tool.name);
    if (name === undefined) {
      continue;
    }
    const annotations =
      typeof tool.annotations === "object" && tool.annotations !== null
        ? (tool.annotations as Record<string, unknown>)
        : {};
    list.push({
      name,
      title: text(tool.title) ?? text(annotations.title),
      description: text(tool.description),
      readOnly: flag(annotations.readOnlyHint),
      destructive: flag(annotations.destructiveHint),
    });
  }
  return list;
}

/** Whether the agent may use `tool` under `choice`, and whether it was chosen by name or by a rule. */
export function toolEnabled(choice: McpChoice, tool: ToolInfo): "rule" | "name" | false {
  const disabled = choice.rest.disable_tools ?? [];
  if (
    disabled.includes(ALL) ||
    disabled.includes(tool.name) ||
    (disabled.includes(READ_ONLY) && tool.readOnly === true)
  ) {
    return false;
  }
  if (choice.allTools || (choice.readOnlyTools && tool.readOnly === true)) {
    return "rule";
  }
  return choice.tools.includes(tool.name) ? "name" : false;
}

/** Whether `tool` asks first under `choice` (as the server reads the tags), by rule or by name. */
export function toolNeedsApproval(choice: McpChoice, tool: ToolInfo): "rule" | "name" | false {
  if (
    choice.approveAll ||
    (choice.approveWrite && tool.readOnly === false && tool.destructive !== true) ||
    (choice.approveDestructive && tool.destructive === true)
  ) {
    return "rule";
  }
  return choice.approvalTools.includes(tool.name) ? "name" : false;
}

/**
 * `choice` with `tool` switched off for what `rule` decides (use, or ask first): a tool chosen by name leaves
 * the `names` list; one a rule chose turns the rules off (`rulesOff`) and the names they matched, but
 * `tool`, into that list.
 */
function switchedOff(
  choice: McpChoice,
  listing: readonly ToolInfo[],
  tool: ToolInfo,
  rule: (choice: McpChoice, tool: ToolInfo) => "rule" | "name" | false,
  names: "tools" | "approvalTools",
  rulesOff: Partial<McpChoice>,
): McpChoice {
  const by = rule(choice, tool);
  if (by === false) {
    return choice;
  }
  if (by === "name") {
    return { ...choice, [names]: choice[names].filter((name) => name !== tool.name) };
  }
  return {
    ...choice,
    ...rulesOff,
    [names]: expand(listing, choice[names], (t) => rule(choice, t) !== false, tool.name),
  };
}

/** The names of `listing` that `pick` marks, plus the chosen names the listing no longer has. */
function expand(
  listing: readonly ToolInfo[],
  kept: readonly string[],
  pick: (tool: ToolInfo) => boolean,
  without: string,
): string[] {
  const listed = new Set(listing.map((tool) => tool.name));
  const names = listing.filter(pick).map((tool) => tool.name);
  const gone = kept.filter((name) => !listed.has(name));
  return [...names, ...gone].filter((name) => name !== without);
}

/**
 * Turns one tool on or off. Off, for a tool a rule enabled, the rules become the names they matched
 * (so "every tool" minus one is every other tool, by name).
 */
export function withToolEnabled(
  choice: McpChoice,
  listing: readonly ToolInfo[],
  tool: ToolInfo,
  on: boolean,
): McpChoice {
  if (on) {
    const disabled = choice.rest.disable_tools;
    const rest =
      disabled?.includes(tool.name) === true
        ? { ...choice.rest, disable_tools: disabled.filter((name) => name !== tool.name) }
        : choice.rest;
    const next = { ...choice, rest };
    return toolEnabled(next, tool) ? next : { ...next, tools: [...next.tools, tool.name] };
  }
  return switchedOff(choice, listing, tool, toolEnabled, "tools", { allTools: false, readOnlyTools: false });
}

/** Turns asking first on or off for one tool, as {@link withToolEnabled} does for using it. */
export function withToolApproval(
  choice: McpChoice,
  listing: readonly ToolInfo[],
  tool: ToolInfo,
  on: boolean,
): McpChoice {
  if (on) {
    return toolNeedsApproval(choice, tool)
      ? choice
      : { ...choice, approvalTools: [...choice.approvalTools, tool.name] };
  }
  return switchedOff(choice, listing, tool, toolNeedsApproval, "approvalTools", {
    approveAll: false,
    approveWrite: false,
    approveDestructive: false,
  });
}
