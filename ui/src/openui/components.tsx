// The components of the OpenUI language (the guide's list, same positional signatures), drawn with the
// app's --tf-* variables. A component the language does not have renders as a labelled box with its name, a
// name not defined yet as a placeholder, and a component that fails as a box, never a blank page.

import * as Dialog from "@radix-ui/react-dialog";
import {
  Component,
  type ErrorInfo,
  Fragment,
  type KeyboardEvent,
  type ReactNode,
  useContext,
  useId,
  useState,
} from "react";
import { CodeBlock as Code } from "../atoms/CodeBlock.js";
import { ChevronIcon, XIcon } from "../atoms/icons.js";
import { Markdown } from "../atoms/Markdown.js";
import { useOptionalChatSession } from "../containers/chat-session.js";
import { usePortalContainer } from "../embed/context.js";
import {
  AreaChart,
  BarChart,
  HorizontalBarChart,
  LineChart,
  PieChart,
  RadarChart,
  RadialChart,
  ScatterChart,
  SingleStackedBarChart,
} from "./charts.js";
import {
  type ActionStep,
  checkRules,
  composeMessage,
  isList,
  isRecord,
  Pending,
  type StateReader,
  toText,
  truthy,
  UiAction,
  UiElement,
  type Value,
} from "./evaluate.js";
import {
  FieldContext,
  type FieldInfo,
  FormContext,
  type FormState,
  list,
  num,
  oneOf,
  str,
  useForm,
  useRuntime,
} from "./runtime.js";

type Props = { readonly el: UiElement };

// ---------------------------------------------------------------------------------------------------------
// Values to React

/** Renders any value: a component, a list of them, text; a name not defined yet as a placeholder. */
export function renderValue(value: Value, key?: string | number): ReactNode {
  if (value instanceof UiElement) {
    return (
      <Boundary key={key} el={value}>
        <ElementView el={value} />
      </Boundary>
    );
  }
  if (isList(value)) {
    return <Fragment key={key}>{value.map((item, index) => renderValue(item, index))}</Fragment>;
  }
  if (value instanceof Pending) {
    return <PendingView key={key} name={value.name} />;
  }
  if (value === null || value instanceof UiAction || isRecord(value)) {
    return null;
  }
  return <Fragment key={key}>{toText(value)}</Fragment>;
}

function renderList(values: readonly Value[]): ReactNode {
  return values.map((value, index) => renderValue(value, index));
}

function PendingView({ name }: { readonly name: string }) {
  const { streaming } = useRuntime();
  if (streaming) {
    return <span className="tf-openui-pending" aria-hidden="true" />;
  }
  return (
    <span className="tf-openui-fallback tf-openui-missing" data-openui-missing={name}>
      Not defined: <code>{name}</code>
    </span>
  );
}

function Fallback({ label, name }: { readonly label: string; readonly name: string }) {
  return (
    <div className="tf-openui-fallback" role="note" data-openui-unknown={name}>
      <span className="tf-openui-fallback-label">{label}</span> <code>{name}</code>
    </div>
  );
}

/** Catches a component that throws: it shows as a box, the rest of the block stays. */
class Boundary extends Component<
  { readonly el: UiElement; readonly children: ReactNode },
  { readonly failed: boolean }
> {
  override state = { failed: false };

  static getDerivedStateFromError(): { failed: boolean } {
    return { failed: true };
  }

  override componentDidCatch(_error: unknown, _info: ErrorInfo): void {
    // The box says which component failed; the rest of the block renders.
  }

  override componentDidUpdate(previous: { readonly el: UiElement }): void {
    if (this.state.failed && previous.el !== this.props.el) {
      this.setState({ failed: false }); // new arguments (more streamed text): try again
    }
  }

  override render() {
    return this.state.failed ? (
      <Fallback label="Could not show" name={this.props.el.type} />
    ) : (
      this.props.children
    );
  }
}

function ElementView({ el }: Props) {
  const View = REGISTRY[el.type];
  if (View === undefined) {
    return <Fallback label="Unknown component" name={el.type} />;
  }
  return <View el={el} />;
}

