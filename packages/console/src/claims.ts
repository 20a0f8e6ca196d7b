import { RESERVED_CLAIMS } from '@tessera/core';
import { fill, t } from './i18n/index.js';

/** The service's limits on custom claims (packages/server/src/modules/claims/claims.service.ts). */
const MAX_BYTES = 1000;
const MAX_DEPTH = 4;
const NAME = /^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$/;

const depth = (value: unknown): number =>
  value !== null && typeof value === 'object'
    ? 1 + Math.max(0, ...Object.values(value as Record<string, unknown>).map(depth))
    : 0;

/**
 * Checks the claims editor's text before it is sent, with the service's rules, so that a mistake
 * is named beside the field: the claims, or the text of what is wrong. The service checks again.
 */
export function parseClaims(text: string): { claims: Record<string, unknown> } | { error: string } {
  let value: unknown;
  try {
    value = JSON.parse(text.trim() || '{}');
  } catch (error) {
    return { error: fill(t.claimsNotJson, { reason: (error as Error).message }) };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return { error: t.claimsNotObject };
  for (const [name, claim] of Object.entries(value)) {
    if (RESERVED_CLAIMS.has(name)) return { error: fill(t.claimReserved, { name }) };
    if (!NAME.test(name)) return { error: fill(t.claimBadName, { name: name.slice(0, 64) }) };
    if (depth(claim) > MAX_DEPTH - 1) return { error: fill(t.claimTooDeep, { name, depth: MAX_DEPTH }) };
  }
  const size = new TextEncoder().encode(JSON.stringify(value)).length;
  if (size > MAX_BYTES) return { error: fill(t.claimsTooLarge, { size, limit: MAX_BYTES }) };
  return { claims: value as Record<string, unknown> };
}
