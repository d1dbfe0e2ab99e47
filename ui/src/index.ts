// @trueforge/ui: the embeddable chat. `<TrueForgeUI/>` is the whole app; the containers and atoms below are
// its parts, for hosts that compose their own screens; the port types let a host bring its own backend.

export { Markdown } from "./atoms/Markdown.js";
export { MessageBubble, type MessageBubbleProps } from "./atoms/MessageBubble.js";
export { ToolCard, type ToolCardProps, toolLabel } from "./atoms/ToolCard.js";
export { TurnMetrics } from "./atoms/TurnMetrics.js";
export { Welcome, type WelcomeProps } from "./atoms/Welcome.js";
export { ChatView } from "./containers/ChatView.js";
export { Composer, type ComposerProps } from "./containers/Composer.js";
export { type ChatSession, useChatSession } from "./containers/chat-session.js";
export { SessionList } from "./containers/SessionList.js";
export { Thread } from "./containers/Thread.js";
export { type ChatMode, ServerContext, useServer } from "./embed/context.js";
export type { Layout, LayoutParts } from "./embed/Shell.js";
export { defaultSlots, type SlotOverrides, type Slots } from "./embed/slots.js";
export { TrueForgeUI, type TrueForgeUIProps } from "./embed/TrueForgeUI.js";
export type * from "./server/port.js";
export { createTrueForgeServer, type TrueForgeServerOptions } from "./server/trueforge.js";
export { ConversationController, type ConversationSnapshot } from "./state/conversation.js";
export type { ThemePreference, ThemeTokens } from "./theme/theme.js";
