// The charts of the OpenUI language as plain SVG (no charting library): bars (vertical, horizontal,
// grouped or stacked), lines and areas (linear, natural, step), radar, pie and donut, radial, one stacked bar
// and scatter. Every mark has a native tooltip (<title>); colours come from --tf-openui-c0…c7.

import { type ReactNode, type Ref, useCallback, useRef, useState } from "react";
import { formatNumber, isList, isRecord, toNumber, toText, UiElement, type Value } from "./evaluate.js";
import { list, oneOf, str } from "./runtime.js";

/** The drawing's width before the chart is measured; then its box's width, so text keeps its size. */
const DEFAULT_WIDTH = 600;
const PALETTE = 8;

interface Series {
  readonly name: string;
  readonly values: readonly number[];
}

function color(index: number): string {
  return `var(--tf-openui-c${index % PALETTE})`;
}

/** The width of the chart's box (in 10 px steps), and the ref that measures it. */
function useWidth(): [Ref<HTMLElement>, number, number] {
  const [width, setWidth] = useState(DEFAULT_WIDTH);
  const observer = useRef<ResizeObserver | null>(null);
  const ref = useCallback((node: HTMLElement | null) => {
    observer.current?.disconnect();
    observer.current = null;
    if (node === null || typeof ResizeObserver === "undefined") {
      return;
    }
    const measure = (measured: number) => {
      if (measured > 0) {
        setWidth(Math.max(260, Math.min(960, Math.round(measured / 10) * 10)));
      }
    };
    measure(node.clientWidth);
    observer.current = new ResizeObserver((entries) => measure(entries[0]?.contentRect.width ?? 0));
    observer.current.observe(node);
  }, []);
  return [ref, width, Math.round(Math.max(200, Math.min(320, width * 0.55)))];
}

function readSeries(value: Value): Series[] {
  const items = isList(value) ? value : value === null ? [] : [value];
  const series: Series[] = [];
  for (const item of items) {
    if (item instanceof UiElement) {
      const values = item.arg(1);
      series.push({ name: toText(item.arg(0)), values: isList(values) ? values.map(toNumber) : [] });
    } else if (isRecord(item)) {
      const values = item.values ?? item.data ?? null;
      series.push({ name: toText(item.name ?? null), values: isList(values) ? values.map(toNumber) : [] });
    }
  }
  return series;
}

function readLabels(value: Value): string[] {
  return isList(value) ? value.map(toText) : [];
}

/** Labels and values of the pie-like charts: `(labels, values)` or `([Slice(label, value), ...])`. */
function readSlices(el: UiElement): { labels: string[]; values: number[] } {
  const first = list(el, 0);
  const sliced = first.filter(
    (item) => (item instanceof UiElement && item.type === "Slice") || isRecord(item),
  );
  if (sliced.length > 0 && sliced.length === first.length) {
    return {
      labels: sliced.map((item) =>
        item instanceof UiElement ? toText(item.arg(0)) : isRecord(item) ? toText(item.label ?? null) : "",
      ),
      values: sliced.map((item) =>
        Math.max(
          0,
          item instanceof UiElement
            ? toNumber(item.arg(1))
            : isRecord(item)
              ? toNumber(item.value ?? null)
              : 0,
        ),
      ),
    };
  }
  const values = list(el, 1).map((value) => Math.max(0, toNumber(value)));
  return { labels: first.map(toText).slice(0, values.length), values };
}

/** About `count` round tick values covering [min, max]. */
export function niceTicks(min: number, max: number, count = 5): number[] {
  let lo = Math.min(min, max);
  let hi = Math.max(min, max);
  if (lo === hi) {
    if (hi > 0) {
      lo = 0;
    } else if (hi < 0) {
      hi = 0;
    } else {
      hi = 1;
    }
  }
  const raw = (hi - lo) / count;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = ([1, 2, 2.5, 5, 10].find((factor) => factor * magnitude >= raw) ?? 10) * magnitude;
  const ticks: number[] = [];
  for (let tick = Math.floor(lo / step) * step; tick <= hi + step * 1e-9 && ticks.length < 50; tick += step) {
    ticks.push(Math.round(tick / step) * step);
  }
  if ((ticks[ticks.length - 1] ?? hi) < hi) {
    ticks.push((ticks[ticks.length - 1] ?? lo) + step);
  }
  return ticks;
}