function OutsideParent({ el }: Props) {
  return <Fallback label="Used outside its parent:" name={el.type} />;
}

// ---------------------------------------------------------------------------------------------------------
// Layout

const GAPS = ["none", "xs", "s", "m", "l", "xl", "2xl"] as const;
const GAP_PX: Record<(typeof GAPS)[number], number> = {
  none: 0,
  xs: 4,
  s: 8,
  m: 12,
  l: 16,
  xl: 24,
  "2xl": 32,
};
const ALIGN = {
  start: "flex-start",
  center: "center",
  end: "flex-end",
  stretch: "stretch",
  baseline: "baseline",
};
const JUSTIFY = {
  start: "flex-start",
  center: "center",
  end: "flex-end",
  between: "space-between",
  around: "space-around",
  evenly: "space-evenly",
};

/** A flex box from the Stack arguments starting at `from` (direction, gap, align, justify, wrap). */
function flex(el: UiElement, from: number, gap: (typeof GAPS)[number]) {
  const direction = oneOf(el, from, ["row", "column"], "column");
  const wrap = truthy(el.arg(from + 4));
  const align = oneOf(el, from + 2, ["start", "center", "end", "stretch", "baseline"], "stretch");
  const justify = oneOf(el, from + 3, ["start", "center", "end", "between", "around", "evenly"], "start");
  return {
    className: `tf-openui-flex tf-openui-${direction}${wrap ? " tf-openui-wrap" : ""}`,
    style: {
      gap: GAP_PX[oneOf(el, from + 1, GAPS, gap)],
      alignItems: ALIGN[align],
      justifyContent: JUSTIFY[justify],
    },
  };
}

function Stack({ el }: Props) {
  const { className, style } = flex(el, 1, "m");
  return (
    <div className={`tf-openui-stack ${className}`} style={style}>
      {renderList(list(el, 0))}
    </div>
  );
}

function Card({ el }: Props) {
  const variant = oneOf(el, 1, ["card", "sunk", "clear"], "card");
  const { className, style } = flex(el, 2, "s");
  return (
    <section className={`tf-openui-card tf-openui-surface-${variant} ${className}`} style={style}>
      {renderList(list(el, 0))}
    </section>
  );
}

function CardHeader({ el }: Props) {
  const title = str(el, 0);
  const subtitle = str(el, 1);
  return (
    <header className="tf-openui-card-header">
      {title && <h3 className="tf-openui-title">{title}</h3>}
      {subtitle && <p className="tf-openui-subtitle">{subtitle}</p>}
    </header>
  );
}

function items(el: UiElement, type: string): UiElement[] {
  return list(el, 0).filter((item): item is UiElement => item instanceof UiElement && item.type === type);
}

function Tabs({ el }: Props) {
  const base = useId();
  const tabs = items(el, "TabItem");
  const [selected, setSelected] = useState<string | null>(null);
  if (tabs.length === 0) {
    return null;
  }
  const values = tabs.map((tab, index) => str(tab, 0) || String(index));
  const active = Math.max(0, values.indexOf(selected ?? ""));
  const onKeyDown = (event: KeyboardEvent) => {
    const step = event.key === "ArrowRight" ? 1 : event.key === "ArrowLeft" ? -1 : 0;
    if (step !== 0) {
      const next = (active + step + tabs.length) % tabs.length;
      setSelected(values[next] ?? null);
      document.getElementById(`${base}-tab-${next}`)?.focus();
    }
  };
  return (
    <div className="tf-openui-tabs">
      <div role="tablist" className="tf-openui-tablist" onKeyDown={onKeyDown}>
        {tabs.map((tab, index) => (
          <button
            // biome-ignore lint/suspicious/noArrayIndexKey: tab values may repeat.
            key={index}
            type="button"
            role="tab"
            id={`${base}-tab-${index}`}
            aria-selected={index === active}
            aria-controls={`${base}-panel-${index}`}
            tabIndex={index === active ? 0 : -1}
            className="tf-openui-tab"
            onClick={() => setSelected(values[index] ?? null)}
          >
            {str(tab, 1) || values[index]}
          </button>
        ))}
      </div>
      {tabs.map((tab, index) => (
        <div
          // biome-ignore lint/suspicious/noArrayIndexKey: tab values may repeat.
          key={index}
          role="tabpanel"
          id={`${base}-panel-${index}`}
          aria-labelledby={`${base}-tab-${index}`}
          hidden={index !== active}
          className="tf-openui-tabpanel"
        >
          {renderList(list(tab, 2))}
        </div>
      ))}
    </div>
  );
}

