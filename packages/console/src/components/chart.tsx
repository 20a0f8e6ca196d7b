import { type ReactNode, useEffect, useId, useRef, useState } from 'react';
import { count, fill, t } from '../i18n/index.js';

/** A legend's entry in the page's language, its total in bold. */
function legendEntry(name: string, total: string): ReactNode {
  const [before = '', after = ''] = t.legendEntry.split('{total}');
  return (
    <>
      {fill(before, { name })}
      <strong>{total}</strong>
      {fill(after, { name })}
    </>
  );
}

/** One line (or set of bars) of a chart. */
export interface Series {
  name: string;
  values: readonly number[];
}

const HEIGHT = 200;
const PAD = { top: 12, right: 12, bottom: 28, left: 40 };

/** The width the chart's box has (re-measured when it changes), so text keeps its size at 360 px. */
function useWidth(): [React.RefObject<HTMLDivElement | null>, number] {
  const ref = useRef<HTMLDivElement>(null);
  const [width, setWidth] = useState(600);
  useEffect(() => {
    const element = ref.current;
    if (!element) return;
    const measure = () => setWidth(Math.max(240, Math.floor(element.clientWidth)));
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(element);
    return () => observer.disconnect();
  }, []);
  return [ref, width];
}

/** A round top for the value axis: 1, 2 or 5 times a power of ten, at least `max`. */
export function niceMax(max: number): number {
  if (max <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(max));
  return [1, 2, 5, 10].map((m) => m * power).find((v) => v >= max) ?? max;
}

/**
 * A chart as inline SVG (no chart library, nothing loaded from elsewhere): lines or grouped bars
 * over time buckets, a legend, and the same numbers as a table for screen readers and keyboards.
 */
export function Chart(props: {
  title: string;
  labels: readonly string[];
  series: readonly Series[];
  kind?: 'line' | 'bar';
  /** A line under the legend (the OTP budget). */
  note?: ReactNode;
}): ReactNode {
  const id = useId();
  const [box, width] = useWidth();
  const { labels, series } = props;
  const n = labels.length;
  const plotW = width - PAD.left - PAD.right;
  const plotH = HEIGHT - PAD.top - PAD.bottom;
  const top = niceMax(Math.max(0, ...series.flatMap((s) => s.values)));
  const y = (v: number) => PAD.top + plotH - (v / top) * plotH;
  const slot = n > 0 ? plotW / n : plotW;
  const x = (i: number) => PAD.left + slot * i + slot / 2;
  const totals = series.map((s) => s.values.reduce((a, b) => a + b, 0));
  const summary = series.map((s, i) => `${s.name}: ${count(totals[i]!)}`).join(', ');
  const tickEvery = Math.max(1, Math.ceil(n / Math.max(2, Math.floor(plotW / 90))));
  return (
    <figure className="card" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>{props.title}</h2>
      <div ref={box}>
        <svg
          className="chart"
          width={width}
          height={HEIGHT}
          viewBox={`0 0 ${width} ${HEIGHT}`}
          role="img"
          aria-labelledby={`${id}-title ${id}-desc`}
        >
          <title id={`${id}-desc`}>{summary}</title>
          {(Number.isInteger(top / 2) ? [0, top / 2, top] : [0, top]).map((v) => (
            <g key={v}>
              <line className="axis" x1={PAD.left} x2={width - PAD.right} y1={y(v)} y2={y(v)} />
              <text x={PAD.left - 6} y={y(v) + 4} textAnchor="end">
                {count(v)}
              </text>
            </g>
          ))}
          {labels.map((label, i) =>
            i % tickEvery === 0 ? (
              // biome-ignore lint/suspicious/noArrayIndexKey: a tick is its bucket's position
              <text key={i} x={x(i)} y={HEIGHT - 8} textAnchor="middle">
                {label}
              </text>
            ) : null,
          )}
          {props.kind === 'bar'
            ? series.map((s, si) => {
                const barW = Math.max(1, (slot * 0.8) / series.length);
                return s.values.map((v, i) => (
                  <rect
                    // biome-ignore lint/suspicious/noArrayIndexKey: a bar is its bucket's position
                    key={`${s.name}-${i}`}
                    className={`s${(si % 5) + 1}`}
                    x={PAD.left + slot * i + slot * 0.1 + barW * si}
                    y={y(v)}
                    width={barW}
                    height={Math.max(0, PAD.top + plotH - y(v))}
                  />
                ));
              })
            : series.map((s, si) => (
                <path
                  key={s.name}
                  className={`line s${(si % 5) + 1}`}
                  d={s.values
                    .map((v, i) => `${i === 0 ? 'M' : 'L'}${x(i).toFixed(1)},${y(v).toFixed(1)}`)
                    .join('')}
                />
              ))}
        </svg>
      </div>
      <ul className="legend">
        {series.map((s, i) => (
          <li key={s.name}>
            <span className={`swatch s${(i % 5) + 1}`} aria-hidden="true" />
            {legendEntry(s.name, count(totals[i]!))}
          </li>
        ))}
      </ul>
      {props.note && <p className="muted">{props.note}</p>}
      <details>
        <summary>{t.chartData}</summary>
        <table className="stack">
          <caption className="sr-only">{props.title}</caption>
          <thead>
            <tr>
              <th scope="col">{t.period}</th>
              {series.map((s) => (
                <th scope="col" key={s.name}>
                  {s.name}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {labels.map((label, i) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: a row is its bucket's position
              <tr key={i}>
                <th scope="row">{label}</th>
                {series.map((s) => (
                  <td key={s.name} data-label={s.name}>
                    {count(s.values[i] ?? 0)}
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </figure>
  );
}