function scale(
  domain: readonly [number, number],
  range: readonly [number, number],
): (value: number) => number {
  const [d0, d1] = domain;
  const [r0, r1] = range;
  const span = d1 - d0 || 1;
  return (value) => r0 + ((value - d0) / span) * (r1 - r0);
}

function clipLabel(text: string, chars: number): string {
  const max = Math.max(3, Math.floor(chars));
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function Legend({ names }: { readonly names: readonly string[] }) {
  if (names.length < 2) {
    return null;
  }
  return (
    <ul className="tf-openui-legend">
      {names.map((name, index) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: series have no other identity.
        <li key={index}>
          <span className="tf-openui-swatch" style={{ background: color(index) }} />
          {name}
        </li>
      ))}
    </ul>
  );
}

function Frame({
  kind,
  title,
  width,
  height,
  measure,
  legend,
  children,
}: {
  readonly kind: string;
  readonly title: string;
  readonly width: number;
  readonly height: number;
  readonly measure?: Ref<HTMLElement>;
  readonly legend?: ReactNode;
  readonly children: ReactNode;
}) {
  return (
    <figure className="tf-openui-chart" data-chart={kind} ref={measure}>
      <svg viewBox={`0 0 ${width} ${height}`} role="img" aria-label={title} className="tf-openui-svg">
        {children}
      </svg>
      {legend}
    </figure>
  );
}

function Empty({ kind }: { readonly kind: string }) {
  return (
    <figure className="tf-openui-chart tf-openui-chart-empty" data-chart={kind}>
      No data
    </figure>
  );
}

function AxisTitles({ xLabel, yLabel, W, H }: { xLabel: string; yLabel: string; W: number; H: number }) {
  return (
    <>
      {xLabel && (
        <text className="tf-openui-axis-title" x={W / 2} y={H - 8} textAnchor="middle">
          {xLabel}
        </text>
      )}
      {yLabel && (
        <text
          className="tf-openui-axis-title"
          transform={`translate(14 ${H / 2}) rotate(-90)`}
          textAnchor="middle"
        >
          {yLabel}
        </text>
      )}
    </>
  );
}

/** The value range of bars: grouped, each value; stacked, the positive and negative sums per label. */
function barDomain(labels: number, series: readonly Series[], stacked: boolean): [number, number] {
  let lo = 0;
  let hi = 0;
  for (let i = 0; i < labels; i++) {
    let up = 0;
    let down = 0;
    for (const one of series) {
      const value = one.values[i] ?? 0;
      if (stacked) {
        if (value >= 0) {
          up += value;
        } else {
          down += value;
        }
      } else {
        hi = Math.max(hi, value);
        lo = Math.min(lo, value);
      }
    }
    hi = Math.max(hi, up);
    lo = Math.min(lo, down);
  }
  return [lo, hi];
}

interface Bar {
  readonly key: string;
  readonly series: number;
  readonly label: string;
  readonly value: number;
  /** Along the label axis: offset and thickness. */
  readonly at: number;
  readonly size: number;
  /** Along the value axis: from and to, in data units. */
  readonly from: number;
  readonly to: number;
}

/** The bars as rectangles: along x (a column chart) or, `horizontal`, along y with the values on x. */
function BarRects({
  bars,
  series,
  offset,
  toPixels,
  horizontal = false,
}: {
  readonly bars: readonly Bar[];
  readonly series: readonly Series[];
  /** Where the label axis starts, in pixels. */
  readonly offset: number;
  /** The value axis's scale. */
  readonly toPixels: (value: number) => number;
  readonly horizontal?: boolean;
}) {
  return bars.map((bar) => {
    const band = { at: offset + bar.at, size: bar.size };
    const extent = {
      at: Math.min(toPixels(bar.from), toPixels(bar.to)),
      size: Math.abs(toPixels(bar.to) - toPixels(bar.from)),
    };
    const [onX, onY] = horizontal ? [extent, band] : [band, extent];
    return (
      <rect
        key={bar.key}
        className="tf-openui-bar"
        x={onX.at}
        width={onX.size}
        y={onY.at}
        height={onY.size}
        style={{ fill: color(bar.series) }}
      >
        <title>{`${bar.label} · ${series[bar.series]?.name ?? ""}: ${formatNumber(bar.value)}`}</title>
      </rect>
    );
  });
}

