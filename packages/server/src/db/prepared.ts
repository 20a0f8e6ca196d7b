import {
  CompiledQuery,
  type DialectAdapter,
  type Kysely,
  PostgresAdapter,
  type QueryExecutorProvider,
  type QueryResult,
} from 'kysely';
import type { Database } from './schema.js';

/**
 * Builds a query whose values are the given arguments (each becomes one parameter). Kysely's
 * query builders and its `sql` templates both fit.
 */
type Build<A extends readonly unknown[], O> = (
  db: Kysely<Database>,
  ...args: A
) => { compile(executor: QueryExecutorProvider): CompiledQuery<O> };

const marker = (i: number) => `\u0000tessera-parameter-${i}\u0000`;

interface Compiled {
  sql: string;
  /** Per parameter: the index of the argument it takes, or a constant of the query. */
  slots: Array<number | { value: unknown }>;
}

function compile<A extends readonly unknown[], O>(
  build: Build<A, O>,
  db: Kysely<Database>,
  arity: number,
): Compiled {
  const markers = Array.from({ length: arity }, (_, i) => marker(i));
  const { sql, parameters } = build(db, ...(markers as unknown as A)).compile(db);
  const slots = parameters.map((p) => {
    const index = markers.indexOf(p as string);
    return index >= 0 ? index : { value: p };
  });
  for (let i = 0; i < arity; i++) {
    if (!slots.includes(i)) throw new Error(`prepared query: argument ${i} is not a parameter`);
  }
  return { sql, slots };
}

const values = (query: Compiled, args: readonly unknown[]) =>
  query.slots.map((slot) => (typeof slot === 'number' ? args[slot] : slot.value));

/**
 * PostgreSQL statement names by text. A prepared query runs on PostgreSQL as a named prepared
 * statement (see `statementName`): each connection parses and plans it once, then only binds and
 * executes it.
 */
const names = new Map<string, string>();

function nameOnPostgres(adapter: DialectAdapter, sql: string): void {
  // A result of `*` would change shape when a migration adds a column, and PostgreSQL refuses to
  // run a prepared statement whose result changed ("cached plan must not change result type")
  // until the connection is replaced: such queries stay unnamed.
  if (
    adapter instanceof PostgresAdapter &&
    !names.has(sql) &&
    !/(select|returning)\s+("\w+"\.)?\*/i.test(sql)
  ) {
    names.set(sql, `tessera_${names.size + 1}`);
  }
}

/**
 * The name under which a query text runs as a prepared statement on PostgreSQL, or undefined for
 * a text no prepared query made (node-postgres: `query({ name, text, values })` parses a name once
 * per connection). Names are per process and follow the texts: one text, one name.
 */
export function statementName(sql: string): string | undefined {
  return names.get(sql);
}

/** A prepared query with the values of one run, to be run with others by `together`. */
export interface Write {
  readonly prepared: Prepared<readonly never[], unknown>;
  readonly args: readonly unknown[];
}

export interface Prepared<A extends readonly unknown[], O> {
  (db: Kysely<Database>, ...args: A): Promise<QueryResult<O>>;
  /** This query with these values, for `together` (nothing runs yet). */
  write(...args: A): Write;
  /** Identifies the query among those `together` combines. */
  readonly id: number;
  /** The compiled text and parameter slots on this database's dialect. */
  compiledFor(db: Kysely<Database>, arity: number): Compiled;
}

let queries = 0;

/**
 * A query built and compiled once per database, then run with new values: building and compiling
 * a Kysely query costs about as much as running a point query on SQLite (docs/BENCHMARKS.md,
 * "Design measurements"), and the hot paths (refresh grants, sign-ins, rate limits) run the same
 * few queries all the time. On PostgreSQL it also runs as a named prepared statement (parsed and
 * planned once per connection).
 *
 * `build` is called once with placeholder strings for its arguments; each must end up as query
 * parameters (not in lists or raw SQL text), which is checked then. Works on a database or inside
 * one of its transactions; each dialect has its own compiled text.
 */
