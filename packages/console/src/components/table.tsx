import type { ReactNode } from 'react';
import { t } from '../i18n/index.js';

/** A column of a `StackTable`: its header, and the cell it gives each row. */
export interface Column<T> {
  label: string;
  cell: (row: T) => ReactNode;
  className?: string;
}

/**
 * A list as a table that stacks into a card a row at 360 px (`table.stack`: each cell shows its
 * column's header from `data-label`), captioned for screen readers. `false` leaves a column out
 * (one the service does not report); `actions` adds a last column of buttons, headed "Actions"
 * for screen readers only; `empty` stands instead of a table without rows.
 */
export function StackTable<T>(props: {
  caption: string;
  rows: readonly T[];
  rowKey: (row: T) => string;
  columns: readonly (Column<T> | false)[];
  actions?: ((row: T) => ReactNode) | false;
  empty?: ReactNode;
}): ReactNode {
  const { actions } = props;
  const columns = props.columns.filter((column): column is Column<T> => column !== false);
  if (props.rows.length === 0 && props.empty !== undefined) return props.empty;
  return (
    <table className="stack">
      <caption className="sr-only">{props.caption}</caption>
      <thead>
        <tr>
          {columns.map((column) => (
            <th scope="col" key={column.label}>
              {column.label}
            </th>
          ))}
          {actions && (
            <th scope="col">
              <span className="sr-only">{t.actions}</span>
            </th>
          )}
        </tr>
      </thead>
      <tbody>
        {props.rows.map((row) => (
          <tr key={props.rowKey(row)}>
            {columns.map((column) => (
              <td key={column.label} data-label={column.label} className={column.className}>
                {column.cell(row)}
              </td>
            ))}
            {actions && <td>{actions(row)}</td>}
          </tr>
        ))}
      </tbody>
    </table>
  );
}