function TabItem({ el }: Props) {
  return <div className="tf-openui-flex tf-openui-column">{renderList(list(el, 2))}</div>;
}

function AccordionView({ sections }: { readonly sections: readonly UiElement[] }) {
  const base = useId();
  const [open, setOpen] = useState<ReadonlySet<number>>(new Set());
  const toggle = (index: number) =>
    setOpen((current) => {
      const next = new Set(current);
      if (!next.delete(index)) {
        next.add(index);
      }
      return next;
    });
  return (
    <div className="tf-openui-accordion">
      {sections.map((section, index) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: section values may repeat.
        <div key={index} className="tf-openui-accordion-item" data-open={open.has(index) || undefined}>
          <h4 className="tf-openui-accordion-heading">
            <button
              type="button"
              id={`${base}-trigger-${index}`}
              className="tf-openui-accordion-trigger"
              aria-expanded={open.has(index)}
              aria-controls={`${base}-section-${index}`}
              onClick={() => toggle(index)}
            >
              <ChevronIcon className="tf-openui-chevron" />
              {str(section, 1) || str(section, 0)}
            </button>
          </h4>
          <section
            id={`${base}-section-${index}`}
            aria-labelledby={`${base}-trigger-${index}`}
            hidden={!open.has(index)}
            className="tf-openui-accordion-panel"
          >
            {renderList(list(section, 2))}
          </section>
        </div>
      ))}
    </div>
  );
}

function Accordion({ el }: Props) {
  return <AccordionView sections={items(el, "AccordionItem")} />;
}

function AccordionItem({ el }: Props) {
  return <AccordionView sections={[el]} />;
}

function StepsView({ steps }: { readonly steps: readonly UiElement[] }) {
  return (
    <ol className="tf-openui-steps">
      {steps.map((step, index) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: steps are ordered by position.
        <li key={index}>
          <span className="tf-openui-step-number" aria-hidden="true">
            {index + 1}
          </span>
          <div>
            <div className="tf-openui-step-title">{str(step, 0)}</div>
            {str(step, 1) && <div className="tf-openui-muted">{str(step, 1)}</div>}
          </div>
        </li>
      ))}
    </ol>
  );
}

function Steps({ el }: Props) {
  return <StepsView steps={items(el, "StepsItem")} />;
}

function StepsItem({ el }: Props) {
  return <StepsView steps={[el]} />;
}

function Carousel({ el }: Props) {
  const slides = list(el, 0);
  const variant = oneOf(el, 1, ["card", "sunk"], "card");
  const [index, setIndex] = useState(0);
  if (slides.length === 0) {
    return null;
  }
  const current = Math.min(index, slides.length - 1);
  const slide = slides[current] ?? null;
  return (
    <div className="tf-openui-carousel">
      <section
        className={`tf-openui-slide tf-openui-surface-${variant} tf-openui-flex tf-openui-column`}
        aria-label={`Slide ${current + 1} of ${slides.length}`}
      >
        {isList(slide) ? renderList(slide) : renderValue(slide)}
      </section>
      <div className="tf-openui-carousel-nav">
        <button
          type="button"
          className="tf-icon-button"
          aria-label="Previous slide"
          disabled={current === 0}
          onClick={() => setIndex(current - 1)}
        >
          <ChevronIcon className="tf-openui-flip" />
        </button>
        <span className="tf-openui-muted">
          {current + 1} / {slides.length}
        </span>
        <button
          type="button"
          className="tf-icon-button"
          aria-label="Next slide"
          disabled={current === slides.length - 1}
          onClick={() => setIndex(current + 1)}
        >
          <ChevronIcon />
        </button>
      </div>
    </div>
  );
}

