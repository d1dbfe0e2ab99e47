// Markdown of model answers: GitHub-flavoured, links opened in a new tab without an opener or referrer,
// images shown as links (the page's CSP loads no remote image: a prompt-injected answer must not leak data
// through an image URL), and three kinds of fences: code, generative UI (`openui`) and sandbox artifacts.

import {
  type ComponentProps,
  createContext,
  lazy,
  memo,
  type ReactElement,
  Suspense,
  useContext,
  useMemo,
} from "react";
import ReactMarkdown, { type Components } from "react-markdown";
import remarkGfm from "remark-gfm";
import { ArtifactList, parseArtifacts } from "./Artifacts.js";
import { CodeBlock } from "./CodeBlock.js";

const OpenUiBlock = lazy(() => import("./OpenUiBlock.js"));

export interface MarkdownContext {
  /** The answer is still streaming (code stays plain, an open fence is not parsed as a whole). */
  readonly streaming: boolean;
  /** Where sandbox artifacts are downloaded from: the turn that produced them. */
  readonly turnId: string | null;
}

function fenceOf(children: ComponentProps<"pre">["children"]): { code: string; language: string } | null {
  const child = (Array.isArray(children) ? children[0] : children) as ReactElement<{
    className?: string;
    children?: unknown;
  }> | null;
  if (child === null || typeof child !== "object" || !("props" in child)) {
    return null;
  }
  const language = /language-([\w-]+)/.exec(child.props.className ?? "")?.[1] ?? "";
  const raw = child.props.children;
  const code = Array.isArray(raw) ? raw.join("") : typeof raw === "string" ? raw : "";
  return { code: code.replace(/\n$/, ""), language };
}

/** What the fences need to know; read through a context so the renderers below stay the same functions. */
const MarkdownState = createContext<MarkdownContext>({ streaming: false, turnId: null });

/**
 * A fenced block. One stable component: were it recreated per render, React would remount every fence on
 * each streamed delta (a generative-UI block would lose its tabs and typed values).
 */
function Pre({ children }: ComponentProps<"pre">) {
  const context = useContext(MarkdownState);
  const fence = fenceOf(children);
  if (fence === null) {
    return <pre>{children}</pre>;
  }
  if (fence.language === "openui") {
    return (
      <Suspense fallback={<CodeBlock code={fence.code} language="" streaming />}>
        <OpenUiBlock source={fence.code} streaming={context.streaming} />
      </Suspense>
    );
  }
  if (fence.language === "sandbox_artifacts") {
    return <ArtifactList files={parseArtifacts(fence.code)} turnId={context.turnId} />;
  }
  return <CodeBlock code={fence.code} language={fence.language} streaming={context.streaming} />;
}

const COMPONENTS: Components = {
  a: ({ href, children }) => (
    <a href={href} target="_blank" rel="noopener noreferrer">
      {children}
    </a>
  ),
  img: ({ src, alt }) => (
    <a
      className="tf-image-link"
      href={typeof src === "string" ? src : undefined}
      target="_blank"
      rel="noopener noreferrer"
    >
      {alt ? `image: ${alt}` : "image"}
    </a>
  ),
  pre: Pre,
};

const PLUGINS = [remarkGfm];

/** Renders model markdown. Memoised on its inputs: a streamed delta re-parses only the message it grew. */
export const Markdown = memo(function Markdown({
  text,
  streaming = false,
  turnId = null,
}: {
  readonly text: string;
  readonly streaming?: boolean;
  readonly turnId?: string | null;
}) {
  return (
    <div className="tf-markdown">
      <MarkdownState.Provider value={useMemo(() => ({ streaming, turnId }), [streaming, turnId])}>
        <ReactMarkdown remarkPlugins={PLUGINS} components={COMPONENTS}>
          {text}
        </ReactMarkdown>
      </MarkdownState.Provider>
    </div>
  );
});