export function prepared<A extends readonly unknown[], O>(build: Build<A, O>): Prepared<A, O> {
  const compiled = new WeakMap<object, Compiled>();
  const compiledFor = (db: Kysely<Database>, arity: number): Compiled => {
    // Keyed by the dialect's adapter, which a database shares with its transactions.
    const adapter = db.getExecutor().adapter;
    let query = compiled.get(adapter);
    if (!query) {
      query = compile(build, db, arity);
      nameOnPostgres(adapter, query.sql);
      compiled.set(adapter, query);
    }
    return query;
  };
  const run = (db: Kysely<Database>, ...args: A): Promise<QueryResult<O>> => {
    let query: Compiled;
    try {
      query = compiledFor(db, args.length);
    } catch (error) {
      return Promise.reject(error);
    }
    return db.executeQuery<O>(CompiledQuery.raw(query.sql, values(query, args)));
  };
  const self: Prepared<A, O> = Object.assign(run, {
    id: ++queries,
    write: (...args: A): Write => ({ prepared: self as unknown as Write['prepared'], args }),
    compiledFor,
  });
  return self;
}

/** A combined statement: per parameter, which write's argument it takes, or a constant. */
interface Combined {
  sql: string;
  slots: Array<{ write: number; arg: number } | { value: unknown }>;
}

/** Combined statements by adapter, then by the prepared queries they combine. */
const combinations = new WeakMap<object, Map<string, Combined>>();

/**
 * PostgreSQL: one statement running each write as a data-modifying CTE,
 * `with w1 as (…), w0 as (…) select 1 as done`. Sibling CTEs run on one snapshot and none reads
 * another's result, so the writes must be independent (distinct rows; a row one inserts may be
 * referenced by another's foreign key, which PostgreSQL checks at the end of the statement).
 *
 * The writes are listed last first because PostgreSQL runs CTEs that nothing reads last first:
 * so they run, and take their row locks, in the order given. Callers rely on that to lock rows in
 * the order other statements lock them (no deadlock). PostgreSQL does not document this order;
 * test/storage/prepared.test.ts checks it.
 */
function combine(db: Kysely<Database>, writes: readonly Write[]): Combined {
  const adapter = db.getExecutor().adapter;
  let byKey = combinations.get(adapter);
  if (!byKey) {
    byKey = new Map();
    combinations.set(adapter, byKey);
  }
  const key = writes.map((w) => w.prepared.id).join(',');
  let query = byKey.get(key);
  if (!query) {
    const parts: string[] = [];
    const slots: Combined['slots'] = [];
    writes.forEach((write, i) => {
      const part = write.prepared.compiledFor(db, write.args.length);
      // Kysely makes every value a parameter, so `$n` appears only as one; a string literal
      // (sql.lit) could hold a `$n` that is none.
      if (part.sql.includes("'"))
        throw new Error('together: a write with a string literal cannot be combined');
      const base = slots.length;
      parts.push(`w${i} as (${part.sql.replace(/\$(\d+)/g, (_, n: string) => `$${base + Number(n)}`)})`);
      for (const slot of part.slots) slots.push(typeof slot === 'number' ? { write: i, arg: slot } : slot);
    });
    query = { sql: `with ${parts.reverse().join(', ')} select 1 as done`, slots };
    nameOnPostgres(adapter, query.sql);
    byKey.set(key, query);
  }
  return query;
}

/**
 * Runs writes atomically, in one round trip where the dialect allows: on PostgreSQL one statement
 * (see `combine`); elsewhere one transaction (SQLite: its statements are cheap, and its driver
 * commits concurrent requests' writes together anyway). Either way the writes run, and lock their
 * rows, in the order given.
 */
export async function together(db: Kysely<Database>, writes: readonly Write[]): Promise<void> {
  if (writes.length === 0) return;
  if (writes.length === 1) {
    const [only] = writes as [Write];
    await only.prepared(db, ...(only.args as never[]));
    return;
  }
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) {
    const run = async (trx: Kysely<Database>) => {
      for (const w of writes) await w.prepared(trx, ...(w.args as never[]));
    };
    await (db.isTransaction ? run(db) : db.transaction().execute(run));
    return;
  }
  const query = combine(db, writes);
  const parameters = query.slots.map((slot) =>
    'write' in slot ? writes[slot.write]!.args[slot.arg] : slot.value,
  );
  await db.executeQuery(CompiledQuery.raw(query.sql, parameters));
}