function Separator({ el }: Props) {
  const vertical = oneOf(el, 0, ["horizontal", "vertical"], "horizontal") === "vertical";
  const decorative = truthy(el.arg(1));
  return (
    <hr
      className={vertical ? "tf-openui-separator-vertical tf-openui-inline" : "tf-openui-separator"}
      aria-orientation={vertical ? "vertical" : undefined}
      aria-hidden={decorative || undefined}
    />
  );
}

function Modal({ el }: Props) {
  const runtime = useRuntime();
  const container = usePortalContainer();
  const binding = el.bindings[1] ?? null;
  const [closed, setClosed] = useState(false);
  const open = truthy(el.arg(1)) && !(binding === null && closed);
  const size = oneOf(el, 3, ["sm", "md", "lg"], "md");
  return (
    <Dialog.Root
      open={open}
      onOpenChange={(next) => {
        if (!next) {
          if (binding === null) {
            setClosed(true);
          } else {
            runtime.set(binding, false);
          }
        }
      }}
    >
      <Dialog.Portal container={container}>
        <Dialog.Overlay className="tf-overlay" />
        <Dialog.Content className={`tf-openui-modal tf-openui-modal-${size}`} aria-describedby={undefined}>
          <div className="tf-openui-modal-head">
            <Dialog.Title className="tf-openui-title">{str(el, 0)}</Dialog.Title>
            <Dialog.Close className="tf-icon-button" aria-label="Close">
              <XIcon />
            </Dialog.Close>
          </div>
          <div className="tf-openui-flex tf-openui-column tf-openui-modal-body">
            {renderList(list(el, 2))}
          </div>
        </Dialog.Content>
      </Dialog.Portal>
    </Dialog.Root>
  );
}

// ---------------------------------------------------------------------------------------------------------
// Content

const TEXT_SIZES = ["small", "default", "large", "small-heavy", "large-heavy"] as const;

function TextContent({ el }: Props) {
  return (
    <p className={`tf-openui-text tf-openui-text-${oneOf(el, 1, TEXT_SIZES, "default")}`}>{str(el, 0)}</p>
  );
}

function MarkDownRenderer({ el }: Props) {
  const { streaming } = useRuntime();
  const variant = oneOf(el, 1, ["clear", "card", "sunk"], "clear");
  return (
    <div className={`tf-openui-markdown tf-openui-surface-${variant}`}>
      <Markdown text={str(el, 0)} streaming={streaming} />
    </div>
  );
}

function CalloutBox({
  variant,
  title,
  description,
  onDismiss,
}: {
  readonly variant: string;
  readonly title: string;
  readonly description: string;
  readonly onDismiss?: () => void;
}) {
  return (
    <div className={`tf-openui-callout tf-openui-tone-${variant}`} role="note">
      <div className="tf-openui-callout-body">
        {title && <div className="tf-openui-callout-title">{title}</div>}
        {description && <div>{description}</div>}
      </div>
      {onDismiss && (
        <button type="button" className="tf-icon-button" aria-label="Dismiss" onClick={onDismiss}>
          <XIcon />
        </button>
      )}
    </div>
  );
}

function Callout({ el }: Props) {
  const runtime = useRuntime();
  const binding = el.bindings[3] ?? null;
  const visible = el.arg(3);
  if (visible !== null && !truthy(visible)) {
    return null; // shown unless `visible` is given and false
  }
  const variant = oneOf(el, 0, ["info", "warning", "error", "success", "neutral"], "info");
  return (
    <CalloutBox
      variant={variant === "error" ? "danger" : variant}
      title={str(el, 1)}
      description={str(el, 2)}
      onDismiss={binding === null ? undefined : () => runtime.set(binding, false)}
    />
  );
}