function layoutBars(
  labels: readonly string[],
  series: readonly Series[],
  stacked: boolean,
  band: number,
): Bar[] {
  const bars: Bar[] = [];
  const inner = band * 0.75;
  labels.forEach((label, i) => {
    let up = 0;
    let down = 0;
    series.forEach((one, s) => {
      const value = one.values[i] ?? 0;
      if (stacked) {
        const from = value >= 0 ? up : down;
        const to = from + value;
        if (value >= 0) {
          up = to;
        } else {
          down = to;
        }
        bars.push({
          key: `${i}-${s}`,
          series: s,
          label,
          value,
          at: i * band + (band - inner) / 2,
          size: inner,
          from,
          to,
        });
      } else {
        const size = inner / series.length;
        bars.push({
          key: `${i}-${s}`,
          series: s,
          label,
          value,
          at: i * band + (band - inner) / 2 + s * size,
          size: Math.max(1, size - 1),
          from: 0,
          to: value,
        });
      }
    });
  });
  return bars;
}

export function BarChart({ el }: { readonly el: UiElement }) {
  const [measure, W, H] = useWidth();
  const labels = readLabels(el.arg(0));
  const series = readSeries(el.arg(1));
  if (labels.length === 0 || series.length === 0) {
    return <Empty kind="bar" />;
  }
  const stacked = oneOf(el, 2, ["grouped", "stacked"], "grouped") === "stacked";
  const xLabel = str(el, 3);
  const yLabel = str(el, 4);
  const margin = { top: 12, right: 12, bottom: xLabel ? 46 : 28, left: yLabel ? 62 : 46 };
  const ticks = niceTicks(...barDomain(labels.length, series, stacked));
  const y = scale([ticks[0] ?? 0, ticks[ticks.length - 1] ?? 1], [H - margin.bottom, margin.top]);
  const band = (W - margin.left - margin.right) / labels.length;
  const every = Math.max(1, Math.ceil(labels.length / Math.floor((W - margin.left) / 40)));
  return (
    <Frame
      kind="bar"
      measure={measure}
      width={W}
      height={H}
      title={`Bar chart: ${series.map((one) => one.name).join(", ")}`}
      legend={<Legend names={series.map((one) => one.name)} />}
    >
      {ticks.map((tick) => (
        <g key={tick}>
          <line className="tf-openui-grid" x1={margin.left} x2={W - margin.right} y1={y(tick)} y2={y(tick)} />
          <text
            className="tf-openui-axis"
            x={margin.left - 6}
            y={y(tick)}
            textAnchor="end"
            dominantBaseline="middle"
          >
            {formatNumber(tick)}
          </text>
        </g>
      ))}
      <BarRects
        bars={layoutBars(labels, series, stacked, band)}
        series={series}
        offset={margin.left}
        toPixels={y}
      />
      {labels.map((label, i) =>
        i % every === 0 ? (
          <text
            // biome-ignore lint/suspicious/noArrayIndexKey: labels may repeat.
            key={i}
            className="tf-openui-axis"
            x={margin.left + i * band + band / 2}
            y={H - margin.bottom + 16}
            textAnchor="middle"
          >
            {clipLabel(label, (band * every) / 7)}
          </text>
        ) : null,
      )}
      <AxisTitles xLabel={xLabel} yLabel={yLabel} W={W} H={H} />
    </Frame>
  );
}

