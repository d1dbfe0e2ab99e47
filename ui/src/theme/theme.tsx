// Light and dark themes through CSS variables; the host may override any token (`--tf-accent`, …).

import { createContext, type ReactNode, useContext, useEffect, useMemo, useState } from "react";

export type ThemePreference = "light" | "dark" | "system";
export type ThemeTokens = Readonly<Record<`--tf-${string}`, string>>;

const KEY = "trueforge.theme";

interface ThemeValue {
  readonly preference: ThemePreference;
  readonly isDark: boolean;
  setPreference(preference: ThemePreference): void;
}

const ThemeContext = createContext<ThemeValue>({
  preference: "system",
  isDark: false,
  setPreference: () => {},
});

export function useTheme(): ThemeValue {
  return useContext(ThemeContext);
}

function stored(): ThemePreference | null {
  try {
    const value = globalThis.localStorage?.getItem(KEY);
    return value === "light" || value === "dark" || value === "system" ? value : null;
  } catch {
    return null;
  }
}

function systemDark(): boolean {
  return typeof matchMedia === "function" && matchMedia("(prefers-color-scheme: dark)").matches;
}

export function ThemeProvider({
  initial,
  children,
}: {
  readonly initial: ThemePreference | undefined;
  readonly children: (isDark: boolean) => ReactNode;
}) {
  const [preference, setPreferenceState] = useState<ThemePreference>(() => stored() ?? initial ?? "system");
  const [dark, setDark] = useState(systemDark);
  useEffect(() => {
    if (typeof matchMedia !== "function") {
      return;
    }
    const query = matchMedia("(prefers-color-scheme: dark)");
    const onChange = () => setDark(query.matches);
    query.addEventListener("change", onChange);
    return () => query.removeEventListener("change", onChange);
  }, []);
  const isDark = preference === "dark" || (preference === "system" && dark);
  const value = useMemo(
    () => ({
      preference,
      isDark,
      setPreference: (next: ThemePreference) => {
        setPreferenceState(next);
        try {
          globalThis.localStorage?.setItem(KEY, next);
        } catch {
          // Not remembered across reloads: fine.
        }
      },
    }),
    [preference, isDark],
  );
  return <ThemeContext.Provider value={value}>{children(isDark)}</ThemeContext.Provider>;
}
