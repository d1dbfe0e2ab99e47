// The shell around the chat: a layout (sidebar, drawer, dock, widget or the host's own) holding the session
// list, the navigation to agents, schedules and settings, the signed-in user's menu, and the current screen.

import * as Dialog from "@radix-ui/react-dialog";
import { type ComponentType, lazy, type ReactNode, Suspense, useState } from "react";
import { useNavigation } from "../app/router.js";
import {
  BotIcon,
  ClockIcon,
  GearIcon,
  MenuIcon,
  MoonIcon,
  PlusIcon,
  SunIcon,
  XIcon,
} from "../atoms/icons.js";
import { ChatView } from "../containers/ChatView.js";
import { SessionList } from "../containers/SessionList.js";
import { useTheme } from "../theme/theme.js";
import { useIsAdmin, usePortalContainer, useServer, useShell } from "./context.js";
import { UserMenu } from "./UserMenu.js";

const AgentsLibrary = lazy(() => import("../agents/AgentsLibrary.js"));
const AgentBuilder = lazy(() => import("../agents/AgentBuilder.js"));
const SettingsView = lazy(() => import("../settings/SettingsView.js"));
const ApiKeysView = lazy(() => import("../account/ApiKeysView.js"));
const SchedulesView = lazy(() => import("../schedules/SchedulesView.js"));

/** What a user who is not an admin sees at a settings address. */
function AdminsOnly() {
  return (
    <div className="tf-page" data-testid="settings-admins-only">
      <h1>Settings</h1>
      <div className="tf-state" role="alert">
        <p>The settings are for admins only. Ask an admin of this server to change them.</p>
      </div>
    </div>
  );
}

export type LayoutName = "sidebar" | "drawer" | "dock" | "widget";

/** What a custom layout receives: the parts to place. */
export interface LayoutParts {
  /** The chat history with its navigation (new chat, agents, schedules, settings, theme). */
  readonly navigation: ReactNode;
  /** The current screen (a chat, the agents, the builder, the schedules, the settings). */
  readonly screen: ReactNode;
}

export type Layout = LayoutName | ComponentType<LayoutParts>;

function Screen() {
  const { route } = useNavigation();
  const shell = useShell();
  const isAdmin = useIsAdmin();
  let screen: ReactNode;
  switch (route.name) {
    case "chat":
      screen = <ChatView sessionId={route.sessionId} />;
      break;
    case "agents":
      screen = <AgentsLibrary />;
      break;
    case "agent":
      screen = shell.builder ? <AgentBuilder agentId={route.agentId} /> : <AgentsLibrary />;
      break;
    case "settings":
      screen = !shell.settings ? (
        <ChatView sessionId={null} />
      ) : isAdmin ? (
        <SettingsView section={route.section} />
      ) : (
        <AdminsOnly />
      );
      break;
    case "apiKeys":
      screen = <ApiKeysView />;
      break;
    case "schedules":
      screen = <SchedulesView />;
      break;
  }
  return (
    <Suspense
      fallback={
        <div className="tf-state" role="status">
          Loading…
        </div>
      }
    >
      {screen}
    </Suspense>
  );
}

function ThemeToggle() {
  const theme = useTheme();
  return (
    <button
      type="button"
      className="tf-icon-button"
      aria-label={theme.isDark ? "Switch to the light theme" : "Switch to the dark theme"}
      title="Theme"
      onClick={() => theme.setPreference(theme.isDark ? "light" : "dark")}
    >
      {theme.isDark ? <SunIcon /> : <MoonIcon />}
    </button>
  );
}

function Navigation({ onNavigate }: { readonly onNavigate?: () => void }) {
  const { navigate, route } = useNavigation();
  const shell = useShell();
  const server = useServer();
  const isAdmin = useIsAdmin();
  const [refreshKey, setRefreshKey] = useState(0);
  const go = (next: Parameters<typeof navigate>[0]) => {
    navigate(next);
    onNavigate?.();
  };
  return (
    <div className="tf-nav">
      <div className="tf-brand">{shell.brand}</div>
      <button
        type="button"
        className="tf-button tf-button-primary tf-new-chat"
        onClick={() => {
          go({ name: "chat", sessionId: null });
          setRefreshKey((key) => key + 1);
        }}
      >
        <PlusIcon /> New chat
      </button>
      {server.agents && (
        <button
          type="button"
          className={`tf-nav-link${route.name === "agents" || route.name === "agent" ? " tf-active" : ""}`}
          onClick={() => go({ name: "agents" })}
        >
          <BotIcon /> Agents
        </button>
      )}
      {server.agents && server.schedules && (
        <button
          type="button"
          className={`tf-nav-link${route.name === "schedules" ? " tf-active" : ""}`}
          onClick={() => go({ name: "schedules" })}
        >
          <ClockIcon /> Schedules
        </button>
      )}
      <SessionList
        // Reloaded by New chat and when a chat gets its id (its first message), not when another chat is opened
        // (that would lose the list's scroll). Two parts, so the two changes cannot cancel out.
        refreshKey={`${refreshKey}:${route.name === "chat" && route.sessionId ? "open" : "none"}`}
        {...(onNavigate ? { onNavigate } : {})}
      />
      <div className="tf-nav-footer">
        <UserMenu onNavigate={go} />
        <ThemeToggle />
        {shell.settings && server.settings && isAdmin && (
          <button
            type="button"
            className="tf-icon-button"
            aria-label="Settings"
            title="Settings"
            onClick={() => go({ name: "settings", section: "models" })}
          >
            <GearIcon />
          </button>
        )}
      </div>
    </div>
  );
}