function TextCallout({ el }: Props) {
  const variant = oneOf(el, 0, ["neutral", "info", "warning", "success", "danger"], "neutral");
  return <CalloutBox variant={variant} title={str(el, 1)} description={str(el, 2)} />;
}

/** Only images the page may load (its CSP: same origin, data: and blob:); others show as a labelled link. */
function isLoadable(src: string): boolean {
  return /^data:image\//i.test(src) || /^blob:/i.test(src) || (src.startsWith("/") && !src.startsWith("//"));
}

function Picture({
  src,
  alt,
  caption,
}: {
  readonly src: string;
  readonly alt: string;
  readonly caption?: string;
}) {
  return (
    <figure className="tf-openui-figure">
      {isLoadable(src) ? (
        <img className="tf-openui-image" src={src} alt={alt} loading="lazy" />
      ) : (
        <div className="tf-openui-image-placeholder" role="img" aria-label={alt || "image"}>
          <span>{alt || "Image"}</span>
          {/^https?:\/\//i.test(src) && (
            <a href={src} target="_blank" rel="noopener noreferrer">
              Open image
            </a>
          )}
        </div>
      )}
      {caption && <figcaption className="tf-openui-muted">{caption}</figcaption>}
    </figure>
  );
}

function Image({ el }: Props) {
  return <Picture alt={str(el, 0)} src={str(el, 1)} />;
}

function ImageBlock({ el }: Props) {
  return <Picture src={str(el, 0)} alt={str(el, 1)} />;
}

function ImageGallery({ el }: Props) {
  return (
    <div className="tf-openui-gallery">
      {list(el, 0).map((image, index) =>
        isRecord(image) ? (
          <Picture
            // biome-ignore lint/suspicious/noArrayIndexKey: images have no other identity.
            key={index}
            src={toText(image.src ?? null)}
            alt={toText(image.alt ?? null)}
            caption={toText(image.details ?? null)}
          />
        ) : (
          renderValue(image, index)
        ),
      )}
    </div>
  );
}

function CodeBlock({ el }: Props) {
  const { streaming } = useRuntime();
  return <Code language={str(el, 0)} code={str(el, 1)} streaming={streaming} />;
}

// ---------------------------------------------------------------------------------------------------------
// Tables and tags

function Cell({ value }: { readonly value: Value }) {
  if (value instanceof UiElement || isList(value) || value instanceof Pending) {
    return <>{renderValue(value)}</>;
  }
  return <>{toText(value)}</>;
}

