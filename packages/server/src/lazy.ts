import { createRequire } from 'node:module';

/**
 * A module loaded on first use instead of at start-up: `lazyImport(() => import('x'))` returns a
 * function that imports it once and hands every caller the same module. Callers that come while
 * the import is under way share it; an import that fails is forgotten, so the next call tries
 * again (the caller's request fails as any unexpected error does: a 500 with no details).
 *
 * For dependencies that only some requests or configurations need (passkeys, SMTP): every module
 * loaded keeps its source and compiled code in the heap of every serving process
 * (docs/OPERATIONS.md, "Sizing").
 */
export function lazyImport<T>(load: () => Promise<T>): () => Promise<T> {
  let loading: Promise<T> | undefined;
  return () => {
    if (!loading) {
      const attempt = load();
      loading = attempt;
      attempt.catch(() => {
        if (loading === attempt) loading = undefined;
      });
    }
    return loading;
  };
}

/**
 * A CommonJS package loaded synchronously on first use, for callers that cannot wait (phone
 * number parsing inside synchronous validation): `lazyRequire<typeof import('x')>('x')` returns a
 * function that requires it once. The package must ship a CommonJS build under that name.
 */
export function lazyRequire<T>(specifier: string): () => T {
  let loaded: T | undefined;
  return () => {
    loaded ??= createRequire(import.meta.url)(specifier) as T;
    return loaded;
  };
}