function SidebarLayout({ navigation, screen }: LayoutParts) {
  return (
    <div className="tf-layout tf-layout-sidebar">
      <aside className="tf-sidebar">{navigation}</aside>
      <main className="tf-main">{screen}</main>
    </div>
  );
}

function DrawerLayout({ navigation, screen, title }: LayoutParts & { readonly title: string }) {
  const [open, setOpen] = useState(false);
  const container = usePortalContainer();
  return (
    <div className="tf-layout tf-layout-drawer">
      <Dialog.Root open={open} onOpenChange={setOpen}>
        <header className="tf-topbar">
          <Dialog.Trigger className="tf-icon-button" aria-label="Open the chat history">
            <MenuIcon />
          </Dialog.Trigger>
          <span className="tf-brand">{title}</span>
        </header>
        <Dialog.Portal container={container}>
          <Dialog.Overlay className="tf-overlay" />
          <Dialog.Content className="tf-drawer" aria-describedby={undefined}>
            <Dialog.Title className="tf-visually-hidden">Chat history</Dialog.Title>
            <Dialog.Close className="tf-icon-button tf-drawer-close" aria-label="Close">
              <XIcon />
            </Dialog.Close>
            <DrawerNavigation close={() => setOpen(false)}>{navigation}</DrawerNavigation>
          </Dialog.Content>
        </Dialog.Portal>
      </Dialog.Root>
      <main className="tf-main">{screen}</main>
    </div>
  );
}

function DrawerNavigation({ children, close }: { readonly children: ReactNode; readonly close: () => void }) {
  // Any navigation inside the drawer closes it.
  return (
    // biome-ignore lint/a11y/noStaticElementInteractions: clicks bubble from the real links and buttons inside.
    // biome-ignore lint/a11y/useKeyWithClickEvents: keyboard activation of those links and buttons is a click.
    <div
      onClick={(event) => {
        if ((event.target as HTMLElement).closest("a, .tf-nav-link, .tf-new-chat, [data-tf-navigates]")) {
          close();
        }
      }}
    >
      {children}
    </div>
  );
}

function DockLayout({ navigation, screen }: LayoutParts) {
  const [showList, setShowList] = useState(false);
  return (
    <div className="tf-layout tf-layout-dock">
      <header className="tf-topbar">
        <button
          type="button"
          className="tf-icon-button"
          aria-label={showList ? "Back to the chat" : "Chat history"}
          onClick={() => setShowList((v) => !v)}
        >
          {showList ? <XIcon /> : <MenuIcon />}
        </button>
      </header>
      {showList ? (
        // biome-ignore lint/a11y/noStaticElementInteractions: see DrawerNavigation.
        // biome-ignore lint/a11y/useKeyWithClickEvents: see DrawerNavigation.
        <div
          className="tf-dock-list"
          onClick={(event) =>
            (event.target as HTMLElement).closest("a, .tf-nav-link, .tf-new-chat, [data-tf-navigates]") &&
            setShowList(false)
          }
        >
          {navigation}
        </div>
      ) : (
        <main className="tf-main">{screen}</main>
      )}
    </div>
  );
}

function WidgetLayout(parts: LayoutParts) {
  const [open, setOpen] = useState(false);
  const container = usePortalContainer();
  return (
    <Dialog.Root open={open} onOpenChange={setOpen} modal={false}>
      <Dialog.Trigger className="tf-widget-fab" aria-label={open ? "Close the chat" : "Open the chat"}>
        {open ? <XIcon /> : <BotIcon />}
      </Dialog.Trigger>
      <Dialog.Portal container={container}>
        <Dialog.Content
          className="tf-widget-panel"
          aria-describedby={undefined}
          onInteractOutside={(event) => event.preventDefault()}
        >
          <Dialog.Title className="tf-visually-hidden">Chat</Dialog.Title>
          <DockLayout {...parts} />
        </Dialog.Content>
      </Dialog.Portal>
    </Dialog.Root>
  );
}

export function Shell({ layout }: { readonly layout: Layout }) {
  const shell = useShell();
  const parts: LayoutParts = {
    navigation: <Navigation />,
    screen: <Screen />,
  };
  if (typeof layout !== "string") {
    const Custom = layout;
    return <Custom {...parts} />;
  }
  switch (layout) {
    case "sidebar":
      return <SidebarLayout {...parts} />;
    case "drawer":
      return <DrawerLayout {...parts} title={shell.brand} />;
    case "dock":
      return <DockLayout {...parts} />;
    case "widget":
      return <WidgetLayout {...parts} />;
  }
}
