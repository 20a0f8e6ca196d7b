// The one export of `next/server` that `@tessera/ssr/next` uses, declared here so that this package
// builds without `next` installed (it is imported at run time, inside a Next app, only).
declare module 'next/server' {
  /** Resolves when rendering answers a request; never while prerendering (Next 15+). */
  export const connection: (() => Promise<void>) | undefined;
}
