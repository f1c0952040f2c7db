/**
 * Plain-text tables for the CLI: columns sized to their widest cell, decimal strings aligned right
 * (so the decimal points of a column of prices line up when their scales match), `-` for null.
 */
export interface Column<T> {
  readonly header: string;
  readonly value: (row: T) => unknown;
  /** Right-aligned (default: right when every value is a number-like string). */
  readonly right?: boolean;
}

const NUMERIC = /^-?\d+(\.\d+)?%?$/;

export function table<T>(rows: readonly T[], columns: readonly Column<T>[]): string {
  if (rows.length === 0) return '(none)';
  const cells = rows.map((r) => columns.map((c) => cell(c.value(r))));
  const right = columns.map((c, i) => c.right ?? cells.every((row) => row[i] === '-' || NUMERIC.test(row[i]!)));
  const widths = columns.map((c, i) => Math.max(c.header.length, ...cells.map((row) => row[i]!.length)));
  const line = (values: string[]) =>
    values.map((v, i) => (right[i] ? v.padStart(widths[i]!) : v.padEnd(widths[i]!))).join('  ').trimEnd();
  return [line(columns.map((c) => c.header)), ...cells.map(line)].join('\n');
}

/** Two columns, name and value, for one object. */
export function record(fields: readonly (readonly [string, unknown])[]): string {
  const width = Math.max(...fields.map(([k]) => k.length));
  return fields.map(([k, v]) => `${k.padEnd(width)}  ${cell(v)}`).join('\n');
}

function cell(v: unknown): string {
  if (v === null || v === undefined || v === '') return '-';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}
