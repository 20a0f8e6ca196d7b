import type { Kysely } from 'kysely';
import { prepared } from '../../db/prepared.js';
import type { Database } from '../../db/schema.js';

/** A user's custom claims: a JSON object, parsed here and nowhere else. */
export type CustomClaims = Record<string, unknown>;

/** A user_claims column as read by a join elsewhere (refresh, OTP sign-in): parsed here, once. */
export function parseClaims(raw: string | null): CustomClaims {
  return raw === null ? {} : (JSON.parse(raw) as CustomClaims);
}

// Read by every sign-in (the claims go into the access token): built and compiled once.
const claimsOf = prepared((db, projectId: string, userId: string) =>
  db
    .selectFrom('user_claims')
    .select('claims')
    .where('user_id', '=', userId)
    .where('project_id', '=', projectId),
);

/** The user's custom claims, or undefined when none are set. */
export async function find(
  db: Kysely<Database>,
  projectId: string,
  userId: string,
): Promise<CustomClaims | undefined> {
  const [row] = (await claimsOf(db, projectId, userId)).rows;
  return row ? parseClaims(row.claims) : undefined;
}

/** Sets (replaces) the user's custom claims. */
export async function upsert(
  db: Kysely<Database>,
  projectId: string,
  userId: string,
  claims: CustomClaims,
  at: number,
): Promise<void> {
  const json = JSON.stringify(claims);
  await db
    .insertInto('user_claims')
    .values({ user_id: userId, project_id: projectId, claims: json, updated_at: at })
    .onConflict((oc) => oc.column('user_id').doUpdateSet({ claims: json, updated_at: at }))
    .execute();
}

export async function remove(db: Kysely<Database>, projectId: string, userId: string): Promise<void> {
  await db
    .deleteFrom('user_claims')
    .where('user_id', '=', userId)
    .where('project_id', '=', projectId)
    .execute();
}
