// A time-series chart (uPlot: canvas, ~20 KB gzipped) with its numbers also as a table for screen readers and for
// reading exact values. One chart per quantity keeps each y axis in its own unit.
import uPlot from "uplot";
import { useEffect, useRef } from "preact/hooks";

export interface Series {
  label: string;
  values: Array<number | null>;
}

const COLORS = ["#2563eb", "#db2777", "#16a34a", "#ea580c", "#7c3aed", "#0891b2", "#ca8a04", "#475569"];

export function TimeChart(p: {
  id: string;
  title: string;
  unit: string;
  /** Bucket starts, ms since the epoch. */
  times: number[];
  series: Series[];
  /** How bucket times are written in the table. */
  bucket: "hour" | "day";
}) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const opts: uPlot.Options = {
      width: Math.max(280, el.clientWidth),
      height: 220,
      legend: { show: false },
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: true } },
      axes: [{}, { label: p.unit, size: 60 }],
      series: [
        {},
        ...p.series.map((s, i) => ({
          label: s.label,
          stroke: COLORS[i % COLORS.length],
          width: 2,
          points: { show: true },
        })),
      ],
    };
    const data: uPlot.AlignedData = [p.times.map((t) => t / 1000), ...p.series.map((s) => s.values)];
    const chart = new uPlot(opts, data, el);
    const ro = new ResizeObserver(() => chart.setSize({ width: Math.max(280, el.clientWidth), height: 220 }));
    ro.observe(el);
    return () => {
      ro.disconnect();
      chart.destroy();
    };
  }, [p.times, p.series, p.unit]);
  const fmt = (t: number) =>
    p.bucket === "day"
      ? new Date(t).toLocaleDateString()
      : new Date(t).toLocaleString([], { dateStyle: "short", timeStyle: "short" });
  return (
    <figure class="chart" aria-labelledby={`${p.id}-title`}>
      <figcaption id={`${p.id}-title`}>
        {p.title}
        <span class="legend">
          {p.series.map((s, i) => (
            <span key={s.label}>
              <span class="swatch" data-color={i % COLORS.length} />
              {s.label}
            </span>
          ))}
        </span>
      </figcaption>
      <div ref={box} class="plot" role="img" aria-label={`${p.title}: chart; the numbers are in the table below`} />
      <details>
        <summary>Numbers</summary>
        <div class="table-wrap">
          <table id={`${p.id}-table`}>
            <thead>
              <tr>
                <th scope="col">{p.bucket === "day" ? "Day" : "Hour"}</th>
                {p.series.map((s) => (
                  <th scope="col" key={s.label}>
                    {s.label}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {p.times.map((t, i) => (
                <tr key={t}>
                  <th scope="row">{fmt(t)}</th>
                  {p.series.map((s) => (
                    <td key={s.label}>{s.values[i] === null ? "—" : round(s.values[i]!)}</td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}

const round = (n: number) => (Number.isInteger(n) ? String(n) : n.toFixed(n < 10 ? 2 : 1));
