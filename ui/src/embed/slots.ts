// Slots: the parts of the chat a host app may replace with its own components. Each default is the
// component the bundled app uses; `<TrueForgeUI slots={{ToolCard: MyCard}}/>` overrides one and keeps the rest.

import type { ComponentType, ReactNode } from "react";
import { MessageBubble, type MessageBubbleProps } from "../atoms/MessageBubble.js";
import { ToolCard, type ToolCardProps } from "../atoms/ToolCard.js";
import { Welcome, type WelcomeProps } from "../atoms/Welcome.js";
import { Composer, type ComposerProps } from "../containers/Composer.js";

export interface Slots {
  /** One message of the thread (user or assistant), around its content. */
  readonly MessageBubble: ComponentType<MessageBubbleProps>;
  /** The input area: text, attachments, send and stop. */
  readonly Composer: ComponentType<ComposerProps>;
  /** One tool call. */
  readonly ToolCard: ComponentType<ToolCardProps>;
  /** What an empty chat shows above the composer. */
  readonly WelcomeScreen: ComponentType<WelcomeProps>;
}

export const defaultSlots: Slots = {
  MessageBubble,
  Composer,
  ToolCard,
  WelcomeScreen: Welcome,
};

export type SlotOverrides = Partial<Slots>;

export type { ComposerProps, MessageBubbleProps, ReactNode, ToolCardProps, WelcomeProps };