export function HorizontalBarChart({ el }: { readonly el: UiElement }) {
  const [measure, W] = useWidth();
  const labels = readLabels(el.arg(0));
  const series = readSeries(el.arg(1));
  if (labels.length === 0 || series.length === 0) {
    return <Empty kind="horizontal-bar" />;
  }
  const stacked = oneOf(el, 2, ["grouped", "stacked"], "grouped") === "stacked";
  const xLabel = str(el, 3);
  const yLabel = str(el, 4);
  const labelSpace = Math.min(W * 0.38, 200);
  const chars = Math.floor((labelSpace - 16) / 6.6);
  const longest = Math.max(...labels.map((label) => Math.min(label.length, chars)));
  const margin = {
    top: 8,
    right: 16,
    bottom: xLabel ? 46 : 28,
    left: Math.min(labelSpace, 16 + longest * 6.6) + (yLabel ? 20 : 0),
  };
  const band = stacked ? 28 : Math.max(22, 10 + series.length * 12);
  const height = margin.top + margin.bottom + band * labels.length;
  const tickCount = Math.max(2, Math.min(6, Math.floor((W - margin.left - margin.right) / 60)));
  const ticks = niceTicks(...barDomain(labels.length, series, stacked), tickCount);
  const x = scale([ticks[0] ?? 0, ticks[ticks.length - 1] ?? 1], [margin.left, W - margin.right]);
  return (
    <Frame
      kind="horizontal-bar"
      measure={measure}
      width={W}
      title={`Horizontal bar chart: ${series.map((one) => one.name).join(", ")}`}
      height={height}
      legend={<Legend names={series.map((one) => one.name)} />}
    >
      {ticks.map((tick) => (
        <g key={tick}>
          <line
            className="tf-openui-grid"
            x1={x(tick)}
            x2={x(tick)}
            y1={margin.top}
            y2={height - margin.bottom}
          />
          <text className="tf-openui-axis" x={x(tick)} y={height - margin.bottom + 16} textAnchor="middle">
            {formatNumber(tick)}
          </text>
        </g>
      ))}
      <BarRects
        bars={layoutBars(labels, series, stacked, band)}
        series={series}
        offset={margin.top}
        toPixels={x}
        horizontal
      />
      {labels.map((label, i) => (
        <text
          // biome-ignore lint/suspicious/noArrayIndexKey: labels may repeat.
          key={i}
          className="tf-openui-axis"
          x={margin.left - 6}
          y={margin.top + i * band + band / 2}
          textAnchor="end"
          dominantBaseline="middle"
        >
          <title>{label}</title>
          {clipLabel(label, chars)}
        </text>
      ))}
      {xLabel && (
        <text
          className="tf-openui-axis-title"
          x={(margin.left + W - margin.right) / 2}
          y={height - 8}
          textAnchor="middle"
        >
          {xLabel}
        </text>
      )}
      {yLabel && (
        <text
          className="tf-openui-axis-title"
          transform={`translate(14 ${height / 2}) rotate(-90)`}
          textAnchor="middle"
        >
          {yLabel}
        </text>
      )}
    </Frame>
  );
}

type Curve = "linear" | "natural" | "step";

/** An SVG path through `points`: straight, a monotone cubic ("natural"), or steps. */
export function linePath(points: readonly (readonly [number, number])[], curve: Curve): string {
  const [first] = points;
  if (first === undefined) {
    return "";
  }
  const f = (n: number) => formatNumber(Math.round(n * 100) / 100);
  let d = `M${f(first[0])},${f(first[1])}`;
  if (curve === "step") {
    for (let i = 1; i < points.length; i++) {
      const [x, y] = points[i] as readonly [number, number];
      d += `H${f(x)}V${f(y)}`;
    }
    return d;
  }
  if (curve === "linear" || points.length < 3) {
    for (const [x, y] of points.slice(1)) {
      d += `L${f(x)},${f(y)}`;
    }
    return d;
  }
  // Fritsch–Carlson monotone tangents: smooth, without overshooting the data.
  const n = points.length;
  const slopes: number[] = [];
  for (let i = 0; i < n - 1; i++) {
    const [x0, y0] = points[i] as readonly [number, number];
    const [x1, y1] = points[i + 1] as readonly [number, number];
    slopes.push((y1 - y0) / (x1 - x0 || 1));
  }
  const tangents = points.map((_, i) => {
    if (i === 0) {
      return slopes[0] ?? 0;
    }
    if (i === n - 1) {
      return slopes[n - 2] ?? 0;
    }
    const a = slopes[i - 1] ?? 0;
    const b = slopes[i] ?? 0;
    return a * b <= 0 ? 0 : (a + b) / 2;
  });
  for (let i = 0; i < n - 1; i++) {
    const s = slopes[i] ?? 0;
    if (s === 0) {
      tangents[i] = 0;
      tangents[i + 1] = 0;
      continue;
    }
    const a = (tangents[i] ?? 0) / s;
    const b = (tangents[i + 1] ?? 0) / s;
    const h = a * a + b * b;
    if (h > 9) {
      const t = 3 / Math.sqrt(h);
      tangents[i] = t * a * s;
      tangents[i + 1] = t * b * s;
    }
  }
  for (let i = 0; i < n - 1; i++) {
    const [x0, y0] = points[i] as readonly [number, number];
    const [x1, y1] = points[i + 1] as readonly [number, number];
    const dx = (x1 - x0) / 3;
    d += `C${f(x0 + dx)},${f(y0 + (tangents[i] ?? 0) * dx)},${f(x1 - dx)},${f(y1 - (tangents[i + 1] ?? 0) * dx)},${f(x1)},${f(y1)}`;
  }
  return d;
}

