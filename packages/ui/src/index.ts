/**
 * `@tessera/ui` — `<tessera-sign-in>`, the whole passwordless sign-in of a Tessera project as a
 * framework-free custom element on `@tessera/client`. Importing the package defines the element.
 *
 * @packageDocumentation
 */
import { TesseraSignIn } from './element.js';

export { type Branding, NO_BRANDING, toIdentifier } from './branding.js';
export { type ErrorDetail, type SignedInDetail, type Step, TesseraSignIn } from './element.js';
export { ERROR_TABLE, type ErrorEntry } from './errors.js';
export { format, LOCALES, type Messages, pickLocale } from './messages/index.js';

/**
 * Defines `<tessera-sign-in>` (under another name if given); does nothing where it is defined
 * already or where there are no custom elements (server rendering).
 *
 * @example
 * ```ts
 * import { defineSignIn } from '@tessera/ui';
 * defineSignIn('acme-sign-in');
 * ```
 */
export function defineSignIn(name = 'tessera-sign-in'): void {
  if (typeof customElements === 'undefined' || customElements.get(name)) return;
  // A subclass per extra name: one constructor cannot be defined twice.
  customElements.define(name, name === 'tessera-sign-in' ? TesseraSignIn : class extends TesseraSignIn {});
}

defineSignIn();

declare global {
  interface HTMLElementTagNameMap {
    'tessera-sign-in': TesseraSignIn;
  }
}
