import type { Kysely } from 'kysely';

// Frozen: project names become unique (the CLI and the operator API find a project by name).
// Names that are already taken twice are not refused — a refused migration would stop every
// instance from starting, and the CLI that could rename them runs migrations first. The oldest
// project keeps its name; each later one is renamed "<name> (<api_key_id>)", which is unique and
// says which project it is (`tessera projects list` shows them; rename with `projects update`).

interface Row {
  id: string;
  name: string;
  api_key_id: string;
}

/** Not additive: project names become unique, so an older release that creates a project under an existing name fails. */
export const additive = false;

// biome-ignore lint/suspicious/noExplicitAny: migrations are untyped by design
export async function up(db: Kysely<any>): Promise<void> {
  const rows: Row[] = await db
    .selectFrom('projects')
    .select(['id', 'name', 'api_key_id'])
    .orderBy('created_at', 'asc')
    .orderBy('id', 'asc')
    .execute();
  const taken = new Set(rows.map((r) => r.name));
  const kept = new Set<string>();
  for (const row of rows) {
    if (!kept.has(row.name)) {
      kept.add(row.name);
      continue;
    }
    let renamed = `${row.name} (${row.api_key_id})`;
    for (let n = 2; taken.has(renamed); n++) renamed = `${row.name} (${row.api_key_id}) ${n}`;
    taken.add(renamed);
    await db.updateTable('projects').set({ name: renamed }).where('id', '=', row.id).execute();
  }
  await db.schema.createIndex('projects_name_unique').on('projects').column('name').unique().execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are untyped by design
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('projects_name_unique').execute();
}
