import type { EvalRow } from '../api-schema.ts';

function pct(x: number): string {
  return (100 * x).toFixed(1);
}

/** Every evaluation found in the given directories: Pass@1 in percent with its 95% interval, per mode. */
export function EvalTable({ rows }: { rows: EvalRow[] }) {
  if (rows.length === 0) return null;
  const modes = [...new Set(rows.flatMap((r) => Object.keys(r.modes)))].sort(
    (a, b) => Number(a.slice(1)) - Number(b.slice(1)),
  );
  return (
    <section class="evals">
      <h2>Evaluations (Pass@1 %, 95% interval)</h2>
      <table data-testid="eval-table">
        <thead>
          <tr>
            <th>system</th>
            <th>env</th>
            <th>variant</th>
            <th>summary writer</th>
            <th>C</th>
            {modes.map((m) => (
              <th key={m}>{m}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((r, i) => (
            <tr key={i}>
              <td>{r.system}</td>
              <td>{r.env}</td>
              <td>{r.variant}</td>
              <td>{r.summaryWriter}</td>
              <td>{r.contextWindow}</td>
              {modes.map((m) => {
                const x = r.modes[m];
                return (
                  <td key={m} class="num">
                    {x ? `${pct(x.passAt1)} [${pct(x.low)}, ${pct(x.high)}]` : '—'}
                  </td>
                );
              })}
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
