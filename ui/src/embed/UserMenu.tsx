// Who is signed in, at the foot of the navigation: their name and role, and a menu with their API keys and
// Log out. Shown only with the server's login (a server without one has nobody to name or sign out).

import * as DropdownMenu from "@radix-ui/react-dropdown-menu";
import { useState } from "react";
import { toast } from "sonner";
import type { Route } from "../app/router.js";
import { describeError } from "../state/errors.js";
import { isLoggedIn, useAccount, usePortalContainer, useServer } from "./context.js";

export function UserMenu({ onNavigate }: { readonly onNavigate: (route: Route) => void }) {
  const { me, logOut } = useAccount();
  const server = useServer();
  const portal = usePortalContainer();
  const [leaving, setLeaving] = useState(false);
  if (!isLoggedIn(me)) {
    return null;
  }
  const role = me.role === "admin" ? "Admin" : "User";
  return (
    <DropdownMenu.Root>
      <DropdownMenu.Trigger
        className="tf-user-button"
        aria-label={`Account: ${me.email} (${role})`}
        data-testid="user-menu"
        title={me.email}
      >
        <span className="tf-avatar" aria-hidden="true">
          {me.email.trim().charAt(0).toUpperCase() || "?"}
        </span>
        <span className="tf-user-text">
          <span className="tf-user-name" data-testid="user-name">
            {me.email}
          </span>
          <span className="tf-user-role" data-testid="user-role">
            {role}
          </span>
        </span>
      </DropdownMenu.Trigger>
      <DropdownMenu.Portal container={portal}>
        <DropdownMenu.Content className="tf-menu" side="top" align="start" sideOffset={6}>
          <DropdownMenu.Label className="tf-menu-label">
            Signed in as <strong>{me.email}</strong> ({role.toLowerCase()})
          </DropdownMenu.Label>
          <DropdownMenu.Separator className="tf-menu-separator" />
          {server.apiKeys ? (
            <DropdownMenu.Item
              className="tf-menu-item"
              data-tf-navigates=""
              onSelect={() => onNavigate({ name: "apiKeys" })}
            >
              API keys
            </DropdownMenu.Item>
          ) : null}
          <DropdownMenu.Item
            className="tf-menu-item"
            disabled={leaving}
            onSelect={() => {
              setLeaving(true);
              logOut().catch((error: unknown) => {
                setLeaving(false);
                toast.error(`Could not log out: ${describeError(error)}`);
              });
            }}
          >
            Log out
          </DropdownMenu.Item>
        </DropdownMenu.Content>
      </DropdownMenu.Portal>
    </DropdownMenu.Root>
  );
}
