/** What `onSlowTransaction` is told about a transaction that held the database too long. */
export interface SlowTransaction {
  /** From taking the database to committing or rolling back, in milliseconds. */
  heldMs: number;
  /** The threshold it crossed (`slowTransactionMs`). */
  thresholdMs: number;
  /** Where the transaction began (async frames included), to find the `await` that stalled it. */
  stack: string | undefined;
}

/** The driver's options, with `openSqlite()`'s defaults applied. */
export interface DriverOptions {
  busyTimeoutMs: number;
  slowTransactionMs: number;
  onSlowTransaction: ((transaction: SlowTransaction) => void) | undefined;
  onCommit?: ((operations: number) => void) | undefined;
}

/** What the connection is doing now, for metrics. */
export interface SqliteStats {
  /** Transactions waiting for the running one to end (each stalls its request meanwhile). */
  waitingTransactions: number;
  /** Statements and transaction starts issued and not yet answered. */
  running: number;
  /** Group commits since the database was opened. */
  commits: number;
}