function Table({ el }: Props) {
  const columns = list(el, 0)
    .filter((column): column is UiElement => column instanceof UiElement && column.type === "Col")
    .map((column) => ({
      label: str(column, 0),
      cells: list(column, 1),
      type: oneOf(column, 2, ["string", "number", "action"], "string"),
    }));
  const rows = Math.min(2_000, Math.max(0, ...columns.map((column) => column.cells.length)));
  return (
    <div className="tf-openui-table-wrap">
      <table className="tf-openui-table">
        <thead>
          <tr>
            {columns.map((column, index) => (
              <th
                // biome-ignore lint/suspicious/noArrayIndexKey: labels may repeat.
                key={index}
                scope="col"
                className={column.type === "number" ? "tf-openui-number" : undefined}
              >
                {column.label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {Array.from({ length: rows }, (_, row) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: rows are positional.
            <tr key={row}>
              {columns.map((column, index) => (
                // biome-ignore lint/suspicious/noArrayIndexKey: columns are positional.
                <td key={index} className={column.type === "number" ? "tf-openui-number" : undefined}>
                  <Cell value={column.cells[row] ?? null} />
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function TagView({
  text,
  icon,
  size,
  variant,
}: {
  text: string;
  icon: string;
  size: string;
  variant: string;
}) {
  return (
    <span className={`tf-openui-tag tf-openui-tag-${size} tf-openui-tone-${variant} tf-openui-inline`}>
      {/* An icon name has no icon set to come from; a short symbol (an emoji) is shown as is. */}
      {icon && [...icon].length <= 2 && <span aria-hidden="true">{icon}</span>}
      {text}
    </span>
  );
}

function Tag({ el }: Props) {
  return (
    <TagView
      text={str(el, 0)}
      icon={str(el, 1)}
      size={oneOf(el, 2, ["sm", "md", "lg"], "md")}
      variant={oneOf(el, 3, ["neutral", "info", "success", "warning", "danger"], "neutral")}
    />
  );
}

function TagBlock({ el }: Props) {
  return (
    <div className="tf-openui-tags">
      {list(el, 0).map((tag, index) =>
        tag instanceof UiElement ? (
          renderValue(tag, index)
        ) : (
          // biome-ignore lint/suspicious/noArrayIndexKey: tags may repeat.
          <TagView key={index} text={toText(tag)} icon="" size="md" variant="neutral" />
        ),
      )}
    </div>
  );
}

// ---------------------------------------------------------------------------------------------------------
// Forms

const INPUTS = new Set(["Input", "TextArea", "Select"]);
/** Where the bound value sits in each input's signature (after name, …, rules). */
const VALUE_ARG = 4;

function fieldOf(field: Value): FieldInfo | null {
  const control = field instanceof UiElement && field.type === "FormControl" ? field : null;
  const input = control ? control.arg(1) : field;
  if (!(input instanceof UiElement) || !INPUTS.has(input.type)) {
    return null;
  }
  const binding = input.bindings[VALUE_ARG] ?? null;
  return {
    name: str(input, 0),
    label: control ? str(control, 0) : str(input, 0),
    rules: input.arg(3),
    binding,
    initial: binding === null ? toText(input.arg(VALUE_ARG)) : "",
  };
}

function Form({ el }: Props) {
  const runtime = useRuntime();
  const fields = list(el, 2);
  const infos = fields.map(fieldOf).filter((info): info is FieldInfo => info !== null);
  const [values, setValues] = useState<Readonly<Record<string, string>>>({});
  const [errors, setErrors] = useState<Readonly<Record<string, string>>>({});
  const fieldValue = (info: FieldInfo) =>
    info.binding === null ? (values[info.name] ?? info.initial) : toText(runtime.read(info.binding));
  const form: FormState = {
    name: str(el, 0),
    fields: infos,
    values,
    errors,
    setValue: (field, value) => {
      setValues((current) => ({ ...current, [field]: value }));
      form.clearError(field);
    },
    clearError: (field) =>
      setErrors((current) => {
        if (!(field in current)) {
          return current;
        }
        const { [field]: _, ...rest } = current;
        return rest;
      }),
    validate: () => {
      const found: Record<string, string> = {};
      for (const info of infos) {
        const problem = checkRules(fieldValue(info), info.rules);
        if (problem !== null) {
          found[info.name] = problem;
        }
      }
      setErrors(found);
      return Object.keys(found).length === 0;
    },
    current: () => infos.map((info) => [info.name, fieldValue(info)] as const),
  };
  return (
    <FormContext.Provider value={form}>
      <form
        className="tf-openui-form"
        aria-label={form.name || undefined}
        noValidate
        onSubmit={(event) => event.preventDefault()}
      >
        {renderList(fields)}
        {renderValue(el.arg(1))}
      </form>
    </FormContext.Provider>
  );
}

function FormControl({ el }: Props) {
  const id = useId();
  const form = useForm();
  const info = fieldOf(el);
  const hint = str(el, 2);
  const error = info === null ? undefined : form?.errors[info.name];
  const describedBy =
    [hint ? `${id}-hint` : "", error ? `${id}-error` : ""].filter(Boolean).join(" ") || undefined;
  const required = info !== null && isRecord(info.rules) && truthy(info.rules.required ?? null);
  return (
    <div className="tf-openui-field">
      <label className="tf-openui-label" htmlFor={id}>
        {str(el, 0)}
        {required && <span aria-hidden="true"> *</span>}
      </label>
      <FieldContext.Provider value={{ id, describedBy }}>{renderValue(el.arg(1))}</FieldContext.Provider>
      {hint && (
        <p id={`${id}-hint`} className="tf-openui-hint">
          {hint}
        </p>
      )}
      {error && (
        <p id={`${id}-error`} className="tf-openui-field-error" role="alert">
          {error}
        </p>
      )}
    </div>
  );
}

/** A field's value: its `$variable`, else its form's value, else its own. */
function useField(el: UiElement, numeric: boolean) {
  const runtime = useRuntime();
  const form = useForm();
  const field = useContext(FieldContext);
  const ownId = useId();
  const name = str(el, 0);
  const binding = el.bindings[VALUE_ARG] ?? null;
  const initial = binding === null ? toText(el.arg(VALUE_ARG)) : "";
  const [own, setOwn] = useState(initial);
  const value =
    binding !== null ? toText(runtime.read(binding)) : form !== null ? (form.values[name] ?? initial) : own;
  const setValue = (next: string) => {
    if (binding !== null) {
      runtime.set(
        binding,
        numeric && next.trim() !== "" && !Number.isNaN(Number(next)) ? Number(next) : next,
      );
      form?.clearError(name);
    } else if (form !== null) {
      form.setValue(name, next);
    } else {
      setOwn(next);
    }
  };
  const error = form?.errors[name];
  const rules = el.arg(3);
  return {
    name,
    value,
    setValue,
    error,
    common: {
      id: field?.id ?? ownId,
      name,
      "aria-label": field === null ? str(el, 1) || name : undefined,
      "aria-describedby": field?.describedBy,
      "aria-invalid": error ? true : undefined,
      required: isRecord(rules) && truthy(rules.required ?? null),
    },
    standalone: field === null,
  };
}

function FieldError({
  error,
  standalone,
}: {
  readonly error: string | undefined;
  readonly standalone: boolean;
}) {
  return standalone && error ? (
    <p className="tf-openui-field-error" role="alert">
      {error}
    </p>
  ) : null;
}

function Input({ el }: Props) {
  const type = oneOf(el, 2, ["text", "email", "password", "number", "url"], "text");
  const field = useField(el, type === "number");
  return (
    <>
      <input
        {...field.common}
        className="tf-openui-input"
        type={type}
        placeholder={str(el, 1) || undefined}
        value={field.value}
        onChange={(event) => field.setValue(event.target.value)}
      />
      <FieldError error={field.error} standalone={field.standalone} />
    </>
  );
}

function TextArea({ el }: Props) {
  const field = useField(el, false);
  return (
    <>
      <textarea
        {...field.common}
        className="tf-openui-input"
        placeholder={str(el, 1) || undefined}
        rows={Math.max(1, Math.min(30, num(el, 2, 3)))}
        value={field.value}
        onChange={(event) => field.setValue(event.target.value)}
      />
      <FieldError error={field.error} standalone={field.standalone} />
    </>
  );
}

function Select({ el }: Props) {
  const field = useField(el, false);
  const options = list(el, 1).map((item) =>
    item instanceof UiElement
      ? { value: str(item, 0), label: str(item, 1) || str(item, 0) }
      : { value: toText(item), label: toText(item) },
  );
  const placeholder = str(el, 2);
  return (
    <>
      <select
        {...field.common}
        className="tf-openui-input"
        value={field.value}
        onChange={(event) => field.setValue(event.target.value)}
      >
        {(placeholder || field.value === "") && (
          <option value="" disabled>
            {placeholder || "Choose…"}
          </option>
        )}
        {options.map((option, index) => (
          // biome-ignore lint/suspicious/noArrayIndexKey: option values may repeat.
          <option key={index} value={option.value}>
            {option.label}
          </option>
        ))}
      </select>
      <FieldError error={field.error} standalone={field.standalone} />
    </>
  );
}

function Buttons({ el }: Props) {
  const direction = oneOf(el, 1, ["row", "column"], "row");
  return <div className={`tf-openui-buttons tf-openui-${direction}`}>{renderList(list(el, 0))}</div>;
}

/** Why a button that messages the agent cannot now; null when it can. */
function useSend(): { readonly blocked: string | null; send(text: string): void } {
  const chat = useOptionalChatSession();
  const { streaming } = useRuntime();
  if (chat === null || chat.sessionId === null) {
    return { blocked: "not wired yet", send: () => {} };
  }
  const blocked =
    streaming || chat.snapshot.streaming
      ? "Wait until the agent has finished answering"
      : chat.batch.calls.length > 0
        ? "Answer what the agent asks first"
        : null;
  return {
    blocked,
    send: (text) => void chat.controller.send([{ type: "user.message", content: text }]),
  };
}

function openUrl(url: string): void {
  if (/^(https?:|mailto:)/i.test(url)) {
    window.open(url, "_blank", "noopener,noreferrer");
  }
}

function Button({ el }: Props) {
  const runtime = useRuntime();
  const form = useForm();
  const chat = useSend();
  const label = str(el, 0);
  const action = el.arg(1);
  const variant = oneOf(el, 2, ["primary", "secondary", "tertiary"], "secondary");
  const destructive = oneOf(el, 3, ["normal", "destructive"], "normal") === "destructive";
  const size = oneOf(el, 4, ["extra-small", "small", "medium", "large"], "medium");
  // Without an action a button sends its label (with its form's values); a string is a message to send.
  const steps: readonly ActionStep[] =
    action instanceof UiAction
      ? action.steps
      : [{ type: "assistant", message: typeof action === "string" && action !== "" ? action : label }];
  const sends = steps.some((step) => step.type === "assistant");
  const withForm = form !== null && (action === null || variant === "primary");
  const blocked = sends ? chat.blocked : null;
  const onClick = () => {
    if (blocked !== null) {
      return;
    }
    if (variant === "primary" && form !== null && !form.validate()) {
      return;
    }
    const changed = new Map<string, Value>();
    const read: StateReader = (name) =>
      changed.has(name) ? (changed.get(name) ?? null) : runtime.read(name);
    const messages: string[] = [];
    for (const step of steps) {
      if (step.type === "set") {
        const value = step.value(read);
        changed.set(step.name, value);
        runtime.set(step.name, value);
      } else if (step.type === "reset") {
        for (const name of step.names) {
          changed.set(name, runtime.defaultOf(name));
        }
        runtime.reset(step.names);
      } else if (step.type === "url") {
        openUrl(step.url);
      } else if (step.message.trim() !== "") {
        messages.push(step.message);
      }
    }
    if (messages.length > 0) {
      chat.send(
        composeMessage(
          messages.join("\n\n"),
          withForm && form ? { name: form.name, values: form.current() } : null,
        ),
      );
    }
  };
  const tone = destructive
    ? "tf-button-danger"
    : variant === "primary"
      ? "tf-button-primary"
      : variant === "tertiary"
        ? "tf-button-quiet"
        : "";
  return (
    <button
      type="button"
      className={`tf-button ${tone} tf-openui-button tf-openui-button-${size} tf-openui-inline`}
      aria-disabled={blocked === null ? undefined : true}
      title={blocked ?? undefined}
      onClick={onClick}
    >
      {label}
    </button>
  );
}

// ---------------------------------------------------------------------------------------------------------

const REGISTRY: Record<string, (props: Props) => ReactNode> = {
  Stack,
  Tabs,
  TabItem,
  Accordion,
  AccordionItem,
  Steps,
  StepsItem,
  Carousel,
  Separator,
  Modal,
  Card,
  CardHeader,
  TextContent,
  MarkDownRenderer,
  Callout,
  TextCallout,
  Image,
  ImageBlock,
  ImageGallery,
  CodeBlock,
  Table,
  Col: OutsideParent,
  BarChart,
  HorizontalBarChart,
  LineChart,
  AreaChart,
  RadarChart,
  Series: OutsideParent,
  PieChart,
  RadialChart,
  SingleStackedBarChart,
  Slice: OutsideParent,
  ScatterChart,
  ScatterSeries: OutsideParent,
  Point: OutsideParent,
  TagBlock,
  Tag,
  Form,
  FormControl,
  Input,
  TextArea,
  Select,
  SelectItem: OutsideParent,
  Buttons,
  Button,
};