function LineLike({ el, area }: { readonly el: UiElement; readonly area: boolean }) {
  const [measure, W, H] = useWidth();
  const kind = area ? "area" : "line";
  const labels = readLabels(el.arg(0));
  const series = readSeries(el.arg(1));
  if (labels.length === 0 || series.length === 0) {
    return <Empty kind={kind} />;
  }
  const curve = oneOf<Curve>(el, 2, ["linear", "natural", "step"], "linear");
  const xLabel = str(el, 3);
  const yLabel = str(el, 4);
  const margin = { top: 12, right: 16, bottom: xLabel ? 46 : 28, left: yLabel ? 62 : 46 };
  const all = series.flatMap((one) => one.values.slice(0, labels.length));
  const ticks = niceTicks(Math.min(0, ...all), Math.max(0, ...all));
  const y = scale([ticks[0] ?? 0, ticks[ticks.length - 1] ?? 1], [H - margin.bottom, margin.top]);
  const step = labels.length > 1 ? (W - margin.left - margin.right) / (labels.length - 1) : 0;
  const x = (i: number) =>
    labels.length > 1 ? margin.left + i * step : (margin.left + W - margin.right) / 2;
  const every = Math.max(1, Math.ceil(labels.length / Math.floor((W - margin.left) / 48)));
  const baseline = y(Math.max(ticks[0] ?? 0, Math.min(0, ticks[ticks.length - 1] ?? 0)));
  return (
    <Frame
      kind={kind}
      measure={measure}
      width={W}
      height={H}
      title={`${area ? "Area" : "Line"} chart: ${series.map((one) => one.name).join(", ")}`}
      legend={<Legend names={series.map((one) => one.name)} />}
    >
      {ticks.map((tick) => (
        <g key={tick}>
          <line className="tf-openui-grid" x1={margin.left} x2={W - margin.right} y1={y(tick)} y2={y(tick)} />
          <text
            className="tf-openui-axis"
            x={margin.left - 6}
            y={y(tick)}
            textAnchor="end"
            dominantBaseline="middle"
          >
            {formatNumber(tick)}
          </text>
        </g>
      ))}
      {series.map((one, s) => {
        const points = one.values.slice(0, labels.length).map((value, i) => [x(i), y(value)] as const);
        const d = linePath(points, curve);
        const last = points[points.length - 1];
        const first = points[0];
        return (
          // biome-ignore lint/suspicious/noArrayIndexKey: series have no other identity.
          <g key={s} style={{ color: color(s) }}>
            {area && first && last && (
              <path className="tf-openui-area" d={`${d}L${last[0]},${baseline}L${first[0]},${baseline}Z`} />
            )}
            <path className="tf-openui-line" d={d} />
            {points.map(([px, py], i) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: one point per label.
              <circle key={i} className="tf-openui-dot" cx={px} cy={py} r={labels.length > 40 ? 1.5 : 3}>
                <title>{`${labels[i] ?? ""} · ${one.name}: ${formatNumber(one.values[i] ?? 0)}`}</title>
              </circle>
            ))}
          </g>
        );
      })}
      {labels.map((label, i) =>
        i % every === 0 ? (
          // biome-ignore lint/suspicious/noArrayIndexKey: labels may repeat.
          <text key={i} className="tf-openui-axis" x={x(i)} y={H - margin.bottom + 16} textAnchor="middle">
            {clipLabel(label, (step * every) / 7 || 16)}
          </text>
        ) : null,
      )}
      <AxisTitles xLabel={xLabel} yLabel={yLabel} W={W} H={H} />
    </Frame>
  );
}

