/** A pool's connections now, for metrics. */
export interface DbStats {
  /** Most connections the pool opens (1 on SQLite: one connection, shared). */
  max: number;
  /** PostgreSQL: queries waiting for a free connection. SQLite: transactions waiting for their turn. */
  waiting: number;
  /** PostgreSQL only: connections open, and of those idle. */
  total?: number;
  idle?: number;
}
