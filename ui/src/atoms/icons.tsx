// A few line icons, inline so they cost no request and follow `currentColor`.

import type { SVGProps } from "react";

function Icon({ d, ...props }: SVGProps<SVGSVGElement> & { readonly d: string }) {
  return (
    <svg
      width="16"
      height="16"
      viewBox="0 0 24 24"
      fill="none"
      stroke="currentColor"
      strokeWidth="2"
      strokeLinecap="round"
      strokeLinejoin="round"
      aria-hidden="true"
      focusable="false"
      {...props}
    >
      <path d={d} />
    </svg>
  );
}

type P = SVGProps<SVGSVGElement>;
export const PlusIcon = (p: P) => <Icon d="M12 5v14M5 12h14" {...p} />;
export const SendIcon = (p: P) => <Icon d="M5 12h14M13 6l6 6-6 6" {...p} />;
export const StopIcon = (p: P) => <Icon d="M7 7h10v10H7z" {...p} />;
export const PaperclipIcon = (p: P) => (
  <Icon d="M21 12.5l-8.5 8.5a5 5 0 01-7-7L14 5.5a3.5 3.5 0 015 5L10.5 19a2 2 0 01-3-3L15 8.5" {...p} />
);
export const ToolIcon = (p: P) => (
  <Icon d="M14.7 6.3a4 4 0 00-5.4 5.4L3 18l3 3 6.3-6.3a4 4 0 005.4-5.4l-2.5 2.5-2.4-.6-.6-2.4z" {...p} />
);
export const TerminalIcon = (p: P) => <Icon d="M4 17l6-6-6-6M12 19h8" {...p} />;
export const ChevronIcon = (p: P) => <Icon d="M9 6l6 6-6 6" {...p} />;
export const CheckIcon = (p: P) => <Icon d="M5 13l4 4L19 7" {...p} />;
export const XIcon = (p: P) => <Icon d="M6 6l12 12M18 6L6 18" {...p} />;
export const MenuIcon = (p: P) => <Icon d="M4 6h16M4 12h16M4 18h16" {...p} />;
export const MoreIcon = (p: P) => <Icon d="M5 12h.01M12 12h.01M19 12h.01" {...p} />;
export const SunIcon = (p: P) => (
  <Icon
    d="M12 3v2M12 19v2M5 5l1.5 1.5M17.5 17.5L19 19M3 12h2M19 12h2M5 19l1.5-1.5M17.5 6.5L19 5M12 8a4 4 0 100 8 4 4 0 000-8z"
    {...p}
  />
);
export const MoonIcon = (p: P) => <Icon d="M20 14.5A8 8 0 019.5 4a8 8 0 1010.5 10.5z" {...p} />;
export const GearIcon = (p: P) => (
  <Icon
    d="M12 9a3 3 0 100 6 3 3 0 000-6zM19.4 15a1.7 1.7 0 00.3 1.8l.1.1a2 2 0 11-2.8 2.8l-.1-.1a1.7 1.7 0 00-1.8-.3 1.7 1.7 0 00-1 1.5V21a2 2 0 11-4 0v-.1a1.7 1.7 0 00-1.1-1.5 1.7 1.7 0 00-1.8.3l-.1.1a2 2 0 11-2.8-2.8l.1-.1a1.7 1.7 0 00.3-1.8 1.7 1.7 0 00-1.5-1H3a2 2 0 110-4h.1a1.7 1.7 0 001.5-1.1 1.7 1.7 0 00-.3-1.8l-.1-.1a2 2 0 112.8-2.8l.1.1a1.7 1.7 0 001.8.3H9a1.7 1.7 0 001-1.5V3a2 2 0 114 0v.1a1.7 1.7 0 001 1.5 1.7 1.7 0 001.8-.3l.1-.1a2 2 0 112.8 2.8l-.1.1a1.7 1.7 0 00-.3 1.8V9a1.7 1.7 0 001.5 1H21a2 2 0 110 4h-.1a1.7 1.7 0 00-1.5 1z"
    {...p}
  />
);
export const BotIcon = (p: P) => (
  <Icon
    d="M12 4v3M6 8h12a2 2 0 012 2v7a2 2 0 01-2 2H6a2 2 0 01-2-2v-7a2 2 0 012-2zM9 13h.01M15 13h.01"
    {...p}
  />
);
export const EditIcon = (p: P) => <Icon d="M4 20h4L19 9l-4-4L4 16v4zM13.5 6.5l4 4" {...p} />;
export const CopyIcon = (p: P) => <Icon d="M9 9h11v11H9zM5 15H4V4h11v1" {...p} />;
export const DownloadIcon = (p: P) => <Icon d="M12 4v11M7 10l5 5 5-5M5 20h14" {...p} />;
export const ClockIcon = (p: P) => <Icon d="M12 21a9 9 0 100-18 9 9 0 000 18zM12 7v5l3 2" {...p} />;
export const HistoryIcon = (p: P) => <Icon d="M3 12a9 9 0 103-6.7L3 8M3 3v5h5M12 7v5l3 3" {...p} />;