export function LineChart({ el }: { readonly el: UiElement }) {
  return <LineLike el={el} area={false} />;
}

export function AreaChart({ el }: { readonly el: UiElement }) {
  return <LineLike el={el} area />;
}

export function RadarChart({ el }: { readonly el: UiElement }) {
  const [measure, W, H] = useWidth();
  const labels = readLabels(el.arg(0));
  const series = readSeries(el.arg(1));
  if (labels.length === 0 || series.length === 0) {
    return <Empty kind="radar" />;
  }
  const cx = W / 2;
  const cy = H / 2;
  const radius = H / 2 - 34;
  const ticks = niceTicks(0, Math.max(0, ...series.flatMap((one) => one.values)), 4);
  const top = ticks[ticks.length - 1] || 1;
  const angle = (i: number) => -Math.PI / 2 + (i * 2 * Math.PI) / labels.length;
  const at = (i: number, value: number): [number, number] => {
    const r = (Math.max(0, value) / top) * radius;
    return [cx + r * Math.cos(angle(i)), cy + r * Math.sin(angle(i))];
  };
  const ring = (value: number) => labels.map((_, i) => at(i, value).join(",")).join(" ");
  return (
    <Frame
      kind="radar"
      measure={measure}
      width={W}
      height={H}
      title={`Radar chart: ${series.map((one) => one.name).join(", ")}`}
      legend={<Legend names={series.map((one) => one.name)} />}
    >
      {ticks.slice(1).map((tick) => (
        <polygon key={tick} className="tf-openui-grid tf-openui-ring" points={ring(tick)} />
      ))}
      {labels.map((label, i) => {
        const [lx, ly] = at(i, top * 1.12);
        const [ex, ey] = at(i, top);
        const cos = Math.cos(angle(i));
        return (
          // biome-ignore lint/suspicious/noArrayIndexKey: labels may repeat.
          <g key={i}>
            <line className="tf-openui-grid" x1={cx} y1={cy} x2={ex} y2={ey} />
            <text
              className="tf-openui-axis"
              x={lx}
              y={ly}
              textAnchor={Math.abs(cos) < 0.2 ? "middle" : cos > 0 ? "start" : "end"}
              dominantBaseline="middle"
            >
              {clipLabel(label, 18)}
            </text>
          </g>
        );
      })}
      {series.map((one, s) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: series have no other identity.
        <g key={s} style={{ color: color(s) }}>
          <polygon
            className="tf-openui-radar"
            points={labels.map((_, i) => at(i, one.values[i] ?? 0).join(",")).join(" ")}
          />
          {labels.map((label, i) => {
            const [px, py] = at(i, one.values[i] ?? 0);
            return (
              // biome-ignore lint/suspicious/noArrayIndexKey: one point per label.
              <circle key={i} className="tf-openui-dot" cx={px} cy={py} r={3}>
                <title>{`${label} · ${one.name}: ${formatNumber(one.values[i] ?? 0)}`}</title>
              </circle>
            );
          })}
        </g>
      ))}
    </Frame>
  );
}

function SliceLegend({
  labels,
  values,
}: {
  readonly labels: readonly string[];
  readonly values: readonly number[];
}) {
  const total = values.reduce((sum, value) => sum + value, 0) || 1;
  return (
    <ul className="tf-openui-legend">
      {labels.map((label, index) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: labels may repeat.
        <li key={index}>
          <span className="tf-openui-swatch" style={{ background: color(index) }} />
          {label}
          <span className="tf-openui-muted">
            {formatNumber(values[index] ?? 0)} ({Math.round(((values[index] ?? 0) / total) * 100)}%)
          </span>
        </li>
      ))}
    </ul>
  );
}

function arc(cx: number, cy: number, r: number, inner: number, start: number, end: number): string {
  const point = (radius: number, angle: number) =>
    `${formatNumber(cx + radius * Math.cos(angle))},${formatNumber(cy + radius * Math.sin(angle))}`;
  const large = end - start > Math.PI ? 1 : 0;
  if (inner <= 0) {
    return `M${cx},${cy}L${point(r, start)}A${r},${r} 0 ${large} 1 ${point(r, end)}Z`;
  }
  return `M${point(r, start)}A${r},${r} 0 ${large} 1 ${point(r, end)}L${point(inner, end)}A${inner},${inner} 0 ${large} 0 ${point(inner, start)}Z`;
}

