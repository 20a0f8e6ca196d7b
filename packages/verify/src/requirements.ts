import type { AccessTokenClaims } from './claims.js';
import { TesseraVerifyError } from './errors.js';

/**
 * A check a verified token must also pass on a route, built by {@link requiredScopes},
 * {@link requireClaims}, {@link claimEquals}, {@link claimIncludes} or {@link claimCheck} and given
 * to the middleware's `requirements` option (or an adapter's `tesseraGuard`). It throws
 * {@link TesseraVerifyError} (`insufficient_scope` or `insufficient_claims`, HTTP 403) when the
 * claims do not satisfy it.
 *
 * @example
 * ```ts
 * const admin: ClaimRequirement = claimIncludes('roles', 'admin');
 * admin(claims); // throws insufficient_claims unless claims.roles holds 'admin'
 * ```
 */
export type ClaimRequirement = (claims: AccessTokenClaims) => void;

/** A value `claimEquals` can compare with `===`. */
export type ClaimValue = string | number | boolean | null;

// RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E )
const SCOPE_TOKEN = /^[!#-[\]-~]+$/;

/**
 * Requires every one of `scopes` in the token's space-separated `scope` claim. A token without
 * them is answered 403 `insufficient_scope`, with the scopes named in the challenge
 * (`WWW-Authenticate: Bearer …, error="insufficient_scope", scope="orders:read"`, RFC 6750 §3.1).
 *
 * @param scopes Scopes as one space-separated string or an array; at least one.
 *
 * @example
 * ```ts
 * import { requiredScopes } from '@tessera/verify';
 *
 * app.get('/orders', tesseraAuth(verifier, { requirements: [requiredScopes('orders:read')] }), listOrders);
 * ```
 */
export function requiredScopes(scopes: string | readonly string[]): ClaimRequirement {
  const wanted = typeof scopes === 'string' ? scopes.split(' ').filter(Boolean) : [...scopes];
  if (wanted.length === 0 || !wanted.every((s) => typeof s === 'string' && SCOPE_TOKEN.test(s))) {
    throw new TypeError(
      'requiredScopes needs one or more scope tokens (printable ASCII, no spaces or quotes)',
    );
  }
  const scope = wanted.join(' ');
  return (claims) => {
    const granted = new Set(typeof claims.scope === 'string' ? claims.scope.split(' ') : []);
    const missing = wanted.filter((s) => !granted.has(s));
    if (missing.length > 0) {
      throw new TesseraVerifyError('insufficient_scope', `The token lacks the scope "${missing[0]}"`, {
        scope,
      });
    }
  };
}

/**
 * Requires the named claims to be present (neither missing nor `null`).
 *
 * @example
 * ```ts
 * import { requireClaims } from '@tessera/verify';
 *
 * const auth = tesseraAuth(verifier, { requirements: [requireClaims('tenant_id')] });
 * ```
 */
export function requireClaims(...names: string[]): ClaimRequirement {
  if (names.length === 0) throw new TypeError('requireClaims needs at least one claim name');
  for (const name of names) claimName(name, 'requireClaims');
  return (claims) => {
    for (const name of names) if (isAbsent(claims[name])) throw missingClaim(name);
  };
}

/**
 * Requires the claim `name` to equal `value` (`===`). The answer names the claim, never its
 * value or the one expected.
 *
 * @example
 * ```ts
 * import { claimEquals } from '@tessera/verify';
 *
 * const proOnly = tesseraAuth(verifier, { requirements: [claimEquals('plan', 'pro')] });
 * ```
 */
export function claimEquals(name: string, value: ClaimValue): ClaimRequirement {
  claimName(name, 'claimEquals');
  if (value !== null && !['string', 'number', 'boolean'].includes(typeof value)) {
    throw new TypeError('claimEquals compares with a string, number, boolean or null');
  }
  return (claims) => {
    if (claims[name] === value) return;
    if (isAbsent(claims[name])) throw missingClaim(name);
    throw new TesseraVerifyError('insufficient_claims', `The token's "${name}" claim has another value`);
  };
}

/**
 * Requires the claim `name` — an array, or a space-separated string — to hold every one of
 * `values`.
 *
 * @example
 * ```ts
 * import { claimIncludes } from '@tessera/verify';
 *
 * const editors = tesseraAuth(verifier, { requirements: [claimIncludes('roles', 'editor')] });
 * ```
 */
export function claimIncludes(name: string, ...values: ClaimValue[]): ClaimRequirement {
  claimName(name, 'claimIncludes');
  if (values.length === 0) throw new TypeError('claimIncludes needs at least one value');
  return (claims) => {
    const claim = claims[name];
    if (isAbsent(claim)) throw missingClaim(name);
    const held: unknown[] = Array.isArray(claim) ? claim : typeof claim === 'string' ? claim.split(' ') : [];
    if (!values.every((v) => held.includes(v))) {
      throw new TesseraVerifyError(
        'insufficient_claims',
        `The token's "${name}" claim does not hold what this route requires`,
      );
    }
  };
}

/**
 * Requires `check(claims)` to return true; `description` is the public message when it does not.
 *
 * @example
 * ```ts
 * import { claimCheck } from '@tessera/verify';
 *
 * const strong = claimCheck(
 *   (claims) => claims.authentication_method === 'PIN' || claims.authentication_method === 'BIOMETRIC',
 *   'This route needs a PIN or passkey sign-in',
 * );
 * ```
 */
export function claimCheck(
  check: (claims: AccessTokenClaims) => boolean,
  description = 'The token does not meet the requirements of this route',
): ClaimRequirement {
  if (typeof check !== 'function') throw new TypeError('claimCheck needs a function');
  return (claims) => {
    if (check(claims) !== true) throw new TesseraVerifyError('insufficient_claims', description);
  };
}

function claimName(name: string, caller: string): void {
  if (typeof name !== 'string' || name === '') {
    throw new TypeError(`${caller} needs a claim name (a non-empty string)`);
  }
}

/** Missing or `null`: what {@link requireClaims} refuses. */
function isAbsent(claim: unknown): boolean {
  return claim === undefined || claim === null;
}

/** The refusal of a token that lacks a claim a route requires (said so, not "another value"). */
function missingClaim(name: string): TesseraVerifyError {
  return new TesseraVerifyError('insufficient_claims', `The token has no "${name}" claim`);
}
