// @trueforge/sdk: the public surface.

export * from "./events.js";
export type { components, operations, paths } from "./generated/schema.js";