export function PieChart({ el }: { readonly el: UiElement }) {
  const { labels, values } = readSlices(el);
  const total = values.reduce((sum, value) => sum + value, 0);
  if (values.length === 0 || total <= 0) {
    return <Empty kind="pie" />;
  }
  const sliced =
    el.arg(0) !== null && list(el, 0).some((item) => item instanceof UiElement || isRecord(item));
  const donut = oneOf(el, sliced && el.arg(2) === null ? 1 : 2, ["pie", "donut"], "pie") === "donut";
  const size = 240;
  const r = size / 2 - 6;
  const inner = donut ? r * 0.58 : 0;
  let angle = -Math.PI / 2;
  return (
    <Frame
      kind={donut ? "donut" : "pie"}
      title={`${donut ? "Donut" : "Pie"} chart`}
      width={size}
      height={size}
      legend={<SliceLegend labels={labels} values={values} />}
    >
      {values.map((value, index) => {
        const start = angle;
        const sweep = (value / total) * 2 * Math.PI;
        angle += sweep;
        const title = (
          <title key="title">{`${labels[index] ?? ""}: ${formatNumber(value)} (${Math.round((value / total) * 100)}%)`}</title>
        );
        if (value <= 0) {
          return null;
        }
        return sweep >= 2 * Math.PI - 1e-6 ? (
          // biome-ignore lint/suspicious/noArrayIndexKey: labels may repeat.
          <g key={index} style={{ color: color(index) }}>
            <circle className="tf-openui-slice" cx={size / 2} cy={size / 2} r={r} />
            {donut && <circle className="tf-openui-hole" cx={size / 2} cy={size / 2} r={inner} />}
            {title}
          </g>
        ) : (
          <path
            // biome-ignore lint/suspicious/noArrayIndexKey: labels may repeat.
            key={index}
            className="tf-openui-slice"
            style={{ color: color(index) }}
            d={arc(size / 2, size / 2, r, inner, start, start + sweep)}
          >
            {title}
          </path>
        );
      })}
    </Frame>
  );
}

export function RadialChart({ el }: { readonly el: UiElement }) {
  const { labels, values } = readSlices(el);
  if (values.length === 0) {
    return <Empty kind="radial" />;
  }
  const size = 240;
  const max = Math.max(...values) || 1;
  const thickness = Math.min(18, (size / 2 - 20) / values.length - 4);
  return (
    <Frame
      kind="radial"
      title="Radial chart"
      width={size}
      height={size}
      legend={<SliceLegend labels={labels} values={values} />}
    >
      {values.map((value, index) => {
        const r = size / 2 - 8 - index * (thickness + 4) - thickness / 2;
        const circumference = 2 * Math.PI * r;
        return (
          // biome-ignore lint/suspicious/noArrayIndexKey: labels may repeat.
          <g key={index} style={{ color: color(index) }} transform={`rotate(-90 ${size / 2} ${size / 2})`}>
            <circle className="tf-openui-track" cx={size / 2} cy={size / 2} r={r} strokeWidth={thickness} />
            <circle
              className="tf-openui-radial"
              cx={size / 2}
              cy={size / 2}
              r={r}
              strokeWidth={thickness}
              strokeDasharray={`${(value / max) * circumference} ${circumference}`}
            >
              <title>{`${labels[index] ?? ""}: ${formatNumber(value)}`}</title>
            </circle>
          </g>
        );
      })}
    </Frame>
  );
}

export function SingleStackedBarChart({ el }: { readonly el: UiElement }) {
  const { labels, values } = readSlices(el);
  const total = values.reduce((sum, value) => sum + value, 0);
  if (values.length === 0 || total <= 0) {
    return <Empty kind="single-stacked-bar" />;
  }
  return (
    <figure className="tf-openui-chart" data-chart="single-stacked-bar">
      <div className="tf-openui-stacked" role="img" aria-label="Stacked bar">
        {values.map((value, index) =>
          value > 0 ? (
            <span
              // biome-ignore lint/suspicious/noArrayIndexKey: labels may repeat.
              key={index}
              title={`${labels[index] ?? ""}: ${formatNumber(value)} (${Math.round((value / total) * 100)}%)`}
              style={{ width: `${(value / total) * 100}%`, background: color(index) }}
            />
          ) : null,
        )}
      </div>
      <SliceLegend labels={labels} values={values} />
    </figure>
  );
}

export function ScatterChart({ el }: { readonly el: UiElement }) {
  const [measure, W, H] = useWidth();
  const datasets = list(el, 0).flatMap((item) => {
    if (!(item instanceof UiElement)) {
      return [];
    }
    const points = (isList(item.arg(1)) ? (item.arg(1) as readonly Value[]) : []).flatMap((point) => {
      if (point instanceof UiElement) {
        return [
          {
            x: toNumber(point.arg(0)),
            y: toNumber(point.arg(1)),
            z: point.arg(2) === null ? null : toNumber(point.arg(2)),
          },
        ];
      }
      if (isRecord(point)) {
        return [
          {
            x: toNumber(point.x ?? null),
            y: toNumber(point.y ?? null),
            z: point.z == null ? null : toNumber(point.z),
          },
        ];
      }
      return [];
    });
    return [{ name: toText(item.arg(0)), points }];
  });
  const all = datasets.flatMap((set) => set.points);
  if (all.length === 0) {
    return <Empty kind="scatter" />;
  }
  const xLabel = str(el, 1);
  const yLabel = str(el, 2);
  const margin = { top: 12, right: 16, bottom: xLabel ? 46 : 28, left: yLabel ? 62 : 46 };
  const xTicks = niceTicks(
    Math.min(...all.map((p) => p.x)),
    Math.max(...all.map((p) => p.x)),
    Math.max(2, Math.min(8, Math.floor((W - margin.left - margin.right) / 70))),
  );
  const yTicks = niceTicks(Math.min(...all.map((p) => p.y)), Math.max(...all.map((p) => p.y)));
  const x = scale([xTicks[0] ?? 0, xTicks[xTicks.length - 1] ?? 1], [margin.left, W - margin.right]);
  const y = scale([yTicks[0] ?? 0, yTicks[yTicks.length - 1] ?? 1], [H - margin.bottom, margin.top]);
  const zs = all.flatMap((p) => (p.z === null ? [] : [Math.abs(p.z)]));
  const zMax = Math.max(1e-9, ...zs);
  const radius = (z: number | null) => (z === null ? 4 : 3 + Math.sqrt(Math.abs(z) / zMax) * 11);
  return (
    <Frame
      kind="scatter"
      measure={measure}
      width={W}
      height={H}
      title={`Scatter chart: ${datasets.map((set) => set.name).join(", ")}`}
      legend={<Legend names={datasets.map((set) => set.name)} />}
    >
      {yTicks.map((tick) => (
        <g key={`y${tick}`}>
          <line className="tf-openui-grid" x1={margin.left} x2={W - margin.right} y1={y(tick)} y2={y(tick)} />
          <text
            className="tf-openui-axis"
            x={margin.left - 6}
            y={y(tick)}
            textAnchor="end"
            dominantBaseline="middle"
          >
            {formatNumber(tick)}
          </text>
        </g>
      ))}
      {xTicks.map((tick) => (
        <text
          key={`x${tick}`}
          className="tf-openui-axis"
          x={x(tick)}
          y={H - margin.bottom + 16}
          textAnchor="middle"
        >
          {formatNumber(tick)}
        </text>
      ))}
      {datasets.map((set, s) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: datasets have no other identity.
        <g key={s} style={{ color: color(s) }}>
          {set.points.map((point, i) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: points have no other identity.
            <circle key={i} className="tf-openui-point" cx={x(point.x)} cy={y(point.y)} r={radius(point.z)}>
              <title>{`${set.name}: (${formatNumber(point.x)}, ${formatNumber(point.y)}${point.z === null ? "" : `, ${formatNumber(point.z)}`})`}</title>
            </circle>
          ))}
        </g>
      ))}
      <AxisTitles xLabel={xLabel} yLabel={yLabel} W={W} H={H} />
    </Frame>
  );
}
